"""The cores are sans-IO: no module in them imports IO or clocks (docs/architecture.md)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
FORBIDDEN = {"asyncio", "grpc", "aiohttp", "time", "random", "socket", "subprocess", "threading"}
SANS_IO = ["master/core", "master/allocator", "agent/core"]


def _imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(), filename=str(path))
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module.split(".")[0])
    return names


@pytest.mark.parametrize("package", SANS_IO)
def test_core_imports_no_io(package: str) -> None:
    files = sorted((ROOT / package).rglob("*.py"))
    assert files, f"{package} has no modules"
    offenders = {
        str(f.relative_to(ROOT)): sorted(_imports(f) & FORBIDDEN)
        for f in files
        if _imports(f) & FORBIDDEN and f.name != "bench.py"
    }
    assert offenders == {}, f"IO imported in a sans-IO core: {offenders}"


def test_sdk_uses_only_the_wire_contract() -> None:
    offenders = {}
    for f in sorted((ROOT / "frameworks").rglob("*.py")):
        bad = {m for m in _imports(f) if m in {"master", "agent"}}
        if bad:
            offenders[str(f.relative_to(ROOT))] = sorted(bad)
    assert offenders == {}, f"frameworks must use only the SDK and the wire contract: {offenders}"
