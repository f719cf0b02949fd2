"""The gang trainer's pure decisions (frameworks/gang/plan.py, spec.py, cli.py): each member's
environment, where rank 0 goes and its port, the whole-gang demand, and the restart policy."""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

import pytest

from corral.frameworks import sdk
from corral.frameworks.gang import cli, plan
from corral.frameworks.gang.plan import Action, Phase, Run
from corral.frameworks.gang.scheduler import GangScheduler
from corral.frameworks.gang.spec import TrainSpec
from corral.v1.common_pb2 import Range

SPEC = TrainSpec(workers=4, steps=100, checkpoint_dir="/shared/ckpt", gpus=1, cpus=2, mem=512)


def offer(agent: str, gpus: int, ports: tuple[int, int] | None = None) -> sdk.Offer:
    o = sdk.Offer(id=f"o-{agent}", agent_id=agent, hostname=f"host-{agent}", gang_id="G1")
    o.resources.CopyFrom(sdk.Resources(cpus=2.0 * gpus, mem=512.0 * gpus, gpus=float(gpus)))
    if ports is not None:
        o.resources.ports.append(Range(begin=ports[0], end=ports[1]))
    return o


def test_every_member_gets_the_distributed_training_environment() -> None:
    env = plan.member_env(SPEC, 2, "host-a", 31007, attempt=1)
    assert env == {
        "RANK": "2",
        "WORLD_SIZE": "4",
        "MASTER_ADDR": "host-a",
        "MASTER_PORT": "31007",
        "GANG_CHECKPOINT_DIR": "/shared/ckpt",
        "GANG_STEPS": "100",
        "GANG_CHECKPOINT_EVERY": "50",
        "GANG_SEED": "0",
        "GANG_STEP_SECONDS": "0.0",
        "GANG_PEER_TIMEOUT": "30.0",
        "GANG_ATTEMPT": "1",
    }


def test_rank0_goes_on_the_first_offer_with_a_port_and_holds_its_lowest() -> None:
    bundle = [offer("a", 1), offer("b", 2, (31005, 31009)), offer("c", 1, (31000, 31000))]
    assert plan.rank0_offer(bundle) == (1, 31005)
    assert plan.rank0_offer([offer("a", 4)]) is None


def test_members_are_placed_on_the_bundle_with_rank0_where_its_port_is() -> None:
    bundle = [offer("a", 1), offer("b", 2, (31005, 31009)), offer("c", 1, (31000, 31000))]
    tasks = plan.members(SPEC, bundle, attempt=3)
    assert [t.task_id for t in tasks] == [f"train-a3-rank{r}" for r in range(4)]
    assert [t.agent_id for t in tasks] == ["b", "b", "a", "c"]
    assert [[(p.begin, p.end) for p in t.resources.ports] for t in tasks] == [
        [(31005, 31005)], [], [], []
    ]  # fmt: skip
    for rank, t in enumerate(tasks):
        env = t.command.environment
        assert (env["RANK"], env["MASTER_ADDR"], env["MASTER_PORT"]) == (
            str(rank), "host-b", "31005"
        )  # fmt: skip
        assert t.demand == "train-3" and t.resources.gpus == 1
    assert list(tasks[0].command.arguments) == [sys.executable, "-m", plan.WORKER_MODULE]


def test_a_runs_token_ends_each_member_id() -> None:
    bundle = [offer("a", 2, (31000, 31000)), offer("b", 2)]
    tasks = plan.members(SPEC, bundle, attempt=1, run="5be1c2")
    assert [t.task_id for t in tasks] == [f"train-a1-rank{r}-5be1c2" for r in range(4)]


def test_each_gang_scheduler_is_a_run_of_its_own() -> None:
    tokens = {GangScheduler(SPEC).run_id for _ in range(20)}
    assert len(tokens) == 20 and all(len(t) == 6 for t in tokens)


def test_a_custom_command_runs_with_the_shell() -> None:
    spec = TrainSpec(workers=1, steps=1, checkpoint_dir="/c", command="./train.sh --fast")
    (t,) = plan.members(spec, [offer("a", 1, (31000, 31001))], attempt=0)
    assert t.command.shell and t.command.value == "./train.sh --fast"


