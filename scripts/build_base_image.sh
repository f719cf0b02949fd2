#!/usr/bin/env bash
# Build a minimal Debian bookworm + python3 image locally and import it into Docker.
#
# Why: no image registry is reachable from these machines, so `FROM python:3.11-slim` cannot be
# pulled. Bookworm's python3 is 3.11, the same as the host, so wheels built on the host fit.
# The Dockerfile takes this image through its BASE_IMAGE build argument.
#
# Usage: scripts/build_base_image.sh [IMAGE]   (default corral-base:bookworm)
# Env:   FORCE=1 rebuilds even if the image exists; DEBIAN_MIRROR overrides the mirror.
set -euo pipefail

IMAGE=${1:-corral-base:bookworm}
MIRROR=${DEBIAN_MIRROR:-http://deb.debian.org/debian}

log() { echo "build_base_image: $*" >&2; }

if [ "${FORCE:-0}" != 1 ] && docker image inspect "$IMAGE" >/dev/null 2>&1; then
    log "$IMAGE already exists (FORCE=1 to rebuild)"
    exit 0
fi
command -v debootstrap >/dev/null 2>&1 || { log "ERROR: debootstrap missing (run scripts/ensure_docker.sh)"; exit 1; }

root=$(mktemp -d /tmp/corral-rootfs.XXXXXX)
trap 'rm -rf "$root"' EXIT

log "debootstrap bookworm into $root (about a minute)"
debootstrap --variant=minbase \
    --include=python3,python3-venv,python3-pip,ca-certificates \
    bookworm "$root" "$MIRROR" >"$root.log" 2>&1 || {
    tail -n 30 "$root.log" >&2
    log "ERROR: debootstrap failed (full log: $root.log)"
    exit 1
}
rm -f "$root.log"

# Slim it: package lists, docs and caches are not needed at run time.
rm -rf "$root"/var/lib/apt/lists/* "$root"/var/cache/apt/*.bin "$root"/var/cache/apt/archives/*.deb \
    "$root"/usr/share/doc/* "$root"/usr/share/man/* "$root"/usr/share/info/* "$root"/usr/share/locale/*

log "importing as $IMAGE"
tar -C "$root" -c . | docker import \
    --change 'ENV LANG=C.UTF-8' \
    --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
    --change 'CMD ["python3"]' \
    - "$IMAGE" >/dev/null
log "done: $(docker image inspect "$IMAGE" --format '{{.Id}} {{.Size}}')"
