# syntax=docker/dockerfile:1
#
# mediagen-emulator container image: a static Go binary on an empty (scratch) base.
#
#   docker build -t mediagen-emulator .
#   docker build --build-arg VERSION=1.2.3 -t mediagen-emulator:1.2.3 .
#   docker run --rm -p 8080:8080 mediagen-emulator
#
# Inside the container the emulator listens on 0.0.0.0:8080 (MEDIAGEN_ADDR). Because that is not
# a loopback address, the control API under /_emulator/ (reset, clock, scenario, faults, accounts,
# ...) is DISABLED unless an admin token is set; only GET /_emulator/health stays open (it is what
# the HEALTHCHECK uses). To enable the control API, set a token and send it as the
# X-Emulator-Admin-Token header:
#
#   docker run --rm -p 8080:8080 -e MEDIAGEN_ADMIN_TOKEN=change-me mediagen-emulator
#   curl -H 'X-Emulator-Admin-Token: change-me' -X POST http://127.0.0.1:8080/_emulator/reset
#
# Every flag can be given as an argument (docker run IMAGE --seed 42 --clock manual) or as a
# MEDIAGEN_<FLAG> environment variable (-e MEDIAGEN_SEED=42); flags win.
#
# Targets:
#   (default)           multi-stage build: compiles in docker.io/library/golang:1.26-bookworm,
#                       ships FROM scratch.
#   --target prebuilt   for CI machines that cannot pull a golang image: copies a binary that was
#                       built on the host. The build context must then be a directory holding
#                       `mediagen-emulator` (CGO_ENABLED=0, linux, the target's architecture) and
#                       `passwd` (one line: nonroot:x:65532:65532:nonroot:/nonexistent:/sbin/nologin).
#                       scripts/image-test does exactly this.

ARG VERSION=dev

# ---------------------------------------------------------------------------------------------
# Build stage. Runs on the build machine's platform and cross-compiles for the target platform,
# so a multi-arch build needs no emulation for the compiler.
# Fully qualified, so podman and buildah resolve it without a short-name alias.
FROM --platform=$BUILDPLATFORM docker.io/library/golang:1.26-bookworm AS build
WORKDIR /src
ENV CGO_ENABLED=0 GOFLAGS=-buildvcs=false

# Modules first, as their own layer: it is reused until go.mod or go.sum change.
COPY go.mod go.sum ./
RUN go mod download

COPY . .
ARG VERSION
ARG TARGETOS
ARG TARGETARCH
RUN GOOS=${TARGETOS:-linux} GOARCH=${TARGETARCH} go build -trimpath \
        -ldflags "-s -w -X github.com/mediagen/mediagen-emulator/emulator.Version=${VERSION}" \
        -o /out/mediagen-emulator . \
 && echo 'nonroot:x:65532:65532:nonroot:/nonexistent:/sbin/nologin' > /out/passwd

# ---------------------------------------------------------------------------------------------
# Runtime settings shared by both final targets.
FROM scratch AS runtime
ARG VERSION
# The release workflow's metadata-action overrides these labels from the GitHub repository.
LABEL org.opencontainers.image.title="mediagen-emulator" \
      org.opencontainers.image.description="Emulator of the hosted Media Generation Service for client tests" \
      org.opencontainers.image.source="https://github.com/mediagen/mediagen-emulator" \
      org.opencontainers.image.licenses="Apache-2.0" \
      org.opencontainers.image.version="${VERSION}"
# 0.0.0.0 is not loopback: the control API is off unless MEDIAGEN_ADMIN_TOKEN is set (see above).
ENV MEDIAGEN_ADDR=0.0.0.0:8080
EXPOSE 8080
USER 65532:65532
# `healthcheck` reads MEDIAGEN_ADDR and dials 127.0.0.1 when the host is 0.0.0.0.
HEALTHCHECK --interval=5s --timeout=3s --start-period=2s --retries=3 \
    CMD ["/mediagen-emulator", "healthcheck"]
ENTRYPOINT ["/mediagen-emulator"]

# ---------------------------------------------------------------------------------------------
# CI-only target: a host-built static binary from the build context (see the header).
FROM runtime AS prebuilt
COPY passwd /etc/passwd
COPY mediagen-emulator /mediagen-emulator

# ---------------------------------------------------------------------------------------------
# Default target.
FROM runtime
COPY --from=build /out/passwd /etc/passwd
COPY --from=build /out/mediagen-emulator /mediagen-emulator
