#!/usr/bin/env bash
# Build wheels for Corral and all its runtime dependencies into build/wheelhouse on the host.
#
# Why: containers reach the package index only with host networking and the host's CA bundle;
# installing from a folder of wheels copied into the build context (pip --no-index) keeps the
# image build offline and reproducible. Host Python must match the image's (3.11 here).
#
# Output: build/wheelhouse holds the dependencies' wheels, build/dist Corral's own wheel. They are
# apart so the image's dependency layer stays cached while only Corral's code changes.
#
# Usage: scripts/build_wheelhouse.sh
# Env:   PYTHON (default: .venv/bin/python if present, else python3)
set -euo pipefail

cd "$(dirname "$0")/.."
OUT=build/wheelhouse
DIST=build/dist
if [ -z "${PYTHON:-}" ]; then
    if [ -x .venv/bin/python ]; then PYTHON=.venv/bin/python; else PYTHON=python3; fi
fi

log() { echo "build_wheelhouse: $*" >&2; }

ver=$("$PYTHON" -c 'import sys; print("%d.%d" % sys.version_info[:2])')
[ "$ver" = "3.11" ] || log "WARNING: host Python is $ver; the image's is 3.11, binary wheels may not fit"

# Start empty so no stale version lingers (pip's own cache keeps this fast).
rm -rf "$OUT" "$DIST"
mkdir -p "$OUT" "$DIST"
log "pip wheel .[server] -> $OUT"
pip_log=$(mktemp /tmp/corral-wheelhouse.XXXXXX.log)
if ! "$PYTHON" -m pip wheel --disable-pip-version-check --wheel-dir "$OUT" ".[server]" >"$pip_log" 2>&1; then
    tail -n 40 "$pip_log" >&2
    log "ERROR: pip wheel failed (full log: $pip_log)"
    exit 1
fi
rm -f "$pip_log"
# pip wheel leaves the in-tree build folder behind; it would be copied into the next image.
rm -rf build/lib build/bdist.* ./*.egg-info/SOURCES.txt.bak 2>/dev/null || true
mv "$OUT"/corral-*.whl "$DIST"/
count=$(find "$OUT" -name '*.whl' | wc -l)
log "done: $(basename "$DIST"/corral-*.whl) + $count dependency wheels, $(du -sh "$OUT" | cut -f1)"
