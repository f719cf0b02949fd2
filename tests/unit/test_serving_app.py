"""The serving framework without a master: the app file's checks (each mistake names its
field), and the instance model's decisions: scaling, rolling restarts within the upgrade
strategy, the restart backoff and its reset."""

from __future__ import annotations

import dataclasses
import json
import random
from pathlib import Path
from typing import Any

import pytest

from corral.frameworks import sdk
from corral.frameworks.serving.app import AppError, AppSpec
from corral.frameworks.serving.instances import Instance, Instances

BASE: dict[str, Any] = {"id": "web", "command": "sleep 600"}


def spec(**fields: Any) -> AppSpec:
    return AppSpec.from_json({**BASE, **fields})


def test_a_full_app_file_parses() -> None:
    s = spec(
        instances=3,
        cpus=0.5,
        mem=128,
        ports=2,
        env={"MODE": "prod"},
        constraints=[["hostname", "UNIQUE"], ["zone", "CLUSTER", "a"]],
        spread={"topology_key": "zone", "max_skew": 2, "when_unsatisfiable": "ScheduleAnyway"},
        tolerations=[{"key": "spot", "operator": "Exists", "effect": "NoSchedule"}],
        health_check={"protocol": "TCP", "port_index": 1, "interval": 1},
        backoff={"initial": 0.5, "factor": 1.5, "max": 30},
        upgrade={"minimum_health_capacity": 0.5, "maximum_over_capacity": 0.2},
    )
    assert (s.instances, s.ports, s.priority_class, s.role) == (3, 2, "serving", "*")
    assert s.spread == sdk.Spread("zone", 2, "ScheduleAnyway")
    assert s.health_check is not None and s.health_check.port_index == 1
    d = s.demand(4).to_pb()
    assert (d.count, d.priority_class, d.spread.max_skew) == (4, "serving", 2)
    assert [(c.attribute, list(c.values)) for c in d.constraints] == [("zone", ["a"])]
    assert [t.key for t in d.tolerations] == ["spot"]


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"id": ""}, "id: must be a non-empty string"),
        ({"id": "my app"}, "id: 'my app' has whitespace"),
        ({"command": 3}, "command: must be a non-empty string"),
        ({"instances": -1}, "instances: must be a whole number >= 0"),
        ({"instances": 1.5}, "instances: must be a whole number"),
        ({"cpus": "1"}, "cpus: must be a number"),
        ({"mem": float("inf")}, "mem: must be a finite number"),
        ({"cpus": 0, "mem": 0}, "cpus, mem: an instance must ask"),
        ({"colour": "red"}, "unknown field 'colour'"),
        ({"env": {"A": 1}}, "env.A: must be a string"),
        ({"constraints": [["zone", "NEAR"]]}, r"constraints\[0\]: .*operator must be one of"),
        ({"constraints": "zone"}, "constraints: must be a list"),
        ({"spread": {"max_skew": 1}}, "spread.topology_key"),
        ({"spread": {"topology_key": "zone", "max_skew": 0}}, "spread.max_skew"),
        ({"spread": {"topology_key": "zone", "when_unsatisfiable": "x"}}, "spread.when_unsat"),
        ({"tolerations": [{"key": "spot", "operator": "Is"}]}, r"tolerations\[0\].operator"),
        ({"health_check": {"protocol": "UDP"}}, "health_check.protocol"),
        ({"health_check": {"protocol": "HTTP"}}, "health_check.port_index: 0 needs ports >= 1"),
        ({"health_check": {"protocol": "COMMAND"}}, "health_check.command"),
        ({"ports": 1, "health_check": {"interval": 0}}, "health_check.interval: must be more"),
        ({"ports": 1, "health_check": {"path": "x"}}, "health_check.path"),
        ({"backoff": {"initial": 5, "max": 1}}, "backoff.max: must be >= backoff.initial"),
        ({"backoff": {"factor": 0.5}}, "backoff.factor"),
        ({"upgrade": {"maximum_over_capacity": 2}}, "within 0..1"),
        (
            {"upgrade": {"minimum_health_capacity": 1, "maximum_over_capacity": 0}},
            "can never restart",
        ),
    ],
)
def test_bad_app_fields_are_named(fields: dict[str, Any], message: str) -> None:
    with pytest.raises(AppError, match=message):
        spec(**fields)


