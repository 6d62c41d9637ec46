#!/usr/bin/env bash
# Installs what is needed, builds, and runs volcache's main job. Extra arguments replace the
# default command line (default: replay the bundled gang-scheduling example).
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh
dir=$(./scripts/build.sh release volcache)
if [ $# -eq 0 ]; then
  set -- replay examples/gang-scheduling.jsonl
fi
exec "$dir/cmd/volcache" "$@"
