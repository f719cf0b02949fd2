"""The autoscaler's loop (the IO around policy.py): every ``scan-interval`` it reads the master's
state, asks the master's what-if (``Operator.Simulate``), lets the policy decide, and carries the
plan out: records first, then the provider and the master, so a kill -9 at any point leaves
records a restarted autoscaler acts on without asking for the same nodes twice (policy.py rule
2: upcoming nodes are records).

The master is asked with the autoscaler's own credential (its principal: docs/autoscaler.md,
"Its principal"): ListAgents and Simulate (group read), Drain and DeleteAgent (write)."""

from __future__ import annotations

import asyncio
import collections
import contextlib
import json
import logging
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import grpc

from corral.autoscaler.config import Config, NodeGroup
from corral.autoscaler.policy import AgentSeen, Event, GroupState, Node, Plan, Policy
from corral.autoscaler.providers import (
    CommandProvider,
    DockerProvider,
    ProcessProvider,
    Provider,
    ProviderError,
)
from corral.frameworks.sdk import tls as sdk_tls
from corral.frameworks.service.records import Delete, Put, Records
from corral.v1 import common_pb2, operator_pb2
from corral.v1.operator_pb2_grpc import OperatorStub

log = logging.getLogger("corral.autoscaler")

NODE = "node"
GROUP = "group"
MAX_EVENTS = 2000
CALL_TIMEOUT = 30.0


AGENTS_PAGE = 2000  # agents per ListAgents page (the master's bound is 5,000)
# What the status published for the master's web UI carries (status_document): well inside the
# master's 1 MiB for a document, at 100 groups.
STATUS_NODES = 1000
STATUS_EVENTS = 50


class MasterUnavailable(Exception):
    pass


def simulate_message(fields: Mapping[str, Any]) -> operator_pb2.SimulateRequest:
    """policy.simulate_request's fields as the wire message."""
    req = operator_pb2.SimulateRequest(
        priority_cutoff=int(fields["priority_cutoff"]),
        remove_agent_ids=list(fields["remove"]),
        utilization_threshold=float(fields["utilization_threshold"]),
    )
    for entry in fields["groups"]:
        g: NodeGroup = entry["group"]
        t = g.template
        sg = req.groups.add(name=g.name, max_new=int(entry["max_new"]))
        info = sg.template
        info.hostname = g.name
        r = t.resources
        info.resources.cpus, info.resources.mem = r.cpus, r.mem
        info.resources.disk, info.resources.gpus = r.disk, r.gpus
        for k, v in t.attributes.items():
            info.attributes[k] = v
        for taint in t.taints:
            info.taints.add(
                key=taint.key,
                value=taint.value,
                effect=common_pb2.TaintEffect.Value("TAINT_EFFECT_" + _snake(taint.effect.value)),
            )
    return req


def _snake(effect: str) -> str:
    """NoSchedule -> NO_SCHEDULE."""
    return "".join("_" + c if c.isupper() and i else c for i, c in enumerate(effect)).upper()