def test_app_files(tmp_path: Path) -> None:
    with pytest.raises(AppError, match="cannot read"):
        AppSpec.load(tmp_path / "missing.json")
    bad = tmp_path / "bad.json"
    bad.write_text("{")
    with pytest.raises(AppError, match="not JSON"):
        AppSpec.load(bad)
    bad.write_text("[]")
    with pytest.raises(AppError, match="the app must be a JSON object"):
        AppSpec.load(bad)
    good = tmp_path / "app.json"
    good.write_text(json.dumps({**BASE, "instances": 2}))
    assert AppSpec.load(good).instances == 2


def test_the_app_file_in_the_docs_parses() -> None:
    doc = (Path(__file__).resolve().parents[2] / "docs" / "frameworks.md").read_text()
    section = doc.split("## Serving", 1)[1]
    block = section.split("```json\n", 1)[1].split("```", 1)[0]
    s = AppSpec.from_json(json.loads(block))
    assert (s.id, s.instances, s.ports) == ("web", 6, 1)
    assert s.health_check is not None and s.spread is not None
    in_a_container = doc.split("### Apps in containers", 1)[1]
    block = in_a_container.split("```json\n", 1)[1].split("```", 1)[0]
    c = AppSpec.from_json(json.loads(block))
    assert c.container is not None and (c.ports, c.port_names) == (1, ("http",))


def test_the_version_changes_with_what_needs_a_restart_only() -> None:
    s = spec(instances=2)
    assert dataclasses.replace(s, instances=5).version == s.version
    assert dataclasses.replace(s, backoff=s.backoff).version == s.version
    assert spec(command="sleep 601").version != s.version
    assert spec(env={"A": "1"}).version != s.version
    assert spec(cpus=0.2).version != s.version


# -- the instance model ---------------------------------------------------------------------


def model(**fields: Any) -> Instances:
    return Instances(spec(**fields), random.Random(1))


def launch(app: Instances, n: int, now: float = 0.0, *, healthy: bool = True) -> list[Instance]:
    out = []
    for _ in range(n):
        i = Instance(sdk.new_task_id("web"), app.spec.version, "a", {"hostname": "h"}, [], now)
        app.add(i)
        app.running(i.task_id, now)
        if app.spec.health_check is not None:
            app.health(i.task_id, healthy, now)
        out.append(i)
    return out


def test_scaling_up_and_down() -> None:
    app = model(instances=3)
    assert app.to_launch(0) == 3 and app.demand_count(0) == 3
    launched = launch(app, 3)
    assert app.to_launch(0) == 0 and app.demand_count(0) == 3 and app.to_kill(0) == []
    app.spec = dataclasses.replace(app.spec, instances=1)
    kills = app.to_kill(0)
    assert [r for _, r in kills] == ["scale-down", "scale-down"]
    assert {i.task_id for i, _ in kills} < {i.task_id for i in launched}
    for i, r in kills:
        i.kill_reason = r
    assert app.counts(0).running == 1
    for i, _ in kills:
        assert app.ended(i.task_id, 1) == (i, False)  # killed on purpose: no backoff
    assert app.next_launch_at == 0 and app.failures == 0


def test_failures_back_off_exponentially_and_reset_after_staying_up() -> None:
    app = model(instances=1, backoff={"initial": 1, "factor": 2, "max": 4, "reset_after": 10})
    (i,) = launch(app, 1)
    _, failed = app.ended(i.task_id, 100) or (None, False)
    assert failed and app.to_launch(100) == 0 and app.demand_count(100) == 0
    first = app.next_launch_at - 100
    assert 0.5 <= first <= 1  # jittered in [d/2, d]
    assert app.to_launch(app.next_launch_at) == 1
    delays = []
    for t in (200, 300, 400, 500):
        (i,) = launch(app, 1, t)
        app.ended(i.task_id, t)
        delays.append(app.next_launch_at - t)
    assert [d <= c for d, c in zip(delays, (2, 4, 4, 4), strict=True)] == [True] * 4
    assert delays[-1] >= 2  # capped at max (4), jittered down to half
    (i,) = launch(app, 1, 600)
    app.settle_backoff(605)
    assert app._delays is not None  # up 5 s of 10: not yet
    app.settle_backoff(610)
    assert app._delays is None
    app.ended(i.task_id, 611)
    assert app.next_launch_at - 611 <= 1  # back to the initial delay


