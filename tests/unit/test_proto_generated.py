"""The committed generated code is exactly what `make proto` produces from proto/."""

from __future__ import annotations

import filecmp
import sys
from pathlib import Path

from grpc_tools import protoc

ROOT = Path(__file__).resolve().parents[2]


def test_generated_code_matches_proto(tmp_path: Path) -> None:
    protos = sorted(str(p.relative_to(ROOT)) for p in (ROOT / "proto/corral/v1").glob("*.proto"))
    assert protos, "no .proto files found"
    include = str(Path(protoc.__file__).parent / "_proto")
    code = protoc.main(
        [
            sys.argv[0],
            f"-I{ROOT / 'proto'}",
            f"-I{include}",
            f"--python_out={tmp_path}",
            f"--pyi_out={tmp_path}",
            f"--grpc_python_out={tmp_path}",
            *[str(ROOT / p) for p in protos],
        ]
    )
    assert code == 0, "protoc failed"
    generated = sorted(p.name for p in (tmp_path / "corral/v1").iterdir())
    committed = sorted(
        p.name
        for p in (ROOT / "corral/v1").iterdir()
        if p.suffix in {".py", ".pyi"} and p.name != "__init__.py"
    )
    assert generated == committed, "generated files differ in name: run `make proto`"
    _, mismatch, errors = filecmp.cmpfiles(
        tmp_path / "corral/v1", ROOT / "corral/v1", generated, shallow=False
    )
    assert mismatch == [] and errors == [], (
        f"stale generated code {mismatch + errors}: run `make proto`"
    )
