"""Preemption policy: which running tasks give way to a demand that cannot be placed.

Pure: candidates in, victims out. The master core (master.py) gathers, per agent the demand
may use, what is free for the preemptor and the tasks that could give way; this module picks
the victims; the core kills them and nominates the freed resources (docs/scheduling.md).

Rules, after kube-scheduler's DefaultPreemption (pkg/scheduler/framework/preemption):
1. A victim has a priority strictly lower than the preemptor's. A demand whose class is
   ``Never`` never preempts (the caller does not ask).
2. A task of a gang (a demand with ``min_member``) is taken only while its gang keeps at least
   ``min_member`` live tasks: each protection group has a number of tasks it can spare.
3. On one agent: take every lower-priority task away; if the shape still does not fit, the
   agent is no candidate. Otherwise give tasks back while the shape still fits: first those
   whose going would break a disruption budget (a budget's ``allowed`` disruptions counted
   down over the tasks, most important first: kube's filterPodsWithPDBViolation), then the
   rest, each most important first (higher priority, then the one running longest): what is
   left are the victims, the fewest and least important the agent allows.
4. Between agents, the first of (kube's pickOneNodeForPreemption): the fewest victims past
   their disruption budgets (a budget broken is allowed, as kube allows it, but only where no
   agent does without); the lowest highest-priority victim; the smallest sum of victims'
   priorities (each offset to be positive, so more victims weigh more); the fewest victims;
   the newest victims (the latest earliest start among the highest-priority victims); the
   agent id.
5. Tasks are placed one at a time, each on one agent, in the state the earlier ones left:
   free room first (no victim), then by rule 4. A placement is one task's shape; the victims
   chosen and the shapes placed are taken out before the next task is placed.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from corral.priority import MAX_PRIORITY
from corral.resources import fits

Vec = tuple[float, ...]  # cpus, mem, disk, gpus (corral.resources.SCALARS order)

# Added to each victim's priority before summing (rule 4): every term positive.
_OFFSET = MAX_PRIORITY + 1


@dataclass(frozen=True, slots=True)
class Candidate:
    """A task that could give way: its key (framework id, task id), priority, when it was
    launched, what it holds, and its protection group ("" : none, rule 2)."""

    key: tuple[str, str]
    priority: int
    started_at: float
    scalars: Vec
    group: str = ""
    budgets: tuple[str, ...] = ()  # the disruption budgets selecting it (rules 3 and 4)


@dataclass(frozen=True, slots=True)
class AgentView:
    """One agent the demand may use: what is free for the preemptor now (total less tasks,
    other frameworks' offers and nominated holds) and the tasks that could give way there."""

    agent_id: str
    free: Vec
    tasks: tuple[Candidate, ...]


@dataclass(frozen=True, slots=True)
class Placement:
    """One task of the demand on ``agent_id``, once ``victims`` are gone (none: free room)."""

    agent_id: str
    victims: tuple[Candidate, ...]


def _plus(a: Sequence[float], b: Sequence[float]) -> Vec:
    return tuple(x + y for x, y in zip(a, b, strict=True))


def _minus(a: Sequence[float], b: Sequence[float]) -> Vec:
    return tuple(x - y for x, y in zip(a, b, strict=True))


def _more_important(c: Candidate) -> tuple[int, float, tuple[str, str]]:
    """Sort key, most important first: higher priority, then launched earlier."""
    return (-c.priority, c.started_at, c.key)


def violating(victims: Sequence[Candidate], allowed: Mapping[str, int]) -> set[tuple[str, str]]:
    """Of ``victims`` (most important first), those whose going would break a budget: each
    budget's allowed disruptions counted down over them in that order (rule 3)."""
    if not allowed:
        return set()
    left = dict(allowed)
    out: set[tuple[str, str]] = set()
    for v in victims:
        for b in v.budgets:
            if b in left:
                left[b] -= 1
                if left[b] < 0:
                    out.add(v.key)
    return out


def victims_on_agent(
    shape: Vec,
    free: Vec,
    tasks: Sequence[Candidate],
    priority: int,
    spare: Mapping[str, int],
    allowed: Mapping[str, int] | None = None,
) -> tuple[Candidate, ...] | None:
    """Rule 3 (with rules 1 and 2): the victims on one agent that make room for ``shape``, or
    None if no allowed set does. ``spare``: per protection group, how many it can lose (a
    group not in it may lose any number); ``allowed``: per disruption budget, how many
    disruptions it allows now."""
    barred: set[tuple[str, str]] = set()
    while True:
        potential = sorted(
            (t for t in tasks if t.priority < priority and t.key not in barred),
            key=_more_important,
        )
        breaking = violating(potential, allowed or {})
        if breaking:  # those breaking a budget are given back first
            potential = [t for t in potential if t.key in breaking] + [
                t for t in potential if t.key not in breaking
            ]
        room = free
        for t in potential:
            room = _plus(room, t.scalars)
        if not fits(room, shape):
            return None
        victims: list[Candidate] = []
        for t in potential:
            back = _minus(room, t.scalars)
            if fits(back, shape):
                room = back  # reprieved: the shape fits with it kept
            else:
                victims.append(t)
        over = _over_budget(victims, spare)
        if not over:
            return tuple(victims)
        # A gang would fall below its minimum: its most important victims stay, and the rest
        # of the agent is tried again without them (ends: ``barred`` only grows).
        barred.update(over)


def _over_budget(victims: Sequence[Candidate], spare: Mapping[str, int]) -> list[tuple[str, str]]:
    """Of ``victims``, those past their group's budget (the most important ones of a group
    that would lose too many)."""
    by_group: dict[str, list[Candidate]] = {}
    for v in victims:
        if v.group in spare:
            by_group.setdefault(v.group, []).append(v)
    over: list[tuple[str, str]] = []
    for group, members in by_group.items():
        allowed = max(0, spare.get(group, 0))
        if len(members) > allowed:
            members.sort(key=_more_important)
            over.extend(m.key for m in members[: len(members) - allowed])
    return over


Rank = tuple[int, float, int, int, float, str]


def agent_rank(
    agent_id: str, victims: Sequence[Candidate], allowed: Mapping[str, int] | None = None
) -> Rank:
    """Rule 4 as a sort key (smallest first). No victims sorts before any."""
    if not victims:
        return (0, float("-inf"), 0, 0, 0.0, agent_id)
    highest = max(v.priority for v in victims)
    earliest_of_highest = min(v.started_at for v in victims if v.priority == highest)
    return (
        len(violating(sorted(victims, key=_more_important), allowed or {})),
        float(highest),
        sum(v.priority + _OFFSET for v in victims),
        len(victims),
        -earliest_of_highest,  # newer victims first
        agent_id,
    )


def place(
    shape: Vec,
    count: int,
    priority: int,
    agents: Sequence[AgentView],
    spare: Mapping[str, int],
    max_victims: int,
    allowed: Mapping[str, int] | None = None,
) -> list[Placement]:
    """Rule 5: up to ``count`` placements of ``shape``, each on free room or on the agent rule
    4 picks, the victims of all of them at most ``max_victims``. Stops at the first task that
    has no place (or would pass the bound): the tasks are alike, so later ones have none
    either."""
    free = {a.agent_id: a.free for a in agents}
    left = {a.agent_id: list(a.tasks) for a in agents}
    budget = dict(spare)
    disruptions = dict(allowed or {})
    placed: list[Placement] = []
    victims_total = 0
    for _ in range(count):
        best: tuple[Rank, str, tuple[Candidate, ...]] | None = None
        for a in agents:
            aid = a.agent_id
            victims = victims_on_agent(shape, free[aid], left[aid], priority, budget, disruptions)
            if victims is None:
                continue
            rank = agent_rank(aid, victims, disruptions)
            if best is None or rank < best[0]:
                best = (rank, aid, victims)
        if best is None:
            break
        _, aid, victims = best
        if victims_total + len(victims) > max_victims:
            break
        victims_total += len(victims)
        room = free[aid]
        gone = {v.key for v in victims}
        for v in victims:
            room = _plus(room, v.scalars)
            if v.group in budget:
                budget[v.group] -= 1
            for b in v.budgets:  # what the next placements may still disrupt
                if b in disruptions:
                    disruptions[b] -= 1
        free[aid] = _minus(room, shape)
        left[aid] = [t for t in left[aid] if t.key not in gone]
        placed.append(Placement(aid, victims))
    return placed
