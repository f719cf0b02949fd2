#!/usr/bin/env bash
# Make sure a Docker engine answers and a compose tool exists, installing Debian's packages
# when missing. Safe to run again: each step is skipped when already done.
#
# Why: CI runs on a fresh machine with no engine; Debian's docker.io and docker-compose (v1) are
# the only sources reachable here (no registry, no get.docker.com).
#
# `--packages-only`: install what is missing and start no engine (what `.ci/run` does before
# the tests, so the compose file checks find a compose tool; the smoke test starts the engine).
#
# Env: DOCKERD_LOG (default /var/log/corral-dockerd.log), DOCKER_WAIT_SECONDS (default 60).
set -euo pipefail

packages_only=0
case "${1:-}" in
    "") ;;
    --packages-only) packages_only=1 ;;
    *) echo "usage: $0 [--packages-only]" >&2; exit 2 ;;
esac

log() { echo "ensure_docker: $*" >&2; }
die() { log "ERROR: $*"; exit 1; }

DOCKERD_LOG=${DOCKERD_LOG:-/var/log/corral-dockerd.log}
DOCKER_WAIT_SECONDS=${DOCKER_WAIT_SECONDS:-60}

as_root() {
    if [ "$(id -u)" -eq 0 ]; then "$@"; elif command -v sudo >/dev/null; then sudo "$@"; else
        die "need root (or sudo) to run: $*"
    fi
}

engine_answers() { timeout 10 docker info >/dev/null 2>&1; }

# 1. Packages. docker.io brings dockerd + containerd + runc; docker-compose is v1.29 (python);
#    debootstrap builds the local base image since no registry is reachable.
missing=()
command -v dockerd >/dev/null 2>&1 || missing+=(docker.io)
command -v docker >/dev/null 2>&1 || missing+=(docker.io)
command -v docker-compose >/dev/null 2>&1 || docker compose version >/dev/null 2>&1 \
    || missing+=(docker-compose)
command -v debootstrap >/dev/null 2>&1 || missing+=(debootstrap)
if [ "${#missing[@]}" -gt 0 ]; then
    # Deduplicate (docker.io can be listed twice).
    mapfile -t pkgs < <(printf '%s\n' "${missing[@]}" | sort -u)
    command -v apt-get >/dev/null 2>&1 || die "missing ${pkgs[*]} and no apt-get to install them"
    log "installing ${pkgs[*]} (apt-get)"
    as_root env DEBIAN_FRONTEND=noninteractive apt-get update -qq
    as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
        "${pkgs[@]}" >/dev/null
fi

[ "$packages_only" = 0 ] || exit 0

# 2. Engine. If nothing answers, start dockerd in the background (no systemd on these machines).
if engine_answers; then
    log "docker engine already running"
    exit 0
fi
if ! pgrep -x dockerd >/dev/null 2>&1; then
    log "starting dockerd (log: $DOCKERD_LOG)"
    # containerd is started by dockerd itself when not running as a service.
    as_root bash -c "nohup setsid dockerd >>'$DOCKERD_LOG' 2>&1 </dev/null &"
else
    log "dockerd process exists but does not answer yet; waiting"
fi

deadline=$((SECONDS + DOCKER_WAIT_SECONDS))
until engine_answers; do
    if [ "$SECONDS" -ge "$deadline" ]; then
        tail -n 30 "$DOCKERD_LOG" >&2 2>/dev/null || true
        die "docker engine did not answer within ${DOCKER_WAIT_SECONDS}s (see $DOCKERD_LOG)"
    fi
    sleep 1
done
log "docker engine ready ($(docker info --format '{{.ServerVersion}} {{.Driver}}' 2>/dev/null))"
