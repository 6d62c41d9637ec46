#!/usr/bin/env bash
# Runs every `volcache bench` measurement of docs/BENCHMARKS.md on every shape and appends
# the JSON lines to OUT (default docs/bench-<date>.jsonl). Needs a release build
# (./scripts/build.sh) and a quiet machine; takes about 15 minutes on 2 cores.
#   scripts/bench-all.sh [OUT] [RUNS]
set -euo pipefail
cd "$(dirname "$0")/.."
out="${1:-docs/bench-$(date -u +%Y-%m-%d).jsonl}"
runs="${2:-7}"
bin="${VOLCACHE_BUILD_DIR:-build}/cmd/volcache"
[[ -x "$bin" ]] || { echo "no $bin: run ./scripts/build.sh first" >&2; exit 2; }
: > "$out"
run() { echo "+ volcache bench $*" >&2; "$bin" bench "$@" | tee -a "$out"; }
for shape in S M L XL XXL openb philly; do
  run snapshot --shape "$shape" --runs "$runs"
  run memory --shape "$shape"
done
for shape in S M L XL XXL openb philly; do
  run ingest --shape "$shape" --runs "$runs"
done
run bind --shape L --runs "$runs"
BATCH_BIND_NUM=16 run bind --shape L --mode rest_loopback --runs "$runs"
for shape in S M L XL openb; do
  run e2e --shape "$shape" --runs 3
done
echo "wrote $out" >&2
