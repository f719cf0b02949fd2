"""The serving scheduler: keeps an app's instances running on the offers it gets.

- It tells the master one demand for the app (``count`` = live instances plus those it would
  launch now, with the app's spread and CLUSTER constraints), so it is offered resources only
  while an instance is missing, in the app's priority class (``serving`` by default).
- Offers are placed with the SDK's ``Placer``: the app's Marathon constraints, its topology
  spread (``max_skew``), emptiest agent first. What it does not use it declines with a long
  refuse filter; it revives when something changed that may need those agents (an instance
  ended, a scale-up, a new version, a backoff ran out).
- Ports come from the offer's ranges, passed to the task as ``PORT0..`` and ``PORT``.
- Health checks run here (``health.py``); an instance failing too many in a row is killed and
  replaced: that verdict is its failure (the backoff starts then, not when the kill is done).
  Instances that fail are replaced after an exponential backoff; those the cluster
  took away (preempted, evicted, drained: ``sdk.is_disruption``) at once, and they count as no
  failure (no backoff, not against a deployment's ``failure_threshold``).
- A new spec (``update``) scales, or rolls the instances to a new version within the
  upgrade strategy.
- An ``Observer`` hears of every instance as it is about to launch, changes, fails and ends: the
  serving service keeps them in its store, so a restarted service ``restore``s them and
  launches nothing that still runs. A live status of a task it does not know is killed.
"""

from __future__ import annotations

import asyncio
import random
import time
from collections import defaultdict, deque
from collections.abc import Callable
from typing import Protocol

from corral.frameworks import sdk
from corral.frameworks.serving import health
from corral.frameworks.serving.app import AppError, AppSpec
from corral.frameworks.serving.instances import (
    FAILING_KILLS,
    Counts,
    Instance,
    Instances,
    KillReason,
)

LONG_REFUSE_SECONDS = 3600.0
_RUNNING = sdk.TaskState.TASK_STATE_RUNNING
_UNREACHABLE = sdk.TaskState.TASK_STATE_UNREACHABLE


class Observer(Protocol):
    """What happens to the instances, for whoever keeps them (the serving service's store)."""

    def subscribed(self, framework_id: str) -> None: ...

    def launching(self, instances: list[Instance]) -> None:
        """Called before the accept goes out, so a crash cannot leave a task unknown."""

    def not_launched(self, instances: list[Instance]) -> None: ...

    def changed(self, inst: Instance) -> None:
        """Its state, health, readiness or kill reason changed."""

    def failed(self, inst: Instance, why: str) -> None:
        """``inst`` failed, ``why``: it ended on its own, or its health check decided to kill
        it (the verdict is the failure, as for the backoff: a deployment counts it then)."""

    def ended(self, inst: Instance, failed: bool, why: str) -> None: ...


class NoObserver:
    def subscribed(self, framework_id: str) -> None:
        pass

    def launching(self, instances: list[Instance]) -> None:
        pass

    def not_launched(self, instances: list[Instance]) -> None:
        pass

    def changed(self, inst: Instance) -> None:
        pass

    def failed(self, inst: Instance, why: str) -> None:
        pass

    def ended(self, inst: Instance, failed: bool, why: str) -> None:
        pass


