# The volcache image for users who build with Docker or Podman from a registry's Debian image.
# It produces the layout scripts/image.sh builds offline (the tested path, docs/ADMIN.md): the
# runtime libraries' Debian packages (scripts/image-packages.sh) and ca-certificates, the
# stripped binary at /usr/bin/volcache, user 65532, entrypoint volcache, default `serve`,
# port 8080.
#   docker build -t volcache:0.1.0 .
FROM debian:bookworm AS build
WORKDIR /src
COPY . .
RUN ./scripts/setup.sh \
 && cmake -S . -B /build -G Ninja -DCMAKE_BUILD_TYPE=Release -DVOLCACHE_BUILD_TESTS=OFF \
          -DVOLCACHE_BUILD_BENCH=OFF -DVOLCACHE_COMMIT="$(git rev-parse HEAD 2>/dev/null || true)" \
 && cmake --build /build --target volcache \
 && install -D -m 0755 /build/cmd/volcache /out/usr/bin/volcache \
 && strip --strip-unneeded /out/usr/bin/volcache \
 && ./scripts/image-packages.sh /build/cmd/volcache > /out/packages

FROM debian:bookworm-slim
COPY --from=build /out/packages /tmp/packages
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends $(cat /tmp/packages) \
 && rm -rf /var/lib/apt/lists/* /tmp/packages \
 && groupadd --gid 65532 nonroot \
 && useradd --uid 65532 --gid 65532 --home-dir /home/nonroot --create-home --shell /usr/sbin/nologin nonroot
COPY --from=build /out/usr/bin/volcache /usr/bin/volcache
ARG VERSION=0.1.0
LABEL org.opencontainers.image.title=volcache \
      org.opencontainers.image.version=$VERSION \
      org.opencontainers.image.licenses=NOASSERTION
USER 65532:65532
WORKDIR /home/nonroot
EXPOSE 8080
ENTRYPOINT ["/usr/bin/volcache"]
CMD ["serve"]
