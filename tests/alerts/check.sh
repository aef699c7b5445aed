#!/usr/bin/env bash
# Checks the example monitoring files against promtool and a real server:
#   1. `promtool check rules` on docs/examples/prometheus/alerts.yml;
#   2. `promtool test rules` on tests/alerts/alerts_test.yml (every alert fires, or not);
#   3. every idforge_* metric named in alerts.yml or docs/examples/grafana/idforge-dashboard.json
#      is one a running `idforge serve` exports on /metrics (a histogram's _bucket, _sum
#      and _count count as its name), so a renamed metric cannot leave them silently empty.
#
# Usage: tests/alerts/check.sh IDFORGE_BINARY   (ctest: alerts.rules)
set -euo pipefail

bin=${1:?usage: tests/alerts/check.sh IDFORGE_BINARY}
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
rules=docs/examples/prometheus/alerts.yml
tests=tests/alerts/alerts_test.yml
dashboard=docs/examples/grafana/idforge-dashboard.json

fail() { echo "alerts check: $*" >&2; exit 1; }

[ -x "$bin" ] || fail "$bin is not an executable idforge binary"
bin=$(cd "$(dirname "$bin")" && pwd)/$(basename "$bin")
command -v promtool >/dev/null 2>&1 ||
  fail "promtool not found: run scripts/install-deps (Debian package prometheus)"
command -v curl >/dev/null 2>&1 || fail "curl not found: run scripts/install-deps"
python3 -m json.tool "$root/$dashboard" >/dev/null || fail "$dashboard is not valid JSON"

cd "$root"
promtool check rules "$rules"
promtool test rules "$tests"

# A real server with one tag in use, so the per-tag and per-store metrics exist.
work=$(mktemp -d "${TMPDIR:-/tmp}/idforge-alerts.XXXXXX")
# shellcheck source=tests/support/serve.sh
source "$root/tests/support/serve.sh"
cleanup() {
  serve_kill
  rm -rf "$work"
}
trap cleanup EXIT

"$bin" tag create check --data-dir "$work/data" >/dev/null
serve_start "$work/server" "$bin" serve --http 127.0.0.1:0 --resp 127.0.0.1:0 \
  --data-dir "$work/data" || fail "idforge serve did not start"
url=$(serve_http_url "$work/server")

curl -fsS --max-time 10 "${url}v1/segment/check?count=1" >/dev/null ||
  fail "GET ${url}v1/segment/check failed"
curl -fsS --max-time 10 "${url}metrics" >"$work/metrics" || fail "GET ${url}metrics failed"

# Names the server exports: every sample's name, and the base name of each histogram.
{
  grep -v '^#' "$work/metrics" | sed -n 's/^\(idforge_[a-z_]*\).*/\1/p'
  sed -n 's/^# TYPE \(idforge_[a-z_]*\) histogram$/\1/p' "$work/metrics"
} | sort -u >"$work/exported"
[ -s "$work/exported" ] || fail "${url}metrics exported no idforge_ metric"

grep -ohE 'idforge_[a-z_]*' "$rules" "$dashboard" | sort -u >"$work/used"
comm -23 "$work/used" "$work/exported" >"$work/missing"
if [ -s "$work/missing" ]; then
  echo "alerts check: named in $rules or $dashboard but not exported by idforge serve:" >&2
  sed 's/^/  /' "$work/missing" >&2
  exit 1
fi
echo "alerts check: $(wc -l <"$work/used") metric names in the rules and dashboard, all exported"
