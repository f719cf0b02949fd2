"""Checkpoints and the result file in the gang's shared directory, written atomically (a
temp file, then ``os.replace``), so a worker killed mid-write leaves the previous version."""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any

CHECKPOINT = "checkpoint.json"
RESULT = "result.json"


def write_json(path: Path, data: dict[str, Any]) -> None:
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "w") as f:
            json.dump(data, f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def read_json(path: Path) -> dict[str, Any] | None:
    """The file's object, or None if there is none (a first run)."""
    try:
        data = json.loads(path.read_text())
    except FileNotFoundError:
        return None
    if not isinstance(data, dict):
        raise ValueError(f"{path} does not hold a JSON object")
    return data


def save(directory: Path, step: int, weights: list[float], loss: float) -> None:
    write_json(directory / CHECKPOINT, {"step": step, "weights": weights, "loss": loss})


def load(directory: Path) -> tuple[int, list[float], float] | None:
    """(step, weights, loss) of the last checkpoint, or None."""
    data = read_json(directory / CHECKPOINT)
    if data is None:
        return None
    return int(data["step"]), [float(v) for v in data["weights"]], float(data["loss"])
