"""One app of the serving service: its framework's driver, its scheduler, its deployment, and
what of it the store keeps.

Each app is its own framework (``serving:ID``) with its own id, kept in the store: in Corral's
contract the role and the tolerations are a framework's, and an app has its own of each, and
the master explains (why-pending) and keeps tasks through a failover per framework. The
framework subscribes with the service's long failover timeout (a week by default, as
Marathon's), so a service that dies leaves every instance running; the next one fails over
into the same framework id, takes the instances back from the store and asks the master about
each (``ServingScheduler.restore``): nothing is launched or killed that still runs.
"""

from __future__ import annotations

import asyncio
import dataclasses
import time

import grpc
import structlog

from corral.frameworks import sdk
from corral.frameworks.service.tenancy import NOBODY, Owner
from corral.frameworks.serving.app import AppSpec
from corral.frameworks.serving.deployment import Deployment
from corral.frameworks.serving.instances import Endpoint, Instance
from corral.frameworks.serving.scheduler import ServingScheduler
from corral.frameworks.serving.store import Revision, Store

log = structlog.get_logger("corral.serving")

TICK_SECONDS = 0.5
WHY_PENDING_EVERY = 10.0  # seconds between asking the master about a stuck deployment
RETRY_SECONDS = 2.0  # after the driver ended for a reason other than a stop


def running_spec(revision: Revision) -> AppSpec:
    """What runs for a revision: its app, with the restarts counted in its version."""
    spec = AppSpec.from_json(revision.spec)
    return dataclasses.replace(spec, restart_generation=revision.restarts)


