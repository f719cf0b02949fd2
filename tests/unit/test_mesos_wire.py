"""The Mesos API's shapes (master/mesos_api/wire.py) and Basic credentials (credentials.py):
what maps to Corral's wire contract, what is refused and how it says so."""

from __future__ import annotations

import base64
import json
from pathlib import Path

import pytest

from corral.master.mesos_api import credentials, wire
from corral.v1 import common_pb2 as pb
from corral.v1 import scheduler_pb2 as spb


def basic(principal: str, secret: str) -> str:
    return "Basic " + base64.b64encode(f"{principal}:{secret}".encode()).decode()


def test_credentials_in_mesos_json_and_text_formats(tmp_path: Path) -> None:
    as_json = tmp_path / "c.json"
    as_json.write_text(
        json.dumps(
            {
                "credentials": [
                    {"principal": "ml", "secret": "s1"},
                    {"principal": "ops", "secret": "s2", "roles": ["operator"]},
                ]
            }
        )
    )
    creds = credentials.load(as_json)
    ml = creds.principal_of(basic("ml", "s1"))
    assert ml is not None and ml.name == "ml" and ml.roles == frozenset({"framework"})
    ops = creds.principal_of(basic("ops", "s2"))
    assert ops is not None and ops.roles == frozenset({"operator"})
    for bad in (
        basic("ml", "s2"),
        basic("nobody", "s1"),
        "Bearer x",
        "Basic !!!",
        "",
        None,
        "Basic " + base64.b64encode(b"no-colon").decode(),
    ):
        assert creds.principal_of(bad) is None, bad
    as_text = tmp_path / "c.txt"
    as_text.write_text("# Mesos' older format\nml s1\n\nbatch s3\n")
    text_creds = credentials.load(as_text)
    assert len(text_creds) == 2
    assert text_creds.principal_of(basic("batch", "s3")) is not None


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("{not json", "not JSON"),
        ('{"credentials": {}}', 'expected {"credentials"'),
        ('{"credentials": [{"principal": "a"}]}', "secret must be"),
        ('{"credentials": [{"principal": "a:b", "secret": "s"}]}', "without ':'"),
        ('{"credentials": [{"principal": "a", "secret": "s", "x": 1}]}', "unknown field 'x'"),
        ('{"credentials": [{"principal": "a", "secret": "s", "roles": ["root"]}]}', "unknown role"),
        (
            json.dumps({"credentials": [{"principal": "a", "secret": s} for s in "st"]}),
            "appears twice",
        ),
        ('{"credentials": []}', "no credentials"),
        ("ml\n", "expected PRINCIPAL SECRET"),
    ],
)
def test_a_bad_credentials_file_is_refused_naming_the_problem(
    tmp_path: Path, content: str, message: str
) -> None:
    path = tmp_path / "c"
    path.write_text(content)
    with pytest.raises(credentials.CredentialsError, match=message):
        credentials.load(path)


def test_framework_info_maps_role_capabilities_and_the_authenticated_principal() -> None:
    info = wire.framework_info(
        {
            "name": "spark",
            "user": "u",
            "roles": ["analytics"],
            "failover_timeout": 60,
            "checkpoint": True,
            "capabilities": [
                {"type": "MULTI_ROLE"},
                {"type": "PARTITION_AWARE"},
                {"type": "GPU_RESOURCES"},
            ],
            "webui_url": "http://x",
        },
        "ml",
    )
    assert (info.name, info.user, info.role, info.principal) == ("spark", "u", "analytics", "ml")
    assert info.failover_timeout == 60
    assert set(info.capabilities) == {
        pb.FRAMEWORK_CAPABILITY_PARTITION_AWARE,
        pb.FRAMEWORK_CAPABILITY_GPU_RESOURCES,
    }
    with pytest.raises(wire.BadCall, match="one role"):
        wire.framework_info({"name": "x", "roles": ["a", "b"]}, "ml")
    with pytest.raises(wire.BadCall, match="not supported"):
        wire.framework_info({"name": "x", "capabilities": [{"type": "QUANTUM"}]}, "ml")