def test_a_bundle_without_a_port_or_too_small_is_refused_before_any_call() -> None:
    with pytest.raises(ValueError, match="carries a port"):
        plan.members(SPEC, [offer("a", 2), offer("b", 2)], attempt=0)
    with pytest.raises(ValueError, match="fits none"):
        plan.members(SPEC, [offer("a", 1, (31000, 31000)), offer("b", 2)], attempt=0)


def test_the_demand_is_the_whole_gang() -> None:
    d = plan.demand(SPEC, 2)
    assert (d.name, d.count, d.min_member, d.gpus, d.cpus) == ("train-2", 4, 4, 1, 2)


PLACED = {f"t{r}": f"agent{r % 2}" for r in range(3)}


def test_every_member_finished_is_success() -> None:
    run = Run(workers=3, max_restarts=1)
    run.launched(PLACED)
    assert [run.ended(t, True) for t in ("t0", "t1")] == [Action.NOTHING, Action.NOTHING]
    assert run.ended("t2", True) is Action.SUCCEEDED
    assert run.phase is Phase.SUCCEEDED and run.done and run.restarts == 0


def test_a_failed_member_stops_the_gang_then_relaunches_it_once_all_ended() -> None:
    run = Run(workers=3, max_restarts=1)
    run.launched(PLACED)
    assert run.ended("t1", False, "FAILED exit 137") is Action.KILL_SURVIVORS
    assert run.phase is Phase.STOPPING and sorted(run.live) == ["t0", "t2"]
    assert run.ended("t1", False) is Action.NOTHING  # seen twice
    assert run.ended("t0", False, "KILLED") is Action.NOTHING  # a killed survivor
    assert run.ended("t2", True) is Action.RELAUNCH  # finished before the kill: still restart
    assert (run.phase, run.attempt, run.restarts) == (Phase.WAITING, 1, 1)
    assert run.failures == ["t1 FAILED exit 137"]
    assert run.ended("t0", False) is Action.NOTHING  # the earlier attempt's, late


def test_past_max_restarts_the_run_gives_up() -> None:
    run = Run(workers=1, max_restarts=1)
    run.launched({"a0": "x"})
    assert run.ended("a0", False, "LOST") is Action.RELAUNCH  # the last member alive
    run.launched({"a1": "x"})
    assert run.ended("a1", False, "LOST") is Action.GIVE_UP
    assert run.phase is Phase.FAILED and run.restarts == 1 and len(run.failures) == 2


def test_an_attempt_the_cluster_ended_is_relaunched_without_spending_a_restart() -> None:
    # Issue #40, defect 7: a drain, a preemption or an eviction is not the gang's failure.
    run = Run(workers=2, max_restarts=0)
    run.launched({"a0": "x", "a1": "y"})
    assert run.ended("a1", False, "KILLED drained", disrupted=True) is Action.KILL_SURVIVORS
    # The survivor then fails on its own for want of its peer: the first end decides.
    assert run.ended("a0", False, "FAILED peer gone") is Action.RELAUNCH
    assert (run.phase, run.attempt, run.restarts, run.disruptions) == (Phase.WAITING, 1, 0, 1)
    assert run.disrupted_last
    run.launched({"b0": "x", "b1": "y"})
    assert run.ended("b0", False, "FAILED exit 1") is Action.KILL_SURVIVORS
    assert run.ended("b1", False, "KILLED", disrupted=True) is Action.GIVE_UP  # 0 restarts
    assert run.phase is Phase.FAILED and not run.disrupted_last


