#!/usr/bin/env bash
# Builds the libFuzzer targets with clang and runs each for a short, seeded session.
# Usage: scripts/fuzz.sh [seconds-per-target]   (default 20)
set -euo pipefail
cd "$(dirname "$0")/.."
secs="${1:-20}"
targets=()
for src in fuzz/*_fuzz.cc; do targets+=("$(basename "$src" .cc)"); done
dir=$(./scripts/build.sh fuzz "${targets[@]}")
for t in "${targets[@]}"; do
  f="$dir/fuzz/$t"
  name=${t%_fuzz}
  corpus="fuzz/corpus/$name"
  work=$(mktemp -d)
  echo "fuzz: $name for ${secs}s (seeds: $corpus)"
  "$f" -seed=1 -max_total_time="$secs" -max_len=65536 -timeout=10 -rss_limit_mb=2048 \
       -print_final_stats=1 "$work" "$corpus" 2>&1 | tail -n 4
  rm -rf "$work"
done
