"""Refusal codes are a closed set, and each shell maps every one of them."""

from __future__ import annotations

import grpc
import pytest

from corral.master.core.refusals import CallRejected, Refusal
from corral.master.http.routes import HTTP_STATUS
from corral.master.rpc.common import code_of


@pytest.mark.parametrize("code", list(Refusal))
def test_every_refusal_has_its_grpc_status_and_an_http_status(code: Refusal) -> None:
    assert code_of(CallRejected(code, "why")) is getattr(grpc.StatusCode, code.value)
    assert 400 <= HTTP_STATUS[code] < 600


def test_a_code_that_is_not_a_refusal_fails_loudly() -> None:
    with pytest.raises(ValueError):
        CallRejected("INVALID_ARGUMNET", "a typo")  # type: ignore[arg-type]