class ServingScheduler(sdk.Scheduler):
    def __init__(
        self,
        spec: AppSpec,
        on_event: Callable[[str], None] = lambda text: None,
        *,
        clock: Callable[[], float] = time.monotonic,
        rng: random.Random | None = None,
        observer: Observer | None = None,
    ) -> None:
        self.app = Instances(spec, rng or random.Random())
        self.on_event = on_event
        self.observer: Observer = observer or NoObserver()
        self._restored = False  # instances came from a store: ask the master about them
        self.clock = clock
        self.known: dict[str, set[str]] = defaultdict(set)  # topology values seen in offers
        self.refused_launches = 0
        self._lock = asyncio.Lock()
        self._declined = False  # declined with a long filter since the last revive
        self._need_revive = False
        # One call in flight, the latest wins; refused for good (a priority class or toleration
        # the master does not know or grant), the app launches nothing until it changes: its
        # tasks would name a demand the master never took.
        self._demands = sdk.DemandSync(self.demands, on_refused=self._refused)
        self.refusal: sdk.CallError | None = None
        self._checks: dict[str, asyncio.Task[None]] = {}
        # Failed instances not replaced yet, oldest first: (task id, when it ended).
        self._replacing: deque[tuple[str, float]] = deque()
        self._readiness: dict[str, asyncio.Task[None]] = {}

    @property
    def spec(self) -> AppSpec:
        return self.app.spec

    def counts(self) -> Counts:
        return self.app.counts(self.clock())

    # -- changes from outside ---------------------------------------------------------------

    def restore(self, instances: list[Instance]) -> None:
        """Take over instances launched before (by an earlier process of the service); the
        first subscription asks the master about each of them."""
        for inst in instances:
            self.app.adopt(inst)
        self._restored = bool(instances)

    def update(self, spec: AppSpec) -> str:
        """Run ``spec`` from now on (a changed app file); what changed, for the log."""
        old = self.app.spec
        if spec.id != old.id:
            raise AppError(f"id: an app cannot change its id ({old.id!r} -> {spec.id!r})")
        self.app.spec = spec
        self.app.held = False  # a change is a new deployment
        self.refusal = None  # ... which the master is asked about afresh
        self._need_revive = True
        changes = []
        if spec.instances != old.instances:
            changes.append(f"instances {old.instances} -> {spec.instances}")
        if spec.version != old.version:
            changes.append(f"rolling restart to version {spec.version}")
        if spec != old and not changes:
            changes.append("settings changed (new placements and checks use them)")
        return "; ".join(changes) or "no change"

    # -- callbacks --------------------------------------------------------------------------

    async def subscribed(self, driver: sdk.Driver, framework_id: str) -> None:
        self.observer.subscribed(framework_id)
        self._demands.resend(driver)  # a new master, perhaps: say it again
        self._declined = False  # a new subscription has no refuse filters
        if self._restored:
            # Statuses of what ran while no one listened; one the master does not know is
            # answered LOST, and replaced.
            self._restored = False
            live = [(i.task_id, i.agent_id) for i in self.app.live.values()]
            try:
                await driver.reconcile(live)
            except sdk.DriverError as err:
                self.on_event(f"reconciliation of {len(live)} instances not sent: {err}")
        for inst in list(self.app.live.values()):
            if inst.state == "running":
                self._start_checks(driver, inst)
        await self.tick(driver)

    async def offers(self, driver: sdk.Driver, offers: list[sdk.Offer]) -> None:
        async with self._lock:
            for o in offers:
                for key, value in sdk.where(o).items():
                    self.known[key].add(value)
            unused = await self._place(driver, offers)
            if unused:
                try:
                    await driver.decline(unused, refuse_seconds=LONG_REFUSE_SECONDS)
                    self._declined = True
                except sdk.DriverError:
                    pass  # rescinded or disconnected: those offers are void anyway
            await self._step(driver)

    async def _place(self, driver: sdk.Driver, offers: list[sdk.Offer]) -> list[sdk.Offer]:
        """Launch what is missing on ``offers``; the offers left unused."""
        n = self.app.to_launch(self.clock())
        if n > 0:
            # A SetDemands in flight (the first after subscribing, or a changed demand) is
            # answered first: refused, nothing may be launched (the tasks would name a demand
            # the master never took), and its answer comes within a round trip.
            await self._demands.settle()
        if n == 0 or self.refusal is not None:
            return offers
        spec = self.app.spec
        placer = sdk.Placer(
            offers,
            placed=[i.where for i in self.app.live.values() if not i.killing],
            rules=spec.placement_rules(),
            spread=spec.spread,
            known=self.known,
        )
        for _ in range(n):
            if placer.place(self._task(), ports=spec.ports) is None:
                break  # nothing here may take one more: it stays pending
        for offer, tasks in placer.launches():
            now = self.clock()
            where = sdk.where(offer)
            made = []
            for t in tasks:
                ports = [p for r in t.resources.ports for p in range(r.begin, r.end + 1)]
                t.command.environment.update(health._port_env(ports))
                if spec.container is not None:
                    # The host ports are known once placed: each mapping publishes on its own.
                    t.container.CopyFrom(spec.container.info(ports))
                inst = Instance(t.task_id, spec.version, offer.agent_id, where, ports, now)
                inst.in_container = spec.container is not None
                made.append(inst)
            self.observer.launching(made)
            try:
                await driver.launch([offer], tasks)
            except sdk.DriverError as err:
                self.observer.not_launched(made)
                self.refused_launches += 1
                self.on_event(f"launch on {offer.hostname} refused: {err}")
                continue
            for inst in made:
                self.app.add(inst)
                self.on_event(
                    f"launched {inst.task_id} on {offer.hostname} {_ports_text(inst.ports)}"
                )
        return placer.unused()

    def _task(self) -> sdk.TaskInfo:
        spec = self.app.spec
        return sdk.task(
            spec.id,
            spec.command or None,  # None: the image's own command (an app in a container)
            cpus=spec.cpus,
            mem=spec.mem,
            disk=spec.disk,
            gpus=spec.gpus,
            env={**spec.env, "CORRAL_APP": spec.id, "CORRAL_APP_VERSION": spec.version},
            labels={"app": spec.id, "version": spec.version},
            priority_class=spec.priority_class,
            demand=spec.id,
            kill_grace_period=spec.kill_grace_period,
            simulate_seconds=spec.simulate_seconds,
            # Host ports 0 until placed (_place fills them in).
            container=(
                None
                if spec.container is None
                else spec.container.info([0] * len(spec.container.port_mappings))
            ),
        )

    async def status(self, driver: sdk.Driver, status: sdk.TaskStatus) -> None:
        async with self._lock:
            now = self.clock()
            known = self.app.live.get(status.task_id)
            if known is None and not sdk.is_terminal(status.state):
                # Not ours any more (its record was lost, or it was replaced): Marathon kills
                # such tasks too, so nothing runs that no app counts.
                await self._kill_unknown(driver, status)
            elif status.state == _RUNNING:
                was = known.state if known is not None else None
                inst = self.app.running(status.task_id, now)
                if inst is not None:
                    if was != "running":
                        self.observer.changed(inst)
                        self._replaced(inst, now)
                    self._start_checks(driver, inst)
            elif status.state == _UNREACHABLE:
                self.app.unreachable(status.task_id)
                if known is not None:
                    self.observer.changed(known)
            elif sdk.is_terminal(status.state):
                disrupted = sdk.is_disruption(status)
                ended = self.app.ended(status.task_id, now, disrupted)
                for checks in (self._checks, self._readiness):
                    check = checks.pop(status.task_id, None)
                    if check is not None:
                        check.cancel()
                if ended is not None:
                    inst, failed = ended
                    self._need_revive = True
                    what = sdk.state_name(status.state)
                    if disrupted:
                        what += f" ({sdk.view(status).reason.lower()})"
                    elif status.message:
                        what += f" ({status.message})"
                    if failed:
                        # The backoff is when a replacement may launch, not when it runs:
                        # "replaced in" is said when one does (issue #32, defect 9).
                        wait = max(0.0, self.app.next_launch_at - now)
                        self.on_event(
                            f"instance {inst.task_id} on {inst.host} {what}: "
                            f"a replacement launches in {wait:.1f} s"
                        )
                        self._replacing.append((inst.task_id, now))
                        if inst.kill_reason not in FAILING_KILLS:  # told at the verdict
                            self.observer.failed(inst, what)
                    elif inst.killing:
                        self.on_event(f"instance {inst.task_id} {what} ({inst.kill_reason})")
                    else:  # the cluster's doing: no failure, no backoff
                        self.on_event(
                            f"instance {inst.task_id} on {inst.host} {what}: not a failure of "
                            "the app's; a replacement launches now"
                        )
                    self.observer.ended(inst, failed, what)
            await self._step(driver)

    def _replaced(self, inst: Instance, now: float) -> None:
        """``inst`` runs: if it was launched after an instance failed, it replaces the oldest
        such, and the time from that failure to this RUNNING is what the replacement took."""
        if self._replacing and inst.launched_at >= self._replacing[0][1]:
            failed_id, ended_at = self._replacing.popleft()
            self.on_event(
                f"instance {failed_id} replaced by {inst.task_id} on {inst.host} "
                f"in {now - ended_at:.1f} s"
            )

    async def _kill_unknown(self, driver: sdk.Driver, status: sdk.TaskStatus) -> None:
        try:
            await driver.kill(status.task_id, status.agent_id)
        except sdk.DriverError as err:
            self.on_event(f"kill of unknown task {status.task_id} refused: {err}")
            return
        self.on_event(f"killing {status.task_id}: a task of no instance this app knows")

    def _start_checks(self, driver: sdk.Driver, inst: Instance) -> None:
        spec, loop = self.app.spec, asyncio.get_running_loop()
        tid = inst.task_id
        if spec.health_check is not None and tid not in self._checks:
            self._checks[tid] = loop.create_task(self._watch(driver, inst))
        if spec.readiness_check is not None and tid not in self._readiness:
            self._readiness[tid] = loop.create_task(self._ready_watch(inst))

    # -- the loop ---------------------------------------------------------------------------

    async def tick(self, driver: sdk.Driver) -> None:
        """Act on time passing (a backoff ran out, an upgrade step is due); run.py calls this
        about twice a second and after every change."""
        async with self._lock:
            await self._step(driver)

    async def _step(self, driver: sdk.Driver) -> None:
        now = self.clock()
        for inst, reason in self.app.to_kill(now):
            self._mark(inst, reason, now)
        for inst in self.app.due_kills(now):
            await self._send_kill(driver, inst)
        self.app.settle_backoff(now)
        if self._need_revive and self._declined and self.app.to_launch(now) > 0:
            # Something changed that may need the agents we turned down for an hour.
            try:
                await driver.revive()
                self._declined = self._need_revive = False
            except sdk.DriverError:
                pass  # disconnected: the next subscription has no filters
        self._sync_demands(driver)

    def _mark(self, inst: Instance, reason: KillReason, now: float) -> None:
        """Out of the endpoints (the observer publishes them) before the kill goes out."""
        drain = self.app.mark_kill(inst, reason, now)
        self.observer.changed(inst)
        if reason in FAILING_KILLS:
            self.observer.failed(
                inst, f"killed by its health check ({inst.why_unhealthy or 'failed'})"
            )
        if drain:
            self.on_event(f"draining {inst.task_id} on {inst.host} for {drain:g} s: {reason}")

    async def _kill(self, driver: sdk.Driver, inst: Instance, reason: KillReason) -> None:
        self._mark(inst, reason, self.clock())
        if not inst.kill_at > self.clock():
            await self._send_kill(driver, inst)

    async def _send_kill(self, driver: sdk.Driver, inst: Instance) -> None:
        try:
            await driver.kill(inst.task_id, inst.agent_id)
        except sdk.NotSubscribedError:
            return  # reconnecting: the next step sends it
        except sdk.DriverError as err:
            self.on_event(f"kill of {inst.task_id} refused: {err}")
            return
        inst.kill_sent = True
        self.on_event(f"killing {inst.task_id} on {inst.host}: {inst.kill_reason}")

    def demands(self) -> list[sdk.Demand]:
        count = self.app.demand_count(self.clock())
        return [self.app.spec.demand(count)] if count > 0 else []

    def _refused(self, err: sdk.CallError) -> None:
        """The master refused the app's demand for good: launch nothing until the app changes
        (``corral run serving`` ends with the reason; the serving service fails the
        deployment with it)."""
        if self.refusal is None:
            self.on_event(f"the master refused the app's demand: {err}; launching nothing")
        self.refusal = err

    def _sync_demands(self, driver: sdk.Driver) -> None:
        """Send the demand if it changed (sdk.DemandSync)."""
        self._demands.changed(driver)

    async def settle(self) -> None:
        """Wait for a demand update in flight."""
        await self._demands.settle()

    # -- health checks ----------------------------------------------------------------------

    async def _watch(self, driver: sdk.Driver, inst: Instance) -> None:
        """Check ``inst`` every interval until it ends; kill it after too many failures."""
        hc = self.app.spec.health_check
        assert hc is not None
        started = self.clock()
        ever_healthy = False
        failures = 0
        while inst.task_id in self.app.live and not inst.killing:
            ok, why = await health.check(hc, inst.host, inst.ports, self._in_container(inst))
            now = self.clock()
            was = inst.healthy
            self.app.health(inst.task_id, ok, now)
            if inst.healthy != was:
                self.observer.changed(inst)
            if ok:
                ever_healthy, failures = True, 0
            elif ever_healthy or now - started >= hc.grace_period:
                failures += 1
                inst.why_unhealthy = why
                self.on_event(f"health check of {inst.task_id} failed ({failures}x): {why}")
                limit = hc.max_consecutive_failures
                if limit and failures >= limit and not inst.killing:
                    async with self._lock:
                        await self._kill(driver, inst, "unhealthy")
                        await self._step(driver)
                    return  # killing: a kill that did not go out is sent again by each step
            await asyncio.sleep(hc.interval)  # the check's period, not a wait for a condition

    def _in_container(self, inst: Instance) -> str:
        """The task id, for an instance in a container (its COMMAND checks run inside it)."""
        return inst.task_id if inst.in_container else ""

    async def _ready_watch(self, inst: Instance) -> None:
        """Check ``inst``'s readiness every interval until it ends; only marks it."""
        rc = self.app.spec.readiness_check
        assert rc is not None
        while inst.task_id in self.app.live and not inst.killing:
            ok, why = await health.check(rc, inst.host, inst.ports, self._in_container(inst))
            if ok != inst.ready:
                self.app.readiness(inst.task_id, ok)
                self.observer.changed(inst)
                self.on_event(
                    f"{inst.task_id} is ready" if ok else f"{inst.task_id} is not ready: {why}"
                )
            await asyncio.sleep(rc.interval)  # the check's period, not a wait for a condition

    async def close(self) -> None:
        """Stop the health and readiness checks (the driver is going away)."""
        checks = [*self._checks.values(), *self._readiness.values()]
        self._checks.clear()
        self._readiness.clear()
        for c in checks:
            c.cancel()
        await asyncio.gather(*checks, return_exceptions=True)
        await self.settle()

    # -- the summary ------------------------------------------------------------------------

    def summary(self) -> dict[str, object]:
        c = self.counts()
        return {
            "app": self.app.spec.id,
            "wanted": c.wanted,
            "running": c.running,
            "healthy": c.healthy,
            "pending": c.pending,
            "launched": self.app.launched,
            "failures": self.app.failures,
            "unhealthy_kills": self.app.unhealthy_kills,
            "refused_launches": self.refused_launches,
        }


def status_line(spec: AppSpec, c: Counts) -> str:
    text = (
        f"app {spec.id}: {c.wanted} wanted, {c.running} running, {c.healthy} healthy, "
        f"{c.pending} pending"
    )
    if c.old:
        text += f"; rolling restart: {c.old} old"
    return text


def _ports_text(ports: list[int]) -> str:
    return f"(ports {','.join(map(str, ports))})" if ports else ""
