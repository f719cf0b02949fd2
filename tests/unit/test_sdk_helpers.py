"""The SDK's offer, task and state helpers: pure functions on wire messages."""

from __future__ import annotations

import math
import random

import pytest

from corral.frameworks import sdk
from corral.v1.common_pb2 import Offer, Range, Resources, TaskState


def offer(
    cpus: float = 1,
    mem: float = 1024,
    disk: float = 0,
    gpus: float = 0,
    ports: list[tuple[int, int]] | None = None,
) -> Offer:
    return Offer(
        id="o1",
        agent_id="a1",
        resources=Resources(
            cpus=cpus,
            mem=mem,
            disk=disk,
            gpus=gpus,
            ports=[Range(begin=b, end=e) for b, e in ports or []],
        ),
    )


# -- task() ------------------------------------------------------------------------------------


def test_task_builds_a_shell_command_with_resources_env_and_labels() -> None:
    t = sdk.task(
        "web",
        "echo hi",
        cpus=0.5,
        mem=128,
        disk=10,
        gpus=1,
        env={"A": "1"},
        labels={"tier": "front"},
        priority_class="high",
    )
    assert t.name == "web"
    assert t.task_id.startswith("web-") and len(t.task_id) == len("web-") + 12
    assert (t.command.value, t.command.shell) == ("echo hi", True)
    assert dict(t.command.environment) == {"A": "1"}
    assert (t.resources.cpus, t.resources.mem, t.resources.disk, t.resources.gpus) == (
        0.5,
        128,
        10,
        1,
    )
    assert dict(t.labels) == {"tier": "front"}
    assert t.priority_class == "high"
    assert not t.HasField("simulation")
    assert t.agent_id == ""


def test_task_ids_are_unique_unless_given() -> None:
    ids = {sdk.task("x", "true", cpus=1, mem=1).task_id for _ in range(1000)}
    assert len(ids) == 1000
    assert sdk.task("x", "true", cpus=1, mem=1, task_id="mine").task_id == "mine"


def test_task_with_an_argv_does_not_use_the_shell() -> None:
    t = sdk.task("x", ["python3", "-c", "print(1)"], cpus=1, mem=1)
    assert t.command.shell is False
    assert list(t.command.arguments) == ["python3", "-c", "print(1)"]
    assert t.command.value == "python3"


def test_task_simulation_ports_and_grace() -> None:
    t = sdk.task(
        "x",
        "true",
        cpus=1,
        mem=1,
        ports=[(8080, 8081)],
        kill_grace_period=2,
        simulate_seconds=3,
        simulate_exit_code=4,
    )
    assert [(r.begin, r.end) for r in t.resources.ports] == [(8080, 8081)]
    assert t.kill_grace_period_seconds == 2
    assert (t.simulation.duration_seconds, t.simulation.exit_code) == (3, 4)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"cpus": -1}, "cpus must be a finite number >= 0"),
        ({"mem": math.nan}, "mem must be a finite number >= 0"),
        ({"disk": math.inf}, "disk must be a finite number >= 0"),
        ({"gpus": "1"}, "gpus must be a number"),
        ({"command": "  "}, "needs a command"),
        ({"command": []}, "needs a command"),
        ({"name": ""}, "needs a name"),
        ({"ports": [(10, 5)]}, "port range"),
    ],
)
def test_task_rejects_bad_input_with_a_clear_message(
    kwargs: dict[str, object], message: str
) -> None:
    args: dict[str, object] = {"name": "x", "command": "true", "cpus": 1, "mem": 1} | kwargs
    with pytest.raises(ValueError, match=message):
        sdk.task(**args)  # type: ignore[arg-type]


# -- fits / how_many_fit -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("shape", "expected"),
    [
        ({"cpus": 1, "mem": 1024}, True),  # exactly the offer
        ({"cpus": 1.0000001, "mem": 1}, False),
        ({"cpus": 0.1, "mem": 1025}, False),
        ({"cpus": 0.1, "mem": 1, "disk": 1}, False),
        ({"cpus": 0.1, "mem": 1, "gpus": 1}, False),
    ],
)
def test_fits_checks_every_scalar(shape: dict[str, float], expected: bool) -> None:
    t = sdk.task("x", "true", **shape)  # type: ignore[arg-type]
    assert sdk.fits(offer(), t) is expected
    assert sdk.fits(offer().resources, t.resources) is expected


def test_fits_checks_exact_ports() -> None:
    o = offer(ports=[(31000, 31010)])
    assert sdk.fits(o, sdk.task("x", "true", cpus=0, mem=1, ports=[(31005, 31010)]))
    assert not sdk.fits(o, sdk.task("x", "true", cpus=0, mem=1, ports=[(31005, 31011)]))


def test_how_many_fit_is_limited_by_the_scarcest_resource() -> None:
    shape = sdk.task("x", "true", cpus=0.1, mem=100)
    assert sdk.how_many_fit(offer(cpus=1, mem=1024), shape) == 10  # ten 0.1 cpus, despite floats
    assert sdk.how_many_fit(offer(cpus=1, mem=250), shape) == 2
    assert sdk.how_many_fit(offer(cpus=0.05, mem=1024), shape) == 0
    assert sdk.how_many_fit(offer(cpus=4, mem=4096), Resources(mem=1000)) == 4


