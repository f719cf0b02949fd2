"""The serving scheduler with a driver double and a fake clock: the demand it sends (live plus
missing, with the spread), ports as PORT0, long declines, a revive only when something changed,
the restart backoff, and a scale-down's kills."""

from __future__ import annotations

import asyncio
import random
import socket
from typing import Any

import grpc

from corral.frameworks import sdk
from corral.frameworks.serving.app import AppSpec
from corral.frameworks.serving.scheduler import LONG_REFUSE_SECONDS, ServingScheduler

RUNNING = sdk.TaskState.TASK_STATE_RUNNING
FAILED = sdk.TaskState.TASK_STATE_FAILED
KILLED = sdk.TaskState.TASK_STATE_KILLED


class FakeDriver:
    def __init__(self) -> None:
        self.calls: list[tuple[str, Any]] = []

    async def launch(self, offers: list[sdk.Offer], tasks: list[sdk.TaskInfo]) -> None:
        self.calls.append(("launch", (offers[0].hostname, tasks)))

    async def decline(self, offers: list[sdk.Offer], refuse_seconds: float | None = None) -> None:
        self.calls.append(("decline", ([o.hostname for o in offers], refuse_seconds)))

    async def set_demands(self, demands: list[sdk.Demand]) -> None:
        self.calls.append(("demands", [d.to_pb() for d in demands]))

    async def revive(self) -> None:
        self.calls.append(("revive", None))

    async def kill(self, task_id: str, agent_id: str = "") -> None:
        self.calls.append(("kill", task_id))

    def of(self, kind: str) -> list[Any]:
        return [value for k, value in self.calls if k == kind]


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def offer(host: str, zone: str, cpus: float = 4) -> sdk.Offer:
    res = sdk.Resources(cpus=cpus, mem=4096)
    res.ports.add(begin=31000, end=31009)
    return sdk.Offer(
        id=f"o-{host}",
        agent_id=f"a-{host}",
        hostname=host,
        resources=res,
        attributes={"zone": zone},
    )


def status(task_id: str, state: int) -> sdk.TaskStatus:
    return sdk.TaskStatus(task_id=task_id, state=state, uuid=b"u")


def serving(**fields: Any) -> tuple[ServingScheduler, FakeDriver, Clock]:
    spec = AppSpec.from_json({"id": "web", "command": "./serve", "cpus": 1, "mem": 64, **fields})
    clock = Clock()
    return ServingScheduler(spec, clock=clock, rng=random.Random(0)), FakeDriver(), clock


async def test_launches_what_is_missing_spread_with_ports_and_declines_the_rest_long() -> None:
    s, d, _ = serving(instances=2, ports=1, spread={"topology_key": "zone"})
    await s.subscribed(d, "fw")  # type: ignore[arg-type]
    await s.settle()
    (first,) = d.of("demands")
    assert [(x.name, x.count, x.priority_class, x.spread.topology_key) for x in first] == [
        ("web", 2, "serving", "zone")
    ]
    await s.offers(d, [offer("h1", "a"), offer("h2", "a"), offer("h3", "b")])  # type: ignore[arg-type]
    await s.settle()
    launches = d.of("launch")
    assert sorted(host for host, _ in launches) in (["h1", "h3"], ["h2", "h3"])  # one per zone
    task = launches[0][1][0]
    assert task.command.environment["PORT0"] == task.command.environment["PORT"] == "31000"
    assert (task.demand, task.priority_class, task.labels["app"]) == ("web", "serving", "web")
    ((declined, seconds),) = d.of("decline")
    assert len(declined) == 1 and seconds == LONG_REFUSE_SECONDS
    # Nothing missing: the demand is the 2 live ones (unmet 0), and offers are declined.
    await s.offers(d, [offer("h4", "c")])  # type: ignore[arg-type]
    assert d.of("decline")[-1] == (["h4"], LONG_REFUSE_SECONDS)
    assert d.of("revive") == []


async def test_a_failure_backs_off_then_revives_and_demands_again() -> None:
    s, d, clock = serving(instances=1, backoff={"initial": 2, "max": 8})
    await s.offers(d, [offer("h1", "a"), offer("h2", "b")])  # type: ignore[arg-type]
    (task,) = d.of("launch")[0][1]
    await s.status(d, status(task.task_id, RUNNING))  # type: ignore[arg-type]
    await s.status(d, status(task.task_id, FAILED))  # type: ignore[arg-type]
    await s.settle()
    assert d.of("revive") == []  # still backing off: no offers wanted yet
    assert d.of("demands")[-1] == []  # nothing live, nothing to launch now
    clock.now += 2.0  # the first delay is at most `initial`
    await s.tick(d)  # type: ignore[arg-type]
    await s.settle()
    assert d.of("revive") == [None]  # the agents declined for an hour are wanted again
    assert [x.count for x in d.of("demands")[-1]] == [1]
    await s.tick(d)  # type: ignore[arg-type]
    assert d.of("revive") == [None]  # once


