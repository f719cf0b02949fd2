"""The callbacks a framework implements. The driver calls them one at a time, in event order."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from corral.v1.common_pb2 import ExecutorTerminated, Offer, TaskStatus
from corral.v1.scheduler_pb2 import AgentLost

if TYPE_CHECKING:
    from corral.frameworks.sdk.driver import Driver


class Scheduler:
    """Subclass and override what you need; every callback is awaited before the next event.

    An exception escaping a callback stops the driver and is re-raised by ``Driver.wait()``:
    a framework bug should be loud. A status whose callback raised is not acknowledged, so the
    master delivers it again to the next incarnation of the framework.
    """

    async def subscribed(self, driver: Driver, framework_id: str) -> None:
        """The master accepted the subscription (first time, or again after a reconnect)."""

    async def offers(self, driver: Driver, offers: list[Offer]) -> None:
        """New offers. By default they are all declined, with the master's default filter, so
        a framework that ignores offers does not hold resources hostage."""
        await driver.decline([offer.id for offer in offers])

    async def rescinded(self, driver: Driver, offer_ids: Sequence[str]) -> None:
        """These offers are void (their agent went away, or they timed out)."""

    async def status(self, driver: Driver, status: TaskStatus) -> None:
        """A task changed state. The driver acknowledges it when this returns."""

    async def error(self, driver: Driver, message: str) -> None:
        """The master ended the framework; the driver stops after this returns."""

    async def agents_lost(self, driver: Driver, agents: Sequence[AgentLost]) -> None:
        """Agents this framework had tasks on are gone: UNREACHABLE, or deleted by an operator
        (``reason``). Their tasks' statuses come to ``status`` as ever (Mesos' ``slaveLost``)."""

    async def executor_terminated(self, driver: Driver, executor: ExecutorTerminated) -> None:
        """One of this framework's custom executors ended (``status``: its wait status, as
        Mesos reports it; Mesos' ``executorLost``). Its tasks' statuses come to ``status``."""

    async def disconnected(self, driver: Driver) -> None:
        """The event stream was lost; the driver is reconnecting. Outstanding offers are void."""
