#!/usr/bin/env bash
# Installs volcache into a temporary prefix and builds a consumer against it with
# find_package(volcache), proving the installed package is complete.
set -euo pipefail
cd "$(dirname "$0")/.."
dir=$(./scripts/build.sh release)
prefix=$(mktemp -d)
trap 'rm -rf "$prefix"' EXIT
cmake --install "$dir" --prefix "$prefix" >/dev/null
cmake -S examples/consumer -B "$prefix/consumer-build" -G Ninja -DCMAKE_PREFIX_PATH="$prefix" >/dev/null
cmake --build "$prefix/consumer-build" >/dev/null
"$prefix/consumer-build/volcache_consumer"
# The example plugin (BindContext extension + PreBinder) against the same installed package.
cmake -S examples/gpu-plugin -B "$prefix/plugin-build" -G Ninja -DCMAKE_PREFIX_PATH="$prefix" >/dev/null
cmake --build "$prefix/plugin-build" >/dev/null
"$prefix/plugin-build/gpu_plugin_demo"
