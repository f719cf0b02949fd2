"""Launch pacing: an allocation cycle offers at most twice the cpus the launch pipeline turned
around in the previous interval (never less than twice the floor), minus the cpus launching."""

from __future__ import annotations

import pytest

from master.core import commands as cmd
from master.core import events as ev
from master.core.config import MasterConfig
from master.core.types import TaskState
from tests.unit.core_harness import Harness, status, task

AGENT = "cpus:24;mem:4096;disk:4096"


def _cluster(agents: int, **config: object) -> tuple[Harness, str]:
    config.setdefault("launch_pacing", True)  # opt-in: off by default
    h = Harness(MasterConfig(**config))  # type: ignore[arg-type]
    for _ in range(agents):
        h.add_agent(resources=AGENT)
    fid, _ = h.subscribe()
    return h, fid


def _cycle(h: Harness) -> list[cmd.SendOffers]:
    h.now += 1
    return h.allocate()


def _cpus(batches: list[cmd.SendOffers]) -> float:
    return sum(o.resources.cpus for b in batches for o in b.offers)


def _launch_all(h: Harness, fid: str, batches: list[cmd.SendOffers]) -> list[tuple[str, str]]:
    """Accept every offer with one 1-cpu task per offered cpu; (agent, task) launched."""
    launched = []
    for offer in (o for b in batches for o in b.offers):
        tasks = [task(f"{offer.offer_id}-{i}") for i in range(int(offer.resources.cpus))]
        h.accept(fid, [offer.offer_id], *tasks, refuse=0)
        launched += [(offer.agent_id, t.task_id) for t in tasks]
    return launched


def _report(h: Harness, fid: str, launched: list[tuple[str, str]], state: TaskState) -> None:
    for agent_id, task_id in launched:
        h.agent_updates(agent_id, status(task_id, fid, agent_id, state))


def test_first_cycle_offers_twice_the_floor() -> None:
    h, _fid = _cluster(100, launch_pacing_floor_cpus=240)
    # 480 cpus allowed: whole 24-cpu agents until the allowance is spent.
    assert _cpus(_cycle(h)) == 480


def test_without_pacing_every_agent_is_offered() -> None:
    h, _fid = _cluster(100, launch_pacing=False, launch_pacing_floor_cpus=240)
    assert _cpus(_cycle(h)) == 2400


def test_pacing_is_off_by_default() -> None:
    assert MasterConfig().launch_pacing is False


def test_nothing_more_is_offered_while_launches_have_not_started(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    h, fid = _cluster(100, launch_pacing_floor_cpus=240)
    launched = _launch_all(h, fid, _cycle(h))
    assert len(launched) == 480

    # 480 cpus launching, none started: the allowance (2 x 240 - 480) is spent, and the
    # allocator is not even asked for a plan.
    def no_cycle(now: float, seed: int) -> list[object]:
        raise AssertionError("the allocator walked the agents with nothing to offer")

    monkeypatch.setattr(h.core.allocator, "cycle", no_cycle)
    assert _cpus(_cycle(h)) == 0
    assert _cpus(_cycle(h)) == 0


def test_started_launches_open_the_next_cycle() -> None:
    h, fid = _cluster(100, launch_pacing_floor_cpus=240)
    launched = _launch_all(h, fid, _cycle(h))
    _report(h, fid, launched, TaskState.RUNNING)
    # 480 cpus turned around and none launching: 2 x 480 may be offered.
    assert _cpus(_cycle(h)) == 960


def test_declines_count_as_turned_around() -> None:
    h, fid = _cluster(100, launch_pacing_floor_cpus=240)
    offers = [o.offer_id for b in _cycle(h) for o in b.offers]
    h.handle(ev.Decline(**h.call_base(fid), offer_ids=tuple(offers), refuse_seconds=0))
    # The 480 declined cpus are free again and 2 x 480 may be offered: a declining cluster is
    # held back only for a few doubling cycles.
    assert _cpus(_cycle(h)) == 960


def test_held_back_resources_are_offered_later_and_nothing_is_lost() -> None:
    h, fid = _cluster(10, launch_pacing_floor_cpus=24)
    offered: set[str] = set()
    for _ in range(6):
        batches = _cycle(h)
        offered |= {o.agent_id for b in batches for o in b.offers}
        offers = [o.offer_id for b in batches for o in b.offers]
        if offers:
            h.handle(ev.Decline(**h.call_base(fid), offer_ids=tuple(offers), refuse_seconds=0))
    assert len(offered) == 10
    # With pacing off, the same allocator state offers the whole cluster at once.
    h.core.config = MasterConfig(launch_pacing=False)
    assert _cpus(_cycle(h)) == 240


def test_a_launch_stuck_for_longer_than_the_window_stops_counting() -> None:
    h, fid = _cluster(100, launch_pacing_floor_cpus=240, launch_pacing_window=10)
    _launch_all(h, fid, _cycle(h))
    assert _cpus(_cycle(h)) == 0
    h.now += 10  # the launches never started (a lost agent, a slow start)
    # They left the launching count, as if turned around: 2 x 480 may be offered again.
    assert _cpus(_cycle(h)) == 960


def test_launches_that_moved_on_are_forgotten_at_each_cycle() -> None:
    for pacing in (True, False):
        h, fid = _cluster(10, launch_pacing=pacing, launch_pacing_floor_cpus=240)
        launched = _launch_all(h, fid, _cycle(h))
        _report(h, fid, launched, TaskState.RUNNING)
        _cycle(h)
        assert h.core._launches == []  # the bookkeeping stays bounded, paced or not
