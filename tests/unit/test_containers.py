"""Container tasks as data (issue #43): the wire's ContainerInfo checked by the master, the SDK's
``docker`` helper, and which containerizers an agent runs (corral.containers)."""

from __future__ import annotations

import pytest

from corral import containers
from corral.agent.convert import container_from_pb as agent_container
from corral.containers import ContainerSpec, Network, PortMapping, Volume
from corral.frameworks import sdk
from corral.master.convert import WireError, task_spec_from_pb


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
