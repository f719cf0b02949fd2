"""GetState's lists a page at a time on a real master (issue #48): the Operator API's
ListAgents, ListTasks and ListOffers over real gRPC, ``/api/v1/state/agents|tasks|offers`` over
real HTTP and
`corral get` (the real command) page through and together give what GetState gives, in id
order; a bad limit, token or flag is refused with its reason (INVALID_ARGUMENT, 400, exit 2)."""

from __future__ import annotations

import asyncio
import contextlib
import json
from pathlib import Path
from typing import Any

import grpc
import pytest

from corral.frameworks import sdk
from corral.frameworks.sdk.testing import LocalCluster
from corral.v1 import common_pb2 as pb
from corral.v1 import operator_pb2 as op
from corral.v1 import operator_pb2_grpc
from tests.integration.corral_cli import corral
from tests.integration.recording import until_set
from tests.master_http import master_session

pytestmark = pytest.mark.e2e

WAIT = 30.0
AGENTS = 5
TASKS = 4


class Launcher(sdk.Scheduler):
    """Launches TASKS tasks of 0.5 cpus into its first offers, then declines."""

    def __init__(self) -> None:
        self.launched = 0
        self.running: set[str] = set()
        self.all_running = asyncio.Event()

    async def offers(self, driver: sdk.Driver, offers: list[sdk.Offer]) -> None:
        for offer in offers:
            if self.launched >= TASKS:
                await driver.decline([offer.id], refuse_seconds=3600)
                continue
            task = sdk.task(
                f"t{self.launched}", "sleep 600", cpus=0.5, mem=32, simulate_seconds=600
            )
            self.launched += 1
            await driver.launch([offer], [task], refuse_seconds=3600)

    async def status(self, driver: sdk.Driver, status: sdk.TaskStatus) -> None:
        if status.state == pb.TASK_STATE_RUNNING:
            self.running.add(status.task_id)
            if len(self.running) == TASKS:
                self.all_running.set()


class Holder(sdk.Scheduler):
    """Keeps every offer it gets, unanswered: the master's outstanding offers to list."""

    def __init__(self) -> None:
        self.agents: set[str] = set()
        self.changed = asyncio.Event()

    async def offers(self, driver: sdk.Driver, offers: list[sdk.Offer]) -> None:
        self.agents.update(o.agent_id for o in offers)
        self.changed.set()


async def grpc_pages(stub: Any, method: str, request_type: Any, limit: int) -> list[Any]:
    """Every page of a List RPC, limit at a time."""
    out: list[Any] = []
    token = ""
    for _ in range(100):
        page = await getattr(stub, method)(request_type(limit=limit, page_token=token), timeout=10)
        out.append(page)
        token = page.next_page_token
        if not token:
            return out
    raise AssertionError(f"{method}'s pages did not end")


async def http_pages(http: Any, url: str) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    after = ""
    for _ in range(100):
        async with http.get(url + (f"&after={after}" if after else "")) as r:
            assert r.status == 200, await r.text()
            page = await r.json()
        out.append(page)
        if page["next"] is None:
            return out
        after = page["next"]
    raise AssertionError(f"{url}'s pages did not end")


async def cli(*args: str) -> Any:
    return await asyncio.to_thread(corral, "get", *args)


