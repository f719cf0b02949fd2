#!/usr/bin/env bash
# Build the local ZooKeeper image (docker/zookeeper) for the Compose file's `ha` profile.
#
# Why: the profile's default image, Docker Hub's zookeeper:3.8, cannot be pulled where no image
# registry is reachable. This one is Debian's ZooKeeper 3.8 on the local base image; the
# profile runs it with CORRAL_ZOOKEEPER_IMAGE set to its name (docs/docker.md).
#
# Usage: scripts/build_zookeeper_image.sh [IMAGE]   (default corral-zookeeper:bookworm)
# Env:   BASE_IMAGE (default $CORRAL_BASE_IMAGE, else corral-base:bookworm: see
#        scripts/build_base_image.sh); FORCE=1 rebuilds even if the image exists.
set -euo pipefail

cd "$(dirname "$0")/.."
IMAGE=${1:-corral-zookeeper:bookworm}
BASE=${BASE_IMAGE:-${CORRAL_BASE_IMAGE:-corral-base:bookworm}}

log() { echo "build_zookeeper_image: $*" >&2; }

if [ "${FORCE:-0}" != 1 ] && docker image inspect "$IMAGE" >/dev/null 2>&1; then
    log "$IMAGE already exists (FORCE=1 to rebuild)"
    exit 0
fi
docker image inspect "$BASE" >/dev/null 2>&1 \
    || { log "ERROR: base image $BASE missing (scripts/build_base_image.sh builds it)"; exit 1; }

log "building $IMAGE from $BASE (apt-get in the build, with the host's network)"
build_log=$(mktemp /tmp/corral-zookeeper-image.XXXXXX.log)
# --network host: apt inside the build reaches the mirror the way the host does.
if ! docker build --network host --build-arg "BASE_IMAGE=$BASE" -t "$IMAGE" docker/zookeeper \
    >"$build_log" 2>&1; then
    tail -n 30 "$build_log" >&2
    log "ERROR: docker build failed (full log: $build_log)"
    exit 1
fi
rm -f "$build_log"
log "done: $(docker image inspect "$IMAGE" --format '{{.Id}} {{.Size}}')"
