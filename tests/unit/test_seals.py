"""master/security/seals.py: what a master checks without its registry. A seal checks under the key
that made it and no other, and binds every part it seals; the outbox stamps a launch's owner
over whatever the framework wrote; a report whose seal does not check names no owner."""

from __future__ import annotations

from corral.master.core import commands as cmd
from corral.master.core.types import FrameworkOwner, ReportedTask, Status, TaskSpec, TaskState
from corral.master.outbox import Outbox
from corral.master.security.seals import Seals, checked_owner
from corral.resources import parse_resources
from corral.v1 import common_pb2 as pb

KEY, OTHER_KEY = b"k" * 32, b"o" * 32


def test_a_framework_seal_binds_its_id_principal_and_role_under_its_key() -> None:
    seals = Seals(KEY)
    seal = seals.framework("F1", "team", "web")
    assert len(seal) == 16 and seals.framework_ok("F1", "team", "web", seal)
    for fid, principal, role in (
        ("F2", "team", "web"),
        ("F1", "other", "web"),
        ("F1", "team", "*"),
    ):
        assert not seals.framework_ok(fid, principal, role, seal)
    assert not Seals(OTHER_KEY).framework_ok("F1", "team", "web", seal)
    assert not seals.framework_ok("F1", "team", "web", b"")
    # Parts are separated: ("F1", "te", "amweb") is not ("F1", "team", "web").
    assert not seals.framework_ok("F1", "te", "amweb", seal)


def test_an_agent_secret_is_its_ids_and_principals_seal() -> None:
    seals = Seals(KEY)
    secret = seals.agent_secret("S1", "gpu-node-1")
    assert seals.agent_secret_ok("S1", "gpu-node-1", secret)
    assert not seals.agent_secret_ok("S1", "node-1", secret)
    assert not seals.agent_secret_ok("S2", "gpu-node-1", secret)
    assert not Seals(OTHER_KEY).agent_secret_ok("S1", "gpu-node-1", secret)
    assert not seals.agent_secret_ok("S1", "gpu-node-1", "é" + secret[1:])  # not ASCII: no


def _reported(owner: FrameworkOwner | None) -> ReportedTask:
    spec = TaskSpec(task_id="t1", name="t1", resources=parse_resources("cpus:1"))
    status = Status(task_id="t1", framework_id="F1", agent_id="S1", state=TaskState.RUNNING)
    return ReportedTask("F1", spec, status, owner)


def test_a_reported_owner_is_kept_only_with_its_seal() -> None:
    seals = Seals(KEY)
    owner = FrameworkOwner("team", "web")
    good = seals.framework("F1", "team", "web")
    assert checked_owner(seals, _reported(owner), good).owner == owner
    assert checked_owner(seals, _reported(owner), b"\0" * 16).owner is None
    forged = FrameworkOwner("batch", "web")  # an agent claiming the framework for another
    assert checked_owner(seals, _reported(forged), good).owner is None
    # Plain text has no principals and no key: what the agent says.
    assert checked_owner(None, _reported(owner), b"").owner == owner


def test_the_outbox_stamps_the_sealed_owner_over_what_the_framework_wrote() -> None:
    seals = Seals(KEY)
    wire = pb.TaskInfo(
        task_id="t1",
        framework_principal="batch",  # a framework's own claim, replaced
        framework_role="batch",
        framework_seal=b"x" * 16,
    )
    spec = TaskSpec(task_id="t1", name="t1", resources=parse_resources("cpus:1"), wire=wire)
    outbox = Outbox(seals=seals)
    launch = cmd.SendLaunch(
        stimulus_id="s",
        agent_id="S1",
        framework_id="F1",
        tasks=(spec,),
        principal="team",
        role="web",
    )
    outbox.add([launch])
    [message] = outbox.agent_msgs["S1"]
    [sent] = message.launch_tasks.tasks
    assert (sent.framework_principal, sent.framework_role) == ("team", "web")
    assert seals.framework_ok("F1", "team", "web", sent.framework_seal)
    # Plain text: the owner without a seal.
    outbox = Outbox()
    outbox.add([launch])
    [sent] = outbox.agent_msgs["S1"][0].launch_tasks.tasks
    assert (sent.framework_principal, sent.framework_seal) == ("team", b"")