def _task(**extra: object) -> dict[str, object]:
    return {
        "name": "t",
        "task_id": {"value": "t1"},
        "agent_id": {"value": "a1"},
        "resources": [
            {"name": "cpus", "type": "SCALAR", "scalar": {"value": 0.5}},
            {"name": "mem", "type": "SCALAR", "scalar": {"value": 64}},
            {"name": "ports", "type": "RANGES", "ranges": {"range": [{"begin": 80, "end": 81}]}},
        ],
        "command": {"value": "echo hi"},
        **extra,
    }


def test_a_command_task_maps_to_corral_task_info() -> None:
    secret = base64.b64encode(b"pw").decode()
    t = wire.task_info(
        _task(
            kill_policy={"grace_period": {"nanoseconds": 2_500_000_000}},
            labels={"labels": [{"key": "team", "value": "ml"}]},
            command={
                "value": "/bin/echo",
                "shell": False,
                "arguments": ["echo", "hi"],
                "environment": {
                    "variables": [
                        {"name": "A", "value": "1"},
                        {
                            "name": "PW",
                            "type": "SECRET",
                            "secret": {"type": "VALUE", "value": {"data": secret}},
                        },
                    ]
                },
            },
        ),
        0,
    )
    assert (t.task_id, t.agent_id, t.resources.cpus, t.resources.mem) == ("t1", "a1", 0.5, 64)
    assert [(p.begin, p.end) for p in t.resources.ports] == [(80, 81)]
    assert t.kill_grace_period_seconds == 2.5
    assert dict(t.labels) == {"team": "ml"}
    assert not t.command.shell and list(t.command.arguments) == ["echo", "hi"]
    assert dict(t.command.environment) == {"A": "1"}
    assert dict(t.command.secret_environment) == {"PW": "pw"}


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        ({"executor": {"executor_id": {"value": "e"}}}, "a command or an executor, and not both"),
        ({"health_check": {}}, "health checks"),
        ({"container": {"type": "DOCKER", "docker": {"image": "x"}}}, "container images"),
        ({"command": {"value": "x", "uris": [{"value": "http://x"}]}}, "fetch URIs"),
        (
            {"resources": [{"name": "fpgas", "type": "SCALAR", "scalar": {"value": 1}}]},
            "Corral has cpus",
        ),
        ({"resources": [{"name": "cpus", "type": "RANGES"}]}, "must be SCALAR"),
    ],
)
def test_what_corral_cannot_run_is_a_task_error_naming_it(
    extra: dict[str, object], message: str
) -> None:
    with pytest.raises(wire.TaskInvalid, match=message):
        wire.task_info(_task(**extra), 0)


def _executor_task(**executor: object) -> dict[str, object]:
    task = _task()
    del task["command"]
    task["data"] = "ZGF0YQ=="
    task["executor"] = {
        "executor_id": {"value": "e1"},
        "name": "mine",
        "data": "eA==",
        "command": {"value": "python3 my_executor.py"},
        "resources": [{"name": "cpus", "type": "SCALAR", "scalar": {"value": 0.25}}],
        **executor,
    }
    return task


def test_a_custom_executor_carries_through_with_its_command_and_resources() -> None:
    t = wire.task_info(_executor_task(), 0)
    assert t.executor.executor_id == "e1" and t.executor.name == "mine"
    assert t.executor.data == b"x" and t.data == b"data"
    # The process the agent starts is the executor; it uses the executor's resources too.
    assert t.command.shell and t.command.value == "python3 my_executor.py"
    assert t.resources.cpus == 0.75 and t.resources.mem == 64


@pytest.mark.parametrize(
    ("executor", "message"),
    [
        ({"command": None}, "executor.command is required"),
        ({"type": "DEFAULT"}, "only CUSTOM"),
        ({"container": {"type": "MESOS"}}, "executor.container"),
        (
            {
                "resources": [
                    {
                        "name": "ports",
                        "type": "RANGES",
                        "ranges": {"range": [{"begin": 1, "end": 2}]},
                    }
                ]
            },
            "ports go in the task",
        ),
    ],
)
def test_an_executor_corral_cannot_run_is_a_task_error_naming_it(
    executor: dict[str, object], message: str
) -> None:
    task = _executor_task(**executor)
    x = task["executor"]
    assert isinstance(x, dict)
    for key in [k for k, v in x.items() if v is None]:
        del x[key]
    with pytest.raises(wire.TaskInvalid, match=message):
        wire.task_info(task, 0)


