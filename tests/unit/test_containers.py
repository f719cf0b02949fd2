"""Container tasks as data (issue #43): the wire's ContainerInfo checked by the master, the SDK's
``docker`` helper, and which containerizers an agent runs (corral.containers)."""

from __future__ import annotations

import pytest

from corral import containers
from corral.agent.convert import container_from_pb as agent_container
from corral.containers import ContainerSpec, Network, PortMapping, Volume
from corral.frameworks import sdk
from corral.master.wire.convert import WireError, task_spec_from_pb


def test_the_sdk_helper_builds_mesos_container_info_the_master_and_agent_read_alike() -> None:
    info = sdk.task(
        "web",
        None,
        cpus=0.5,
        mem=64,
        ports=[(31000, 31000)],
        container=sdk.docker(
            "corral-base:bookworm",
            network="bridge",
            port_mappings={8080: 31000},
            volumes=[("/data", "/srv/data"), ("/scratch", "/tmp/s", "rw")],
            force_pull_image=True,
        ),
    )
    want = ContainerSpec(
        image="corral-base:bookworm",
        network=Network.BRIDGE,
        port_mappings=(PortMapping(31000, 8080, "tcp"),),
        volumes=(Volume("/data", "/srv/data", True), Volume("/scratch", "/tmp/s", False)),
        force_pull_image=True,
    )
    assert task_spec_from_pb(info).container == want
    assert agent_container(info) == want


def test_a_process_task_has_no_container_and_still_needs_a_command() -> None:
    assert task_spec_from_pb(sdk.task("p", "true", cpus=0.1, mem=8)).container is None
    with pytest.raises(ValueError, match="needs a command"):
        sdk.task("p", None, cpus=0.1, mem=8)


@pytest.mark.parametrize(
    ("kwargs", "container", "message"),
    [
        ({}, sdk.docker("img", network="bridge", port_mappings={80: 31001}), "not one of"),
        ({}, sdk.docker("img", volumes=[("/a", "/b")]), None),
        ({}, sdk.docker("img", volumes=[("/a/../etc", "/b")]), "'..'"),
        ({}, sdk.docker("img", network="bridge", port_mappings={0: 31000}), "container_port"),
    ],
)
def test_the_master_checks_a_container_whole(
    kwargs: dict[str, object], container: sdk.TaskInfo, message: str | None
) -> None:
    info = sdk.task("t", None, cpus=0.1, mem=8, ports=[(31000, 31000)], container=container)
    if message is None:
        task_spec_from_pb(info)
        return
    with pytest.raises(WireError, match=message):
        task_spec_from_pb(info)


def test_the_master_refuses_an_empty_image_and_a_typeless_container() -> None:
    info = sdk.task("t", None, cpus=0.1, mem=8, container=sdk.docker("img"))
    info.container.docker.image = ""
    with pytest.raises(WireError, match=r"docker\.image must name an image"):
        task_spec_from_pb(info)
    info.container.docker.image = "img"
    info.container.type = 0  # type: ignore[assignment]
    with pytest.raises(WireError, match="type must be DOCKER"):
        task_spec_from_pb(info)


def test_the_sdk_helper_refuses_what_the_master_would() -> None:
    with pytest.raises(ValueError, match="bridge"):
        sdk.docker("img", port_mappings={80: 31000})
    with pytest.raises(ValueError, match="absolute"):
        sdk.docker("img", volumes=[("data", "/d")])
    with pytest.raises(ValueError, match="image"):
        sdk.docker("bad image")


def test_containerizers_flag_and_advertised_attribute() -> None:
    assert containers.parse_containerizers("process, docker,process") == ("process", "docker")
    with pytest.raises(ValueError, match="unknown containerizer 'rkt'"):
        containers.parse_containerizers("process,rkt")
    with pytest.raises(ValueError, match="at least one"):
        containers.parse_containerizers(" , ")
    assert containers.advertised({}) == ("process",)  # an agent older than containers
    assert containers.advertised({"containerizers": "process,docker"}) == ("process", "docker")


def test_the_refusal_names_the_containerizer_the_agent_and_the_flag() -> None:
    image = ContainerSpec(image="app:1")
    assert containers.refusal("t", image, "a1", {"containerizers": "process,docker"}) is None
    assert containers.refusal("t", None, "a1", {}) is None
    why = containers.refusal("t", image, "a1", {"containerizers": "process"})
    assert why is not None
    assert "'docker' containerizer" in why and "agent a1" in why and "app:1" in why
    assert "--containerizers process,docker" in why
    why = containers.refusal("t", None, "a2", {"containerizers": "docker"})
    assert why is not None and "'process' containerizer" in why


def test_the_masters_state_shows_the_container_it_checked() -> None:
    from corral.master.wire.convert_container import container_from_pb, container_to_pb
    from corral.resources import Resources

    info = sdk.task(
        "t",
        None,
        cpus=0.1,
        mem=8,
        ports=[(31000, 31000)],
        container=sdk.docker(
            "img:1", network="bridge", port_mappings={80: 31000}, volumes=[("/a", "/b", "rw")]
        ),
    )
    spec = task_spec_from_pb(info).container
    assert spec is not None
    shown = sdk.TaskInfo()
    container_to_pb(spec, shown.container)
    assert container_from_pb(shown, Resources(ports=((31000, 31000),)), "t") == spec


