#!/usr/bin/env bash
# The core's gauge (`corral bench launches`) of two builds at the same time, one pinned to each
# core, so both run at the machine's speed of that moment: these VMs drift by ±10 % within
# minutes, more than one change to the core moves the gauge, and runs one after the other
# compare the drift. Each pair swaps the cores. Run from outside the checkout (docs/performance.md,
# "Running another build's code"):
#
#   bash /path/to/scripts/gauge_pairs.sh /work/main /work/wt/b582cdd [rounds] [pairs]
#
# Prints each run's step table row (µs of master CPU per launched task: offer, accept, running,
# ack, finish, ack_finish, total), the tree's name first.
set -euo pipefail
a=$1
b=$2
rounds=${3:-20}
pairs=${4:-4}
python=${PYTHON:-$(dirname "$0")/../.venv/bin/python}
one() {
    # One thread for numba: each run stays on its own core.
    NUMBA_NUM_THREADS=1 PYTHONPATH=$1 taskset -c "$2" "$python" -c \
        "import sys; sys.argv=['corral','bench','launches','--rounds','$rounds']; from corral.cli.main import main; sys.exit(main())" \
        2>&1 | grep "│" | tail -1 | sed "s|^|$(basename "$1") |"
}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
for i in $(seq "$pairs"); do
    if [ $((i % 2)) = 1 ]; then ca=0 cb=1; else ca=1 cb=0; fi
    one "$a" "$ca" >"$out/a" &
    one "$b" "$cb" >"$out/b"
    wait
    cat "$out/a" "$out/b"
done