def test_a_gang_is_launched_whole_and_only_while_waiting() -> None:
    run = Run(workers=3, max_restarts=0)
    with pytest.raises(ValueError, match="3 members, not 2"):
        run.launched({"a": "x", "b": "x"})
    run.launched(PLACED)
    with pytest.raises(RuntimeError, match="while running"):
        run.launched(PLACED)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"workers": 0}, "workers must be at least 1"),
        ({"checkpoint_dir": ""}, "checkpoint directory"),
        ({"gpus": float("nan")}, "gpus must be a finite number"),
        ({"cpus": 0, "mem": 0}, "some cpus or mem"),
        ({"checkpoint_every": 0}, "checkpoint_every >= 1"),
        ({"peer_timeout": 0}, "peer_timeout must be > 0"),
    ],
)
def test_a_bad_spec_is_refused_naming_the_field(change: dict[str, object], message: str) -> None:
    fields = {"workers": 2, "steps": 10, "checkpoint_dir": "/c", **change}
    with pytest.raises(ValueError, match=message):
        TrainSpec(**fields)  # type: ignore[arg-type]


def test_the_command_line_builds_the_spec_with_a_temporary_checkpoint_dir(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))  # the default dir is made here
    parser = argparse.ArgumentParser()
    cli._configure(parser)
    args = parser.parse_args(
        ["--workers", "8", "--gpus-per-worker", "1", "--steps", "500", "--max-restarts", "5"]
    )
    spec = cli.spec_from_args(args)
    assert (spec.workers, spec.gpus, spec.steps, spec.max_restarts) == (8, 1, 500, 5)
    assert Path(spec.checkpoint_dir).parent == tmp_path
    assert Path(spec.checkpoint_dir).name.startswith("corral-gang-")
    with pytest.raises(SystemExit):
        parser.parse_args(["--workers", "0", "--steps", "1"])


def test_a_gang_takes_tolerations_and_constraints_for_its_framework_and_demand() -> None:
    # Issue #40, defect 5: `corral run gang` had no toleration flag.
    parser = argparse.ArgumentParser()
    cli._configure(parser)
    args = parser.parse_args(
        [
            *("--workers", "2", "--steps", "1", "--checkpoint-dir", "/tmp/x"),
            *("--gpus-per-worker", "1", "--toleration", "gpu-sku=inference:NoSchedule"),
            *("--constraint", "gpu-sku"),
        ]
    )
    spec = cli.spec_from_args(args)
    assert spec.tolerations == (sdk.Toleration.equal("gpu-sku", "inference", "NoSchedule"),)
    assert spec.constraints == (sdk.Constraint.exists("gpu-sku"),)
    d = plan.demand(spec, 0)
    assert (d.tolerations, d.constraints, d.min_member) == (spec.tolerations, spec.constraints, 2)


def test_a_run_saved_and_restored_is_the_same_run() -> None:
    run = plan.Run(workers=2, max_restarts=2)
    before_launch = run.saved(launching={"t-a0-r0": "ag1", "t-a0-r1": "ag2"})
    assert before_launch["phase"] == "running" and before_launch["live"] == {
        "t-a0-r0": "ag1",
        "t-a0-r1": "ag2",
    }
    run.launched({"t-a0-r0": "ag1", "t-a0-r1": "ag2"})
    run.ended("t-a0-r0", succeeded=False, why="FAILED")
    back = plan.Run.restore(run.saved())
    assert back == run
    # The service tore the gang down (preempted): the next attempt, no restart spent.
    back.disrupted_all()
    assert (back.phase, back.attempt, back.restarts, back.disruptions) == (
        plan.Phase.WAITING,
        1,
        0,
        1,
    )


async def test_a_gang_being_taken_back_launches_no_bundle() -> None:
    # The job service sets ``closing`` before it kills a preempted gang's members and tears
    # its framework down: a whole bundle offered in between is declined, not launched.
    calls: list[str] = []

    class Driver:
        async def launch(self, offers: list[sdk.Offer], tasks: list[sdk.TaskInfo]) -> None:
            calls.append("launch")

        async def decline(self, offer_ids: list[str], refuse_seconds: float = 0) -> None:
            calls.append("decline")

    bundle = [offer("a", 2, (31000, 31010)), offer("b", 2)]
    gang = GangScheduler(SPEC)
    gang.closing = True
    await gang.offers(Driver(), bundle)  # type: ignore[arg-type]
    assert calls == ["decline"] and gang.run.phase is Phase.WAITING
    await GangScheduler(SPEC).offers(Driver(), bundle)  # type: ignore[arg-type]
    assert calls[-1] == "launch"  # the same bundle launches a gang not being taken back