def test_an_ended_unknown_task_is_ignored() -> None:
    assert model().ended("nobody", 0) is None


def test_rolling_restart_keeps_the_minimum_healthy() -> None:
    health = {"protocol": "TCP", "grace_period": 0}
    app = model(
        instances=4,
        ports=1,
        health_check=health,
        upgrade={"minimum_health_capacity": 0.5, "maximum_over_capacity": 0.25},
    )
    old = launch(app, 4)
    app.spec = dataclasses.replace(app.spec, command="sleep 601")  # a new version
    c = app.counts(0)
    assert (c.old, c.healthy, c.pending) == (4, 4, 1)  # surge: 4 + 25% = 5 live at most
    kills = app.to_kill(0)
    assert [r for _, r in kills] == ["upgrade", "upgrade"]  # down to 2 healthy (50%)
    for i, r in kills:
        i.kill_reason = r
    assert app.to_launch(0) == 3  # 2 old left, room for 3 new within 5
    new = launch(app, 3, 1, healthy=False)  # started, not yet healthy
    assert app.to_kill(1) == []  # only 2 healthy: the old ones stay
    for i in new[:2]:
        app.health(i.task_id, True, 2)
    left = app.to_kill(2)
    assert sorted(r for _, r in left) == ["upgrade", "upgrade"]
    assert {i.task_id for i, _ in left} == {i.task_id for i in old} - {i.task_id for i, _ in kills}


def test_rolling_restart_with_full_capacity_waits_for_new_instances() -> None:
    app = model(instances=2)  # no health check: running is healthy; min 100%, surge 100%
    launch(app, 2)
    app.spec = dataclasses.replace(app.spec, env={"V": "2"})
    assert app.to_kill(0) == [] and app.to_launch(0) == 2
    launch(app, 1)
    kills = app.to_kill(0)
    assert len(kills) == 1 and kills[0][0].version != app.spec.version


def test_an_app_asking_for_gpus_subscribes_with_the_gpu_capability_and_its_tolerations() -> None:
    # Issue #40, defect 5: an app with "gpus": 1 stayed pending forever ("the framework lacks
    # the GPU_RESOURCES capability"), and its file had no way to set it: now it needs none.
    gpu = sdk.FrameworkCapability.FRAMEWORK_CAPABILITY_GPU_RESOURCES
    app = AppSpec.from_json(
        {"id": "m", "command": "./serve", "gpus": 1, "tolerations": ["gpu-sku=inference"]}
    )
    info = app.framework_info(failover_timeout=60)
    assert list(info.capabilities) == [gpu]
    assert [(t.key, t.value) for t in info.tolerations] == [("gpu-sku", "inference")]
    assert (info.name, info.role, info.failover_timeout) == ("serving:m", "*", 60)
    cpu_only = AppSpec.from_json({"id": "c", "command": "./serve"})
    assert list(cpu_only.framework_info("web").capabilities) == []
    assert cpu_only.framework_info("web").role == "web"
    # The string form round-trips through the app's JSON (what the serving service stores).
    assert AppSpec.from_json(app.to_json()) == app
    with pytest.raises(AppError, match=r"tolerations\[0\]: toleration 'k:Soon'"):
        AppSpec.from_json({"id": "b", "command": "x", "tolerations": ["k:Soon"]})


# -- apps in containers (Marathon's container.docker) -------------------------------------


def docker_app(**docker: Any) -> dict[str, Any]:
    return {
        "type": "DOCKER",
        "docker": {"image": "registry.example.com/web:1", "network": "BRIDGE", **docker},
    }