async def test_lists_page_over_grpc_http_and_the_cli(tmp_path: Path) -> None:
    async with LocalCluster(
        agents=0,
        work_dir=tmp_path,
        master_args=("--allocation-interval", "0.2"),
        agent_args=("--simulate",),
    ) as cluster:
        for i in range(AGENTS):
            await cluster.add_agent(
                f"agent-{i}", "cpus:2;mem:512;disk:10", attributes={"zone": "a"}
            )
        await cluster.wait_for_agents(AGENTS, WAIT)
        launcher = Launcher()
        holder = Holder()
        info = sdk.FrameworkInfo(name="pages", role="*")
        holding = sdk.FrameworkInfo(name="holder", role="*")
        async with sdk.Driver(launcher, info, cluster.master), contextlib.AsyncExitStack() as stack:
            await asyncio.wait_for(launcher.all_running.wait(), WAIT)
            # Then the holder, so it takes no offer the launcher needs.
            await stack.enter_async_context(sdk.Driver(holder, holding, cluster.master))
            await until_set(
                holder.changed,
                "the holder offered every agent",
                lambda: len(holder.agents) == AGENTS,
                WAIT,
            )
            channel = cluster.channel()
            stub = operator_pb2_grpc.OperatorStub(channel)  # type: ignore[no-untyped-call]
            state = await stub.GetState(op.GetStateRequest(), timeout=10)
            agent_ids = sorted(a.info.id for a in state.agents)
            task_ids = sorted(t.info.task_id for t in state.tasks)
            assert len(agent_ids) == AGENTS and len(task_ids) == TASKS
            offer_ids = sorted(o.id for o in state.offers)
            assert len(offer_ids) >= AGENTS, state.offers

            # gRPC: pages of 2 give every agent once, in id order, with the total.
            pages = await grpc_pages(stub, "ListAgents", op.ListAgentsRequest, 2)
            assert [len(p.agents) for p in pages] == [2, 2, 1]
            assert {p.total for p in pages} == {AGENTS}
            assert [a.info.id for p in pages for a in p.agents] == agent_ids
            pages = await grpc_pages(stub, "ListTasks", op.ListTasksRequest, 3)
            assert [t.info.task_id for p in pages for t in p.tasks] == task_ids
            assert all(
                {a.id for a in p.agents} >= {t.info.agent_id for t in p.tasks} for p in pages
            )
            pages = await grpc_pages(stub, "ListOffers", op.ListOffersRequest, 2)
            assert [o.id for p in pages for o in p.offers] == offer_ids
            assert {p.total for p in pages} == {len(offer_ids)}
            assert {o.id: o for p in pages for o in p.offers} == {o.id: o for o in state.offers}
            with pytest.raises(grpc.aio.AioRpcError) as refused:
                token = (await stub.ListAgents(op.ListAgentsRequest(limit=1))).next_page_token
                await stub.ListOffers(op.ListOffersRequest(page_token=token), timeout=10)
            assert refused.value.code() == grpc.StatusCode.INVALID_ARGUMENT
            assert "is not one of the offers list's" in (refused.value.details() or "")
            for request, reason in [
                (op.ListAgentsRequest(limit=9999), "limit must be between 1 and 5000"),
                (op.ListAgentsRequest(page_token="junk"), "is not one of the agents list's"),
            ]:
                with pytest.raises(grpc.aio.AioRpcError) as refused:
                    await stub.ListAgents(request, timeout=10)
                assert refused.value.code() == grpc.StatusCode.INVALID_ARGUMENT
                assert reason in (refused.value.details() or "")
            await channel.close()

            # HTTP: the same pages, each entry in /api/v1/state's shape.
            base = cluster.url("/api/v1/state")
            async with master_session(cluster) as http:
                pages_json = await http_pages(http, f"{base}/agents?limit=2")
                assert [a["id"] for p in pages_json for a in p["items"]] == agent_ids
                assert pages_json[0]["total"] == AGENTS
                async with http.get(base) as r:
                    whole = {a["id"]: a for a in (await r.json())["agents"]}
                first = pages_json[0]["items"][0]
                assert set(first) == set(whole[first["id"]])
                offers_json = await http_pages(http, f"{base}/offers?limit=2")
                assert [o["id"] for p in offers_json for o in p["items"]] == offer_ids
                tasks_json = await http_pages(http, f"{base}/tasks?limit=3&live_only=true")
                assert sorted(t["id"] for p in tasks_json for t in p["items"]) == task_ids
                for url, reason in [
                    (f"{base}/agents?limit=0.5", "limit must be an integer"),
                    (f"{base}/agents?after=junk", "is not one of the agents list's"),
                    (f"{base}/agents?live_only=true", "unknown query parameter 'live_only'"),
                    (f"{base}/tasks?live_only=maybe", "live_only must be true or false"),
                    (f"{base}/offers?live_only=true", "unknown query parameter 'live_only'"),
                ]:
                    async with http.get(url) as r:
                        assert r.status == 400, url
                        assert reason in (await r.json())["error"], url

            # The CLI: one header, every agent in id order, pages of 2; --limit; JSON.
            done = await cli("agents", "--chunk-size", "2", "--master", cluster.master)
            assert done.returncode == 0, done.stderr
            header, *lines = done.stdout.splitlines()
            assert header.split()[:3] == ["ID", "NAME", "HOSTNAME"]
            assert [line.split()[0] for line in lines] == agent_ids
            done = await cli(
                "agents", "--limit", "3", "--chunk-size", "2", "--master", cluster.master
            )
            assert [line.split()[0] for line in done.stdout.splitlines()[1:]] == agent_ids[:3]
            done = await cli(
                "agents", "-o", "json", "--chunk-size", "2", "--master", cluster.master
            )
            assert [a["id"] for a in json.loads(done.stdout)] == agent_ids
            done = await cli("tasks", "--chunk-size", "1", "--master", cluster.master)
            header, *lines = done.stdout.splitlines()
            assert [line.split()[0] for line in lines] == task_ids
            host = header.split().index("HOST")
            assert all(line.split()[host] != "-" for line in lines), done.stdout
            done = await cli("offers", "--chunk-size", "2", "--master", cluster.master)
            assert done.returncode == 0, done.stderr
            header, *lines = done.stdout.splitlines()
            assert header.split()[:3] == ["ID", "FRAMEWORK", "AGENT"]
            assert [line.split()[0] for line in lines] == offer_ids
            for args, reason in [
                (("agents", "--chunk-size", "0"), "--chunk-size: must be between 1 and 5000"),
                (("agents", "--limit", "x"), "--limit: not an integer"),
                (("roles", "--limit", "3"), "--limit and --chunk-size are for agents"),
            ]:
                done = await cli(*args, "--master", cluster.master)
                assert done.returncode == 2, (args, done.stdout, done.stderr)
                assert reason in done.stderr, done.stderr
