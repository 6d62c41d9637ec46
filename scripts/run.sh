#!/usr/bin/env bash
# Installs what is needed, builds, and runs volcache's main job. Extra arguments replace the
# default command line (default: `volcache run`, the embedded simulated cluster on a
# time-scaled slice of the Philly trace, with the HTTP admin server on 127.0.0.1:8080).
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh
dir=$(./scripts/build.sh release volcache)
if [ $# -eq 0 ]; then
  set -- run
fi
exec "$dir/cmd/volcache" "$@"