def test_a_task_without_an_id_is_a_bad_call() -> None:
    with pytest.raises(wire.BadCall, match="task_id"):
        wire.task_info({"name": "t"}, 0)


def test_events_in_mesos_shapes() -> None:
    offers = spb.Event(
        offers=spb.Offers(
            offers=[
                pb.Offer(
                    id="o1",
                    framework_id="f1",
                    agent_id="a1",
                    hostname="h",
                    resources=pb.Resources(
                        cpus=1.9000000000000001, mem=512, ports=[pb.Range(begin=1, end=5)]
                    ),
                    attributes={"zone": "a", "slot": "3", "span": "[1-2,4-5]"},
                )
            ]
        )
    )
    (event,) = wire.events_json(offers, "web", {})
    (offer,) = event["offers"]["offers"]
    assert offer["id"] == {"value": "o1"} and offer["agent_id"] == {"value": "a1"}
    names = {r["name"]: r for r in offer["resources"]}
    assert set(names) == {"cpus", "mem", "ports"}  # no zero disk or gpus
    assert names["cpus"]["scalar"]["value"] == 1.9
    assert names["cpus"]["allocation_info"] == {"role": "web"}
    assert names["ports"]["ranges"]["range"] == [{"begin": 1, "end": 5}]
    attrs = {a["name"]: a for a in offer["attributes"]}
    assert attrs["zone"]["text"] == {"value": "a"}
    assert attrs["slot"]["scalar"] == {"value": 3.0}
    assert attrs["span"]["ranges"]["range"] == [{"begin": 1, "end": 2}, {"begin": 4, "end": 5}]

    update = spb.Event(
        update=spb.Update(
            statuses=[
                pb.TaskStatus(
                    task_id="t1",
                    state=pb.TASK_STATE_KILLED,
                    reason=pb.TASK_REASON_PREEMPTED,
                    source=pb.TASK_SOURCE_MASTER,
                    agent_id="a1",
                    uuid=b"\x01\x02",
                ),
                pb.TaskStatus(
                    task_id="t2", state=pb.TASK_STATE_FAILED, reason=pb.TASK_REASON_MEMORY_LIMIT
                ),
            ]
        )
    )
    first, second = wire.events_json(update, "web", {})
    s1 = first["update"]["status"]
    assert s1["state"] == "TASK_KILLED" and s1["reason"] == "REASON_CONTAINER_PREEMPTED"
    assert s1["source"] == "SOURCE_MASTER"
    assert base64.b64decode(s1["uuid"]) == b"\x01\x02"
    s2 = second["update"]["status"]
    assert s2["reason"] == "REASON_CONTAINER_LIMITATION_MEMORY" and "uuid" not in s2
    rescinds = wire.events_json(spb.Event(rescind=spb.Rescind(offer_ids=["o1", "o2"])), "r", {})
    assert [r["rescind"]["offer_id"]["value"] for r in rescinds] == ["o1", "o2"]


def test_every_corral_task_state_has_its_mesos_name() -> None:
    mesos_states = {
        "TASK_STAGING", "TASK_STARTING", "TASK_RUNNING", "TASK_KILLING", "TASK_FINISHED",
        "TASK_FAILED", "TASK_KILLED", "TASK_ERROR", "TASK_LOST", "TASK_DROPPED",
        "TASK_UNREACHABLE", "TASK_GONE", "TASK_UNKNOWN",
    }  # fmt: skip
    for value in pb.TaskState.values():
        if value != pb.TASK_STATE_UNSPECIFIED:
            assert wire.task_state_name(value) in mesos_states