def test_how_many_fit_with_fixed_ports_is_at_most_one() -> None:
    shape = sdk.task("x", "true", cpus=0.1, mem=1, ports=[(31000, 31000)])
    assert sdk.how_many_fit(offer(ports=[(31000, 31010)]), shape) == 1
    assert sdk.how_many_fit(offer(ports=[(32000, 32010)]), shape) == 0


def test_how_many_fit_refuses_an_empty_shape() -> None:
    with pytest.raises(ValueError, match="no resources"):
        sdk.how_many_fit(offer(), Resources())


# -- OfferPacker -------------------------------------------------------------------------------


def test_packer_takes_tasks_until_the_offer_is_used_up() -> None:
    packer = sdk.OfferPacker(offer(cpus=1, mem=1024))
    tasks = [sdk.task(f"t{i}", "true", cpus=0.3, mem=100) for i in range(5)]
    left = packer.add_all(tasks)
    assert packer.tasks == tasks[:3]
    assert left == tasks[3:]
    assert packer.remaining.cpus == pytest.approx(0.1)
    assert packer.remaining.mem == pytest.approx(724)


def test_packer_skips_a_big_task_and_keeps_packing_smaller_ones() -> None:
    packer = sdk.OfferPacker(offer(cpus=1, mem=1024))
    big, small = sdk.task("big", "true", cpus=2, mem=1), sdk.task("small", "true", cpus=1, mem=1)
    assert packer.add(big) is False
    assert packer.add(small) is True
    assert packer.tasks == [small]


def test_packer_assigns_distinct_free_ports_and_tells_the_task() -> None:
    packer = sdk.OfferPacker(offer(ports=[(31000, 31001), (31005, 31005)]))
    fixed = sdk.task("fixed", "true", cpus=0, mem=1, ports=[(31001, 31001)])
    a = sdk.task("a", "true", cpus=0, mem=1)
    b = sdk.task("b", "true", cpus=0, mem=1)
    assert packer.add(fixed)
    assert packer.add(a, ports=2)
    assert [(r.begin, r.end) for r in a.resources.ports] == [(31000, 31000), (31005, 31005)]
    assert a.command.environment["CORRAL_PORTS"] == "31000,31005"
    assert packer.add(b, ports=1) is False  # no port left
    assert b.resources.ports == [] and "CORRAL_PORTS" not in b.command.environment
    assert list(packer.remaining.ports) == []


def test_packer_never_overcommits_random_tasks() -> None:
    rng = random.Random(7)
    for _ in range(200):
        o = offer(cpus=rng.uniform(0, 8), mem=rng.uniform(0, 4096), disk=rng.uniform(0, 100))
        packer = sdk.OfferPacker(o)
        packer.add_all(
            [
                sdk.task(
                    "t",
                    "true",
                    cpus=rng.uniform(0, 2),
                    mem=rng.uniform(0, 1024),
                    disk=rng.uniform(0, 30),
                )
                for _ in range(10)
            ]
        )
        for name in ("cpus", "mem", "disk"):
            used = sum(getattr(t.resources, name) for t in packer.tasks)
            assert used <= getattr(o.resources, name) + 1e-6


# -- states and backoff ------------------------------------------------------------------------


def test_terminal_states_follow_mesos() -> None:
    terminal = {TaskState.Name(s).removeprefix("TASK_STATE_") for s in sdk.TERMINAL_STATES}
    assert terminal == {"FINISHED", "FAILED", "KILLED", "ERROR", "LOST", "DROPPED", "GONE"}
    assert sdk.is_terminal(TaskState.TASK_STATE_FINISHED)
    assert not sdk.is_terminal(TaskState.TASK_STATE_UNREACHABLE)  # may still be running
    assert not sdk.is_terminal(TaskState.TASK_STATE_RUNNING)


def test_state_name_strips_the_prefix_and_survives_unknown_numbers() -> None:
    assert sdk.state_name(TaskState.TASK_STATE_KILLED) == "KILLED"
    assert sdk.state_name(999) == "999"


def test_backoff_grows_to_its_maximum_with_jitter() -> None:
    delays = sdk.Backoff(initial=0.1, maximum=1.0).delays(random.Random(1))
    got = [next(delays) for _ in range(10)]
    ceilings = [0.1, 0.2, 0.4, 0.8] + [1.0] * 6
    assert all(c / 2 <= d <= c for d, c in zip(got, ceilings, strict=True))
    assert len(set(got)) == len(got)  # jittered, not a fixed ladder


def test_backoff_rejects_nonsense() -> None:
    with pytest.raises(ValueError):
        sdk.Backoff(initial=0)
    with pytest.raises(ValueError):
        sdk.Backoff(initial=2, maximum=1)


def test_place_gang_gives_each_task_an_agent_with_room_and_copies_them() -> None:
    bundle = [
        Offer(id="o1", agent_id="a1", gang_id="g", resources=Resources(cpus=2, mem=128, gpus=2)),
        Offer(id="o2", agent_id="a2", gang_id="g", resources=Resources(cpus=1, mem=64, gpus=1)),
    ]
    members = [sdk.task(f"m{i}", "x", cpus=1, mem=64, gpus=1) for i in range(3)]
    placed = sdk.place_gang(bundle, members)
    assert [t.agent_id for t in placed] == ["a1", "a1", "a2"]
    assert all(not t.agent_id for t in members)  # the caller's messages are not modified
    with pytest.raises(ValueError, match="fits none of the offers"):
        sdk.place_gang(bundle, [*members, sdk.task("m3", "x", cpus=1, mem=64, gpus=1)])