async def test_an_instance_the_cluster_took_away_is_replaced_at_once_and_is_no_failure() -> None:
    # Issue #40, defect 7: a drain (a preemption, an eviction) is not the app's failure: no
    # backoff, and nothing a deployment's failure_threshold counts.
    events: list[str] = []
    spec = AppSpec.from_json(
        {"id": "web", "command": "./serve", "cpus": 1, "mem": 64, "backoff": {"initial": 30}}
    )
    s, d = ServingScheduler(spec, events.append, clock=Clock(), rng=random.Random(0)), FakeDriver()
    await s.offers(d, [offer("h1", "a")])  # type: ignore[arg-type]
    (task,) = d.of("launch")[0][1]
    await s.status(d, status(task.task_id, RUNNING))  # type: ignore[arg-type]
    drained = status(task.task_id, KILLED)
    drained.reason = sdk.TaskReason.TASK_REASON_AGENT_DRAINING
    await s.status(d, drained)  # type: ignore[arg-type]
    assert s.app.failures == 0 and s.app.to_launch(s.clock()) == 1  # now, not in 30 s
    assert "KILLED (agent_draining): not a failure of the app's" in events[-1]
    await s.offers(d, [offer("h2", "b")])  # type: ignore[arg-type]
    assert [host for host, _ in d.of("launch")] == ["h1", "h2"]


async def test_scaling_down_kills_the_extra_instances_without_a_backoff() -> None:
    s, d, clock = serving(instances=3)
    await s.offers(d, [offer("h1", "a", 8)])  # type: ignore[arg-type]
    tasks = d.of("launch")[0][1]
    for t in tasks:
        await s.status(d, status(t.task_id, RUNNING))  # type: ignore[arg-type]
    assert "instances 3 -> 1" in s.update(
        AppSpec.from_json({"id": "web", "command": "./serve", "cpus": 1, "mem": 64, "instances": 1})
    )
    await s.tick(d)  # type: ignore[arg-type]
    # The two leave the endpoints at once, and are killed after the drain (2 s by default).
    assert len(s.app.endpoints()) == 1 and d.of("kill") == []
    clock.now += 1.9
    await s.tick(d)  # type: ignore[arg-type]
    assert d.of("kill") == []
    clock.now += 0.1
    await s.tick(d)  # type: ignore[arg-type]
    killed = d.of("kill")
    assert len(killed) == 2
    for task_id in killed:
        await s.status(d, status(task_id, KILLED))  # type: ignore[arg-type]
    c = s.counts()
    assert (c.wanted, c.running, c.pending) == (1, 1, 0)
    assert s.app.failures == 0 and s.app.next_launch_at == 0


async def test_replaced_in_is_the_time_from_the_failure_to_the_replacement_running() -> None:
    # Issue #32, defect 9: "replaced in 0.9 s" was the backoff, said as the instance failed,
    # not how long the app was one instance short.
    events: list[str] = []
    spec = AppSpec.from_json(
        {"id": "web", "command": "./serve", "cpus": 1, "mem": 64, "backoff": {"initial": 1}}
    )
    clock = Clock()
    s = ServingScheduler(spec, events.append, clock=clock, rng=random.Random(0))
    d = FakeDriver()
    await s.offers(d, [offer("h1", "a")])  # type: ignore[arg-type]
    (first,) = d.of("launch")[0][1]
    await s.status(d, status(first.task_id, RUNNING))  # type: ignore[arg-type]
    await s.status(d, status(first.task_id, FAILED))  # type: ignore[arg-type]
    failed_line = events[-1]
    assert "replaced in" not in failed_line and "a replacement launches in" in failed_line
    clock.now += 1.0  # the backoff (at most `initial`) is over
    await s.tick(d)  # type: ignore[arg-type]
    await s.offers(d, [offer("h2", "b")])  # type: ignore[arg-type]
    (second,) = d.of("launch")[-1][1]
    clock.now += 2.5  # the replacement takes 2.5 s more to run
    await s.status(d, status(second.task_id, RUNNING))  # type: ignore[arg-type]
    assert events[-1] == f"instance {first.task_id} replaced by {second.task_id} on h2 in 3.5 s"


