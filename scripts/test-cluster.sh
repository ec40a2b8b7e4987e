#!/usr/bin/env bash
# Runs the Redis-backed integration tests against a throw-away 3-master Redis Cluster instead of the single
# Redis on 127.0.0.1:6379. Extra arguments go to jest (default: the whole suite except the browser journeys and
# the reliability tests, which start their own private Redis servers and gain nothing from a cluster).
set -euo pipefail
cd "$(dirname "$0")/.."

if [ "$#" -eq 0 ]; then
  set -- --testPathIgnorePatterns '/test/(e2e|reliability)/'
fi
exec npx tsx scripts/with-redis-cluster.ts -- env NODE_OPTIONS=--experimental-vm-modules npx jest "$@"
