#!/usr/bin/env bash
# Measures volcache against Volcano's own cache side by side (issue 16): this machine's speed
# drifts 2-4x between hours, so only ratios from alternated runs mean anything. Each round
# runs ../shared/tools/volcano-bench (Volcano v1.7.0's SchedulerCache: Snapshot() and AddPod
# on the same shapes), then `volcache bench snapshot` and `volcache bench ingest`; the raw
# JSON lines (each tagged with "round") go to OUT, and the ratios per round to stdout
# (bench/side_by_side.py).
#   scripts/bench-vs-volcano.sh [SHAPES=L] [ROUNDS=3] [OUT=docs/bench-<date>-vs-volcano.jsonl]
# Needs a release build (./scripts/build.sh) and ../shared/tools/volcano-bench; Volcano's
# shapes are S, M, L and XL.
set -euo pipefail
cd "$(dirname "$0")/.."
shapes="${1:-L}"
rounds="${2:-3}"
out="${3:-docs/bench-$(date -u +%Y-%m-%d)-vs-volcano.jsonl}"
bin="${VOLCACHE_BUILD_DIR:-build}/cmd/volcache"
vdir="${VOLCANO_BENCH_DIR:-../shared/tools/volcano-bench}"
[[ -x "$bin" ]] || { echo "no $bin: run ./scripts/build.sh first" >&2; exit 2; }
[[ -f "$vdir/volcano-cache.test.xz" ]] || { echo "no $vdir/volcano-cache.test.xz" >&2; exit 2; }
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
xz -dc "$vdir/volcano-cache.test.xz" > "$tmp/volcano-cache.test"
chmod +x "$tmp/volcano-cache.test"
: > "$out"
tag() { python3 -c 'import json,sys
for l in sys.stdin:
    l = l.strip()
    if l.startswith("{"):
        j = json.loads(l); j["round"] = int(sys.argv[1]); j["load"] = sys.argv[2]; print(json.dumps(j))' "$@"; }
for shape in $(echo "$shapes" | tr ',' ' '); do
  for r in $(seq 1 "$rounds"); do
    load="$(cut -d' ' -f1 /proc/loadavg)"
    echo "+ round $r shape $shape $(date -u +%H:%M:%S) load $load" >&2
    VBENCH_BIN="$tmp/volcano-cache.test" VBENCH_SHAPES="$shape" GOMAXPROCS=2 "$vdir/run.sh" 2>/dev/null |
      grep -E '"bench":"volcano_(snapshot|ingest)"' | tag "$r" "$load" >> "$out"
    "$bin" bench snapshot --shape "$shape" --json | tag "$r" "$load" >> "$out"
    "$bin" bench ingest --shape "$shape" --json | tag "$r" "$load" >> "$out"
  done
done
python3 bench/side_by_side.py "$out"
