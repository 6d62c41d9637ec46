#!/usr/bin/env bash
# Installs every Debian package volcache needs to build, test and run.
# Only Debian's archive is used: nothing is downloaded from anywhere else.
set -euo pipefail

PACKAGES=(
  build-essential cmake ninja-build pkg-config ccache git
  lld                                 # LLVM linker: links the test binaries ~4x faster (CMakeLists.txt VOLCACHE_LINKER)
  clang libclang-rt-14-dev            # libFuzzer + sanitizer runtimes; -Wthread-safety (build.sh tsa)
  clang-format                        # scripts/check-format.sh
  libboost-dev libboost-system-dev    # Boost.Asio (1.74)
  libcpp-httplib-dev libssl-dev zlib1g-dev libbrotli-dev
  libcurl4-openssl-dev                # kube/rest_client.cc: watch streams (RestClient::Stream)
  nlohmann-json3-dev libyaml-cpp-dev
  libspdlog-dev libfmt-dev
  libgoogle-perftools-dev             # cmake/Malloc.cmake: tcmalloc_minimal, the executables' allocator (VOLCACHE_MALLOC)
  libgtest-dev libgmock-dev libbenchmark-dev
  libcli11-dev
  libre2-dev                          # cache/hypernode_forest.cc: HyperNode regexMatch (RE2, as Volcano's Go regexp)
  prometheus-cpp-dev                  # server/metrics.h: prometheus-cpp core (Registry, TextSerializer)
  python3-prometheus-client           # tests/server/parse_metrics.py: parses the served /metrics
  etcd-server xz-utils curl openssl   # tests/integration: ../shared/tools/kube-apiserver
  mmdebstrap umoci skopeo             # scripts/image.sh: the container image from Debian's archive
)

missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "setup: all ${#PACKAGES[@]} packages already installed"
  exit 0
fi

SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
echo "setup: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