def test_a_container_app_takes_its_ports_and_names_from_the_port_mappings() -> None:
    mappings = [{"containerPort": 8080, "hostPort": 0, "name": "http"}, {"containerPort": 9090}]
    with pytest.raises(AppError, match="name every mapping or none"):
        AppSpec.from_json({"id": "web", "container": docker_app(portMappings=mappings)})
    mappings[1]["name"] = "metrics"
    s = AppSpec.from_json(
        {
            "id": "web",  # no command: the image's own
            "container": {
                **docker_app(portMappings=mappings, forcePullImage=True),
                "volumes": [{"containerPath": "/models", "hostPath": "/srv/models", "mode": "RO"}],
            },
            "health_check": {"protocol": "HTTP", "port_index": 1},
        }
    )
    assert (s.command, s.ports, s.port_names) == ("", 2, ("http", "metrics"))
    assert s.container is not None and s.container.force_pull_image
    info = s.container.info([31005, 31007])
    assert info.docker.image == "registry.example.com/web:1"
    assert [(m.container_port, m.host_port) for m in info.docker.port_mappings] == [
        (8080, 31005),
        (9090, 31007),
    ]
    assert [(v.host_path, v.container_path) for v in info.volumes] == [("/srv/models", "/models")]
    # Round trip, as the serving service stores and shows it.
    assert AppSpec.from_json(s.to_json()) == s
    # The demand and the placer ask for agents that run images.
    d = s.demand(1).to_pb()
    assert [(c.attribute, sorted(c.values)) for c in d.constraints] == [
        ("containerizers", ["docker", "process,docker"])
    ]
    (rule,) = s.placement_rules()
    assert rule.allows({"containerizers": "process,docker"}, [])
    assert not rule.allows({"containerizers": "process"}, [])
    # A process app's rules and version stay what they were.
    assert spec().placement_rules() == ()
    assert spec().version == AppSpec.from_json(spec().to_json()).version


def test_the_container_is_part_of_the_version() -> None:
    one = AppSpec.from_json({"id": "web", "container": docker_app()})
    two = AppSpec.from_json({"id": "web", "container": docker_app(image="web:2")})
    assert one.version != two.version
    assert one.version == AppSpec.from_json(one.to_json()).version


@pytest.mark.parametrize(
    ("container", "message"),
    [
        ({"type": "MESOS", "docker": {"image": "a"}}, "container.type: only DOCKER"),
        ({"docker": {}}, "container.docker.image: must be a non-empty string"),
        ({"docker": {"image": "a", "network": "USER"}}, "container.docker.network"),
        ({"docker": {"image": "a", "privileged": True}}, "never runs a privileged"),
        (
            {"docker": {"image": "a", "portMappings": [{"containerPort": 80}]}},
            "portMappings: need network BRIDGE",
        ),
        (docker_app(portMappings=[{"containerPort": 0}]), r"portMappings\[0\].containerPort"),
        (
            docker_app(portMappings=[{"containerPort": 80, "hostPort": 8080}]),
            r"portMappings\[0\].hostPort: only 0",
        ),
        (
            docker_app(portMappings=[{"containerPort": 80}, {"containerPort": 80}]),
            "mapped twice",
        ),
        (
            {**docker_app(), "volumes": [{"containerPath": "data", "hostPath": "/d"}]},
            r"container.volumes\[0\]: paths must be absolute",
        ),
        (
            {**docker_app(), "volumes": [{"containerPath": "/d", "hostPath": "/d", "mode": "X"}]},
            r"container.volumes\[0\].mode",
        ),
        ({"docker": {"image": "a", "forcePullImage": "yes"}}, "forcePullImage"),
    ],
)
def test_bad_container_fields_are_named(container: dict[str, Any], message: str) -> None:
    with pytest.raises(AppError, match=message):
        AppSpec.from_json({"id": "web", "container": container})


def test_ports_that_disagree_with_the_port_mappings_are_refused() -> None:
    with pytest.raises(AppError, match=r"ports: 2, but container\.docker\.portMappings has 1"):
        AppSpec.from_json(
            {"id": "web", "ports": 2, "container": docker_app(portMappings=[{"containerPort": 80}])}
        )
    with pytest.raises(AppError, match="command: must be a non-empty string"):
        AppSpec.from_json({"id": "web"})  # no container: a command is needed
