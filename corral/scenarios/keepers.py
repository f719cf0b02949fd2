"""The framework the memory scenarios run, on the public SDK: ``Keeper`` keeps ``count`` tasks of
one command and request alive in one zone (relaunching those that end, or not) and records how
each ended, by reason, from the statuses alone."""

from __future__ import annotations

import sys
from collections import Counter
from collections.abc import Sequence

from corral.frameworks import sdk

HOG = (sys.executable, "-m", "corral.scenarios.memhog")


def hog(mib: float, *extra: str) -> list[str]:
    """The argv of a task holding ``mib`` MiB of real memory (corral/scenarios/memhog.py)."""
    return [*HOG, "--mib", f"{mib:g}", *extra]


class Keeper(sdk.Scheduler):
    """``count`` tasks running ``argv`` with request (``cpus``, ``mem``) and limits, in class
    ``cls``, on agents of ``zone`` (an attribute; "" any): a demand, launched as offers allow,
    relaunched as they end when ``relaunch`` (the demand's unmet count rises as one ends).
    ``ended`` counts the ends by reason name, ``killed`` lists the tasks killed (KILLED) with
    their reason."""

    def __init__(
        self,
        name: str,
        count: int,
        argv: Sequence[str],
        cpus: float = 0.0,
        mem: float = 0.0,
        *,
        cls: str = "",
        zone: str = "",
        relaunch: bool = True,
        mem_limit: float | None = None,
        cpus_limit: float | None = None,
    ) -> None:
        self.name, self.count, self.argv = name, count, list(argv)
        self.cpus, self.mem, self.cls, self.zone = cpus, mem, cls, zone
        self.relaunch = relaunch
        self.limits = (cpus_limit, mem_limit)
        self.live: set[str] = set()
        self.running: set[str] = set()
        self.most_running = 0  # the most tasks RUNNING at once
        self.launched = 0
        self._withdrawn = False
        self.finished = 0
        self.ended: Counter[str] = Counter()
        self.killed: dict[str, str] = {}  # task id -> reason name
        # What an exit status alone says: "signal" (killed by one: no exit code), "0", "1", ...
        self.exits: Counter[str] = Counter()

    def demand(self) -> sdk.Demand:
        rules = (sdk.Constraint.equals("zone", self.zone),) if self.zone else ()
        return sdk.Demand(
            self.name,
            self.count,
            cpus=self.cpus,
            mem=self.mem,
            priority_class=self.cls,
            constraints=rules,
        )

    def _task(self) -> sdk.TaskInfo:
        self.launched += 1
        cpus_limit, mem_limit = self.limits
        return sdk.task(
            self.name,
            self.argv,
            cpus=self.cpus,
            mem=self.mem,
            cpus_limit=cpus_limit,
            mem_limit=mem_limit,
            priority_class=self.cls,
            demand=self.name,
            task_id=f"{self.name}-{self.launched}",
            kill_grace_period=1.0,
        )

    @property
    def wanted(self) -> int:
        if not self.relaunch and self.launched >= self.count:
            return 0
        return self.count - len(self.live)

    async def subscribed(self, driver: sdk.Driver, framework_id: str) -> None:
        await driver.set_demands([self.demand()])

    async def offers(self, driver: sdk.Driver, offers: list[sdk.Offer]) -> None:
        unused: list[sdk.Offer] = []
        for offer in offers:
            if (self.zone and offer.attributes.get("zone") != self.zone) or offer.revocable:
                unused.append(offer)
                continue
            besteffort = self.cpus <= 0 and self.mem <= 0  # needs no room: all on one offer
            shape = sdk.Resources(cpus=self.cpus, mem=self.mem)
            room = self.wanted if besteffort else sdk.how_many_fit(offer, shape)
            tasks = [self._task() for _ in range(min(room, self.wanted))]
            if not tasks:
                unused.append(offer)
                continue
            try:
                await driver.launch([offer], tasks, refuse_seconds=0.5)
            except sdk.CallError:  # refused (e.g. BestEffort under pressure): try again later
                self.launched -= len(tasks)
                unused.append(offer)
                continue
            self.live.update(t.task_id for t in tasks)
        if unused:
            await driver.decline(unused, refuse_seconds=0.5)
        if not self.relaunch and self.launched >= self.count and not self._withdrawn:
            self._withdrawn = True
            await driver.set_demands([])  # all launched once: wants nothing more

    async def status(self, driver: sdk.Driver, status: sdk.TaskStatus) -> None:
        v = sdk.view(status)
        if v.state == "RUNNING":
            self.running.add(v.task_id)
            self.most_running = max(self.most_running, len(self.running))
        if not v.terminal or v.task_id not in self.live:
            return
        self.live.discard(v.task_id)
        self.running.discard(v.task_id)
        self.ended[v.reason] += 1
        self.exits["signal" if v.exit_code is None else str(v.exit_code)] += 1
        if v.state == "FINISHED":
            self.finished += 1
        elif v.state == "KILLED":
            self.killed[v.task_id] = v.reason

    @property
    def restarts(self) -> int:
        """Tasks that ended other than by finishing (each relaunched when ``relaunch``)."""
        return sum(self.ended.values()) - self.finished


def exits_text(exits: Counter[str]) -> str:
    """``Keeper.exits`` as a person reads it: ``6 ended by a signal (no exit code)``, ``2 exited
    with code 1``. (Not ``{'signal': 6}``, which reads as signal 6, SIGABRT.)"""
    parts = []
    for what, n in sorted(exits.items(), key=lambda kv: (-kv[1], kv[0])):
        tasks = f"{n} task{'s' if n != 1 else ''}"
        if what == "signal":
            parts.append(f"{tasks} ended by a signal (no exit code)")
        else:
            parts.append(f"{tasks} exited with code {what}")
    return ", ".join(parts) or "no task ended"
