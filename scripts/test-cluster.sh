#!/usr/bin/env bash
# Runs the Redis-backed integration tests against a throw-away 3-master Redis Cluster instead of the single
# Redis on 127.0.0.1:6379. Extra arguments go to jest (default: the whole suite, so every file that uses the shared
# Redis, except test/e2e and test/reliability, which start their own private Redis servers, and test/package,
# which uses no Redis).
set -euo pipefail
cd "$(dirname "$0")/.."

if [ "$#" -eq 0 ]; then
  set -- --testPathIgnorePatterns '/test/(e2e|reliability|package)/'
fi
exec npx tsx scripts/with-redis-cluster.ts -- env NODE_OPTIONS='--experimental-vm-modules --expose-gc' npx jest "$@"
