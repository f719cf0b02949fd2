"""The fuzz driver: one real master, raw framework and agent calls, the master's invariants.

``Fuzzer`` owns a master started by ``LocalCluster`` (one simulated agent) and plays any
number of raw frameworks and raw agents against it with the generated stubs, so nothing is
validated before the master sees it. ``Fuzzer.call(kind, variant, who, pick)`` makes one call
(valid, malformed or hostile; ``CALLS`` lists them), records the gRPC status it ended with and
fails at once on UNKNOWN or INTERNAL (an exception that escaped the master). The invariants
checked on an Operator ``GetState`` answer are in ``invariants.py``.

Everything asynchronous runs on one event loop in a background thread (``LoopThread``,
raw_clients.py, with the raw streams), so the master, the channels and the open streams
outlive hypothesis's examples, which are synchronous and submit coroutines to it.
"""

from __future__ import annotations

import asyncio
import collections
import math
import random
from collections.abc import Callable
from typing import Any

import grpc

from corral import limits
from corral.frameworks.sdk.testing import LocalCluster
from corral.master import paging
from corral.v1 import agent_pb2 as ag
from corral.v1 import agent_pb2_grpc, operator_pb2_grpc, scheduler_pb2_grpc
from corral.v1 import common_pb2 as pb
from corral.v1 import operator_pb2 as op
from corral.v1 import scheduler_pb2 as s
from tests.fuzz.invariants import check_state
from tests.fuzz.raw_clients import RawAgent, RawFramework, identity, task

CALL_TIMEOUT = 5.0  # every call the fuzzer makes is answered within this, or it is a defect
AGENT_TIMEOUT = 3.0  # the master's --agent-timeout: short, so the end-of-run check is quick
MASTER_ARGS = ("--allocation-interval", "0.1", "--agent-timeout", "3", "--agent-heartbeat", "1")
STATUS_OF_CODE = {c.value[0]: c for c in grpc.StatusCode}
# Statuses that mean an exception escaped the master's handlers: never acceptable.
BUG_CODES = frozenset({"UNKNOWN", "INTERNAL"})
STREAM_MESSAGE = "(stream message, no status)"
NO_ANSWER = "NO_ANSWER"  # nothing within CALL_TIMEOUT on a stream: a hang
HUGE = "x" * (5 * limits.MiB)  # a 5 MB string: over every length limit, under the message limit
TOO_MANY = limits.MAX_IDS_PER_CALL + 1
MAX_FRAMEWORKS = 4  # live raw frameworks (the oldest is disconnected past this)
MAX_AGENTS = 4  # live raw agents


# ----------------------------------------------------------------------------- the fuzzer


