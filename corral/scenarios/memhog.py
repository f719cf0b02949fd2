"""A task that holds real memory: ``python -m corral.scenarios.memhog --mib N``.

It allocates N MiB (touching every page, so the kernel really backs them), over ``--ramp``
seconds if given, then sleeps for ``--seconds`` (default: an hour) or until killed. The
scenarios and the tests run it as the task whose memory the agent measures, limits and evicts:
with an agent whose ``mem`` is far below the machine's, pressure is safe to cause on a shared
machine. ``--step-mib`` and ``--step-after`` grow it once more later (a serving instance whose
traffic rises); ``--step-file PATH`` instead grows it once PATH exists (a test decides when).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

PAGE = 4096
MIB = 1024 * 1024


def _touch(block: bytearray) -> None:
    for i in range(0, len(block), PAGE):
        block[i] = 1


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="memhog", description=__doc__)
    p.add_argument("--mib", type=float, required=True, help="MiB to hold")
    p.add_argument("--ramp", type=float, default=0.0, help="seconds to reach it (default 0)")
    p.add_argument("--seconds", type=float, default=3600.0, help="then sleep this long")
    p.add_argument("--step-mib", type=float, default=0.0, help="MiB more, later")
    p.add_argument("--step-after", type=float, default=0.0, help="seconds before the step")
    p.add_argument("--step-file", type=Path, help="take the step once this file exists")
    args = p.parse_args(argv)
    held: list[bytearray] = []
    chunks = max(1, int(args.ramp * 10)) if args.ramp > 0 else 1
    per = int(args.mib * MIB / chunks)
    for _ in range(chunks):
        block = bytearray(per)
        _touch(block)
        held.append(block)
        if args.ramp > 0:
            time.sleep(args.ramp / chunks)
    print(f"holding {args.mib:g} MiB", flush=True)
    if args.step_mib > 0:
        time.sleep(args.step_after)
        while args.step_file is not None and not args.step_file.exists():
            time.sleep(0.1)
        block = bytearray(int(args.step_mib * MIB))
        _touch(block)
        held.append(block)
        print(f"holding {args.mib + args.step_mib:g} MiB", flush=True)
    time.sleep(args.seconds)
    return 0


if __name__ == "__main__":
    sys.exit(main())
