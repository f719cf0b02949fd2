"""What the ACLs gate in the core, where the answer depends on the core's state: the ACL
(``core.acl``, set by ``SetAcls`` when the file is (re)loaded) is data; the principal comes
with the event that asks (the shell read it from the peer's certificate), or is the one a
framework subscribed with. Each gate is a small function of its own, so that placement rules
(a registry of rules, one module each) can take tolerations and priority classes in.

Rules:
1. Identity, whatever the ACL: a framework's ``principal`` field, when set, is its
   certificate's; a framework id subscribed by one principal is not taken over by another,
   also when the master knows it only from its tasks' reports (a placeholder: the principal
   the agents report, sealed by the master, else nobody); and an agent id registered by one
   principal is not registered by another (its principal is in the registry). With no
   principal (a plain-text master) there is nothing to check.
2. A framework registers only in a role it is granted, with tolerations it is granted.
3. A demand or a task names only priority classes it is granted (the empty name, the global
   default, always: the operator chose it); a demand's tolerations are granted ones.
4. A principal's tasks together hold at most its cap (``max_resources``), counted over all its
   frameworks from the moment a task is accepted to the moment it ends (``PrincipalHeld``).
5. An agent registers only if granted, with a hostname its grant pins (if it pins any),
   claims only the attributes and reservations it is granted, and no more resources than its
   cap.
6. A service launching for a tenant names it in ``FrameworkInfo.on_behalf_of`` (the owner):
   the subscribing principal must be granted ``launch_for`` that owner (Kubernetes'
   impersonate), and from then on the framework is authorized as the OWNER (rules 2-4: its
   role, tolerations, classes, and the owner's cap, which its tasks count against), so the
   service can never grant more than the owner has. The owner stays with the framework id,
   as its principal does (rule 1).
7. ``review`` answers, without changing anything, whether a principal may register a
   framework, ask for demands (their classes, tolerations, and count x shape against its
   cap), act for another principal's objects in a service (``act_for``) or submit jobs to a
   job-service queue (``submit_to_queue``, the ``jobs.queues`` grant): the checks of rules
   2-4 and 6, and the job service's queue grant, for a service to ask before it takes a
   tenant's request. The ACL it answers with is the core's, so a reloaded file (or a standby
   that took over with its own) answers the next question.
8. A task in an image runs only an image its principal is granted (``frameworks.images``
   globs), uses the host's network only if granted ``host_network``, and mounts only host
   paths under a granted ``host_paths`` entry (docs/containers.md).
A refusal is ``Denied`` (PERMISSION_DENIED naming the rule) and changes nothing.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from corral import acl as acls
from corral.acl import Acl, Denial, Principal
from corral.containers import Network, host_paths
from corral.limits import echo
from corral.master.core.principal_held import PrincipalHeld
from corral.master.core.refusals import Denied, denied
from corral.master.core.types import AgentSpec, Demand, FrameworkSpec, TaskSpec
from corral.placement import Toleration
from corral.resources import SCALARS

if TYPE_CHECKING:
    from corral.master.core import commands as cmd
    from corral.master.core import events as ev
    from corral.master.core.records import AgentRecord, FrameworkRecord
    from corral.master.core.state import CoreState


def set_acls(core: CoreState, e: ev.SetAcls) -> list[cmd.Command]:
    """The ACL the core decides with from now on. What was granted before stays (a framework
    subscribed in a role, a task launched); each new call is checked."""
    core.acl = e.acl
    return [
        core.cluster_event(
            e, "acls_loaded", core.master_id, f"{e.acl.source}: version {e.acl.version}"
        )
    ]


def in_use(core: CoreState) -> list[tuple[Principal, str, str]]:
    """The principals in use and what each does, as an ACL decides it: connected agents
    registered, subscribed frameworks registered in their roles. A reload of the ACL that
    would lock a certificate role of them out is refused unless asked (corral.acl.lockouts)."""
    out: list[tuple[Principal, str, str]] = []
    for agent in core.agents.values():
        if agent.connection is not None and agent.peer.name:
            out.append((agent.peer, acls.REGISTER_AGENT, agent.spec.hostname))
    for fw in core.frameworks.values():
        if fw.connection is not None and fw.principal.name:
            out.append((fw.principal, acls.REGISTER_FRAMEWORK, fw.spec.role))
    return out


def _identity(p: Principal, message: str, acl: Acl) -> Denial:
    return Denial(acls.IDENTITY, "", "identity", f"{message} (principal {p}, ACL {acl.version})")


# --- rule 1: identity -------------------------------------------------------------------------


def framework_principal(acl: Acl, p: Principal, spec: FrameworkSpec) -> str:
    """The principal a framework subscribes as: its certificate's (rule 1). With no
    certificate (plain text), what the framework says, as before security."""
    if not p.name:
        return spec.principal
    if spec.principal and spec.principal != p.name:
        denied(
            _identity(
                p,
                f"the framework's principal field {echo(spec.principal)} is not its "
                f"certificate's {echo(p.name)}",
                acl,
            ),
            p.name,
        )
    return p.name


def framework_owner(acl: Acl, p: Principal, fw: FrameworkRecord, spec: FrameworkSpec) -> None:
    """A failover keeps the framework's principal (and name): an id alone takes over nothing."""
    for field_name in ("principal", "name", "owner"):
        mine, theirs = getattr(fw.spec, field_name), getattr(spec, field_name)
        if mine != theirs:
            denied(
                _identity(
                    p,
                    f"framework {fw.framework_id} is subscribed with {field_name} "
                    f"{echo(mine)}, not {echo(theirs)}: a failover must keep the {field_name}",
                    acl,
                ),
                p.name,
            )


