#!/usr/bin/env bash
# Runs the Testcontainers recipes for Go and Node on a machine without Docker: builds the image
# from a host-built binary (the Dockerfile's prebuilt target) with buildah, serves podman's
# Docker API on a socket in a temporary folder, points Testcontainers at it, and removes
# everything afterwards.
#
#   bash examples/testcontainers/run-podman.sh
#
# Needs root (or buildah, podman and runc installed), go, node 20+ with npm, and the Go module
# proxy and npm registry for the libraries. No image is pulled: the Testcontainers reaper is
# off, since its image would be. The Python recipe needs the testcontainers package from the
# Python package index and is not run here.
set -euo pipefail
export LC_NUMERIC=C

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
began=$EPOCHREALTIME
for t in buildah podman runc; do
  command -v "$t" >/dev/null 2>&1 || {
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq buildah podman runc >/dev/null
    break
  }
done

tmp=$(mktemp -d "${TMPDIR:-/tmp}/mediagen-testcontainers-XXXXXX")
image=localhost/mediagen-emulator:testcontainers-$$
service=
cleanup() {
  local rc=$?
  set +e
  [[ -n $service ]] && kill "$service" 2>/dev/null && wait "$service" 2>/dev/null
  podman rm -a -f -t 1 >/dev/null 2>&1
  podman rmi -f "$image" >/dev/null 2>&1
  podman system prune --all --force >/dev/null 2>&1
  findmnt -rn -o TARGET 2>/dev/null | grep -F "$tmp/" | sort -r | while read -r m; do
    umount "$m" 2>/dev/null || umount -l "$m" 2>/dev/null
  done
  rm -rf "$tmp"
  exit "$rc"
}
trap cleanup EXIT

cat >"$tmp/storage.conf" <<EOF
[storage]
driver = "overlay"
graphroot = "$tmp/storage"
runroot = "$tmp/run"
EOF
# Bridge networking (no netns = "host"): Testcontainers publishes the port on a random host port.
cat >"$tmp/containers.conf" <<EOF
[containers]
default_ulimits = ["nofile=20000:20000", "nproc=32768:32768"]

[engine]
runtime = "runc"
cgroup_manager = "cgroupfs"
events_logger = "none"
tmp_dir = "$tmp/engine"

[network]
network_config_dir = "$tmp/networks"
EOF
export CONTAINERS_STORAGE_CONF=$tmp/storage.conf CONTAINERS_CONF=$tmp/containers.conf

echo "==> the image, from a host-built binary"
mkdir "$tmp/context"
(cd "$repo" && CGO_ENABLED=0 GOOS=linux go build -trimpath -ldflags '-s -w' -o "$tmp/context/mediagen-emulator" .)
echo 'nonroot:x:65532:65532:nonroot:/nonexistent:/sbin/nologin' >"$tmp/context/passwd"
buildah bud --isolation chroot --pull=never --format docker --quiet --target prebuilt \
  --build-arg TARGETOS=linux --build-arg "TARGETARCH=$(go env GOARCH)" \
  -f "$repo/Dockerfile" -t "$image" "$tmp/context" >/dev/null

echo "==> podman's Docker API"
podman system service --time=0 "unix://$tmp/podman.sock" >"$tmp/service.log" 2>&1 &
service=$!
for _ in $(seq 100); do
  curl -fs --unix-socket "$tmp/podman.sock" http://d/_ping >/dev/null 2>&1 && break
  sleep 0.1
done
export DOCKER_HOST=unix://$tmp/podman.sock TESTCONTAINERS_RYUK_DISABLED=true MEDIAGEN_IMAGE=$image

echo "==> Go: examples/testcontainers/go"
(cd "$repo/examples/testcontainers/go" && go test -count=1 ./...)

echo "==> Node: examples/testcontainers/node"
node_dir=$repo/examples/testcontainers/node
(cd "$node_dir" && npm ci --no-audit --no-fund --loglevel=error)
tgz=$(cd "$repo/clients/node" && npm pack --silent --pack-destination "$tmp")
rm -rf "$node_dir/node_modules/@mediagen/emulator-testing"
mkdir -p "$node_dir/node_modules/@mediagen/emulator-testing"
tar -xzf "$tmp/$tgz" -C "$node_dir/node_modules/@mediagen/emulator-testing" --strip-components=1
(cd "$node_dir" && node --test)

awk -v a="$began" -v b="$EPOCHREALTIME" 'BEGIN { printf "\n==> testcontainers recipes passed in %.1fs\n", b - a }'
