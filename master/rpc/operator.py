"""The Operator service: the cluster's state, explanations, events and the operator's settings
(priority classes, weights, quotas), for the CLI and tools."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import grpc

from corral import events as cluster_events
from corral import limits
from corral.master import (
    explanation,
    paging,
    state_pages,
    state_scope,
    task_files,
    views,
    what_if,
)
from corral.master.core import commands as cmd
from corral.master.core import events as ev
from corral.master.core.refusals import CallRejected
from corral.master.core.types import Requester
from corral.master.rpc.common import code_of
from corral.master.runtime import MasterRuntime
from corral.master.security import review, tokens
from corral.master.security.principals import principal_of
from corral.master.security.requester import BadRequester
from corral.master.service_status import StatusRefused
from corral.master.wire import convert
from corral.master.wire.convert import WireError
from corral.v1 import operator_pb2, operator_pb2_grpc


class OperatorServicer(operator_pb2_grpc.OperatorServicer):
    def __init__(self, runtime: MasterRuntime) -> None:
        self.rt = runtime

    async def GetState(
        self, request: operator_pb2.GetStateRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> operator_pb2.State | bytes:
        """The state a scope names; the whole state (no scope) comes already serialized, its
        agents' and tasks' parts kept between calls (views.state_wire; services.py passes
        the bytes through)."""
        if request.WhichOneof("scope") is None:
            whole: bytes = await self.rt.query(views.state_wire)
            return whole
        try:
            state: operator_pb2.State = await self.rt.query(
                lambda core: state_scope.scoped_state_pb(core, request)
            )
        except WireError as exc:
            await context.abort(grpc.StatusCode.INVALID_ARGUMENT, str(exc))
        return state

    async def _page(self, context: grpc.aio.ServicerContext[Any, Any], build: Any) -> Any:
        """One page of a list (state_pages.py), built on the core's task; a page token this
        master did not give, or a bad limit, is INVALID_ARGUMENT with the reason."""
        try:
            return await self.rt.query(build)
        except paging.BadPage as exc:
            await context.abort(grpc.StatusCode.INVALID_ARGUMENT, str(exc))

    async def ListAgents(
        self, request: operator_pb2.ListAgentsRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> operator_pb2.AgentList:
        answer: operator_pb2.AgentList = await self._page(
            context, lambda core: state_pages.list_agents(core, request.limit, request.page_token)
        )
        return answer

    async def ListFrameworks(
        self,
        request: operator_pb2.ListFrameworksRequest,
        context: grpc.aio.ServicerContext[Any, Any],
    ) -> operator_pb2.FrameworkList:
        answer: operator_pb2.FrameworkList = await self._page(
            context,
            lambda core: state_pages.list_frameworks(
                core, request.limit, request.page_token, request.live_only
            ),
        )
        return answer

    async def ListTasks(
        self, request: operator_pb2.ListTasksRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> operator_pb2.TaskList:
        answer: operator_pb2.TaskList = await self._page(
            context,
            lambda core: state_pages.list_tasks(
                core, request.limit, request.page_token, request.live_only
            ),
        )
        return answer

    async def ListOffers(
        self, request: operator_pb2.ListOffersRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> operator_pb2.OfferList:
        answer: operator_pb2.OfferList = await self._page(
            context, lambda core: state_pages.list_offers(core, request.limit, request.page_token)
        )
        return answer

    async def Explain(
        self, request: operator_pb2.ExplainRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> operator_pb2.Explanation:
        try:
            data = await explanation.for_caller(
                self.rt, principal_of(context), request.framework_id
            )
        except CallRejected as exc:
            await context.abort(code_of(exc), exc.message)
        return operator_pb2.Explanation(
            framework_id=data["framework_id"],
            state=data["state"],
            suppressed=data["suppressed"],
            outstanding_offers=data["outstanding_offers"],
            offered_agents=data["offered_agents"],
            reasons={k: int(v) for k, v in data["reasons"].items()},
            details_json=json.dumps(data["details"], default=str),
            priority=data["priority"],
            wants_nothing=data["wants_nothing"],
            pending_demands_json=json.dumps(data["pending_demands"]),
        )

    async def Review(
        self, request: operator_pb2.ReviewRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> operator_pb2.ReviewResponse:
        try:
            return await review.for_caller(self.rt, principal_of(context), request)
        except CallRejected as exc:
            await context.abort(code_of(exc), exc.message)
            raise  # abort() raised already

    async def Simulate(
        self, request: operator_pb2.SimulateRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> operator_pb2.SimulateResponse:
        try:
            asked = what_if.request_from_pb(request)
        except WireError as exc:
            await context.abort(grpc.StatusCode.INVALID_ARGUMENT, str(exc))
        answer = await what_if.answer(self.rt, asked)
        return operator_pb2.SimulateResponse(result_json=json.dumps(answer))

    async def PublishStatus(
        self,
        request: operator_pb2.PublishStatusRequest,
        context: grpc.aio.ServicerContext[Any, Any],
    ) -> operator_pb2.PublishStatusResponse:
        try:
            self.rt.service_status.publish(
                request.service,
                request.kind,
                principal_of(context).name,
                request.document_json,
                request.ttl_seconds,
                self.rt.clock(),
            )
        except StatusRefused as exc:
            denied = grpc.StatusCode.PERMISSION_DENIED
            await context.abort(
                denied if exc.denied else grpc.StatusCode.INVALID_ARGUMENT, exc.message
            )
        return operator_pb2.PublishStatusResponse()

    async def GetServiceStatuses(
        self,
        request: operator_pb2.GetServiceStatusesRequest,
        context: grpc.aio.ServicerContext[Any, Any],
    ) -> operator_pb2.ServiceStatuses:
        now = self.rt.clock()
        try:
            kept = self.rt.service_status.listing(request.kind)
        except StatusRefused as exc:
            await context.abort(grpc.StatusCode.INVALID_ARGUMENT, exc.message)
        return operator_pb2.ServiceStatuses(
            statuses=[
                operator_pb2.ServiceStatus(
                    service=s.service,
                    kind=s.kind,
                    principal=s.principal,
                    published_at=s.published_at,
                    ttl_seconds=s.ttl,
                    stale=s.stale(now),
                    document_json=s.document_json,
                    age_seconds=max(0.0, now - s.published_at),
                )
                for s in kept
            ]
        )

    async def _operator_call(
        self, context: grpc.aio.ServicerContext[Any, Any], event: ev.Event
    ) -> None:
        try:
            await self.rt.call(event)
        except CallRejected as exc:
            await context.abort(code_of(exc), exc.message)

    async def SetWeight(
        self, request: operator_pb2.SetWeightRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> operator_pb2.SetWeightResponse:
        event = ev.SetWeight(
            stimulus_id=self.rt.stimulus("set-weight"),
            now=self.rt.clock(),
            role=request.role,
            weight=request.weight,
        )
        await self._operator_call(context, event)
        return operator_pb2.SetWeightResponse()

    async def SetQuota(
        self, request: operator_pb2.SetQuotaRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> operator_pb2.SetQuotaResponse:
        try:
            guarantee, limit = convert.quota_from_pb(request.quota)
        except WireError as exc:
            await context.abort(grpc.StatusCode.INVALID_ARGUMENT, str(exc))
        event = ev.SetQuota(
            stimulus_id=self.rt.stimulus("set-quota"),
            now=self.rt.clock(),
            role=request.role,
            guarantee=guarantee,
            limit=limit,
        )
        await self._operator_call(context, event)
        return operator_pb2.SetQuotaResponse()

    async def GetRoles(
        self, request: operator_pb2.GetRolesRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> operator_pb2.Roles:
        return await self.rt.query(views.roles_pb)

    async def SetPriorityClass(
        self,
        request: operator_pb2.SetPriorityClassRequest,
        context: grpc.aio.ServicerContext[Any, Any],
    ) -> operator_pb2.SetPriorityClassResponse:
        try:
            c = convert.priority_class_from_pb(request.priority_class)
        except WireError as exc:
            await context.abort(grpc.StatusCode.INVALID_ARGUMENT, str(exc))
        event = ev.SetPriorityClass(
            stimulus_id=self.rt.stimulus("set-priority-class"),
            now=self.rt.clock(),
            priority_class=c,
        )
        await self._operator_call(context, event)
        return operator_pb2.SetPriorityClassResponse()

    async def DeletePriorityClass(
        self,
        request: operator_pb2.DeletePriorityClassRequest,
        context: grpc.aio.ServicerContext[Any, Any],
    ) -> operator_pb2.DeletePriorityClassResponse:
        event = ev.DeletePriorityClass(
            stimulus_id=self.rt.stimulus("delete-priority-class"),
            now=self.rt.clock(),
            name=request.name,
        )
        await self._operator_call(context, event)
        return operator_pb2.DeletePriorityClassResponse()

    async def GetPriorityClasses(
        self,
        request: operator_pb2.GetPriorityClassesRequest,
        context: grpc.aio.ServicerContext[Any, Any],
    ) -> operator_pb2.PriorityClasses:
        return await self.rt.query(views.priority_classes_pb)

    # --- operators' actions (master/core/operator_actions.py, maintenance.py) ---------------

    async def _requester(self, context: grpc.aio.ServicerContext[Any, Any]) -> Requester:
        try:
            return self.rt.requesters.of_grpc(context)
        except BadRequester as exc:
            await context.abort(grpc.StatusCode.INVALID_ARGUMENT, str(exc))
            raise  # not reached: abort raises

    async def _act(self, context: grpc.aio.ServicerContext[Any, Any], event: ev.Event) -> Any:
        try:
            return await self.rt.call(event)
        except CallRejected as exc:
            await context.abort(code_of(exc), exc.message)

    async def KillTasks(
        self, request: operator_pb2.KillTasksRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> operator_pb2.KillTasksResponse:
        try:
            ids = convert.idents(list(request.task_ids), "task_ids", limits.MAX_IDS_PER_CALL)
            convert.ident(request.framework_id, "framework_id")
        except WireError as exc:
            await context.abort(grpc.StatusCode.INVALID_ARGUMENT, str(exc))
        event = ev.KillTasks(
            stimulus_id=self.rt.stimulus("kill-tasks"),
            now=self.rt.clock(),
            requester=await self._requester(context),
            tasks=tuple((request.framework_id, t) for t in ids),
            grace_seconds=request.grace_seconds if request.HasField("grace_seconds") else None,
        )
        answered = await self._act(context, event)
        return operator_pb2.KillTasksResponse(
            tasks=[
                operator_pb2.KilledTask(task_id=t, framework_id=f, agent_id=a, outcome=o)
                for t, f, a, o in answered
            ]
        )

    async def TeardownFramework(
        self,
        request: operator_pb2.TeardownFrameworkRequest,
        context: grpc.aio.ServicerContext[Any, Any],
    ) -> operator_pb2.TeardownFrameworkResponse:
        event = ev.TeardownFramework(
            stimulus_id=self.rt.stimulus("teardown"),
            now=self.rt.clock(),
            requester=await self._requester(context),
            framework_id=request.framework_id,
        )
        killed = await self._act(context, event)
        return operator_pb2.TeardownFrameworkResponse(tasks_killed=killed)

    async def _maintenance(
        self, context: grpc.aio.ServicerContext[Any, Any], event: ev.Event
    ) -> operator_pb2.MaintenanceResponse:
        maintenance, killed = await self._act(context, event)
        out = operator_pb2.MaintenanceResponse(
            agent_id=getattr(event, "agent_id", ""), tasks_killed=list(killed)
        )
        if maintenance is not None:
            views.maintenance_to_pb(maintenance, False, out.maintenance)
        return out

    async def Cordon(
        self, request: operator_pb2.CordonRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> operator_pb2.MaintenanceResponse:
        event = ev.Cordon(
            stimulus_id=self.rt.stimulus("cordon"),
            now=self.rt.clock(),
            requester=await self._requester(context),
            agent_id=request.agent_id,
        )
        return await self._maintenance(context, event)

    async def Uncordon(
        self, request: operator_pb2.UncordonRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> operator_pb2.MaintenanceResponse:
        event = ev.Uncordon(
            stimulus_id=self.rt.stimulus("uncordon"),
            now=self.rt.clock(),
            requester=await self._requester(context),
            agent_id=request.agent_id,
        )
        return await self._maintenance(context, event)

    async def Drain(
        self, request: operator_pb2.DrainRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> operator_pb2.MaintenanceResponse:
        event = ev.Drain(
            stimulus_id=self.rt.stimulus("drain"),
            now=self.rt.clock(),
            requester=await self._requester(context),
            agent_id=request.agent_id,
            grace_seconds=request.grace_seconds if request.HasField("grace_seconds") else None,
        )
        return await self._maintenance(context, event)

    async def DeleteAgent(
        self, request: operator_pb2.DeleteAgentRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> operator_pb2.DeleteAgentResponse:
        event = ev.DeleteAgent(
            stimulus_id=self.rt.stimulus("delete-agent"),
            now=self.rt.clock(),
            requester=await self._requester(context),
            agent_id=request.agent_id,
        )
        gone = await self._act(context, event)
        return operator_pb2.DeleteAgentResponse(tasks_gone=gone)

    async def ReadTaskFile(
        self,
        request: operator_pb2.ReadTaskFileRequest,
        context: grpc.aio.ServicerContext[Any, Any],
    ) -> AsyncIterator[operator_pb2.TaskFileChunk]:
        stream = task_files.chunks(
            self.rt,
            principal_of(context),
            request.framework_id,
            request.task_id,
            request.path,
            request.offset,
            request.tail_lines,
            request.follow,
        )
        try:
            async for where, offset, data in stream:
                yield operator_pb2.TaskFileChunk(
                    data=data,
                    offset=offset,
                    task_id=where.task_id,
                    framework_id=where.framework_id,
                    agent_id=where.agent_id,
                )
        except CallRejected as exc:
            await context.abort(code_of(exc), exc.message)

    async def IssueToken(
        self, request: operator_pb2.IssueTokenRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> operator_pb2.Token:
        key = self.rt.token_key
        principal = principal_of(context)
        if key is None or not principal.name:
            await context.abort(
                grpc.StatusCode.FAILED_PRECONDITION,
                "this master runs in plain text (--insecure): it has no principals to issue "
                "tokens for",
            )
        try:
            ttl = tokens.ttl_of(request.ttl_seconds)
        except ValueError as exc:
            await context.abort(grpc.StatusCode.INVALID_ARGUMENT, str(exc))
        assert key is not None  # abort() raised above
        token, expires = tokens.issue(key, principal, self.rt.clock(), ttl)
        return operator_pb2.Token(token=token, principal=principal.name, expires_at=expires)

    async def Watch(
        self, request: operator_pb2.WatchRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> AsyncIterator[operator_pb2.ClusterEvent]:
        reason = await _reason_of(request.reason, context)
        q = self.rt.watch()
        try:
            while True:
                e = await q.get()
                if not reason or e.reason == reason:
                    yield event_pb(e)
        finally:
            self.rt.unwatch(q)

    async def GetEvents(
        self, request: operator_pb2.GetEventsRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> operator_pb2.ClusterEvents:
        reason = await _reason_of(request.reason, context)
        log = self.rt.recent_events
        subject = request.subject
        return operator_pb2.ClusterEvents(
            events=[event_pb(e) for e in log.select(reason) if not subject or e.subject == subject],
            dropped=log.dropped,
        )


async def _reason_of(text: str, context: grpc.aio.ServicerContext[Any, Any]) -> str:
    """A request's reason filter ("" : all); INVALID_ARGUMENT if it is not a reason."""
    if text:
        try:
            cluster_events.check_reason(text)
        except ValueError as exc:
            await context.abort(grpc.StatusCode.INVALID_ARGUMENT, str(exc))
    return text


def event_pb(e: cmd.ClusterEvent) -> operator_pb2.ClusterEvent:
    return operator_pb2.ClusterEvent(
        timestamp=e.timestamp,
        kind=e.kind,
        subject=e.subject,
        message=e.message,
        stimulus_id=e.stimulus_id,
        reason=e.reason,
        object_kind=e.object_kind,
    )
