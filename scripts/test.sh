#!/usr/bin/env bash
# Installs what is needed, builds and runs every test. Usage: scripts/test.sh [release|asan|tsan]
set -euo pipefail
cd "$(dirname "$0")/.."
kind="${1:-release}"
./scripts/setup.sh
dir=$(./scripts/build.sh "$kind")
export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}"
export TSAN_OPTIONS="${TSAN_OPTIONS:-halt_on_error=1:second_deadlock_stack=1}"
# The integration suite (label integration: a real kube-apiserver per binary, the release
# `volcache serve`) runs in the release build only; sanitizer builds run everything else.
label_args=()
if [ "$kind" != "release" ]; then label_args=(-LE integration); fi
ctest --test-dir "$dir" --output-on-failure -j "${VOLCACHE_JOBS:-$(nproc)}" "${label_args[@]}"