def test_a_leaders_znode_names_its_mesos_api_for_mesos_clients_and_grpc_for_corrals() -> None:
    from corral.frameworks.sdk.detector import leader_info, master_info_json

    data = master_info_json("m1", "127.0.0.1:5050", "127.0.0.1:5080", "h", "0.1", "127.0.0.1:5051")
    info = json.loads(data)
    # What pymesos' detector reads: address.ip and address.port.
    assert (info["address"]["ip"], info["address"]["port"]) == ("127.0.0.1", 5051)
    assert info["pid"] == "master@127.0.0.1:5051"
    leader = leader_info(data)
    assert (leader.grpc, leader.http, leader.mesos) == (
        "127.0.0.1:5050",
        "127.0.0.1:5080",
        "127.0.0.1:5051",
    )
    without = json.loads(master_info_json("m1", "127.0.0.1:5050", "127.0.0.1:5080", "h", "0.1"))
    assert without["address"]["port"] == 5050 and "mesos" not in without["corral"]


def test_a_protobuf_call_reads_as_its_json_shape_and_maps_the_same() -> None:
    from corral.master.mesos_api import media
    from corral.v1 import mesos_pb2

    call = mesos_pb2.Call(type=mesos_pb2.Call.ACCEPT)
    call.framework_id.value = "f1"
    call.accept.offer_ids.add(value="o1")
    call.accept.filters.refuse_seconds = 30
    op = call.accept.operations.add(type=mesos_pb2.Offer.Operation.LAUNCH)
    task = op.launch.task_infos.add(name="t")
    task.task_id.value, task.agent_id.value = "t1", "a1"
    cpus = task.resources.add(name="cpus", type=mesos_pb2.Value.SCALAR)
    cpus.scalar.value = 0.5
    ports = task.resources.add(name="ports", type=mesos_pb2.Value.RANGES)
    ports.ranges.range.add(begin=8080, end=8081)
    task.command.value = "echo hi"
    task.kill_policy.grace_period.nanoseconds = 3_000_000_000
    as_json = media.decode_call(call.SerializeToString(), media.PROTOBUF)
    assert as_json["type"] == "ACCEPT" and as_json["framework_id"] == {"value": "f1"}
    accept = as_json["accept"]
    assert wire.offer_ids(accept, "accept") == ["o1"]
    assert wire.filters(accept, "accept").refuse_seconds == 30
    t = wire.task_info(accept["operations"][0]["launch"]["task_infos"][0], 0)
    assert t.command.shell and t.command.value == "echo hi"  # Mesos' default: shell
    assert [(p.begin, p.end) for p in t.resources.ports] == [(8080, 8081)]
    assert t.kill_grace_period_seconds == 3.0
    # A task with an executor reads the same whichever way it came.
    task.ClearField("command")
    task.executor.executor_id.value = "e1"
    task.executor.command.value = "run-executor"
    as_json = media.decode_call(call.SerializeToString(), media.PROTOBUF)
    t = wire.task_info(as_json["accept"]["operations"][0]["launch"]["task_infos"][0], 0)
    assert t.executor.executor_id == "e1" and t.command.value == "run-executor"
    with pytest.raises(wire.BadCall, match="not a mesos"):
        media.decode_call(b"\x0a\xff", media.PROTOBUF)