async def test_a_refused_demand_launches_nothing_until_the_app_changes() -> None:
    # Issue #40, defect 3: after the master refused the app's demand (an ungranted class), the
    # app launched tasks naming it anyway: "names demand 'sys', which the framework has not set".
    class Refusing(FakeDriver):
        async def set_demands(self, demands: list[sdk.Demand]) -> None:
            await super().set_demands(demands)
            if any(d.priority_class == "system" for d in demands):
                raise sdk.CallError(
                    "SetDemands", grpc.StatusCode.PERMISSION_DENIED, "may not use system"
                )

    events: list[str] = []
    spec = AppSpec.from_json({"id": "sys", "command": "x", "priority_class": "system"})
    s, d = ServingScheduler(spec, events.append, clock=Clock()), Refusing()
    await s.subscribed(d, "fw")  # type: ignore[arg-type]
    await s.settle()
    assert s.refusal is not None and s.refusal.code == grpc.StatusCode.PERMISSION_DENIED
    assert "the master refused the app's demand" in events[-1]
    await s.offers(d, [offer("h1", "a")])  # type: ignore[arg-type]
    assert d.of("launch") == [] and d.of("decline")[-1][0] == ["h1"]
    s.update(AppSpec.from_json({"id": "sys", "command": "x", "priority_class": "serving"}))
    assert s.refusal is None
    await s.tick(d)  # type: ignore[arg-type]
    await s.settle()
    await s.offers(d, [offer("h2", "a")])  # type: ignore[arg-type]
    assert [host for host, _ in d.of("launch")] == ["h2"]


async def test_an_offer_while_the_demand_is_in_flight_waits_for_its_answer() -> None:
    # The first offers can come before the master answers the SetDemands sent at subscribing
    # (a loaded machine): a launch then named a demand the master was about to refuse.
    answer = asyncio.Event()

    class Slow(FakeDriver):
        async def set_demands(self, demands: list[sdk.Demand]) -> None:
            await super().set_demands(demands)
            await answer.wait()
            raise sdk.CallError("SetDemands", grpc.StatusCode.PERMISSION_DENIED, "no system")

    spec = AppSpec.from_json({"id": "sys", "command": "x", "priority_class": "system"})
    s, d = ServingScheduler(spec, clock=Clock()), Slow()
    await s.subscribed(d, "fw")  # type: ignore[arg-type]
    offered = asyncio.create_task(s.offers(d, [offer("h1", "a")]))  # type: ignore[arg-type]
    await asyncio.sleep(0.01)
    assert not offered.done() and d.of("launch") == []  # waiting on the demand's answer
    answer.set()
    await asyncio.wait_for(offered, 5)
    assert s.refusal is not None
    assert d.of("launch") == [] and d.of("decline")[-1][0] == ["h1"]


class Recorder:
    """An observer that notes what the endpoints were at each change, beside the driver's
    calls, in one sequence."""

    def __init__(self, s: ServingScheduler, d: FakeDriver) -> None:
        self.s, self.d = s, d

    def subscribed(self, framework_id: str) -> None:
        pass

    def launching(self, instances: list[Any]) -> None:
        pass

    def not_launched(self, instances: list[Any]) -> None:
        pass

    def changed(self, inst: Any) -> None:
        self.d.calls.append(("endpoints", [e.task_id for e in self.s.app.endpoints()]))

    def failed(self, inst: Any, why: str) -> None:
        self.d.calls.append(("failed", (inst.task_id, why)))

    def ended(self, inst: Any, failed: bool, why: str) -> None:
        pass