class Fuzzer:
    def __init__(self, cluster: LocalCluster) -> None:
        self.cluster = cluster
        self.codes: collections.Counter[str] = collections.Counter()
        self.by_call: collections.Counter[tuple[str, str]] = collections.Counter()
        self.calls = 0
        self.history: collections.deque[str] = collections.deque(maxlen=12)
        self.frameworks: list[RawFramework] = []
        self.removed: list[RawFramework] = []  # torn down or let go: their callers are stale
        self.agents: list[RawAgent] = []
        self.real_agent_id = ""
        self._ids = 0
        self.channel: grpc.aio.Channel | None = None

    # -- lifecycle ------------------------------------------------------------------------

    async def start(self) -> None:
        options = [
            ("grpc.max_send_message_length", limits.MAX_MESSAGE_BYTES + limits.MiB),
            ("grpc.max_receive_message_length", limits.MAX_MESSAGE_BYTES + limits.MiB),
        ]
        self.channel = self.cluster.channel(options)
        self.sched = scheduler_pb2_grpc.SchedulerStub(self.channel)  # type: ignore[no-untyped-call]
        self.agent_stub = agent_pb2_grpc.AgentServiceStub(self.channel)  # type: ignore[no-untyped-call]
        self.operator = operator_pb2_grpc.OperatorStub(self.channel)  # type: ignore[no-untyped-call]
        state = await self.state()
        self.real_agent_id = state.agents[0].info.id

    async def close(self) -> None:
        for fw in self.frameworks + self.removed:
            fw.close()
        for agent in self.agents:
            agent.close()
        if self.channel is not None:
            await self.channel.close()

    async def state(self) -> op.State:
        result: op.State = await self.operator.GetState(op.GetStateRequest(), timeout=CALL_TIMEOUT)
        return result

    def new_id(self, prefix: str) -> str:
        self._ids += 1
        return f"{prefix}-{self._ids}"

    # -- recording ------------------------------------------------------------------------

    def record(self, kind: str, variant: str, code: str, details: str = "") -> None:
        self.calls += 1
        self.codes[code] += 1
        self.by_call[(f"{kind}.{variant}", code)] += 1
        self.history.append(f"{kind}.{variant} -> {code} {details[:120]!r}")
        assert code not in BUG_CODES, (
            f"call {kind}.{variant} ended with {code}: an exception escaped the master\n"
            f"details: {details[:2000]}\nlast calls:\n  " + "\n  ".join(self.history)
        )

    async def unary(self, kind: str, variant: str, method: str, request: Any) -> str:
        try:
            await getattr(self.sched, method)(request, timeout=CALL_TIMEOUT)
        except grpc.aio.AioRpcError as err:
            code, details = err.code().name, err.details() or ""
        else:
            code, details = "OK", ""
        self.record(kind, variant, code, details)
        return str(code)

    # -- picking from what the fuzzer has seen --------------------------------------------

    def live_frameworks(self) -> list[RawFramework]:
        self.frameworks = [f for f in self.frameworks if f.alive]
        return self.frameworks

    def live_agents(self) -> list[RawAgent]:
        self.agents = [a for a in self.agents if a.alive]
        return self.agents

    def framework(self, pick: int, with_offers: bool = False) -> RawFramework | None:
        pool = self.live_frameworks()
        if with_offers:
            pool = [f for f in pool if f.offers] or pool
        return pool[pick % len(pool)] if pool else None

    def caller(self, fw: RawFramework | None, who: str) -> s.Caller:
        own = fw.caller if fw is not None else s.Caller()
        if who == "stale":
            return s.Caller(framework_id=own.framework_id, stream_id="stale-stream")
        if who == "unknown":
            return s.Caller(framework_id="F-no-such", stream_id="x")
        if who == "empty":
            return s.Caller()
        if who == "huge":
            return s.Caller(framework_id=HUGE, stream_id=own.stream_id)
        if who == "removed" and self.removed:
            return self.removed[-1].caller
        return own

    def all_offers(self) -> list[pb.Offer]:
        return [o for f in self.live_frameworks() for o in f.offers.values()]

    # -- the calls ------------------------------------------------------------------------

    async def call(self, kind: str, variant: str, who: str, pick: int) -> None:
        await getattr(self, f"do_{kind}")(variant, who, pick)

    async def do_subscribe(self, variant: str, who: str, pick: int) -> None:
        name, fid, failover = f"fuzz-{pick % 3}", "", 60.0
        info = pb.FrameworkInfo(role=("*", "web", "batch")[pick % 3])
        others = self.live_frameworks()
        if variant == "short_failover":
            failover = 0.3
        elif variant == "empty_name":
            name = ""
        elif variant == "huge_name":
            name = HUGE
        elif variant == "unknown_id":
            fid = self.new_id("F-unknown")
        elif variant == "other_id_other_name" and others:
            fid, name = others[pick % len(others)].caller.framework_id, "impostor"
        elif variant == "failover" and others:  # the same framework again: a valid failover
            fw = others[pick % len(others)]
            fid, name, failover = fw.caller.framework_id, fw.name, fw.failover_timeout
            info.role = ""
        elif variant == "removed_id" and self.removed:
            fid, name = self.removed[-1].caller.framework_id, self.removed[-1].name
        elif variant == "nan_failover":
            failover = math.nan
        elif variant == "neg_failover":
            failover = -1.0
        elif variant == "inf_failover":
            failover = math.inf
        elif variant == "bad_enums":
            info.capabilities.append(99)  # type: ignore[arg-type]
            info.tolerations.add(key="k", operator=77, effect=55)
        elif variant == "many_tolerations":
            for i in range(limits.MAX_TOLERATIONS + 1):
                info.tolerations.add(key=f"k{i}")
        elif variant == "long_role":
            info.role = "r" * (limits.MAX_NAME_LENGTH + 1)
        elif variant == "bad_constraint":
            info.offer_constraints.add(attribute="zone", operator=42)
        info.id, info.name, info.failover_timeout = fid, name, failover
        fw = RawFramework(name=name, failover_timeout=failover)
        fw.call = self.sched.Subscribe(s.SubscribeRequest(framework_info=info))
        try:
            first = await asyncio.wait_for(fw.call.read(), CALL_TIMEOUT)
        except TimeoutError:
            fw.close()
            self.record("subscribe", variant, NO_ANSWER)
            raise AssertionError(f"subscribe.{variant}: no answer in {CALL_TIMEOUT:g} s") from None
        except grpc.aio.AioRpcError as err:
            fw.close()
            self.record("subscribe", variant, err.code().name, err.details() or "")
            return
        if first is grpc.aio.EOF or not first.HasField("subscribed"):
            fw.close()
            self.record("subscribe", variant, "OK", f"no SUBSCRIBED first: {first!r}")
            raise AssertionError(f"subscribe.{variant}: first event {first!r} is not SUBSCRIBED")
        self.record("subscribe", variant, "OK")
        fw.caller = s.Caller(
            framework_id=first.subscribed.framework_id, stream_id=first.subscribed.stream_id
        )
        fw.reader = asyncio.create_task(fw.read())
        for old in self.frameworks:  # a failover ends the old stream
            if old.caller.framework_id == fw.caller.framework_id:
                old.close()
        self.frameworks.append(fw)
        while len(self.live_frameworks()) > MAX_FRAMEWORKS:
            self.let_go(self.frameworks[0])

    def let_go(self, fw: RawFramework) -> None:
        fw.close()
        self.removed.append(fw)
        del self.removed[:-10]

    async def do_lifecycle(self, variant: str, who: str, pick: int) -> None:
        fw = self.framework(pick)
        if fw is None:
            return
        if variant == "teardown":
            code = await self.unary(
                "lifecycle", variant, "Teardown", s.TeardownRequest(caller=self.caller(fw, who))
            )
            if code == "OK" and who == "own":
                self.let_go(fw)
        elif variant == "disconnect":
            self.let_go(fw)  # removed after its failover timeout, if it does not come back

    def task_requests(self, variant: str, pick: int, offer: pb.Offer | None) -> list[pb.TaskInfo]:
        tid = self.new_id("t")
        r = offer.resources if offer is not None else pb.Resources()
        port = [r.ports[0].begin] if r.ports else []
        good = task(tid, ports=port)
        bad: dict[str, Callable[[], Any]] = {
            "neg": lambda: task(tid, cpus=-1),
            "nan": lambda: task(tid, mem=math.nan),
            "inf": lambda: task(tid, cpus=math.inf),
            "huge_scalar": lambda: task(tid, cpus=1e308),
            "exceed": lambda: task(tid, cpus=r.cpus * 2 + 1, mem=r.mem + 1),
            "port_overlap": lambda: [task(tid, ports=port), task(tid + "b", ports=port)],
            "port_outside": lambda: task(tid, ports=[1]),
            "dup_task": lambda: [good, good],
            "empty_task_id": lambda: task(""),
            "huge_task_id": lambda: task("t" * (limits.MAX_ID_LENGTH + 1)),
            "huge_command": lambda: pb.TaskInfo(
                task_id=tid, command=pb.CommandInfo(value="x" * (2 * limits.MiB))
            ),
            "no_command": lambda: pb.TaskInfo(task_id=tid, resources=pb.Resources(cpus=0.01)),
            "too_many_tasks": lambda: [
                task(f"{tid}-{i}", cpus=0, mem=0) for i in range(limits.MAX_TASKS_PER_ACCEPT + 1)
            ],
            "reuse_task_id": lambda: task(
                next((t for fw in self.frameworks for _, t in fw.tasks), tid)
            ),
            "neg_grace": lambda: task(tid, kill_grace_period_seconds=-5),
            "labels": lambda: task(
                tid, labels={f"k{i}": "v" for i in range(limits.MAX_LABELS + 1)}
            ),
        }
        made: Any = bad[variant]() if variant in bad else good
        return made if isinstance(made, list) else [made]

    def accept_request(
        self, variant: str, who: str, pick: int
    ) -> tuple[RawFramework | None, Any, str]:
        fw = self.framework(pick, with_offers=True)
        own = list(fw.offers.values()) if fw is not None else []
        offer = own[pick % len(own)] if own else None
        ids = [offer.id] if offer is not None else [self.new_id("O-none")]
        if variant == "same_agent" and offer is not None:  # every offer of that agent
            ids = [o.id for o in own if o.agent_id == offer.agent_id]
        elif variant == "two_agents":
            ids = list({o.agent_id: o.id for o in own}.values()) or ids
        elif variant == "other_fw":
            theirs = [
                o
                for o in self.all_offers()
                if fw is None or o.framework_id != fw.caller.framework_id
            ]
            ids = [theirs[pick % len(theirs)].id] if theirs else ids
        elif variant == "unknown_offer":
            ids = ["O-no-such"]
        elif variant == "dup_offer":
            ids = ids * 2
        elif variant == "too_many_offers":
            ids = [f"O-{i}" for i in range(limits.MAX_OFFERS_PER_CALL + 1)]
        elif variant == "no_offers":
            ids = []
        ops = [
            s.Operation(launch=s.LaunchOperation(tasks=self.task_requests(variant, pick, offer)))
        ]
        if variant == "no_operation":
            ops = [s.Operation()]
        elif variant == "no_operations":
            ops = []
        request = s.AcceptRequest(
            caller=self.caller(fw, who),
            offer_ids=ids,
            operations=ops,
            filters=s.Filters(refuse_seconds=0.1),
        )
        return fw, request, offer.agent_id if offer is not None else ""

    async def do_accept(self, variant: str, who: str, pick: int) -> None:
        fw, request, agent = self.accept_request(variant, who, pick)
        code = await self.unary("accept", variant, "Accept", request)
        if fw is not None:
            for oid in request.offer_ids:
                fw.offers.pop(oid, None)
            if code == "OK":
                fw.tasks.extend(
                    (agent, t.task_id) for op_ in request.operations for t in op_.launch.tasks
                )
                del fw.tasks[:-100]

    def decline_request(self, variant: str, who: str, pick: int) -> Any:
        fw = self.framework(pick, with_offers=True)
        ids = list(fw.offers)[:3] if fw is not None else []
        filters = s.Filters(refuse_seconds=0.2)
        numbers = {
            "refuse_nan": math.nan,
            "refuse_neg": -1.0,
            "refuse_inf": math.inf,
            "refuse_huge": 1e300,
            "refuse_zero": 0.0,
        }
        if variant in numbers:
            filters = s.Filters(refuse_seconds=numbers[variant])
        elif variant == "refuse_default":
            filters = s.Filters()
        elif variant == "unknown_offer":
            ids = ["O-no-such"]
        elif variant == "dup_offer":
            ids = ids[:1] * 2
        elif variant == "too_many_offers":
            ids = [f"O-{i}" for i in range(limits.MAX_OFFERS_PER_CALL + 1)]
        elif variant == "huge_offer_id":
            ids = [HUGE]
        if fw is not None and variant not in ("unknown_offer", "too_many_offers", "huge_offer_id"):
            for oid in ids:
                fw.offers.pop(oid, None)
        return s.DeclineRequest(caller=self.caller(fw, who), offer_ids=ids, filters=filters)

    async def do_decline(self, variant: str, who: str, pick: int) -> None:
        await self.unary("decline", variant, "Decline", self.decline_request(variant, who, pick))

    def kill_request(self, variant: str, who: str, pick: int) -> Any:
        fw = self.framework(pick)
        tasks = fw.tasks if fw is not None else []
        agent_id, task_id = tasks[pick % len(tasks)] if tasks else ("", "t-none")
        grace = 0.0
        if variant == "unknown_task":
            task_id = "t-no-such"
        elif variant == "empty_task":
            task_id = ""
        elif variant == "huge_task_id":
            task_id = HUGE
        elif variant == "wrong_agent":
            agent_id = "S-no-such"
        elif variant == "other_fw_task":
            other = [t for f in self.frameworks if f is not fw for t in f.tasks]
            agent_id, task_id = other[pick % len(other)] if other else (agent_id, task_id)
        elif variant in ("neg_grace", "nan_grace", "inf_grace"):
            grace = {"neg_grace": -1.0, "nan_grace": math.nan, "inf_grace": math.inf}[variant]
        return s.KillRequest(
            caller=self.caller(fw, who),
            task_id=task_id,
            agent_id=agent_id,
            kill_grace_period_seconds=grace,
        )

    async def do_kill(self, variant: str, who: str, pick: int) -> None:
        await self.unary("kill", variant, "Kill", self.kill_request(variant, who, pick))

    def acknowledge_request(self, variant: str, who: str, pick: int) -> Any:
        fw = self.framework(pick)
        acks = list(fw.acks[:3]) if fw is not None else []
        if variant == "valid" and fw is not None:
            del fw.acks[:3]
        elif variant == "wrong_uuid":
            acks = [
                s.Acknowledgement(agent_id=a.agent_id, task_id=a.task_id, uuid=b"nope")
                for a in acks
            ] or [s.Acknowledgement(task_id="t", uuid=b"nope")]
        elif variant == "huge_uuid":
            acks = [s.Acknowledgement(task_id="t", uuid=b"u" * (limits.MAX_UUID_BYTES + 1))]
        elif variant == "unknown_task":
            acks = [s.Acknowledgement(agent_id="S-x", task_id="t-no-such", uuid=b"0" * 16)]
        elif variant == "empty_fields":
            acks = [s.Acknowledgement()]
        elif variant == "too_many":
            acks = [s.Acknowledgement(task_id=f"t{i}", uuid=b"u") for i in range(TOO_MANY)]
        elif variant == "duplicated":
            acks = acks[:1] * 2
        return s.AcknowledgeRequest(caller=self.caller(fw, who), acknowledgements=acks)

    async def do_acknowledge(self, variant: str, who: str, pick: int) -> None:
        request = self.acknowledge_request(variant, who, pick)
        await self.unary("acknowledge", variant, "Acknowledge", request)

    def reconcile_request(self, variant: str, who: str, pick: int) -> Any:
        fw = self.framework(pick)
        known = [s.ReconcileTask(agent_id=a, task_id=t) for a, t in (fw.tasks if fw else [])[-5:]]
        tasks = {
            "all": [],
            "known": known,
            "unknown": [s.ReconcileTask(task_id="t-no-such", agent_id="S-no-such")],
            "empty_id": [s.ReconcileTask()],
            "huge_id": [s.ReconcileTask(task_id=HUGE)],
            "too_many": [s.ReconcileTask(task_id=f"t{i}") for i in range(TOO_MANY)],
            "duplicated": known[:1] * 2,
        }[variant]
        return s.ReconcileRequest(caller=self.caller(fw, who), tasks=tasks)

    async def do_reconcile(self, variant: str, who: str, pick: int) -> None:
        await self.unary(
            "reconcile", variant, "Reconcile", self.reconcile_request(variant, who, pick)
        )

    async def do_suppress(self, variant: str, who: str, pick: int) -> None:
        fw = self.framework(pick)
        if variant == "suppress":
            await self.unary(
                "suppress", variant, "Suppress", s.SuppressRequest(caller=self.caller(fw, who))
            )
        else:
            await self.unary(
                "suppress", variant, "Revive", s.ReviveRequest(caller=self.caller(fw, who))
            )

    async def do_batch(self, variant: str, who: str, pick: int) -> None:
        """Several calls on one CALLS stream; each result counts as one call."""
        rng = random.Random(pick)
        builders: list[tuple[str, Callable[[str, str, int], Any], list[str]]] = [
            (
                "accept",
                lambda v, w, p: self.accept_request(v, w, p)[1],
                ["fit", "neg", "dup_offer"],
            ),
            ("decline", self.decline_request, ["own", "refuse_nan", "unknown_offer"]),
            ("kill", self.kill_request, ["live", "unknown_task", "nan_grace"]),
            ("acknowledge", self.acknowledge_request, ["valid", "huge_uuid"]),
            ("reconcile", self.reconcile_request, ["all", "unknown"]),
        ]
        who = "unknown" if who == "huge" else who  # five 5 MB callers are over the limit
        calls = []
        labels = {}
        for i in range(1, rng.randint(1, 5) + 1):
            kind, build, variants = rng.choice(builders)
            v = rng.choice(variants)
            labels[i] = f"{kind}.{v}"
            calls.append(s.Call(id=i, **{kind: build(v, who, rng.randrange(1 << 30))}))
        if variant == "empty_call":
            calls.append(s.Call(id=99))
            labels[99] = "empty"
        elif variant == "nan_timeout":
            calls.append(
                s.Call(
                    id=98,
                    timeout_seconds=math.nan,
                    revive=s.ReviveRequest(caller=self.caller(self.framework(pick), who)),
                )
            )
            labels[98] = "revive.nan_timeout"
        elif variant == "dup_call_ids":
            calls += calls[:1]
        rpc = self.sched.Calls()
        results: list[s.CallResult] = []
        try:
            async with asyncio.timeout(CALL_TIMEOUT):
                await rpc.write(s.CallBatch(calls=calls))
                await rpc.done_writing()
                async for batch in rpc:
                    results.extend(batch.results)
        except TimeoutError:
            rpc.cancel()
            self.record("batch", variant, NO_ANSWER)
            raise AssertionError(f"batch.{variant}: no answer in {CALL_TIMEOUT:g} s") from None
        except grpc.aio.AioRpcError as err:
            self.record("batch", variant, err.code().name, err.details() or "")
            return
        for r in results:
            name = STATUS_OF_CODE[r.code].name if r.code in STATUS_OF_CODE else f"code {r.code}"
            self.record("batch", labels.get(r.id, variant), name, r.message)

    # -- agents ---------------------------------------------------------------------------

    def agent_info(self, variant: str, pick: int) -> tuple[ag.Register, str]:
        reg = ag.Register(
            info=pb.AgentInfo(
                hostname=f"fuzz-{pick % 7}",
                resources=pb.Resources(
                    cpus=1 + pick % 4, mem=512, disk=100, ports=[pb.Range(begin=40000, end=40010)]
                ),
            )
        )
        info = reg.info  # a reference: changing it changes the registration
        mine = self.live_agents()
        first = "register"
        if variant == "reservations_exceed":
            info.reservations["web"].CopyFrom(pb.Resources(cpus=info.resources.cpus + 1))
        elif variant == "cpus_1e308":
            info.resources.cpus = 1e308
        elif variant == "cpus_nan":
            info.resources.cpus = math.nan
        elif variant == "mem_neg":
            info.resources.mem = -1
        elif variant == "attrs_10k":
            info.attributes.update({f"a{i}": "v" for i in range(10_000)})
        elif variant == "huge_hostname":
            info.hostname = HUGE
        elif variant == "ports_inverted":
            info.resources.ports[0].begin, info.resources.ports[0].end = 40010, 40000
        elif variant == "live_id_no_secret":
            info.id = self.real_agent_id
        elif variant == "own_id_wrong_secret" and mine:
            info.id, reg.secret = mine[pick % len(mine)].agent_id, "wrong"
        elif variant == "reregister" and mine:
            a = mine[pick % len(mine)]
            info.id, reg.secret = a.agent_id, a.secret
        elif variant == "huge_secret":
            info.id, reg.secret = self.new_id("S-new"), HUGE
        elif variant in ("report_foreign_task", "report_master_state", "report_too_much"):
            fw = self.framework(pick)
            fid = fw.caller.framework_id if fw else "F-ghost"
            tid = next((t for f in self.frameworks for _, t in f.tasks), "t-ghost")
            state = pb.TASK_STATE_RUNNING
            res = pb.Resources(cpus=0.01)
            if variant == "report_master_state":
                state, tid = pb.TASK_STATE_LOST, self.new_id("t-lost")
            elif variant == "report_too_much":
                res, tid = pb.Resources(cpus=1e6), self.new_id("t-much")
            reg.tasks.add(task_id=tid, framework_id=fid, resources=res)
            reg.task_statuses.add(task_id=tid, framework_id=fid, state=state)
        elif variant == "report_ghost_framework":
            tid = self.new_id("t-ghost")
            reg.tasks.add(task_id=tid, framework_id="F-ghost", resources=pb.Resources(cpus=0.01))
            reg.task_statuses.add(task_id=tid, framework_id="F-ghost", state=pb.TASK_STATE_RUNNING)
        elif variant == "first_not_register":
            first = "heartbeat"
        return reg, first

    async def do_agent_register(self, variant: str, who: str, pick: int) -> None:
        reg, first = self.agent_info(variant, pick)
        call = self.agent_stub.Connect()
        agent = RawAgent(call=call)
        try:
            async with asyncio.timeout(CALL_TIMEOUT):
                if variant == "empty_stream":
                    await call.done_writing()
                elif first == "heartbeat":
                    await call.write(ag.AgentMessage(heartbeat=ag.AgentHeartbeat(timestamp=1)))
                else:
                    await call.write(ag.AgentMessage(register=reg))
                msg = await call.read()
        except TimeoutError:
            agent.close()
            self.record("agent_register", variant, NO_ANSWER)
            raise AssertionError(
                f"agent_register.{variant}: no answer in {CALL_TIMEOUT:g} s"
            ) from None
        except grpc.aio.AioRpcError as err:
            agent.close()
            self.record("agent_register", variant, err.code().name, err.details() or "")
            return
        if msg is grpc.aio.EOF:
            code = await call.code()
            self.record("agent_register", variant, code.name, await call.details() or "")
            agent.close()
            return
        assert msg.HasField("registered"), f"agent_register.{variant}: first answer {msg!r}"
        self.record("agent_register", variant, "OK")
        agent.agent_id, agent.secret = msg.registered.agent_id, msg.registered.secret
        agent.reader = asyncio.create_task(agent.read())
        for old in self.agents:  # the master closes the stream a re-registration replaces
            if old.agent_id == agent.agent_id:
                old.close()
        self.agents.append(agent)
        while len(self.live_agents()) > MAX_AGENTS:
            self.agents[0].close()

    async def do_agent_message(self, variant: str, who: str, pick: int) -> None:
        """One message on a registered raw agent's stream: there is no status to record, but
        the stream must stay usable (the master ends it only for a reason)."""
        mine = self.live_agents()
        if not mine:
            return
        agent = mine[pick % len(mine)]
        if variant == "close":
            agent.close()
            self.record("agent_message", variant, STREAM_MESSAGE)
            return
        if variant == "heartbeat":
            msg = ag.AgentMessage(heartbeat=ag.AgentHeartbeat(timestamp=pick))
        elif variant == "empty":
            msg = ag.AgentMessage()
        elif variant == "register_again":
            msg = ag.AgentMessage(register=ag.Register(info=pb.AgentInfo(id=agent.agent_id)))
        else:
            msg = ag.AgentMessage(
                status_updates=ag.StatusUpdates(statuses=self.statuses(variant, agent, pick))
            )
        try:
            await asyncio.wait_for(agent.call.write(msg), CALL_TIMEOUT)
        except (grpc.aio.AioRpcError, asyncio.InvalidStateError, TimeoutError) as err:
            agent.close()
            self.record("agent_message", variant, STREAM_MESSAGE, f"stream gone: {err!r}")
            return
        self.record("agent_message", variant, STREAM_MESSAGE)

    def statuses(self, variant: str, agent: RawAgent, pick: int) -> list[pb.TaskStatus]:
        own = agent.tasks[pick % len(agent.tasks)] if agent.tasks else None
        tid, fid = (own.task_id, own.framework_id) if own else ("t-none", "F-none")
        state, uuid = pb.TASK_STATE_RUNNING, b""
        if variant == "finished_own":
            state, uuid = pb.TASK_STATE_FINISHED, random.Random(pick).randbytes(16)
        elif variant == "killed_own":
            state, uuid = pb.TASK_STATE_KILLED, random.Random(pick).randbytes(16)
        elif variant == "other_agents_task":
            other = [t for f in self.frameworks for t in f.tasks]
            _, tid = other[pick % len(other)] if other else ("", tid)
            fid = next((f.caller.framework_id for f in self.frameworks if (_, tid) in f.tasks), fid)
            state = pb.TASK_STATE_FINISHED
        elif variant == "unknown_task":
            tid, state = "t-no-such", pb.TASK_STATE_FAILED
        elif variant == "state_unknown":
            state = pb.TASK_STATE_UNKNOWN
        elif variant == "state_lost":
            state = pb.TASK_STATE_LOST
        elif variant == "state_invalid_enum":
            state = 99  # type: ignore[assignment]
        elif variant == "huge_message":
            state, uuid = pb.TASK_STATE_FAILED, b"u" * 16
        elif variant == "huge_uuid":
            uuid = b"u" * (limits.MAX_UUID_BYTES + 1)
        elif variant == "nan_timestamp":
            return [pb.TaskStatus(task_id=tid, framework_id=fid, state=state, timestamp=math.nan)]
        elif variant == "many":
            return [
                pb.TaskStatus(task_id=f"t-many-{i}", framework_id=fid, state=pb.TASK_STATE_FINISHED)
                for i in range(1000)
            ]
        message = HUGE[: 2 * limits.MiB] if variant == "huge_message" else "fuzz"
        return [
            pb.TaskStatus(
                task_id=tid,
                framework_id=fid,
                agent_id=agent.agent_id,
                state=state,
                uuid=uuid,
                message=message,
                source=pb.TASK_SOURCE_AGENT,
            )
        ]

    # -- the operator API ------------------------------------------------------------------

    async def do_operator(self, variant: str, who: str, pick: int) -> None:
        if variant == "state":
            request: Any = op.GetStateRequest()
            method = self.operator.GetState
        elif variant.startswith("list_"):
            # GetState's lists a page at a time: a page after some id, a limit past the bound,
            # a token that is not one (garbage, another list's, huge).
            after = paging.token_of("agents", (f"A{pick}",))
            request, method = {
                "list_agents": (
                    op.ListAgentsRequest(limit=pick % 7, page_token=after),
                    self.operator.ListAgents,
                ),
                "list_tasks_huge_limit": (
                    op.ListTasksRequest(limit=5001 + pick),
                    self.operator.ListTasks,
                ),
                "list_bad_token": (
                    op.ListFrameworksRequest(page_token=(HUGE, "%%%", after)[pick % 3]),
                    self.operator.ListFrameworks,
                ),
            }[variant]
        else:
            fw = self.framework(pick)
            fid = {
                "explain_own": fw.caller.framework_id if fw else "",
                "explain_removed": self.removed[-1].caller.framework_id if self.removed else "",
                "explain_unknown": "F-no-such",
                "explain_huge": HUGE,
            }[variant]
            request, method = op.ExplainRequest(framework_id=fid), self.operator.Explain
        try:
            await method(request, timeout=CALL_TIMEOUT)
        except grpc.aio.AioRpcError as err:
            code, details = err.code().name, err.details() or ""
        else:
            code, details = "OK", ""
        self.record("operator", variant, code, details)

    # -- undecodable bytes ----------------------------------------------------------------

    GARBAGE_METHODS = (
        "/corral.v1.Scheduler/Accept",
        "/corral.v1.Scheduler/Decline",
        "/corral.v1.Scheduler/Kill",
        "/corral.v1.Scheduler/Acknowledge",
        "/corral.v1.Scheduler/Reconcile",
        "/corral.v1.Scheduler/Teardown",
        "/corral.v1.Scheduler/Subscribe",
        "/corral.v1.Scheduler/Calls",
        "/corral.v1.AgentService/Connect",
        "/corral.v1.Operator/GetState",
        "/corral.v1.Operator/ListAgents",
        "/corral.v1.Operator/Explain",
        "/corral.v1.Operator/KillTasks",
        "/corral.v1.Operator/Drain",
        "/corral.v1.Operator/DeleteAgent",
        "/corral.v1.Operator/ReadTaskFile",
    )

    async def do_garbage(self, variant: str, who: str, pick: int) -> None:
        rng = random.Random(pick)
        method = self.GARBAGE_METHODS[pick % len(self.GARBAGE_METHODS)]
        size = {"short": 8, "long": 4096, "truncated": 0}.get(variant, 8)
        data = rng.randbytes(size)
        if variant == "truncated":  # a valid message's first half
            full = s.AcceptRequest(
                caller=s.Caller(framework_id="F", stream_id="x"), offer_ids=["O"] * 3
            ).SerializeToString()
            data = full[: len(full) // 2 + 1]
        assert self.channel is not None
        label = f"{variant}@{method.rsplit('/', 1)[1]}"
        try:
            async with asyncio.timeout(CALL_TIMEOUT):
                if method.endswith(("Subscribe", "ReadTaskFile")):
                    rpc = self.channel.unary_stream(
                        method, request_serializer=identity, response_deserializer=identity
                    )(data)
                    await rpc.read()
                    rpc.cancel()  # if it decoded into a subscription, let it go
                    code, details = "OK", ""
                elif method.endswith(("Calls", "Connect")):
                    rpc = self.channel.stream_stream(
                        method, request_serializer=identity, response_deserializer=identity
                    )()
                    await rpc.write(data)
                    await rpc.done_writing()
                    async for _ in rpc:
                        pass
                    code, details = (await rpc.code()).name, await rpc.details() or ""
                else:
                    await self.channel.unary_unary(
                        method, request_serializer=identity, response_deserializer=identity
                    )(data)
                    code, details = "OK", ""
        except TimeoutError:
            self.record("garbage", label, NO_ANSWER)
            raise AssertionError(f"garbage.{label}: no answer in {CALL_TIMEOUT:g} s") from None
        except grpc.aio.AioRpcError as err:
            code, details = err.code().name, err.details() or ""
        self.record("garbage", label, code, details)


# What the state machine draws: a call kind, its variants, and how often (weight) it comes up.
CALLS: dict[str, tuple[int, tuple[str, ...]]] = {
    "subscribe": (
        2,
        (
            "failover",
            "valid",
            "short_failover",
            "empty_name",
            "huge_name",
            "unknown_id",
            "other_id_other_name",
            "removed_id",
            "nan_failover",
            "neg_failover",
            "inf_failover",
            "bad_enums",
            "many_tolerations",
            "long_role",
            "bad_constraint",
        ),
    ),
    "lifecycle": (1, ("teardown", "disconnect")),
    "accept": (
        6,
        (
            "fit",
            "fit",
            "fit",
            "same_agent",
            "two_agents",
            "other_fw",
            "unknown_offer",
            "dup_offer",
            "too_many_offers",
            "no_offers",
            "no_operation",
            "no_operations",
            "neg",
            "nan",
            "inf",
            "huge_scalar",
            "exceed",
            "port_overlap",
            "port_outside",
            "dup_task",
            "empty_task_id",
            "huge_task_id",
            "huge_command",
            "no_command",
            "too_many_tasks",
            "reuse_task_id",
            "neg_grace",
            "labels",
        ),
    ),
    "decline": (
        3,
        (
            "own",
            "refuse_nan",
            "refuse_neg",
            "refuse_inf",
            "refuse_huge",
            "refuse_zero",
            "refuse_default",
            "unknown_offer",
            "dup_offer",
            "too_many_offers",
            "huge_offer_id",
        ),
    ),
    "kill": (
        2,
        (
            "live",
            "unknown_task",
            "empty_task",
            "huge_task_id",
            "wrong_agent",
            "other_fw_task",
            "neg_grace",
            "nan_grace",
            "inf_grace",
        ),
    ),
    "acknowledge": (
        2,
        (
            "valid",
            "wrong_uuid",
            "huge_uuid",
            "unknown_task",
            "empty_fields",
            "too_many",
            "duplicated",
        ),
    ),
    "reconcile": (1, ("all", "known", "unknown", "empty_id", "huge_id", "too_many", "duplicated")),
    "suppress": (1, ("suppress", "revive")),
    "batch": (2, ("plain", "empty_call", "nan_timeout", "dup_call_ids")),
    "agent_register": (
        2,
        (
            "valid",
            "valid",
            "reregister",
            "reservations_exceed",
            "cpus_1e308",
            "cpus_nan",
            "mem_neg",
            "attrs_10k",
            "huge_hostname",
            "ports_inverted",
            "live_id_no_secret",
            "own_id_wrong_secret",
            "huge_secret",
            "report_foreign_task",
            "report_master_state",
            "report_too_much",
            "report_ghost_framework",
            "first_not_register",
            "empty_stream",
        ),
    ),
    "agent_message": (
        3,
        (
            "heartbeat",
            "running_own",
            "finished_own",
            "killed_own",
            "other_agents_task",
            "unknown_task",
            "state_unknown",
            "state_lost",
            "state_invalid_enum",
            "huge_message",
            "huge_uuid",
            "nan_timestamp",
            "many",
            "empty",
            "register_again",
            "close",
        ),
    ),
    "operator": (
        1,
        (
            "state",
            "explain_own",
            "explain_removed",
            "explain_unknown",
            "explain_huge",
            "list_agents",
            "list_tasks_huge_limit",
            "list_bad_token",
        ),
    ),
    "garbage": (1, ("short", "long", "truncated")),
}
CALLERS = ("own", "own", "own", "own", "stale", "unknown", "empty", "huge", "removed")


# ----------------------------------------------------------------------------- invariants


async def check_timers(fuzz: Fuzzer) -> None:
    """The master's timers still fire after the run: a framework gone past its failover
    timeout is removed, a silent agent becomes unreachable, the real agent stays active.
    Watched on the Operator's event stream, which the master writes as they happen."""
    watch = fuzz.operator.Watch(op.WatchRequest())
    seen: list[tuple[str, str]] = []

    async def until(kind: str, subject: str, timeout: float) -> None:
        try:
            async with asyncio.timeout(timeout):
                while (kind, subject) not in seen:
                    event = await watch.read()
                    assert event is not grpc.aio.EOF, "the master ended the Watch stream"
                    seen.append((event.kind, event.subject))
        except TimeoutError:
            raise AssertionError(
                f"no {kind} event for {subject} within {timeout:g} s (saw {seen[-10:]})"
            ) from None

    try:
        await fuzz.do_subscribe("short_failover", "own", 0)
        fw = fuzz.frameworks[-1]
        assert fw.caller.framework_id, "a valid subscription was refused after the run"
        await until("framework_added", fw.caller.framework_id, CALL_TIMEOUT)  # watch is live
        await fuzz.do_agent_register("valid", "own", 0)
        agent = fuzz.agents[-1]
        assert agent.agent_id, "a valid agent registration was refused after the run"
        fuzz.let_go(fw)  # its stream breaks: removed after its 0.3 s failover timeout
        agent.close()  # no more heartbeats: unreachable after the agent timeout
        await until("framework_removed", fw.caller.framework_id, 15)
        await until("agent_unreachable", agent.agent_id, AGENT_TIMEOUT + 15)
    finally:
        watch.cancel()
    state = await fuzz.state()
    real = next(a for a in state.agents if a.info.id == fuzz.real_agent_id)
    assert real.active, "the real agent, which heartbeats, was marked unreachable"
    check_state(state)


def format_counts(fuzz: Fuzzer, detail: bool = False) -> str:
    lines = [f"corral fuzz: {fuzz.calls} calls, by status:"]
    lines += [f"  {code:<28} {n:>7}" for code, n in fuzz.codes.most_common()]
    if detail:
        lines.append("by call:")
        lines += [f"  {c:<44} {code:<28} {n:>6}" for (c, code), n in sorted(fuzz.by_call.items())]
    return "\n".join(lines)
