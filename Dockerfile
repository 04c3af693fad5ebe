# streamreg: the server, the CLI and the robot simulator in a slim Debian
# image, with Debian's nats-server for cluster mode's NATS nodes
# (deploy/cluster/compose.yaml). Build: `docker build -t streamreg .` (or `podman build`; see
# deploy/check-image.sh for a build with no registry). Run:
#   docker run -p 50051:50051 -v streamreg-data:/var/lib/streamreg streamreg
# Every dependency comes from Debian's packages, as on a development machine.

# --- build: the toolchain and -dev packages, a Release build --------------
FROM debian:bookworm AS build
WORKDIR /src
COPY deploy/install-deps.sh deploy/install-deps.sh
RUN ./deploy/install-deps.sh --build-only && rm -rf /var/lib/apt/lists/*
COPY . .
RUN cmake -S . -B /build -G Ninja -DCMAKE_BUILD_TYPE=Release \
      -DBUILD_TESTING=OFF -DSTREAMREG_BUILD_BENCH=OFF \
      -DCMAKE_INSTALL_PREFIX=/opt/streamreg \
 && cmake --build /build --target streamreg-server streamreg streamreg-robot-sim \
 && cmake --install /build --strip

# --- runtime: the shared libraries the binaries link, nothing else ---------
FROM debian:bookworm-slim AS runtime
ARG VERSION=0.1.0
LABEL org.opencontainers.image.title="streamreg" \
      org.opencontainers.image.description="Online streaming regression over gRPC: gradient-weight and EGOP metrics, cover-tree k-NN and kernel regression" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.licenses="Apache-2.0" \
      org.opencontainers.image.base.name="debian:bookworm-slim"
RUN apt-get update -qq \
 && apt-get install -y -qq --no-install-recommends \
      libgrpc++1.51 libgrpc29 libprotobuf32 libabsl20220623 libspdlog1.10 \
      libfmt9 liborocos-kdl1.5 libc-ares2 libre2-9 libssl3 zlib1g \
      libcpp-httplib0.11 libnats3.4 nats-server \
 && rm -rf /var/lib/apt/lists/* \
 && groupadd --system --gid 10001 streamreg \
 && useradd --system --uid 10001 --gid streamreg --home-dir /var/lib/streamreg \
      --shell /usr/sbin/nologin streamreg \
 && install -d -o streamreg -g streamreg -m 0750 /var/lib/streamreg \
 && install -d -o streamreg -g streamreg -m 0750 /run/streamreg
# Numeric, so Kubernetes can verify runAsNonRoot.
USER 10001:10001
VOLUME ["/var/lib/streamreg"]
# gRPC (RegressionService, health, reflection); Prometheus metrics.
EXPOSE 50051 9464
STOPSIGNAL SIGTERM
HEALTHCHECK --interval=10s --timeout=3s --start-period=30s --retries=3 \
  CMD ["streamreg", "--server", "127.0.0.1:50051", "--timeout", "2s", "health"]
ENTRYPOINT ["streamreg-server", "--data-dir", "/var/lib/streamreg"]
CMD ["--listen", "0.0.0.0:50051", "--metrics-listen", "0.0.0.0:9464"]

# --- the image: the runtime with the programs built above ------------------
# (deploy/check-image.sh --prebuilt puts a host build's programs on the
# runtime stage instead.)
FROM runtime
COPY --from=build /opt/streamreg/bin/ /usr/local/bin/
