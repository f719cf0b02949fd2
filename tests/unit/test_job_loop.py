"""frameworks/job_loop.py's asking why a job waits: with the driver's own master and
credential, and never again once the master said this principal may not ask (issue #40,
defect 3: a job stalled for 10 minutes made the master record ~600 refusals)."""

from __future__ import annotations

from typing import Any

import grpc
import pytest

from corral.frameworks import job_loop, sdk


class Driver:
    address = "10.0.0.2:5050"  # the leader it follows
    master = "10.0.0.1:5050,10.0.0.2:5050"
    framework_id = "fw-1"
    tls = sdk.INSECURE


async def test_why_waiting_asks_with_the_driver_s_credential_and_stops_once_refused(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    calls: list[tuple[str, str, Any]] = []
    answers: list[Any] = [
        [sdk.PendingDemand("tasks", 2, 2, "2 of 2 agents: insufficient cpus", ())],
        sdk.CallError("Explain", grpc.StatusCode.UNAVAILABLE, "the master is away"),
        sdk.CallError("Explain", grpc.StatusCode.PERMISSION_DENIED, "principal b may not"),
    ]

    async def why_pending(master: str, framework_id: str, **kw: Any) -> Any:
        calls.append((master, framework_id, kw.get("tls")))
        answer = answers.pop(0)
        if isinstance(answer, Exception):
            raise answer
        return answer

    monkeypatch.setattr(sdk, "why_pending", why_pending)
    why = job_loop.WhyWaiting(Driver())  # type: ignore[arg-type]
    assert await why.ask() == "tasks: 2 of 2 unplaced: 2 of 2 agents: insufficient cpus"
    assert await why.ask() == "the master did not say why (UNAVAILABLE: the master is away)"
    refused = await why.ask()
    assert refused.endswith("(principal b may not); not asking again")
    for _ in range(5):
        assert await why.ask() == refused.removesuffix("; not asking again")
    assert calls == [("10.0.0.2:5050", "fw-1", sdk.INSECURE)] * 3
    assert why.calls == 3
