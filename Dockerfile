# syntax=docker/dockerfile:1
# The atoll image, one for both deployables (manifests/hub, manifests/agent and the charts choose
# the binary with `command`):
#   hub-controller  the hub on a Kubernetes cluster
#   work-agent      a member cluster's agent
#   atoll           the CLI, and `atoll apiserver` for the hub's Process-mode hosted clusters
#
#   docker build -t ghcr.io/atoll-dev/atoll:0.1.0 .
#
# tests/packages.rs checks this file against the workspace: the binaries copied are its binary
# targets, the runtime user is not root, and the ports exposed are those the binaries listen on
# by default.

ARG RUST_VERSION=1.95

# Build: the release binaries, with the locked dependencies. The hub-agent gRPC code is committed;
# protoc is there for the etcd client's generated code (the API server's etcd storage, the `etcd`
# feature, which the image has).
FROM docker.io/library/rust:${RUST_VERSION}-slim-bookworm AS builder
RUN apt-get update \
    && apt-get install -y --no-install-recommends protobuf-compiler \
    && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY . .
RUN --mount=type=cache,target=/usr/local/cargo/registry \
    --mount=type=cache,target=/src/target \
    cargo build --release --locked --features atoll/etcd --bin hub-controller --bin work-agent --bin atoll \
    && mkdir -p /out \
    && cp target/release/hub-controller target/release/work-agent target/release/atoll /out/

# Run: glibc and libgcc only (the binaries link nothing else: TLS is rustls, SQLite is bundled),
# no shell, no package manager.
FROM gcr.io/distroless/cc-debian12:nonroot
COPY --from=builder /out/hub-controller /out/work-agent /out/atoll /usr/local/bin/
# distroless's `nonroot`; the manifests also set runAsNonRoot and a read-only root filesystem.
USER 65532:65532
# hub-controller: 9443 gRPC for agents, 8081 /livez /readyz /metrics; work-agent: 8082 /livez
# /readyz /metrics. Both listen on 127.0.0.1 unless told otherwise (the manifests say 0.0.0.0).
EXPOSE 9443 8081 8082
CMD ["hub-controller"]