def test_batch_and_gang_with_an_image_run_in_it_on_agents_that_run_images(tmp_path: object) -> None:
    from corral.frameworks.batch.job import JobSpec, Stage
    from corral.frameworks.gang import plan
    from corral.frameworks.gang.spec import TrainSpec
    from corral.frameworks.placement_args import docker_agents

    job = JobSpec("j", (Stage("s", 1, cpus=0.1, mem=8, command="true"),), image="app:1")
    assert docker_agents() in job.constraints
    assert docker_agents().matches({"containerizers": "process,docker"})
    assert not docker_agents().matches({"containerizers": "process"})
    loaded = JobSpec.from_dict({"image": "app:1", "stages": [{"tasks": 1, "command": "true"}]})
    assert loaded.image == "app:1"
    with pytest.raises(ValueError, match="image"):
        JobSpec("j", (Stage("s", 1, cpus=0.1, mem=8, command="true"),), image="bad image")
    spec = TrainSpec(workers=1, steps=1, checkpoint_dir="/ckpt", image="trainer:2")
    assert docker_agents() in spec.constraints
    c = plan.container(spec)
    assert c is not None and c.docker.image == "trainer:2"
    assert [(v.host_path, v.container_path, v.mode) for v in c.volumes] == [("/ckpt", "/ckpt", 1)]


def test_the_engine_socket_is_never_mounted() -> None:
    for path in ("/var/run/docker.sock", "/var/run", "/var", "/", "/run/"):
        info = sdk.task(
            "t", None, cpus=0.1, mem=8, container=sdk.docker("img", volumes=[(path, "/s")])
        )
        with pytest.raises(WireError, match="engine's socket"):
            task_spec_from_pb(info)
    ok = sdk.task(
        "t", None, cpus=0.1, mem=8, container=sdk.docker("img", volumes=[("/var/lib/x", "/s")])
    )
    assert task_spec_from_pb(ok).container is not None


def test_acl_grants_for_images_host_network_and_paths() -> None:
    from corral import acl as acls
    from corral.acl import AclError, Principal, acl_from_data

    data = {
        "rules": [
            {
                "name": "team",
                "principals": ["t"],
                "frameworks": {
                    "images": ["reg.example.com/team/*"],
                    "host_paths": ["/data"],
                },
            }
        ]
    }
    acl = acl_from_data(data, "test")
    p = Principal("t")
    assert acl.decide(p, acls.USE_IMAGE, "reg.example.com/team/app:1") is None
    assert acl.decide(p, acls.USE_IMAGE, "reg.example.com/other/app:1") is not None
    assert acl.decide(p, acls.USE_HOST_NETWORK, "task") is not None
    assert acl.decide(p, acls.MOUNT_HOST_PATH, "/data/x") is None
    assert acl.decide(p, acls.MOUNT_HOST_PATH, "/data") is None
    assert acl.decide(p, acls.MOUNT_HOST_PATH, "/database") is not None
    for bad, why in (
        ({"host_network": "yes"}, "true or false"),
        ({"host_paths": ["rel"]}, "absolute"),
    ):
        with pytest.raises(AclError, match=why):
            acl_from_data({"rules": [{"name": "r", "principals": ["x"], "frameworks": bad}]}, "t")
    framework = Principal("f", frozenset({"framework"}))
    assert acls.builtin().decide(framework, acls.USE_IMAGE, "any:1") is None


def test_the_core_places_container_tasks_only_on_docker_agents_and_shows_the_container() -> None:
    from dataclasses import replace

    from corral.master.core.refusals import CallRejected, Refusal
    from corral.master.core.types import TaskState
    from corral.master.ui import tasks as ui_tasks
    from tests.unit.core_harness import Harness, status, task

    h = Harness()
    plain, _ = h.add_agent(hostname="plain")
    boxy, _ = h.add_agent(hostname="boxy", attributes={"containerizers": "process,docker"})
    fid, _ = h.subscribe("web")
    offers = {o.agent_id: o for o in h.offers_for(fid)}
    boxed = replace(task("c1"), container=ContainerSpec(image="app:1"))
    with pytest.raises(CallRejected) as info:
        h.accept(fid, [offers[plain].offer_id], boxed)
    assert info.value.code is Refusal.FAILED_PRECONDITION
    assert "'docker' containerizer" in info.value.message and plain in info.value.message
    h.accept(fid, [offers[boxy].offer_id], boxed)
    running = replace(status("c1", fid, boxy, TaskState.RUNNING), container_id="abc123")
    h.agent_updates(boxy, running)
    detail = ui_tasks.task_detail(h.core, "c1", "", [])
    assert detail is not None
    assert (detail["tasks"][0]["image"], detail["tasks"][0]["container_id"]) == ("app:1", "abc123")


def test_a_containers_memory_is_its_usage_less_the_inactive_page_cache() -> None:
    from corral.agent.executor_docker import memory_used_mib

    mib = 2**20
    # cgroup v2's stats, then v1's (this machine's), as the engine reports them.
    assert memory_used_mib({"usage": 300 * mib, "stats": {"inactive_file": 100 * mib}}) == 200
    assert memory_used_mib({"usage": 300 * mib, "stats": {"total_inactive_file": 50 * mib}}) == 250
    assert memory_used_mib({"usage": 64 * mib}) == 64
    assert memory_used_mib({}) is None  # not running: no figure, not 0
