"""Running the real `corral` command from a test, as a user's shell would."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Mapping


def corral(
    *args: str,
    timeout: float = 60,
    columns: int | None = None,
    env_extra: Mapping[str, str] | None = None,
) -> subprocess.CompletedProcess[str]:
    """`corral ARGS`, piped (as `corral get ... | grep` is), its output captured as text.
    ``columns``: the terminal width rich is told (COLUMNS); None leaves what a pipe gets.
    ``env_extra``: variables set for this run only."""
    env = {**os.environ, **(env_extra or {})}
    if columns is not None:
        env["COLUMNS"] = str(columns)
    return subprocess.run(
        [sys.executable, "-m", "corral.cli.main", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
        env=env,
    )
