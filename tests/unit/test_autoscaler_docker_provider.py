"""The docker provider's configuration and the container it asks the engine for (the engine
itself: tests/e2e/test_autoscaler_docker.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from corral.autoscaler.config import ConfigError, parse
from corral.autoscaler.providers import LABEL_GROUP, LABEL_NODE, LABEL_STATE, DockerProvider


def doc(**docker: Any) -> dict[str, Any]:
    return {
        "node-groups": [
            {
                "name": "boxes",
                "max": 2,
                "provider": "docker",
                "simulate": True,
                "agent-args": ["--tls-dir", "/tls"],
                "docker": docker,
                "template": {"resources": "cpus:2;mem:1024", "attributes": {"zone": "a"}},
            }
        ]
    }


def test_the_container_runs_corral_agent_named_for_the_node_with_its_labels() -> None:
    group = parse(
        doc(image="corral:latest", volumes=["/etc/corral:/tls:ro"], env={"A": "1"})
    ).groups[0]
    body = DockerProvider("m:5050", Path("/var/as")).container(group, "boxes-3")
    assert body["Image"] == "corral:latest"
    assert body["Cmd"] == [
        "agent", "--master", "m:5050", "--name", "boxes-3",
        "--resources", "cpus:2;mem:1024;disk:0;gpus:0",
        "--work-dir", "/var/lib/corral/agent", "--attributes", "zone:a", "--simulate",
        "--tls-dir", "/tls",
    ]  # fmt: skip
    assert body["Labels"] == {LABEL_NODE: "boxes-3", LABEL_GROUP: "boxes", LABEL_STATE: "/var/as"}
    assert body["HostConfig"] == {
        "NetworkMode": "host",
        "Init": True,
        "Binds": ["/etc/corral:/tls:ro"],
    }
    assert body["Env"] == ["A=1"] and "User" not in body
    # The master as the containers reach it, when not the autoscaler's address.
    other = parse(doc(image="corral:latest", master="master:5050", user="0")).groups[0]
    body = DockerProvider("m:5050", Path("/var/as")).container(other, "boxes-1")
    assert body["Cmd"][1:3] == ["--master", "master:5050"] and body["User"] == "0"


@pytest.mark.parametrize(
    ("docker", "said"),
    [
        ({}, "the docker provider needs docker: {image: IMAGE}"),
        ({"image": ""}, "the docker provider needs docker: {image: IMAGE}"),
        ({"image": "i", "nope": 1}, "docker: unknown key 'nope'"),
        (
            {"image": "i", "volumes": ["no-colon"]},
            "volumes must be a list of 'HOST:CONTAINER[:ro]'",
        ),
        ({"image": "i", "env": ["A=1"]}, "env must be a mapping"),
        ({"image": "i", "network": 3}, "network must be a string"),
    ],
)
def test_a_bad_docker_group_is_one_clear_error(docker: dict[str, Any], said: str) -> None:
    with pytest.raises(ConfigError, match="node group boxes") as err:
        parse(doc(**docker))
    assert said in str(err.value)
