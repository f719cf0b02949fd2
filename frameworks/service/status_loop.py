"""A service's status, published to the master while the service leads (``Operator.
PublishStatus``; the web UI's node groups and queues views, docs/ui.md "Services").

``StatusLoop(publisher, build, interval)``: every ``interval`` seconds, and at once after
``wake()``, ``build()``'s document is published with a ttl of three intervals (and the call's
timeout), so the UI marks it stale only when three in a row were missed. A master that cannot be
reached is tried again next time; a refusal (the principal lacks ``operator: [PublishStatus]``,
another principal's status is fresh) is logged once per reason and tried again too, so a grant
added later takes effect without a restart. The service goes on either way: its status is a
window onto it, never a condition of its work.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable, Mapping
from typing import Any

import grpc
import structlog

from corral.frameworks.sdk.errors import CallError
from corral.frameworks.sdk.status import StatusPublisher
from corral.frameworks.sdk.tls import Credentials

log = structlog.get_logger("corral.service")

TTL_INTERVALS = 3


class StatusLoop:
    def __init__(
        self,
        publisher: StatusPublisher,
        build: Callable[[], Mapping[str, Any]],
        interval: float,
    ) -> None:
        self.publisher = publisher
        self.build = build
        self.interval = interval
        self.ttl = TTL_INTERVALS * interval + publisher.timeout
        self.published = 0
        self.last_error = ""
        self._said: set[str] = set()
        self._wake = asyncio.Event()
        self._task: asyncio.Task[None] | None = None

    @classmethod
    def publishing(
        cls,
        master: str,
        tls: Credentials,
        service: str,
        kind: str,
        build: Callable[[], Mapping[str, Any]],
        interval: float,
    ) -> StatusLoop:
        """A loop publishing ``build()`` as ``service``'s status of ``kind``, started."""
        loop = cls(StatusPublisher(master, service, kind, tls), build, interval)
        loop.start()
        return loop

    def health(self) -> dict[str, Any]:
        """What the service's ``/v1/health`` shows of it."""
        return {"status_published": self.published, "status_error": self.last_error}

    def start(self) -> None:
        self._task = asyncio.get_running_loop().create_task(self._loop(), name="status-loop")

    def wake(self) -> None:
        self._wake.set()

    async def close(self) -> None:
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
        await self.publisher.close()

    async def publish_once(self) -> bool:
        """Publish the current document: True if the master kept it."""
        try:
            await self.publisher.publish(self.build(), self.ttl)
        except CallError as err:
            self.last_error = f"{err.code.name}: {err.message}"
            if err.code != grpc.StatusCode.UNAVAILABLE and self.last_error not in self._said:
                self._said.add(self.last_error)
                log.warning(
                    "status_refused",
                    service=self.publisher.service,
                    kind=self.publisher.kind,
                    error=self.last_error,
                    hint="grant the service's principal operator: [PublishStatus]"
                    if err.code == grpc.StatusCode.PERMISSION_DENIED
                    else "",
                )
            return False
        self.last_error = ""
        self.published += 1
        return True

    async def _loop(self) -> None:
        while True:
            try:
                await self.publish_once()
            except asyncio.CancelledError:
                raise
            except Exception:  # a document that cannot be built must not end the service
                log.exception("status_build_failed", service=self.publisher.service)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wake.wait(), self.interval)
            self._wake.clear()
