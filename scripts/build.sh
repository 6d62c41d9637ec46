#!/usr/bin/env bash
# Configures and builds volcache. Usage: scripts/build.sh [release|asan|tsan|fuzz|tsa] [targets...]
#   release (default)  build/        RelWithDebInfo, tests and benchmarks
#   asan               build-asan/   AddressSanitizer + UndefinedBehaviorSanitizer, tests only
#   tsan               build-tsan/   ThreadSanitizer, tests only
#   fuzz               build-fuzz/   clang + libFuzzer targets
#   tsa                build-tsa/    clang -Wthread-safety -Werror: compiles the libraries (no link, no tests)
set -euo pipefail
cd "$(dirname "$0")/.."
kind="${1:-release}"; shift || true
jobs="${VOLCACHE_JOBS:-$(nproc)}"
# Object files are shared through ccache across build directories and checkouts: paths under
# the checkout are hashed relative to it (so a second clone, or CI's clean checkout, hits what
# this one compiled), and the compile directory is not part of the hash. Three configurations
# of objects with debug info need more than ccache's default 5 GB.
export CCACHE_BASEDIR="${CCACHE_BASEDIR:-$PWD}"
export CCACHE_NOHASHDIR="${CCACHE_NOHASHDIR:-true}"
export CCACHE_MAXSIZE="${CCACHE_MAXSIZE:-12G}"
case "$kind" in
  release) dir=build;      args=(-DCMAKE_BUILD_TYPE=RelWithDebInfo) ;;
  asan)    dir=build-asan; args=(-DCMAKE_BUILD_TYPE=Debug -DVOLCACHE_SANITIZE=address,undefined -DVOLCACHE_BUILD_BENCH=OFF) ;;
  tsan)    dir=build-tsan; args=(-DCMAKE_BUILD_TYPE=RelWithDebInfo -DVOLCACHE_SANITIZE=thread -DVOLCACHE_BUILD_BENCH=OFF) ;;
  fuzz)    dir=build-fuzz; args=(-DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_COMPILER=clang++ -DVOLCACHE_BUILD_FUZZ=ON -DVOLCACHE_WERROR=OFF
                                 -DVOLCACHE_BUILD_TESTS=OFF -DVOLCACHE_BUILD_BENCH=OFF) ;;
  tsa)     dir=build-tsa;  args=(-DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_COMPILER=clang++ -DVOLCACHE_THREAD_SAFETY=ON
                                 -DVOLCACHE_BUILD_TESTS=OFF -DVOLCACHE_BUILD_BENCH=OFF)
           # Every library of ours (static archives: compiled, never linked).
           [ $# -gt 0 ] || set -- volcache_api volcache_binder volcache_evictor volcache_workers volcache_cache \
                                  volcache_kube volcache_session volcache_sim volcache_server volcache_app volcache_replay ;;
  *) echo "usage: $0 [release|asan|tsan|fuzz|tsa] [targets...]" >&2; exit 2 ;;
esac
# `volcache --version` names the commit it was built from ("-dirty": with uncommitted changes;
# only main.cc recompiles when it changes).
if commit=$(git rev-parse HEAD 2>/dev/null); then
  git diff-index --quiet HEAD -- 2>/dev/null || commit="$commit-dirty"
  args+=(-DVOLCACHE_COMMIT="$commit")
fi
# VOLCACHE_BUILD_DIR overrides the directory (e.g. a second checkout's work in parallel).
dir="${VOLCACHE_BUILD_DIR:-$dir}"
# Build output goes to stderr; stdout carries only the build directory (for the callers).
cmake -S . -B "$dir" -G Ninja "${args[@]}" >&2
if [ $# -gt 0 ]; then
  cmake --build "$dir" -j "$jobs" --target "$@" >&2
else
  cmake --build "$dir" -j "$jobs" >&2
fi
echo "$dir"