def test_events_encode_as_mesos_protobuf() -> None:
    from corral.master.mesos_api import media
    from corral.v1 import mesos_pb2

    update = spb.Event(
        update=spb.Update(
            statuses=[
                pb.TaskStatus(
                    task_id="t1",
                    state=pb.TASK_STATE_STAGING,
                    source=pb.TASK_SOURCE_AGENT,
                    agent_id="a1",
                    uuid=b"\x00\x01",
                    timestamp=12.5,
                )
            ]
        )
    )
    (event,) = wire.events_json(update, "r", {})
    decoded = mesos_pb2.Event.FromString(media.encode_event(event, media.PROTOBUF))
    assert decoded.type == mesos_pb2.Event.UPDATE
    status = decoded.update.status
    assert status.state == mesos_pb2.TASK_STAGING and status.uuid == b"\x00\x01"
    assert status.source == mesos_pb2.TaskStatus.SOURCE_AGENT and status.timestamp == 12.5
    offers = spb.Event(
        offers=spb.Offers(
            offers=[
                pb.Offer(
                    id="o1",
                    framework_id="f1",
                    agent_id="a1",
                    hostname="h",
                    resources=pb.Resources(cpus=2, ports=[pb.Range(begin=1, end=9)]),
                    attributes={"zone": "a"},
                )
            ]
        )
    )
    (event,) = wire.events_json(offers, "web", {})
    decoded = mesos_pb2.Event.FromString(media.encode_event(event, media.PROTOBUF))
    (offer,) = decoded.offers.offers
    assert offer.id.value == "o1" and offer.hostname == "h"
    assert [r.name for r in offer.resources] == ["cpus", "ports"]
    assert offer.resources[1].ranges.range[0].end == 9
    assert offer.attributes[0].text.value == "a" and offer.allocation_info.role == "web"
    assert media.stream_media("application/x-protobuf", media.JSON) == media.PROTOBUF
    assert media.stream_media("*/*", media.PROTOBUF) == media.PROTOBUF
    assert media.stream_media("", media.JSON) == media.JSON
    assert media.stream_media("text/html", media.JSON) is None


def test_a_framework_message_from_an_executor_is_a_mesos_message_event_both_media() -> None:
    from corral.master.mesos_api import media
    from corral.v1 import mesos_pb2

    event = spb.Event(
        message=pb.FrameworkMessage(framework_id="f1", agent_id="a1", executor_id="e1", data=b"hi")
    )
    (as_json,) = wire.events_json(event, "r", {})
    assert as_json == {
        "type": "MESSAGE",
        "message": {"agent_id": {"value": "a1"}, "executor_id": {"value": "e1"}, "data": "aGk="},
    }
    decoded = mesos_pb2.Event.FromString(media.encode_event(as_json, media.PROTOBUF))
    assert decoded.type == mesos_pb2.Event.MESSAGE and decoded.message.data == b"hi"
    assert decoded.message.executor_id.value == "e1"
    # And a scheduler's MESSAGE call in protobuf reads as its JSON shape.
    call = mesos_pb2.Call(type=mesos_pb2.Call.MESSAGE)
    call.framework_id.value = "f1"
    call.message.agent_id.value, call.message.executor_id.value = "a1", "e1"
    call.message.data = b"yo"
    body = media.decode_call(call.SerializeToString(), media.PROTOBUF)
    assert body["message"]["data"] == "eW8=" and body["message"]["agent_id"] == {"value": "a1"}


def test_agents_lost_and_an_executors_end_are_mesos_failure_events_both_media() -> None:
    from corral.master.mesos_api import media
    from corral.v1 import mesos_pb2

    lost = spb.Event(
        agents_lost=spb.AgentsLost(
            agents=[
                spb.AgentLost(agent_id="a1", reason=spb.AGENT_LOSS_REASON_UNREACHABLE),
                spb.AgentLost(agent_id="a2", reason=spb.AGENT_LOSS_REASON_REMOVED),
            ]
        )
    )
    assert wire.events_json(lost, "r", {}) == [
        {"type": "FAILURE", "failure": {"agent_id": {"value": "a1"}}},
        {"type": "FAILURE", "failure": {"agent_id": {"value": "a2"}}},
    ]
    ended = spb.Event(
        executor_terminated=pb.ExecutorTerminated(
            framework_id="f1", agent_id="a1", executor_id="e1", status=3 << 8, message="m"
        )
    )
    (as_json,) = wire.events_json(ended, "r", {})
    assert as_json == {
        "type": "FAILURE",
        "failure": {"agent_id": {"value": "a1"}, "executor_id": {"value": "e1"}, "status": 768},
    }
    decoded = mesos_pb2.Event.FromString(media.encode_event(as_json, media.PROTOBUF))
    assert decoded.type == mesos_pb2.Event.FAILURE
    assert decoded.failure.agent_id.value == "a1" and decoded.failure.executor_id.value == "e1"
    assert decoded.failure.status == 768
