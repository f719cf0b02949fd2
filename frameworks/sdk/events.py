"""``async for event in driver.events()``: the scheduler callbacks as a stream of typed events.

A driver built without a scheduler (``Driver(None, info, ...)``) gets an ``EventChannel`` as its
scheduler. Each callback hands its event to the loop and waits until the loop asks for the next
one, so everything the callbacks promise holds for the loop body too: one event at a time, in
order; a status is acknowledged once the body that handled it is done; a slow loop pushes back
on the master through the driver's bounded queue.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from corral.frameworks.sdk.scheduler import Scheduler
from corral.frameworks.sdk.views import OfferView, StatusView
from corral.v1.common_pb2 import ExecutorTerminated, Offer, TaskStatus
from corral.v1.scheduler_pb2 import AgentLost

if TYPE_CHECKING:
    from corral.frameworks.sdk.driver import Driver


@dataclass(frozen=True, slots=True)
class SubscribedEvent:
    """The master accepted the subscription (first time, or again after a reconnect)."""

    framework_id: str


@dataclass(frozen=True, slots=True)
class OffersEvent:
    """New offers. Unlike the default ``Scheduler.offers``, nothing declines them for you."""

    offers: list[Offer]

    @property
    def views(self) -> list[OfferView]:
        return [OfferView.of(o) for o in self.offers]


@dataclass(frozen=True, slots=True)
class RescindEvent:
    """These offers are void."""

    offer_ids: list[str]


@dataclass(frozen=True, slots=True)
class UpdateEvent:
    """A task changed state; acknowledged when the loop asks for the next event."""

    status: TaskStatus

    @property
    def view(self) -> StatusView:
        return StatusView.of(self.status)


@dataclass(frozen=True, slots=True)
class ErrorEvent:
    """The master ended the framework; the loop ends after it (raising ``FrameworkError``)."""

    message: str


@dataclass(frozen=True, slots=True)
class AgentsLostEvent:
    """Agents this framework had tasks on are gone (their tasks' statuses come apart)."""

    agents: list[AgentLost]


@dataclass(frozen=True, slots=True)
class ExecutorTerminatedEvent:
    """One of this framework's custom executors ended."""

    executor: ExecutorTerminated


@dataclass(frozen=True, slots=True)
class DisconnectedEvent:
    """The event stream was lost; the driver is reconnecting. Outstanding offers are void."""


DriverEvent = (
    SubscribedEvent
    | OffersEvent
    | RescindEvent
    | UpdateEvent
    | ErrorEvent
    | DisconnectedEvent
    | AgentsLostEvent
    | ExecutorTerminatedEvent
)


class _Undelivered(Exception):
    """The driver ended before the loop took the event (the driver is done: nothing sees it)."""


class EventChannel(Scheduler):
    """The scheduler of a driver whose framework reads ``driver.events()``."""

    def __init__(self, ended: asyncio.Event) -> None:
        self._ended = ended  # set when the driver ends
        # The event in hand, with the flag its callback waits on. The driver calls one
        # callback at a time and each waits until its event was handled or the driver ended,
        # so there is always room here while the driver runs.
        self._handoff: asyncio.Queue[tuple[DriverEvent, asyncio.Event]] = asyncio.Queue(1)
        self._reading = False

    async def _deliver(self, event: DriverEvent) -> None:
        if self._ended.is_set():
            raise _Undelivered  # the rest of an UPDATE batch after stop(): nobody reads it
        handled = asyncio.Event()
        self._handoff.put_nowait((event, handled))
        # The driver ending (stop() from the loop body, say) also lets the callback return,
        # so the statuses handed to the loop are acknowledged, as with a callback.
        await _first(handled.wait(), self._ended.wait())
        if not handled.is_set() and not self._handoff.empty():
            # Never handed to the loop: raising keeps a status unacknowledged, so the master
            # delivers it again to the next incarnation of the framework.
            self._handoff.get_nowait()
            raise _Undelivered

    async def stream(self, driver: Driver) -> AsyncIterator[DriverEvent]:
        """The events, until the driver ends; then what ended it is raised, as by ``wait()``."""
        if self._reading:
            raise RuntimeError("driver.events() is already being read")
        self._reading = True
        handled: asyncio.Event | None = None
        try:
            while True:
                if handled is not None:
                    handled.set()
                    handled = None
                if self._handoff.empty() and self._ended.is_set():
                    await driver.wait()  # raises what ended the driver, if anything did
                    return
                got = asyncio.ensure_future(self._handoff.get())
                await _first(got, self._ended.wait())
                if not got.done() or got.cancelled():
                    continue  # the driver ended; an event handed over meanwhile is still read
                event, handled = got.result()
                yield event
        finally:
            if handled is not None:
                handled.set()  # the loop was left: let the driver go on
            self._reading = False

    async def subscribed(self, driver: Driver, framework_id: str) -> None:
        await self._deliver(SubscribedEvent(framework_id))

    async def offers(self, driver: Driver, offers: list[Offer]) -> None:
        await self._deliver(OffersEvent(offers))

    async def rescinded(self, driver: Driver, offer_ids: Sequence[str]) -> None:
        await self._deliver(RescindEvent(list(offer_ids)))

    async def status(self, driver: Driver, status: TaskStatus) -> None:
        await self._deliver(UpdateEvent(status))

    async def error(self, driver: Driver, message: str) -> None:
        await self._deliver(ErrorEvent(message))

    async def disconnected(self, driver: Driver) -> None:
        await self._deliver(DisconnectedEvent())

    async def agents_lost(self, driver: Driver, agents: Sequence[AgentLost]) -> None:
        await self._deliver(AgentsLostEvent(list(agents)))

    async def executor_terminated(self, driver: Driver, executor: ExecutorTerminated) -> None:
        await self._deliver(ExecutorTerminatedEvent(executor))


async def _first(*waits: Awaitable[object]) -> None:
    """Wait until one of ``waits`` is done; cancel the others."""
    futures = {asyncio.ensure_future(w) for w in waits}
    try:
        await asyncio.wait(futures, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for f in futures:
            if not f.done():
                f.cancel()