def placeholder_owner(acl: Acl, p: Principal, fw: FrameworkRecord) -> None:
    """A framework known only from its tasks' reports is the principal's they name (rule 1):
    a master that forgot its registry must not give it to whoever subscribes first."""
    if not p.name:
        return
    fw_id = fw.framework_id
    if not fw.owner_reported:
        denied(
            _identity(
                p,
                f"framework {fw_id} is known only from its tasks on agents, and no report "
                "says (with this master's seal) which principal owns it: its id cannot be "
                "taken over; subscribe without an id",
                acl,
            ),
            p.name,
        )
    if fw.spec.principal != p.name:
        denied(
            _identity(
                p,
                f"framework {fw_id} belongs to principal {echo(fw.spec.principal)} (as its "
                "tasks' agents report it): an id alone takes over nothing",
                acl,
            ),
            p.name,
        )


def agent_identity(acl: Acl, e: ev.AgentRegister, needs_seal: bool) -> None:
    """An agent re-registering with its id: the principal its checkpoint says the id was issued
    to is its certificate's, and for an id the master does not know (``needs_seal``) the secret
    proves it was issued to this certificate (master/security/seals.py): an agent id and its
    principal
    belong together wherever the master learns them."""
    p, agent_id = e.principal, e.spec.agent_id
    if not p.name:
        return
    claimed = e.spec.principal
    if claimed and claimed != p.name:
        denied(
            _identity(
                p,
                f"agent id {echo(agent_id)} was issued to principal {echo(claimed)} (the "
                "agent's checkpoint says), not this certificate's; register without an id to "
                "join as a new agent",
                acl,
            ),
            p.name,
        )
    if needs_seal and not e.secret_sealed:
        denied(
            _identity(
                p,
                f"agent id {echo(agent_id)} is not known to this master, and its secret does "
                f"not prove it was issued to principal {echo(p.name)}; register without an id "
                "to join as a new agent (an id issued before secrets were sealed is taken in "
                "by a master started with --adopt-unknown-agents)",
                acl,
            ),
            p.name,
        )


def agent_owner(acl: Acl, p: Principal, known: AgentRecord | None, agent_id: str) -> None:
    """An agent id stays with the principal that registered it."""
    if not p.name or known is None or not known.spec.principal:
        return
    if known.spec.principal != p.name:
        denied(
            _identity(
                p,
                f"agent id {echo(agent_id)} belongs to principal {echo(known.spec.principal)}; "
                "register without an id to join as a new agent",
                acl,
            ),
            p.name,
        )


# --- rule 6: a service acting for its owner ---------------------------------------------------


def delegation_gate(acl: Acl, p: Principal, spec: FrameworkSpec) -> Principal:
    """Rule 6 at SUBSCRIBE: whom the framework is authorized as (``p`` itself, or the owner it
    may launch for)."""
    if not spec.owner:
        return p
    denied(acl.delegate(p, acls.LAUNCH_FOR, spec.owner), p.name)
    return Principal(spec.owner, frozenset(spec.owner_roles))


def acting(fw: FrameworkRecord) -> Principal:
    """Whom a framework's calls are authorized as (rule 6): its owner, or who subscribed it."""
    if fw.spec.owner:
        return Principal(fw.spec.owner, frozenset(fw.spec.owner_roles))
    return fw.principal


# --- rule 7: a review -------------------------------------------------------------------------


