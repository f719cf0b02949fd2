"""``POST /api/v1/scheduler``: Mesos' v1 scheduler API, translated to the Scheduler service's
requests and decoded by the same ``CallEvents`` into the same core events, so a Mesos
framework and a gRPC one share one allocator, one fairness, the same ACLs and events.

Status codes as Mesos answers them (docs/mesos-compat.md): SUBSCRIBE 200 and a chunked RecordIO
stream (``<length>\\n<json>``) with a ``Mesos-Stream-Id`` header; other calls 202; 400 for a bad
body or a missing or wrong ``Mesos-Stream-Id``; 401 without valid Basic credentials; 403 when
the ACLs refuse (recorded as a ``Denied`` event by the runtime, as for a certificate); 405 for
another method; 406 when the client accepts neither JSON nor protobuf; 415 for another content
type. Calls and events are ``application/json`` or ``application/x-protobuf`` (media.py).

As on Mesos, an ACCEPT whose launch the master refuses is still 202: its tasks come back as
UPDATEs from the master (TASK_ERROR for a task that is invalid or unauthorized, TASK_DROPPED
or TASK_LOST for offers that are gone), and the offers' resources go back to the pool.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any

from aiohttp import web

from corral.acl import ANONYMOUS, Principal
from corral.logging import get_logger
from corral.master import framework_messages
from corral.master.core import events as ev
from corral.master.core.refusals import CallRejected, Refusal
from corral.master.http.actions import HTTP_STATUS
from corral.master.mesos_api import media, wire
from corral.master.mesos_api.credentials import Credentials
from corral.master.mesos_api.wire import BadCall, TaskInvalid
from corral.master.rpc.out_stream import OutStream
from corral.master.runtime import MasterRuntime
from corral.master.wire import convert
from corral.master.wire.call_events import CallEvents
from corral.master.wire.convert import WireError
from corral.v1 import common_pb2 as pb
from corral.v1 import scheduler_pb2 as spb

log = get_logger("corral.master.mesos")

JSON, PROTOBUF = media.JSON, media.PROTOBUF
STREAM_ID = "Mesos-Stream-Id"


@dataclass(frozen=True, slots=True)
class Subscription:
    framework_id: str
    principal: Principal
    role: str
    partition_aware: bool
    stream: OutStream
    # TASK_KILLING_STATE: Mesos sends TASK_KILLING only to frameworks that declare they know it.
    killing_state: bool


def _reply(status: int, reason: str = "") -> web.Response:
    return web.Response(status=status, text=reason, content_type="text/plain")


class MesosScheduler:
    def __init__(
        self,
        runtime: MasterRuntime,
        credentials: Credentials | None,
        master_info: dict[str, Any],
    ) -> None:
        self.rt = runtime
        self.credentials = credentials
        self.master_info = master_info
        self.events = CallEvents(runtime)
        self.subscriptions: dict[str, Subscription] = {}

    # -- the request ---------------------------------------------------------------------------

    async def handle(self, request: web.Request) -> web.StreamResponse:
        content_type = request.headers.get("Content-Type", "").split(";")[0].strip().lower()
        if content_type not in media.TYPES:
            return _reply(
                415, f"expected Content-Type {JSON} or {PROTOBUF}, got {content_type or 'none'}"
            )
        principal = ANONYMOUS
        if self.credentials is not None:
            found = self.credentials.principal_of(request.headers.get("Authorization"))
            if found is None:
                return web.Response(
                    status=401,
                    text="valid HTTP Basic credentials are required",
                    headers={"WWW-Authenticate": 'Basic realm="mesos"'},
                )
            principal = found
        try:
            call = wire.obj(media.decode_call(await request.read(), content_type), "the call")
            kind = call.get("type")
            if kind == "SUBSCRIBE":
                if STREAM_ID in request.headers:
                    raise BadCall(f"SUBSCRIBE must not carry a {STREAM_ID} header")
                stream_type = media.stream_media(request.headers.get("Accept", ""), content_type)
                if stream_type is None:
                    return _reply(406, f"events are {JSON} or {PROTOBUF}; Accept allows neither")
                return await self._subscribe(request, call, principal, stream_type)
            return await self._call(request, call, kind, principal)
        except BadCall as exc:
            return _reply(400, str(exc))
        except WireError as exc:
            return _reply(400, str(exc))
        except _Refused as exc:
            return _reply(exc.status, exc.reason)

    # -- SUBSCRIBE -----------------------------------------------------------------------------

    async def _subscribe(
        self, request: web.Request, call: dict[str, Any], principal: Principal, stream_type: str
    ) -> web.StreamResponse:
        rt = self.rt
        subscribe = wire.field(call, "subscribe", "the call")
        info = wire.framework_info(
            wire.field(subscribe, "framework_info", "subscribe"), principal.name
        )
        top_id = wire.value_of(call, "framework_id", "the call", required=False)
        if top_id and info.id and top_id != info.id:
            raise BadCall("framework_id and subscribe.framework_info.id differ")
        info.id = info.id or top_id
        spec = convert.framework_spec_from_pb(info)  # WireError: 400
        stream_id = rt.new_secret()  # a credential: calls naming it act for the framework
        framework_id = spec.framework_id or rt.new_framework_id()
        stream = rt.new_stream("framework")
        handler = asyncio.current_task()

        def cut(reason: str) -> None:
            rt.metrics.streams_cut.labels("framework").inc()
            log.warning("stream_cut", kind="mesos-framework", reason=reason)
            if handler is not None:
                handler.cancel()

        stream.on_fail = cut
        rt.framework_streams[stream_id] = stream
        killing_state = any(
            isinstance(c, dict) and c.get("type") == "TASK_KILLING_STATE"
            for c in wire.items(
                wire.field(subscribe, "framework_info", "subscribe"), "capabilities", "info"
            )
        )
        sub = Subscription(
            framework_id, principal, spec.role, spec.partition_aware, stream, killing_state
        )
        self.subscriptions[stream_id] = sub
        response: web.StreamResponse | None = None
        try:
            try:
                await rt.call(
                    ev.FrameworkSubscribe(
                        stimulus_id=rt.stimulus("subscribe"),
                        now=rt.clock(),
                        connection=rt.new_connection(),
                        spec=spec,
                        new_framework_id=framework_id,
                        stream_id=stream_id,
                        principal=principal,
                    )
                )
            except CallRejected as exc:
                return _reply(HTTP_STATUS[exc.code], exc.message)
            response = web.StreamResponse(
                status=200,
                headers={
                    "Content-Type": stream_type,
                    STREAM_ID: stream_id,
                    "Cache-Control": "no-cache",
                },
            )
            response.enable_chunked_encoding()
            await response.prepare(request)
            caller = spb.Caller(framework_id=framework_id, stream_id=stream_id)
            async for msg in stream.messages():
                for event in await self._mesos_events(msg, sub, caller):
                    data = media.encode_event(event, stream_type)
                    await response.write(b"%d\n%s" % (len(data), data))
            return response
        except ConnectionError:
            # The framework went away mid-write: the core hears of it below. (Gone between
            # writes, or the stream cut: the handler is cancelled, and the same holds.)
            if response is None:
                raise
            return response
        finally:
            self.subscriptions.pop(stream_id, None)
            rt.framework_stream_closed(stream, framework_id, stream_id)

    async def _mesos_events(
        self, msg: Any, sub: Subscription, caller: spb.Caller
    ) -> list[dict[str, Any]]:
        if isinstance(msg, dict):  # made here (a refused launch's UPDATEs)
            return [msg]
        if isinstance(msg, bytes | bytearray):  # OFFERS, encoded once by the outbox
            msg = spb.Event.FromString(bytes(msg))
        if not sub.killing_state and msg.WhichOneof("event") == "update":
            await self._hide_killing(msg.update, caller)
        return wire.events_json(msg, sub.role, self.master_info)

    async def _hide_killing(self, update: spb.Update, caller: spb.Caller) -> None:
        """A framework without TASK_KILLING_STATE is not sent TASK_KILLING (as on Mesos); the
        adapter acknowledges those statuses for it, so the master stops resending them."""
        killing = [s for s in update.statuses if s.state == pb.TASK_STATE_KILLING]
        if not killing:
            return
        kept = [s for s in update.statuses if s.state != pb.TASK_STATE_KILLING]
        del update.statuses[:]
        update.statuses.extend(kept)
        acks = spb.AcknowledgeRequest(caller=caller)
        for s in killing:
            if s.uuid:
                acks.acknowledgements.add(agent_id=s.agent_id, task_id=s.task_id, uuid=s.uuid)
        if acks.acknowledgements:
            await self._apply(self.events.acknowledge(acks))

    # -- the other calls -----------------------------------------------------------------------

    async def _call(
        self, request: web.Request, call: dict[str, Any], kind: Any, principal: Principal
    ) -> web.Response:
        if not isinstance(kind, str) or not kind:
            raise BadCall("the call has no type")
        handler = getattr(self, f"_{kind.lower()}", None)
        if kind not in CALLS or handler is None:
            raise BadCall(f"call type {kind!r} is not supported by Corral ({UNSUPPORTED_WHY})")
        framework_id = wire.value_of(call, "framework_id", "the call")
        stream_id = request.headers.get(STREAM_ID, "")
        if not stream_id:
            raise BadCall(f"the {STREAM_ID} header is missing (it came with SUBSCRIBE's response)")
        sub = self.subscriptions.get(stream_id)
        if sub is None or sub.framework_id != framework_id:
            raise BadCall(
                f"{STREAM_ID} is not framework {framework_id}'s current subscription on this master"
            )
        if sub.principal.name != principal.name:
            return _reply(403, f"framework {framework_id} was subscribed by another principal")
        caller = spb.Caller(framework_id=framework_id, stream_id=stream_id)
        status: int = await handler(call.get(kind.lower(), {}), caller, sub)
        return _reply(status)

    async def _apply(self, event: ev.Event) -> CallRejected | None:
        try:
            await self.rt.call(event)
        except CallRejected as exc:
            return exc
        return None

    def _refused(self, exc: CallRejected | None, tolerate: tuple[Refusal, ...] = ()) -> int:
        """The status for a call the core answered: 202, or the refusal's code (Mesos answers
        202 for what ``tolerate`` names: an offer or task that is gone by now)."""
        if exc is None or exc.code in tolerate:
            return 202
        if exc.code in (Refusal.NOT_FOUND, Refusal.FAILED_PRECONDITION):
            raise BadCall(exc.message)
        raise _Refused(HTTP_STATUS[exc.code], exc.message)

    async def _accept(self, body: Any, caller: spb.Caller, sub: Subscription) -> int:
        accept = wire.obj(body, "accept")
        offer_ids = wire.offer_ids(accept, "accept")
        filters = wire.filters(accept, "accept")
        tasks: list[pb.TaskInfo] = []
        raws: list[Any] = []  # each task's JSON
        invalid: list[tuple[str, str, str, str]] = []  # (task id, agent id, reason, why)
        for n, raw in enumerate(wire.items(accept, "operations", "accept")):
            op = wire.obj(raw, f"accept.operations[{n}]")
            kind = op.get("type")
            if kind == "LAUNCH":
                launch = wire.obj(op.get("launch", {}), f"accept.operations[{n}].launch")
                for m, task in enumerate(wire.items(launch, "task_infos", "launch")):
                    try:
                        tasks.append(wire.task_info(task, m))
                        raws.append(task)
                    except TaskInvalid as exc:
                        t = wire.obj(task, "task")
                        agent = wire.value_of(t, "agent_id", "task", required=False)
                        task_id = wire.value_of(t, "task_id", "task")
                        invalid.append((task_id, agent, "REASON_TASK_INVALID", str(exc)))
            elif kind == "LAUNCH_GROUP":
                group = wire.obj(op.get("launch_group", {}), "launch_group")
                task_group = wire.obj(group.get("task_group", {}), "launch_group.task_group")
                executor = wire.obj(group.get("executor", {}), "launch_group.executor")
                executor_type = executor.get("type", "DEFAULT")
                why = (
                    f"LAUNCH_GROUP (a task group, run by Mesos' {executor_type} executor) is not "
                    "supported by Corral: launch the tasks with LAUNCH, as command tasks or "
                    "with a CUSTOM executor of one executor id (one process runs them all)"
                )
                for task in wire.items(task_group, "tasks", "task_group"):
                    t = wire.obj(task, "task")
                    invalid.append(
                        (
                            wire.value_of(t, "task_id", "task"),
                            wire.value_of(t, "agent_id", "task", required=False),
                            "REASON_TASK_GROUP_INVALID",
                            why,
                        )
                    )
            else:
                raise BadCall(
                    f"accept.operations[{n}]: {kind} is not supported by Corral (LAUNCH is; "
                    "reservations, volumes and disks are not)"
                )
        now = self.rt.clock()
        for task_id, agent_id, reason, why in invalid:
            self._tell(sub, task_id, agent_id, "TASK_ERROR", reason, why, now)
        refusal: CallRejected | None = None
        if any(t.HasField("executor") for t in tasks):
            await self._charge_executors_once(caller.framework_id, tasks, raws)
        if tasks:
            request = spb.AcceptRequest(
                caller=caller,
                offer_ids=offer_ids,
                operations=[spb.Operation(launch=spb.LaunchOperation(tasks=tasks))],
                filters=filters,
            )
            try:
                refusal = await self._apply(self.events.accept(request))
            except WireError as exc:
                refusal = CallRejected(Refusal.INVALID_ARGUMENT, str(exc))
            if refusal is None:
                return 202
            gone = await self._offers_gone(caller.framework_id, offer_ids)
            self._tell_refused(sub, tasks, refusal, gone)
        # Nothing launched: the offers go back under the filters, as an ACCEPT without
        # operations does on Mesos (a DECLINE).
        decline = spb.DeclineRequest(caller=caller, offer_ids=offer_ids, filters=filters)
        await self._apply(self.events.decline(decline))
        return 202

    def _tell(
        self,
        sub: Subscription,
        task_id: str,
        agent_id: str,
        state: str,
        reason: str,
        message: str,
        now: float,
    ) -> None:
        sub.stream.put(wire.master_status(task_id, agent_id, state, reason, message, now))

    async def _charge_executors_once(
        self, framework_id: str, tasks: list[pb.TaskInfo], raws: list[Any]
    ) -> None:
        """An executor's resources are charged once (Mesos' rule): to the first task that
        starts it, not to a task handed to it running (its framework's live task on that agent
        names it) nor to a later task of this ACCEPT naming it too."""

        def running(core: Any) -> set[tuple[str, str]]:
            fw = core.frameworks.get(framework_id)
            out = set()
            for record in fw.tasks.values() if fw is not None else ():
                wire_task = record.spec.wire
                if isinstance(wire_task, pb.TaskInfo) and wire_task.HasField("executor"):
                    out.add((record.agent_id, wire_task.executor.executor_id))
            return out

        charged: set[tuple[str, str]] = await self.rt.query(running)
        for task, raw in zip(tasks, raws, strict=True):
            if not task.HasField("executor"):
                continue
            key = (task.agent_id, task.executor.executor_id)
            if key in charged:
                wire.uncharge_executor(raw, task)
            charged.add(key)

    async def _offers_gone(self, framework_id: str, offer_ids: list[str]) -> bool:
        """Whether an offer of a refused ACCEPT is not the framework's outstanding offer (an
        offer rescinded or used meanwhile is normal, and Mesos answers it as such)."""

        def gone(core: Any) -> bool:
            for oid in offer_ids:
                offer = core.all_offers.get(oid)
                if offer is None or offer.framework_id != framework_id:
                    return True
            return not offer_ids

        result: bool = await self.rt.query(gone)
        return result

    def _tell_refused(
        self, sub: Subscription, tasks: list[pb.TaskInfo], refusal: CallRejected, gone: bool
    ) -> None:
        if gone:
            state = "TASK_DROPPED" if sub.partition_aware else "TASK_LOST"
            reason = "REASON_INVALID_OFFERS"
        elif refusal.code is Refusal.INVALID_ARGUMENT:
            state, reason = "TASK_ERROR", "REASON_TASK_INVALID"
        elif refusal.code is Refusal.PERMISSION_DENIED:
            state, reason = "TASK_ERROR", "REASON_TASK_UNAUTHORIZED"
        else:
            state = "TASK_DROPPED" if sub.partition_aware else "TASK_LOST"
            reason = "REASON_INVALID_OFFERS"
        now = self.rt.clock()
        for t in tasks:
            self._tell(sub, t.task_id, t.agent_id, state, reason, refusal.message, now)

    async def _decline(self, body: Any, caller: spb.Caller, sub: Subscription) -> int:
        decline = wire.obj(body, "decline")
        request = spb.DeclineRequest(
            caller=caller,
            offer_ids=wire.offer_ids(decline, "decline"),
            filters=wire.filters(decline, "decline"),
        )
        return self._refused(await self._apply(self.events.decline(request)), (Refusal.NOT_FOUND,))

    async def _revive(self, body: Any, caller: spb.Caller, sub: Subscription) -> int:
        self._check_roles(body, "revive", sub)
        event = self.events.revive(spb.ReviveRequest(caller=caller))
        return self._refused(await self._apply(event))

    async def _suppress(self, body: Any, caller: spb.Caller, sub: Subscription) -> int:
        self._check_roles(body, "suppress", sub)
        event = self.events.suppress(spb.SuppressRequest(caller=caller))
        return self._refused(await self._apply(event))

    @staticmethod
    def _check_roles(body: Any, what: str, sub: Subscription) -> None:
        roles = wire.items(wire.obj(body, what), "roles", what)
        if roles and roles != [sub.role]:
            raise BadCall(f"{what}.roles: this framework's one role is {sub.role!r}")

    async def _kill(self, body: Any, caller: spb.Caller, sub: Subscription) -> int:
        kill = wire.obj(body, "kill")
        task_id = wire.value_of(kill, "task_id", "kill")
        agent_id = wire.value_of(kill, "agent_id", "kill", required=False)
        grace = 0.0
        if "kill_policy" in kill:
            policy = wire.obj(kill["kill_policy"], "kill.kill_policy")
            if "grace_period" in policy:
                nanos = wire.obj(policy["grace_period"], "grace_period").get("nanoseconds")
                grace = wire.number(nanos, "kill.kill_policy.grace_period.nanoseconds") / 1e9
        request = spb.KillRequest(
            caller=caller, task_id=task_id, agent_id=agent_id, kill_grace_period_seconds=grace
        )
        refusal = await self._apply(self.events.kill(request))
        if refusal is not None and refusal.code is Refusal.NOT_FOUND:
            # Mesos reconciles a task it cannot kill: the framework hears what is known of it.
            reconcile = spb.ReconcileRequest(
                caller=caller, tasks=[spb.ReconcileTask(task_id=task_id, agent_id=agent_id)]
            )
            refusal = await self._apply(self.events.reconcile(reconcile))
        return self._refused(refusal)

    async def _acknowledge(self, body: Any, caller: spb.Caller, sub: Subscription) -> int:
        ack = wire.obj(body, "acknowledge")
        request = spb.AcknowledgeRequest(caller=caller)
        request.acknowledgements.add(
            agent_id=wire.value_of(ack, "agent_id", "acknowledge"),
            task_id=wire.value_of(ack, "task_id", "acknowledge"),
            uuid=wire.decode_bytes(ack.get("uuid"), "acknowledge.uuid"),
        )
        refusal = await self._apply(self.events.acknowledge(request))
        return self._refused(refusal, (Refusal.NOT_FOUND,))

    async def _reconcile(self, body: Any, caller: spb.Caller, sub: Subscription) -> int:
        reconcile = wire.obj(body, "reconcile")
        request = spb.ReconcileRequest(caller=caller)
        for n, raw in enumerate(wire.items(reconcile, "tasks", "reconcile")):
            t = wire.obj(raw, f"reconcile.tasks[{n}]")
            request.tasks.add(
                task_id=wire.value_of(t, "task_id", f"reconcile.tasks[{n}]"),
                agent_id=wire.value_of(t, "agent_id", f"reconcile.tasks[{n}]", required=False),
            )
        return self._refused(await self._apply(self.events.reconcile(request)))

    async def _teardown(self, body: Any, caller: spb.Caller, sub: Subscription) -> int:
        event = self.events.teardown(spb.TeardownRequest(caller=caller))
        return self._refused(await self._apply(event))

    async def _message(self, body: Any, caller: spb.Caller, sub: Subscription) -> int:
        """To one of the framework's custom executors (master/framework_messages.py)."""
        message = wire.obj(body, "message")
        data = wire.decode_bytes(message.get("data"), "message.data")
        if len(data) > framework_messages.MAX_DATA:
            raise BadCall(f"message.data is over {framework_messages.MAX_DATA} bytes")
        framework_messages.to_executor(
            self.rt,
            sub.framework_id,
            wire.value_of(message, "agent_id", "message"),
            wire.value_of(message, "executor_id", "message"),
            data,
        )
        return 202  # best effort, as on Mesos: a message to a gone agent is dropped

    async def _request(self, body: Any, caller: spb.Caller, sub: Subscription) -> int:
        return 202  # Mesos' allocator ignores REQUEST too (deprecated there)

    async def _accept_inverse_offers(self, body: Any, caller: spb.Caller, sub: Subscription) -> int:
        return 202  # Corral sends no inverse offers: every id is unknown, ignored as on Mesos

    _decline_inverse_offers = _accept_inverse_offers


class _Refused(Exception):
    def __init__(self, status: int, reason: str) -> None:
        super().__init__(reason)
        self.status = status
        self.reason = reason


CALLS = frozenset(
    {
        "ACCEPT",
        "DECLINE",
        "REVIVE",
        "SUPPRESS",
        "KILL",
        "ACKNOWLEDGE",
        "RECONCILE",
        "TEARDOWN",
        "MESSAGE",
        "REQUEST",
        "ACCEPT_INVERSE_OFFERS",
        "DECLINE_INVERSE_OFFERS",
    }
)
UNSUPPORTED_WHY = (
    "operation feedback and UPDATE_FRAMEWORK are not implemented: see docs/mesos-compat.md"
)