def closed_port() -> int:
    """A port nothing listens on: one the kernel just gave and took back."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
    return port


async def test_a_health_check_verdict_is_the_failure_and_no_replacement_beats_its_backoff() -> None:
    # CI at stop 53: the step after an unhealthy kill launched a replacement at once (the
    # killed instance no longer counted, and the backoff started only at its KILLED), so a
    # deployment failed by that KILLED still had a fresh instance of the bad version running.
    check = {"protocol": "TCP", "grace_period": 0, "interval": 0.01, "timeout": 2}
    s, d, clock = serving(
        instances=1,
        ports=1,
        health_check={**check, "max_consecutive_failures": 1},
        backoff={"initial": 30},
    )
    s.observer = Recorder(s, d)
    res = sdk.Resources(cpus=4, mem=4096)
    port = closed_port()
    res.ports.add(begin=port, end=port)
    local = sdk.Offer(id="o-1", agent_id="a-1", hostname="127.0.0.1", resources=res)
    await s.offers(d, [local])  # type: ignore[arg-type]
    (task,) = d.of("launch")[0][1]
    await s.status(d, status(task.task_id, RUNNING))  # type: ignore[arg-type]  # checks start
    async with asyncio.timeout(30):
        while not d.of("kill"):
            await asyncio.sleep(0.01)  # the check runs on the loop: nothing to await but it
    assert d.of("kill") == [task.task_id]
    ((failed_id, why),) = d.of("failed")
    assert failed_id == task.task_id and why.startswith("killed by its health check (")
    assert (s.app.failures, s.app.unhealthy_kills) == (1, 1)
    # The kill is under way and the instance no longer counts, yet nothing is to launch
    # before the backoff: the demand is the killing instance alone.
    await s.settle()
    assert s.app.to_launch(clock.now) == 0
    assert [x.count for x in d.of("demands")[-1]] == [1]
    await s.status(d, status(task.task_id, KILLED))  # type: ignore[arg-type]
    assert (s.app.failures, len(d.of("failed"))) == (1, 1)  # not counted again at its end
    clock.now = s.app.next_launch_at
    assert s.app.to_launch(clock.now) == 1


async def test_a_rolling_restart_takes_an_old_instance_out_of_endpoints_before_its_kill() -> None:
    fields = {"instances": 1, "drain_seconds": 0, "upgrade": {"minimum_health_capacity": 0}}
    s, d, _ = serving(**fields)
    s.observer = Recorder(s, d)
    await s.offers(d, [offer("h1", "a", 8)])  # type: ignore[arg-type]
    (old,) = d.of("launch")[0][1]
    await s.status(d, status(old.task_id, RUNNING))  # type: ignore[arg-type]
    assert d.of("endpoints")[-1] == [old.task_id]
    v2 = {"id": "web", "command": "./serve --v2", "cpus": 1, "mem": 64, **fields}
    s.update(AppSpec.from_json(v2))
    await s.tick(d)  # type: ignore[arg-type]
    # Even with no drain, the endpoints without it are published before the kill goes out.
    kinds = [k for k, _ in d.calls]
    assert kinds.index("kill") > max(i for i, k in enumerate(kinds) if k == "endpoints")
    assert d.of("endpoints")[-1] == [] and d.of("kill") == [old.task_id]


async def test_an_instance_that_is_not_ready_is_killed_without_a_drain() -> None:
    s, d, _ = serving(instances=2, drain_seconds=30)
    await s.offers(d, [offer("h1", "a", 8)])  # type: ignore[arg-type]
    first, second = d.of("launch")[0][1]
    await s.status(d, status(first.task_id, RUNNING))  # type: ignore[arg-type]
    s.update(AppSpec.from_json({"id": "web", "command": "./serve", "cpus": 1, "mem": 64}))
    await s.tick(d)  # type: ignore[arg-type]
    # The one still staging (never ready) goes at once; the running one would drain.
    assert d.of("kill") == [second.task_id]


async def test_an_app_in_a_container_launches_on_docker_agents_with_its_mapped_host_ports() -> None:
    s, d, _ = serving(
        instances=1,
        container={
            "type": "DOCKER",
            "docker": {
                "image": "web:1",
                "network": "BRIDGE",
                "portMappings": [{"containerPort": 8080, "name": "http"}],
            },
        },
    )
    await s.subscribed(d, "fw")  # type: ignore[arg-type]
    processes_only = offer("h1", "a")
    images = offer("h2", "a")
    images.attributes["containerizers"] = "process,docker"
    await s.offers(d, [processes_only, images])  # type: ignore[arg-type]
    ((host, (task,)),) = d.of("launch")
    assert host == "h2"  # the agent that runs only processes is declined
    assert d.of("decline")[0][0] == ["h1"]
    assert task.container.docker.image == "web:1"
    (mapping,) = task.container.docker.port_mappings
    assert (mapping.container_port, mapping.host_port) == (8080, 31000)
    assert [(r.begin, r.end) for r in task.resources.ports] == [(31000, 31000)]
    assert task.command.environment["PORT0"] == "31000"
    assert task.command.value == "./serve"  # the app's command overrides the image's
    (inst,) = s.app.live.values()
    assert inst.in_container and inst.ports == [31000]