def review(
    acl: Acl,
    subject: Principal,
    spec: FrameworkSpec | None,
    demands: Iterable[Demand],
    act_for: str,
    held: PrincipalHeld,
    replaced: tuple[float, ...] = (0.0, 0.0, 0.0, 0.0),
    submit_to_queue: str = "",
) -> Denial | None:
    """Rule 7: None, or the first refusal. ``replaced``: what the framework being changed
    holds now (its tasks give way to the demands, so they are not counted twice)."""
    try:
        if submit_to_queue:
            denied(acl.decide(subject, acls.SUBMIT_JOB, submit_to_queue), subject.name)
        if act_for:
            denied(acl.delegate(subject, acls.ACT_FOR, act_for), subject.name)
        if spec is not None:
            framework_gate(acl, subject, spec)
        demands = list(demands)
        demands_gate(acl, subject, demands)
        if demands and not acl.allow_all and acl.grants(subject).capped:
            total = [h - r for h, r in zip(held.of(subject.name), replaced, strict=True)]
            for d in demands:
                for i, v in enumerate(d.resources.scalars()):
                    total[i] += d.count * v
            what = ", ".join(f"{n}:{v:g}" for n, v in zip(SCALARS, total, strict=True) if v)
            denied(
                acl.within_caps(subject, acls.LAUNCH, tuple(total), f"tasks holding {what}"),
                subject.name,
            )
    except Denied as exc:
        return exc.denial
    return None


# --- rules 2 and 3: roles, tolerations, priority classes ------------------------------------


def framework_gate(acl: Acl, p: Principal, spec: FrameworkSpec) -> None:
    """Rule 2."""
    denied(acl.decide(p, acls.REGISTER_FRAMEWORK, spec.role), p.name)
    tolerations_gate(acl, p, spec.tolerations)


def tolerations_gate(acl: Acl, p: Principal, tolerations: Iterable[Toleration]) -> None:
    """Each toleration is granted (rules 2 and 3): tolerating a taint is being let into the
    pool it keeps for others."""
    for t in tolerations:
        denied(acl.tolerate(p, t), p.name)


def priority_class_gate(acl: Acl, p: Principal, name: str) -> None:
    """Rule 3: naming a class is asking for its priority (and its power to preempt)."""
    if name:
        denied(acl.decide(p, acls.USE_PRIORITY_CLASS, name), p.name)


def container_gate(acl: Acl, p: Principal, t: TaskSpec) -> None:
    """Rule 8."""
    c = t.container
    if c is None:
        return
    denied(acl.decide(p, acls.USE_IMAGE, c.image), p.name)
    if c.network is Network.HOST:
        denied(acl.decide(p, acls.USE_HOST_NETWORK, t.task_id), p.name)
    for path in host_paths(c):
        denied(acl.decide(p, acls.MOUNT_HOST_PATH, path), p.name)


def demands_gate(acl: Acl, p: Principal, demands: Iterable[Demand]) -> None:
    if acl.allow_all:
        return
    for d in demands:
        priority_class_gate(acl, p, d.priority_class)
        tolerations_gate(acl, p, d.tolerations)


# --- rule 4: what a principal's tasks hold ----------------------------------------------------


def tasks_gate(acl: Acl, p: Principal, tasks: Iterable[TaskSpec], held: PrincipalHeld) -> None:
    """Rules 3 and 4 for an accept: the classes its tasks name, and the cap."""
    if acl.allow_all:
        return
    classes: set[str] = set()  # each class decided once per accept, not once per task
    for t in tasks:
        if t.priority_class and t.priority_class not in classes:
            priority_class_gate(acl, p, t.priority_class)
            classes.add(t.priority_class)
        if t.container is not None:
            container_gate(acl, p, t)
    if not acl.grants(p).capped:
        return
    total = list(held.of(p.name))
    for t in tasks:
        for i, v in enumerate(t.resources.scalars()):
            total[i] += v
    what = ", ".join(f"{n}:{v:g}" for n, v in zip(SCALARS, total, strict=True) if v)
    denied(acl.within_caps(p, acls.LAUNCH, tuple(total), f"tasks holding {what}"), p.name)


# --- rule 5: agents ---------------------------------------------------------------------------


def agent_gate(acl: Acl, p: Principal, spec: AgentSpec) -> None:
    if acl.allow_all:
        return
    denied(acl.decide(p, acls.REGISTER_AGENT, spec.hostname), p.name)
    denied(acl.claim_hostname(p, spec.hostname), p.name)
    for key, value in sorted(spec.attributes.items()):
        denied(acl.claim_attribute(p, key, value), p.name)
    for role in sorted(spec.reservations):
        denied(acl.decide(p, acls.RESERVE, role), p.name)
    denied(
        acl.within_caps(p, acls.CLAIM_RESOURCES, spec.resources.scalars(), spec.resources),
        p.name,
    )
