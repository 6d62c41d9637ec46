#!/usr/bin/env bash
# Builds the volcache container image offline, from Debian 12 packages only (no registry, no
# base image): a root file system made by mmdebstrap from Debian's archive holding only the
# packages of the shared libraries the volcache binary links (scripts/image-packages.sh) and
# ca-certificates, plus the stripped binary, a non-root user (65532) and the image config.
#
# Usage: scripts/image.sh [--binary PATH] [--out DIR]
#   --binary PATH  the volcache executable to ship (default: scripts/build.sh release volcache)
#   --out DIR      output directory (default: build-image)
# Output:
#   DIR/oci                        OCI image layout, tag <version> (umoci, skopeo, podman)
#   DIR/volcache-<version>.tar     docker-archive of volcache:<version> (podman/docker load)
# and one line on stdout: the image's name, its size compressed and unpacked.
set -euo pipefail
cd "$(dirname "$0")/.."
binary="" out="build-image"
while [ $# -gt 0 ]; do
  case "$1" in
    --binary) binary="$2"; shift 2 ;;
    --out) out="$2"; shift 2 ;;
    *) echo "usage: $0 [--binary PATH] [--out DIR]" >&2; exit 2 ;;
  esac
done
./scripts/setup.sh >&2
if [ -z "$binary" ]; then binary="$(./scripts/build.sh release volcache)/cmd/volcache"; fi
[ -x "$binary" ] || { echo "image: $binary: not an executable" >&2; exit 1; }
if [ "$(id -u)" -ne 0 ]; then echo "image: needs root (mmdebstrap, file ownership in the layer)" >&2; exit 1; fi

version=$(sed -n 's/^project(volcache VERSION \([0-9.]*\).*/\1/p' CMakeLists.txt)
# The commit the binary says it was built from (scripts/build.sh compiles it in).
commit=$("$binary" --version | sed -n 's/.*(commit \([^)]*\)).*/\1/p')
[ -n "$commit" ] || commit=unknown
image="volcache:$version"

mapfile -t packages < <(./scripts/image-packages.sh "$binary")
echo "image: packages: ${packages[*]}" >&2

mkdir -p "$out"
out=$(realpath "$out")
rm -rf "$out/oci" "$out/volcache-$version.tar"
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
# Root file system: the packages extracted (no maintainer scripts, no dpkg, no shell), then
# what their scripts would have made that we need: the CA bundle; then our binary and user.
# Documentation goes, except each package's copyright file (the licenses of what ships).
mmdebstrap --quiet --variant=extract --include="$(IFS=,; echo "${packages[*]}")" bookworm "$stage/base.tar" >&2
root="$stage/rootfs"
mkdir "$root"
tar -C "$root" --numeric-owner -xpf "$stage/base.tar"
mkdir -p "$root/etc/ssl/certs"
cat "$root"/usr/share/ca-certificates/*/*.crt > "$root/etc/ssl/certs/ca-certificates.crt"
find "$root/usr/share/doc" -type f ! -name copyright -delete
rm -rf "$root/usr/share/man" "$root/usr/share/info" "$root/usr/share/lintian" "$root/usr/share/locale" \
       "$root/var/cache/apt" "$root/var/lib/apt/lists"
install -D -m 0755 "$binary" "$root/usr/bin/volcache"
strip --strip-unneeded "$root/usr/bin/volcache"
printf 'root:x:0:0:root:/root:/usr/sbin/nologin\nnonroot:x:65532:65532:nonroot:/home/nonroot:/usr/sbin/nologin\n' \
  > "$root/etc/passwd"
printf 'root:x:0:\nnonroot:x:65532:\n' > "$root/etc/group"
mkdir -p "$root/home/nonroot" "$root/tmp"
chown 65532:65532 "$root/home/nonroot"
chmod 1777 "$root/tmp"

# The image: one layer from the root file system, and its config.
umoci init --layout "$out/oci"
umoci new --image "$out/oci:$version"
umoci insert --image "$out/oci:$version" --history.created_by "scripts/image.sh (mmdebstrap bookworm: ${packages[*]})" \
  "$root" /
created=$(git log -1 --format=%cI 2>/dev/null || date -u +%Y-%m-%dT%H:%M:%SZ)
umoci config --image "$out/oci:$version" --os linux --architecture amd64 \
  --config.user 65532:65532 --config.workingdir /home/nonroot \
  --config.entrypoint /usr/bin/volcache --config.cmd serve --config.exposedports 8080/tcp \
  --config.env PATH=/usr/bin:/bin --config.env SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt \
  --config.label org.opencontainers.image.title=volcache \
  --config.label org.opencontainers.image.description="Volcano-style batch scheduler cache and scheduler" \
  --config.label org.opencontainers.image.version="$version" \
  --config.label org.opencontainers.image.revision="$commit" \
  --config.label org.opencontainers.image.created="$created" \
  --config.label org.opencontainers.image.licenses=NOASSERTION \
  --config.label org.opencontainers.image.base.name="debian:bookworm (mmdebstrap --variant=extract)"
umoci gc --layout "$out/oci"
skopeo copy --quiet "oci:$out/oci:$version" "docker-archive:$out/volcache-$version.tar:$image" >&2

compressed=$(du -cb "$out"/oci/blobs/sha256/* | tail -1 | cut -f1)
unpacked=$(du -sb "$root" | cut -f1)
echo "$image: $((compressed / 1000000)) MB compressed (OCI layout $out/oci), $((unpacked / 1000000)) MB unpacked; $out/volcache-$version.tar"
