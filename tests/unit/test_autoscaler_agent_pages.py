"""The autoscaler reads the master's agents a page at a time (ListAgents), every page."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from corral.autoscaler import service as autoscaler_service
from corral.v1 import operator_pb2


class PagedMaster:
    """ListAgents over 5 agents, two to a page, as the master pages them (a token per page)."""

    def __init__(self) -> None:
        self.requests: list[operator_pb2.ListAgentsRequest] = []

    async def ListAgents(  # the gRPC method's name
        self, request: operator_pb2.ListAgentsRequest, timeout: float
    ) -> operator_pb2.AgentList:
        self.requests.append(request)
        start = int(request.page_token or "0")
        page = operator_pb2.AgentList(total=5)
        for i in range(start, min(start + 2, 5)):
            a = page.agents.add(connected=i != 3, tasks=i)
            a.info.id, a.info.name = f"A{i}", f"n{i}"
        if start + 2 < 5:
            page.next_page_token = str(start + 2)
        return page


def test_every_page_of_agents_is_read(tmp_path: Path, monkeypatch: Any) -> None:
    monkeypatch.setattr(autoscaler_service, "AGENTS_PAGE", 2)
    master = PagedMaster()
    svc = object.__new__(autoscaler_service.AutoscalerService)  # no loop, no channel
    seen = asyncio.run(svc._agents(master))
    assert [a.agent_id for a in seen] == ["A0", "A1", "A2", "A3", "A4"]
    assert [a.connected for a in seen] == [True, True, True, False, True]
    assert [r.page_token for r in master.requests] == ["", "2", "4"]
    assert all(r.limit == 2 for r in master.requests)
