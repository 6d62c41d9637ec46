#!/usr/bin/env bash
# Prints, one per line, the Debian packages a container image needs to run BINARY: the owners
# of the shared libraries it loads (ldd; the loader and libc included) and ca-certificates.
# Used by scripts/image.sh and the Dockerfile, so both images hold the same packages.
set -euo pipefail
binary="${1:?usage: $0 BINARY}"
{
  echo ca-certificates
  ldd "$binary" | awk '/=>/ {print $3} /^[[:space:]]*\/.*ld-linux/ {print $1}' | sort -u | while read -r lib; do
    pkg=$(dpkg -S "$lib" 2>/dev/null || dpkg -S "$(realpath "$lib")" 2>/dev/null || true)
    pkg=${pkg%%:*}
    [ -n "$pkg" ] || { echo "image-packages: no Debian package owns $lib" >&2; exit 1; }
    echo "$pkg"
  done
} | sort -u