class AutoscalerService:
    def __init__(
        self,
        config: Config,
        records: Records,
        master: str,
        state_dir: Path,
        tls: sdk_tls.Credentials,
        clock: Callable[[], float] = time.time,
        seed: int = 0,
    ) -> None:
        self.config = config
        self.records = records
        self.master = master
        self.tls = tls
        self.clock = clock
        self.policy = Policy(config, seed)
        self.providers: dict[str, Provider] = {
            "process": ProcessProvider(master, state_dir),
            "command": CommandProvider(master),
            "docker": DockerProvider(master, state_dir),
        }
        self.events: collections.deque[Event] = collections.deque(maxlen=MAX_EVENTS)
        self.last_eval_ms = 0.0
        self.last_error = ""
        self.evaluations = 0
        # For /metrics (metrics.py): nodes asked of providers and deleted, events by reason.
        self.scaled_up: collections.Counter[str] = collections.Counter()
        self.scaled_down: collections.Counter[str] = collections.Counter()
        self.event_counts: collections.Counter[str] = collections.Counter()
        self._task: asyncio.Task[None] | None = None
        self._channel: Any = None
        self._wake = asyncio.Event()

    # --- lifecycle ------------------------------------------------------------------------

    async def start(self) -> None:
        nodes = [Node.from_json(r) for r in self.records.all(NODE).values()]
        groups = [GroupState.from_json(r) for r in self.records.all(GROUP).values()]
        self.policy.restore(nodes, groups)
        self._channel = sdk_tls.aio_channel(self.master, sdk_tls.resolve(self.tls))
        self._task = asyncio.create_task(self._loop(), name="autoscaler-loop")

    async def close(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
        if self._channel is not None:
            await self._channel.close()
        for provider in self.providers.values():
            closing = getattr(provider, "close", None)  # those holding a connection
            if closing is not None:
                await closing()

    async def _loop(self) -> None:
        while True:
            try:
                await self.evaluate()
                self.last_error = ""
            except asyncio.CancelledError:
                raise
            except MasterUnavailable as err:
                self.last_error = str(err)
                log.warning("autoscaler: the master did not answer: %s", err)
            except Exception as err:  # one bad scan must not end the service
                self.last_error = f"{type(err).__name__}: {err}"
                log.exception("autoscaler: the evaluation failed")
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wake.wait(), self.config.options.scan_interval)
            self._wake.clear()

    # --- one evaluation -------------------------------------------------------------------

    async def evaluate(self) -> Plan:
        stub = OperatorStub(self._channel)  # type: ignore[no-untyped-call]  # generated
        started = time.perf_counter()
        try:
            agents = await self._agents(stub)
            request = simulate_message(self.policy.simulate_request())
            answer = await stub.Simulate(request, timeout=CALL_TIMEOUT)
        except grpc.aio.AioRpcError as err:
            raise MasterUnavailable(f"{err.code().name}: {err.details()}") from None
        now = self.clock()
        plan = self.policy.evaluate(json.loads(answer.result_json), agents, now)
        await self._carry_out(stub, plan, now)
        self.last_eval_ms = (time.perf_counter() - started) * 1000
        self.evaluations += 1
        return plan

    async def _agents(self, stub: Any) -> list[AgentSeen]:
        """The master's agents, a page at a time (ListAgents): GetState's one message of the
        whole cluster took the master's loop ~2 s at 50,000 agents, each page ~60 ms."""
        seen: list[AgentSeen] = []
        token = ""
        while True:
            page = await stub.ListAgents(
                operator_pb2.ListAgentsRequest(limit=AGENTS_PAGE, page_token=token),
                timeout=CALL_TIMEOUT,
            )
            seen.extend(
                AgentSeen(
                    a.info.id,
                    a.info.name,
                    a.connected,
                    a.tasks,
                    a.maintenance.mode if a.HasField("maintenance") else "",
                )
                for a in page.agents
            )
            token = page.next_page_token
            if not token:
                return seen

    async def _carry_out(self, stub: Any, plan: Plan, now: float) -> None:
        # Records first: what the provider and the master are asked next is already durable.
        ops: list[Put | Delete] = []
        for node in [*plan.registered, *plan.create, *plan.drain]:
            ops.append(Put(NODE, node.name, node.to_json()))
        for name in sorted(plan.groups_changed):
            ops.append(Put(GROUP, name, self.policy.groups[name].to_json()))
        if ops:
            self.records.write(ops)
        self._record(plan.events)
        for node in plan.timed_out:  # its record goes once the provider deleted it
            await self._delete_node(stub, node, forget_record=True)
        await self._create(plan.create, now)
        for node in plan.drain:
            try:
                await stub.Drain(
                    operator_pb2.DrainRequest(
                        agent_id=node.agent_id,
                        grace_seconds=self.config.options.drain_grace_seconds,
                    ),
                    timeout=CALL_TIMEOUT,
                )
            except grpc.aio.AioRpcError as err:
                # Not draining: never deleted for it (its tasks run on); ready again.
                self._record([self.policy.drain_refused(node, err.details() or "", now)])
                self.records.write(Put(NODE, node.name, node.to_json()))
        for node in plan.delete:
            await self._delete_node(stub, node, forget_record=True)
            self.scaled_down[node.group] += 1

    async def _create(self, nodes: list[Node], now: float) -> None:
        by_group: dict[str, list[Node]] = {}
        for node in nodes:
            by_group.setdefault(node.group, []).append(node)
            self.scaled_up[node.group] += 1
        for name, group_nodes in sorted(by_group.items()):
            group = self._group(name)
            try:
                handles = await self.providers[group.provider].create(
                    group, [n.name for n in group_nodes]
                )
            except ProviderError as err:
                handles = {}
                self._record([Event("FailedToScaleUp", name, str(err), now)])
            ops: list[Put | Delete] = []
            for node in group_nodes:
                if node.name in handles:
                    node.handle = handles[node.name]
                    ops.append(Put(NODE, node.name, node.to_json()))
            # A node the provider did not start stays a record without a handle: it never
            # registers, and max-node-provision-time deletes it and backs the group off.
            if ops:
                self.records.write(ops)

    async def _delete_node(self, stub: Any, node: Node, forget_record: bool) -> None:
        group = self._group(node.group)
        try:
            await self.providers[group.provider].delete(group, node.name, node.handle)
        except ProviderError as err:
            self._failed(node, f"the provider could not delete it: {err}", self.clock())
            return
        if node.agent_id:
            for _ in range(100):  # the master sees its stream end, then forgets it
                try:
                    await stub.DeleteAgent(
                        operator_pb2.DeleteAgentRequest(agent_id=node.agent_id),
                        timeout=CALL_TIMEOUT,
                    )
                    break
                except grpc.aio.AioRpcError as err:
                    if err.code() == grpc.StatusCode.NOT_FOUND:
                        break
                    if err.code() != grpc.StatusCode.FAILED_PRECONDITION:
                        self._failed(node, f"DeleteAgent refused: {err.details()}", self.clock())
                        break
                    await asyncio.sleep(0.2)
        if forget_record:
            self.records.write(Delete(NODE, node.name))

    def _failed(self, node: Node, why: str, now: float) -> None:
        self._record([Event("ScaleDownFailed", node.name, why, now)])

    def _group(self, name: str) -> NodeGroup:
        g = self.config.group(name)
        assert g is not None
        return g

    def _record(self, events: list[Event]) -> None:
        for e in events:
            self.events.append(e)
            self.event_counts[e.reason] += 1
            log.info("autoscaler %s %s: %s", e.reason, e.subject, e.message)

    # --- views ----------------------------------------------------------------------------

    def nodegroups(self) -> list[dict[str, Any]]:
        return self.policy.groups_view(self.clock())

    def nodes(self) -> list[dict[str, Any]]:
        return [n.to_json() for n in sorted(self.policy.nodes.values(), key=lambda n: n.name)]

    def status_document(self) -> dict[str, Any]:
        """What the master's web UI shows of this autoscaler (its node groups view), published
        each scan (frameworks/service/status_loop.py): the groups, their nodes (the first
        ``STATUS_NODES``) and the latest events."""
        nodes = self.nodes()
        return {
            "node_groups": self.nodegroups(),
            "nodes": nodes[:STATUS_NODES],
            "nodes_total": len(nodes),
            "events": self.recent_events()[-STATUS_EVENTS:],
            "evaluations": self.evaluations,
            "last_evaluation_ms": round(self.last_eval_ms, 3),
            "last_error": self.last_error,
            "scan_interval": self.config.options.scan_interval,
        }

    def recent_events(self, subject: str = "") -> list[dict[str, Any]]:
        return [e.to_json() for e in self.events if not subject or e.subject == subject]
