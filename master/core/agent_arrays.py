"""What an agent view (agent_view.py) counts over, as arrays, kept across why-pending scans and
brought up to date by versions instead of rebuilt.

A scan at 10,000 agents rebuilt the free array every time: each agent's tasks summed in Python
and an offer record made per outstanding offer (most of a 237 ms scan; docs/performance.md).
What changes between two scans is mostly a few agents' tasks and the offers, so:

- ``task_use[i]``: what agent i's tasks hold, summed again only for the agents whose
  ``AgentRecord.tasks_version`` moved (add_task, pop_task and clear_tasks move it: the only
  ways ``tasks`` changes), at the scan and, while demands wait, at every tick between
  (``follow_tasks``: 20,000 tasks launched between two scans cost that scan ~30 ms at 10,000
  agents; summed tick by tick, no tick pays for more than its own, and none for more than
  ``FOLLOW_TASKS_PER_TICK`` tasks: the rest wait for the next tick, or the scan);
- ``offered[i]``: what the outstanding offers on agent i hold, summed again (array work per
  batch, no record per offer: ``OfferBook.offered_rows``) only when ``OfferBook.version``
  moved (every offer made or ended moves it);
- ``free = totals - task_use - offered``, and per framework, with its own offers added back
  (``free_for``, made when first asked after a change);
- the statics (agent_statics.py: ids, totals, rule and attribute signatures), rebuilt when the
  agents, a spec or an agent's memory pressure changed, reusing what each unchanged agent had.

Invalidation is thus by version: a change that moves no version would leave the arrays stale.
``validate.py`` (``_kept_view``) checks after every event in the core's tests that an
unmoved version means unchanged sums, and tests/unit/test_agent_view_kept.py drives random
events and holds the kept arrays equal to new ones after each.
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import chain
from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt

from corral.master.core.agent_statics import Statics
from corral.master.core.records import AgentRecord
from corral.resources import SCALARS

if TYPE_CHECKING:
    from corral.master.core.offer_book import OfferBook

F64 = npt.NDArray[np.float64]

# Tasks a tick between two scans sums at most (``follow_tasks``; ~1.2 us each at 10,000 agents):
# a burst of 20,000 launches between two ticks cost the next tick ~23 ms summed at once; now
# the ticks up to the scan share it (the scan sums whatever is left, as before).
FOLLOW_TASKS_PER_TICK = 5_000


class AgentArrays:
    def __init__(
        self, book: OfferBook, agents: Sequence[AgentRecord], kept: AgentArrays | None = None
    ) -> None:
        """New arrays over ``agents``; what ``kept`` holds for an agent still the same (same
        record, spec and pressure; same tasks version) is taken from it, not recomputed."""
        statics = Statics(agents, kept.statics if kept is not None else None)
        self.statics: Statics = statics
        self.agents = statics.agents
        self.index = statics.index
        self._book = book
        n = len(self.agents)
        # What each agent's tasks hold, as of its ``tasks_version`` recorded here.
        self.tasks_versions = tasks_versions(self.agents)
        self.task_use: F64 = np.zeros((n, len(SCALARS)), dtype=np.float64)
        if kept is None:
            self.task_use[:] = task_use_rows(self.agents)
        else:
            fresh: list[int] = []
            for i, agent in enumerate(self.agents):
                j = kept.index.get(agent.agent_id)
                if (
                    j is not None
                    and kept.agents[j] is agent
                    and kept.tasks_versions[j] == self.tasks_versions[i]
                ):
                    self.task_use[i] = kept.task_use[j]
                else:
                    fresh.append(i)
            if fresh:
                self.task_use[fresh] = task_use_rows([self.agents[i] for i in fresh])
        # What outstanding offers hold, as of the book's ``version`` recorded here.
        self.book_version = book.version
        self.offered: F64 = book.offered_rows(self.index, n)
        self._set_free()

    def _set_free(self) -> None:
        self.free: F64 = self.statics.totals - self.task_use - self.offered
        self._own_free: dict[str, F64] = {}

    def refreshed(self, book: OfferBook, agents: Sequence[AgentRecord]) -> AgentArrays:
        """These arrays, up to date (the module's rules); new ones, reusing these, when
        ``agents`` are not the ones they were built from. Equal to
        ``AgentArrays(book, agents)``."""
        if book is not self._book or not self.statics.built_from(agents):
            return AgentArrays(book, agents, self if book is self._book else None)
        tasks_moved = self._sum_moved_tasks()
        book_moved = book.version != self.book_version
        if book_moved:
            self.book_version = book.version
            self.offered = book.offered_rows(self.index, len(self.agents))
        if tasks_moved or book_moved:
            self._set_free()
        return self

    def follow_tasks(self) -> None:
        """Between two scans: the rows of the agents whose tasks moved summed now (one tick's
        launches and ends), so a scan does not pay for seconds of them at once; at most
        ``FOLLOW_TASKS_PER_TICK`` tasks' worth, the first moved agents in row order (the
        others keep the version they were summed at, so the next tick or the scan sums them).
        Rows only: which agents, their statics and the offers are ``refreshed``'s, at the scan
        (a row of an agent that has since left is dropped there)."""
        if self._sum_moved_tasks(FOLLOW_TASKS_PER_TICK):
            self._set_free()

    def _sum_moved_tasks(self, budget: int | None = None) -> bool:
        """Sum the rows whose ``tasks_version`` moved: all of them, or the first that hold at
        most ``budget`` tasks together (at least one row)."""
        versions = tasks_versions(self.agents)
        moved = np.flatnonzero(versions != self.tasks_versions)
        if not len(moved):
            return False
        agents = self.agents
        picked = [agents[i] for i in moved.tolist()]
        if budget is not None:
            counts = np.fromiter((len(a.tasks) for a in picked), dtype=np.intp, count=len(picked))
            k = max(1, int(np.searchsorted(np.cumsum(counts), budget, side="right")))
            if k < len(moved):
                moved, picked = moved[:k], picked[:k]
        self.task_use[moved] = task_use_rows(picked)
        self.tasks_versions[moved] = versions[moved]
        return True

    def free_for(self, framework_id: str) -> F64:
        """What the framework could get of each agent now: ``free`` with its own offers added
        back (demands._free_for, the specification, counts them as room)."""
        free = self._own_free.get(framework_id)
        if free is None:
            own = self._book.offered_rows(self.index, len(self.agents), framework_id)
            free = self._own_free[framework_id] = self.free + own
        return free


def tasks_versions(agents: Sequence[AgentRecord]) -> npt.NDArray[np.int64]:
    return np.fromiter((a.tasks_version for a in agents), dtype=np.int64, count=len(agents))


def task_use_rows(agents: Sequence[AgentRecord]) -> F64:
    """[len(agents), 4]: the scalars each agent's tasks hold. One gather of every task's
    scalars and one ``np.add.reduceat``: a segment's sum depends only on its own tasks, so an
    agent's row is the same whichever agents are summed beside it (kept and new arrays agree
    bit for bit)."""
    n = len(agents)
    out = np.zeros((n, len(SCALARS)), dtype=np.float64)
    counts = np.fromiter((len(a.tasks) for a in agents), dtype=np.intp, count=n)
    total = int(counts.sum())
    if not total:
        return out
    flat = np.fromiter(
        chain.from_iterable(t.spec.resources.scalars() for a in agents for t in a.tasks.values()),
        dtype=np.float64,
        count=total * len(SCALARS),
    ).reshape(total, len(SCALARS))
    has = counts > 0
    starts = (np.cumsum(counts) - counts)[has]
    out[has] = np.add.reduceat(flat, starts, axis=0)
    return out


def task_use(agent: AgentRecord) -> list[float]:
    """One agent's row of ``task_use_rows``."""
    out: list[float] = task_use_rows([agent])[0].tolist()
    return out