class AppRunner:
    def __init__(
        self,
        store: Store,
        revision: Revision,
        framework_id: str,
        master: str,
        failover_timeout: float,
        owner: Owner = NOBODY,
    ) -> None:
        self.store = store
        self.owner = owner  # the app launches on its behalf (tenancy.py rule 3)
        self.master = master
        self.failover_timeout = failover_timeout
        self.revision = revision
        self.framework_id = framework_id
        spec = running_spec(revision)
        self.scheduler = ServingScheduler(spec, self._event, observer=_StoreObserver(self))
        self.deployment = self._deployment(spec)
        self.endpoints: list[Endpoint] = []
        self.endpoints_changed = asyncio.Event()  # replaced by a new one after each change
        self.deleted = asyncio.Event()
        self.last_event = ""
        self.driver: sdk.Driver | None = None
        self.deleting = False
        self._resubscribe = False
        self._task: asyncio.Task[None] | None = None
        self._why_task: asyncio.Task[None] | None = None
        self._why_at = -WHY_PENDING_EVERY

    @property
    def app_id(self) -> str:
        return self.revision.app_id

    @property
    def spec(self) -> AppSpec:
        return self.scheduler.spec

    def _deployment(self, spec: AppSpec) -> Deployment:
        now = time.monotonic()
        stored = self.store.deployment(self.app_id)
        if stored is not None and stored.revision == self.revision.revision:
            d = Deployment.resume(stored, now)
            self.scheduler.app.held = stored.state == "failed"
            return d
        d = Deployment.start(self.app_id, self.revision.revision, spec.version, time.time(), now)
        self.store.put_deployment(d.record)
        return d

    # -- lifecycle ----------------------------------------------------------------------------

    def start(self, instances: list[Instance]) -> None:
        self.scheduler.restore(instances)
        self._refresh_endpoints()
        self._task = asyncio.get_running_loop().create_task(self._run(), name=f"app-{self.app_id}")

    async def stop(self) -> None:
        """Leave the app running without us (the service stops): the master keeps the
        instances for the failover timeout."""
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
        if self._why_task is not None:
            self._why_task.cancel()
        await self.scheduler.close()

    def delete(self) -> None:
        """Kill every instance and end the framework (when the master answers), then forget
        the app; ``deleted`` is set once done."""
        self.store.mark_deleting(self.app_id)
        self.deleting = True
        if not self.framework_id and not self.scheduler.app.live:
            self._forget()  # nothing of it ever reached the master

    def _forget(self) -> None:
        self.store.delete_app(self.app_id)
        self.deleted.set()
        self.endpoints_changed.set()  # watchers learn it is gone
        self._event("deleted")

    # -- changes ----------------------------------------------------------------------------

    def apply(self, revision: Revision) -> str:
        """Run ``revision`` from now on: a new deployment; what changed, for the answer."""
        spec = running_spec(revision)
        old = self.spec
        what = self.scheduler.update(spec)
        self.revision = revision
        wall, now = time.time(), time.monotonic()
        self.deployment.supersede(wall)
        self.deployment = Deployment.start(self.app_id, revision.revision, spec.version, wall, now)
        self.store.put_deployment(self.deployment.record)
        if spec.framework_info() != old.framework_info():
            # Tolerations and the GPU capability are the framework's: tell the master.
            self._resubscribe = True
        self._event(f"revision {revision.revision} applied: {what}")
        return what

    # -- the loop ---------------------------------------------------------------------------

    async def _run(self) -> None:
        while not self.deleted.is_set():
            try:
                await self._subscribed_loop()
            except asyncio.CancelledError:
                raise
            except (sdk.FrameworkError, sdk.CallError) as err:
                if isinstance(err, sdk.CallError) and err.code not in _GONE:
                    self._event(f"disconnected: {err}; retrying")
                else:
                    self._framework_gone(str(err))
            except Exception as err:  # a bug must not take the other apps down: log, retry
                log.exception("app loop failed", app=self.app_id)
                self._event(f"internal error: {err!r}; retrying")
            finally:
                self.driver = None
                await self.scheduler.close()
            if not self.deleted.is_set():
                await asyncio.sleep(RETRY_SECONDS)

    async def _subscribed_loop(self) -> None:
        spec = self.spec
        info = spec.framework_info(
            id=self.framework_id,
            failover_timeout=self.failover_timeout,
            on_behalf_of=self.owner.principal(),
        )
        self._resubscribe = False
        driver = sdk.Driver(self.scheduler, info, self.master, connect_timeout=None)
        async with driver:
            self.driver = driver
            waiting = asyncio.ensure_future(driver.wait())
            try:
                while not waiting.done():
                    await asyncio.wait({waiting}, timeout=TICK_SECONDS)
                    if waiting.done():
                        break
                    if self.deleting:
                        await self._teardown(driver)
                        return
                    if self._resubscribe:
                        await driver.stop()  # a failover into the same id, with the new info
                        return
                    await self.scheduler.tick(driver)
                    self._assess()
                waiting.result()  # raises what ended the driver
            finally:
                waiting.cancel()

    async def _teardown(self, driver: sdk.Driver) -> None:
        await self.scheduler.close()
        await driver.teardown()  # the master kills every instance and forgets the framework
        self._forget()

    def _framework_gone(self, why: str) -> None:
        """The master no longer has our framework (removed after its failover timeout, or torn
        down by someone else): its instances are gone with it. Start afresh."""
        if self.deleting:
            self._forget()
            return
        self._event(f"framework {self.framework_id} is gone ({why}); subscribing anew")
        self.framework_id = ""
        self.store.set_framework_id(self.app_id, "")
        self.store.forget_instances(self.app_id)
        spec = self.spec
        held = self.scheduler.app.held
        self.scheduler = ServingScheduler(spec, self._event, observer=_StoreObserver(self))
        self.scheduler.app.held = held
        self._refresh_endpoints()

    def _assess(self) -> None:
        now, wall = time.monotonic(), time.time()
        d = self.deployment
        if d.stuck(now, self.spec) and now - self._why_at >= WHY_PENDING_EVERY:
            self._why_at = now
            self._why_task = asyncio.get_running_loop().create_task(self._ask_why())
        refusal = self.scheduler.refusal
        changed = d.refused(str(refusal), wall) if refusal is not None else False
        if changed or d.assess(self.scheduler.app, now, wall):
            self.store.put_deployment(d.record)
            if d.record.state == "failed":
                self.scheduler.app.held = True
            self._event(
                f"deployment of revision {d.record.revision} {d.record.state}"
                + (f": {d.record.reason}" if d.record.reason else "")
            )
        self._refresh_endpoints()

    async def _ask_why(self) -> None:
        pending = await self.why_pending()
        self.deployment.stuck_why = [p.summary for p in pending]

    async def why_pending(self) -> list[sdk.PendingDemand]:
        """The master's why-pending for this app's demand; empty if it cannot say."""
        driver = self.driver
        if not self.framework_id or driver is None:
            return []
        try:
            # The driver's master and credential: the app's framework's own principal, which
            # may explain its framework without any grant.
            pending = await sdk.why_pending(
                driver.address or self.master, self.framework_id, timeout=2.0, tls=driver.tls
            )
        except sdk.CallError:
            return []
        return [p for p in pending if p.name == self.app_id]

    def _refresh_endpoints(self) -> None:
        now = self.scheduler.app.endpoints()
        if now != self.endpoints:
            self.endpoints = now
            changed, self.endpoints_changed = self.endpoints_changed, asyncio.Event()
            changed.set()

    def _event(self, text: str) -> None:
        self.last_event = text
        log.info(text, app=self.app_id)


# A subscription refused with these means the framework id will never be accepted again.
_GONE = frozenset({grpc.StatusCode.FAILED_PRECONDITION, grpc.StatusCode.NOT_FOUND})


class _StoreObserver:
    """Keeps the store in step with the scheduler's instances, and the deployment with their
    failures."""

    def __init__(self, runner: AppRunner) -> None:
        self.runner = runner

    def subscribed(self, framework_id: str) -> None:
        r = self.runner
        if framework_id != r.framework_id:
            r.framework_id = framework_id
            r.store.set_framework_id(r.app_id, framework_id)

    def launching(self, instances: list[Instance]) -> None:
        self.runner.store.put_instances(self.runner.app_id, instances)

    def not_launched(self, instances: list[Instance]) -> None:
        self.runner.store.delete_instances([i.task_id for i in instances])

    def changed(self, inst: Instance) -> None:
        self.runner.store.put_instances(self.runner.app_id, [inst])
        self.runner._refresh_endpoints()

    def failed(self, inst: Instance, why: str) -> None:
        # Assessed at once: a deployment failed by this holds the app before the scheduler's
        # next step could launch another instance of the failing version.
        r = self.runner
        r.deployment.failed_instance(inst.version, f"{inst.task_id} {why}")
        r._assess()

    def ended(self, inst: Instance, failed: bool, why: str) -> None:
        r = self.runner
        r.store.delete_instances([inst.task_id])
        r._refresh_endpoints()
