#!/usr/bin/env bash
# Runs the Redis-backed integration tests against a throw-away 3-master Redis Cluster instead of the single
# Redis on 127.0.0.1:6379. Extra arguments go to jest. By default: every test file whose imports reach the test
# Redis helpers (test/helpers/redis.ts, test/helpers/redis-cluster.ts), the only way a test gets the Cluster, so
# files that never touch Redis do not run a second time for nothing; test/e2e and test/reliability are left out,
# as they start their own private Redis servers, and test/package, which uses no Redis.
set -euo pipefail
cd "$(dirname "$0")/.."

if [ "$#" -eq 0 ]; then
  set -- --findRelatedTests test/helpers/redis.ts test/helpers/redis-cluster.ts \
    --testPathIgnorePatterns '/node_modules/' '/test/consumers/' '/test/(e2e|reliability|package)/'
fi
exec npx tsx scripts/with-redis-cluster.ts -- env NODE_OPTIONS='--experimental-vm-modules --expose-gc' npx jest "$@"
