#!/usr/bin/env bash
# Real Redis client libraries against a real `idforge serve` (check.py says what is
# checked): Debian's python3-redis, ruby-redis and php-redis, and from npm node-redis 4,
# node-redis (current) and ioredis, installed here into tests/redis_clients/node_modules
# from the checked-in package-lock.json on the first run (and again when the lock file
# changes). ctest: redis_clients (label e2e).
# Usage: tests/redis_clients/check.sh IDFORGE_BIN
# Env: IDFORGE_REDIS_CLIENTS=redis-py,ioredis,... runs only those libraries.
set -euo pipefail

if [ $# -ne 1 ]; then
  echo "usage: tests/redis_clients/check.sh IDFORGE_BIN" >&2
  exit 2
fi
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

missing=()
command -v node >/dev/null && command -v npm >/dev/null || missing+=("npm (Node.js 18+)")
/usr/bin/python3 -c 'import redis' 2>/dev/null || missing+=(python3-redis)
command -v ruby >/dev/null && ruby -e 'require "redis"' 2>/dev/null || missing+=(ruby-redis)
command -v php >/dev/null && php -r 'exit(class_exists("Redis") ? 0 : 1);' 2>/dev/null ||
  missing+=("php-cli php-redis")
if [ ${#missing[@]} -gt 0 ]; then
  echo "redis_clients: missing ${missing[*]} (Debian: scripts/install-deps installs them)" >&2
  exit 1
fi

# npm keeps its own copy of the lock file in node_modules: older than ours, reinstall.
if [ ! -f "$here/node_modules/.package-lock.json" ] ||
  [ "$here/package-lock.json" -nt "$here/node_modules/.package-lock.json" ]; then
  echo "redis_clients: installing the npm clients into tests/redis_clients/node_modules"
  (cd "$here" && npm ci --no-audit --no-fund --loglevel=error)
fi

exec /usr/bin/python3 -B "$here/check.py" "$1"
