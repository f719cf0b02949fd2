"""Protobuf maps copied into dicts: same content as ``dict(m)``, empty or not."""

from __future__ import annotations

from corral.pbmaps import as_dict
from corral.v1 import common_pb2 as pb


def test_same_as_dict() -> None:
    cmd = pb.CommandInfo(value="x")
    assert as_dict(cmd.environment) == {} == dict(cmd.environment)
    cmd.environment.update({"A": "1", "B": "2"})
    copied = as_dict(cmd.environment)
    assert copied == {"A": "1", "B": "2"} == dict(cmd.environment)
    copied["C"] = "3"  # a copy, not a view
    assert "C" not in cmd.environment
