"""Which of a framework's demands preemption's pass considers (nominations.py rule 1), kept per
framework across ticks: the core's ``preempt_wanting``.

Every allocation tick looked at every pending demand to find those that may preempt: at 5
frameworks x 1,000 demands that fit nowhere (issue #48's hostile bench) a class lookup, a QoS
test and an unmet count each, ~3 ms a tick, though none of it had changed. What decides a
demand's place here changes only with:
- the framework's demands (``FrameworkRecord.demands``, replaced whole by SetDemands and
  removal, never changed in place),
- its live tasks per demand (``FrameworkRecord.demand_tasks``, changed only by task_table.py,
  which moves ``demand_tasks_version`` with it),
- the priority classes (``PriorityTable.version``, moved by every set and delete),
so the list is kept per framework with those three and made again when one moved. What changes
from tick to tick (the lowest live priority, the demands with a nomination in progress, the
framework's state) is still tested at every tick, by nominations.py.

validate() (``check``) holds each kept list equal to a new one while its versions stand.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from corral.master.core.records import FrameworkRecord
from corral.master.core.types import Demand
from corral.priority import PreemptionPolicy
from corral.qos import is_besteffort

if TYPE_CHECKING:
    from corral.master.core.priority_table import PriorityTable

# (class value, framework id, demand name, (class value, framework id, framework, demand)): the
# entries demand_bounds.Rotation orders.
Entry = tuple[int, str, str, tuple[int, str, FrameworkRecord, Demand]]


def entries(fw: FrameworkRecord, priority: PriorityTable) -> list[Entry]:
    """The framework's demands that may preempt for something, in ``fw.demands``' order: a class
    that may preempt (not ``Never``), a shape that needs room (not best-effort), fewer live
    tasks than its count."""
    out: list[Entry] = []
    fw_id = fw.framework_id
    live = fw.demand_tasks
    classes: dict[str, tuple[int, bool]] = {}  # class name -> (value, may preempt)
    for d in fw.demands.values():
        name = d.priority_class
        known = classes.get(name)
        if known is None:
            pc = priority.resolve(name)
            known = classes[name] = (pc.value, pc.preemption_policy is not PreemptionPolicy.NEVER)
        value, may = known
        if (
            may
            and not is_besteffort(d.resources.cpus, d.resources.mem)
            and live.get(d.name, 0) < d.count
        ):
            out.append((value, fw_id, d.name, (value, fw_id, fw, d)))
    return out


def lowest_value(made: list[Entry]) -> float:
    """The lowest class value among ``made`` (inf with none)."""
    return min((e[0] for e in made), default=float("inf"))


# (its record, its demands, demand_tasks_version, priority version, its entries, their lowest
# class value)
Kept = tuple[FrameworkRecord, dict[str, Demand], int, int, list[Entry], float]


def _stands(kept: Kept, fw: FrameworkRecord, priority: PriorityTable) -> bool:
    """The three inputs ``kept`` was made from have not moved since."""
    return (
        kept[0] is fw
        and kept[1] is fw.demands
        and kept[2] == fw.demand_tasks_version
        and kept[3] == priority.version
    )


class PreemptWanting:
    def __init__(self) -> None:
        self._kept: dict[str, Kept] = {}  # by framework id

    def of(self, fw: FrameworkRecord, priority: PriorityTable) -> tuple[list[Entry], float]:
        """``entries(fw, priority)`` (not to be changed), and the lowest class value among them
        (inf with none); kept while the module's three inputs stand."""
        fw_id = fw.framework_id
        kept = self._kept.get(fw_id)
        if kept is not None and _stands(kept, fw, priority):
            return kept[4], kept[5]
        made = entries(fw, priority)
        lowest = lowest_value(made)
        version = fw.demand_tasks_version
        self._kept[fw_id] = (fw, fw.demands, version, priority.version, made, lowest)
        return made, lowest

    def keep(self, frameworks: dict[str, FrameworkRecord]) -> None:
        """Forget the frameworks the core no longer holds."""
        if len(self._kept) > len(frameworks):
            self._kept = {k: v for k, v in self._kept.items() if k in frameworks}

    def check(self, frameworks: dict[str, FrameworkRecord], priority: PriorityTable) -> list[str]:
        """Each list kept with versions that still stand is the one ``entries`` makes now."""
        faults: list[str] = []
        for fw_id, kept in self._kept.items():
            fw, made, lowest = kept[0], kept[4], kept[5]
            if frameworks.get(fw_id) is fw and _stands(kept, fw, priority):
                now = entries(fw, priority)
                if [(*e[:3], id(e[3][3])) for e in made] != [
                    (*e[:3], id(e[3][3])) for e in now
                ] or lowest != lowest_value(now):
                    faults.append(
                        f"preemption's kept demands of framework {fw_id} changed without a "
                        "version moving"
                    )
        return faults
