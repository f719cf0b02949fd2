"""Access control lists: who may do what, deny by default (docs/security.md, "ACLs").

One authorizer seam: ``Acl.decide(principal, action, object)`` answers allow, or deny with the
rule that refused (a cap), or none when no rule grants it. The master's shell asks it for what
needs no state (operator endpoints); the core asks it, with the ACL as data it was handed by an
event, for what depends on its state (a framework's role, the priority classes and tolerations
its demands and tasks name, what a principal's tasks hold against its cap, what an agent
claims). Principals come from verified client certificates only (``Principal``): a name (the
certificate's CN) and its certificate roles (its ``corral:ROLE`` organizations).

The document (YAML or JSON; the shell reads the file, this module checks the data)::

    version: "2024-06-01"          # optional label, shown in state beside a digest
    rules:
      - name: inference-team       # unique; refusals and state name it
        principals: [inference-*]  # names or globs; and/or
        cert_roles: [framework]    # certificate roles (both given: both must match)
        frameworks:                # register frameworks, and what their demands/tasks may use
          roles: [inference]
          priority_classes: [prod-inference]
          tolerations: ["gpu-sku=inference:NoSchedule"]
          max_resources: {gpus: 8}       # what its tasks hold at once, all its frameworks
        agents:                    # register agents (NodeRestriction)
          hostnames: ["{principal}.gpu.example.com"]   # globs; none given: any hostname
          attributes: {gpu-sku: [inference]}
          reservations: [inference]
          max_resources: "cpus:64;mem:262144;gpus:8"   # the most one agent may claim; a
                                                       # resource not named: none (disk here)
        operator: [read, SetWeight]    # operator endpoints; read, write, logs, * for groups
        jobs:                      # the job service (docs/jobs.md)
          queues: [team-a]         # local queues it may submit jobs to
        act_for: [web-*]           # read and change these principals' objects in services
        launch_for: [web-*]        # a service: launch for these owners, with their grants

Grants of several matching rules add up; a cap is the largest among the matching rules that
grant the section (one without ``max_resources`` grants no cap). A frameworks cap leaves a
resource it does not name uncapped; an agents cap refuses it (0): NodeRestriction denies by
default. ``"*"`` in a list grants all.
"""

from __future__ import annotations

import fnmatch
import hashlib
import json
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from corral.acl_rules import ANY as ANY
from corral.acl_rules import CERT_ROLES, Rule, TolerationGrant, parse_rule
from corral.acl_rules import AclError as AclError
from corral.placement import Toleration
from corral.resources import SCALARS, covers

# --- actions: the verbs of (principal, action, object) --------------------------------------
REGISTER_FRAMEWORK: Final = "register_framework"  # object: the framework's role
USE_PRIORITY_CLASS: Final = "use_priority_class"  # object: the class's name
TOLERATE: Final = "tolerate"  # object: the toleration, as written
LAUNCH: Final = "launch"  # object: what the principal's tasks would hold
REGISTER_AGENT: Final = "register_agent"  # object: the agent's hostname
CLAIM_ATTRIBUTE: Final = "claim_attribute"  # object: key=value
RESERVE: Final = "reserve"  # object: the role reserved for
CLAIM_RESOURCES: Final = "claim_resources"  # object: the agent's resources
CLAIM_HOSTNAME: Final = "claim_hostname"  # object: the hostname an agent registers with
CALL: Final = "call"  # object: an operator endpoint (an Operator RPC's name)
SUBMIT_JOB: Final = "submit_job"  # object: a job service queue (docs/jobs.md)
ACT_FOR: Final = "act_for"  # object: the owner of an object in a service ("*": no owner)
LAUNCH_FOR: Final = "launch_for"  # object: the owner a service launches for
USE_IMAGE: Final = "use_image"  # object: a container image, as the task names it
USE_HOST_NETWORK: Final = "use_host_network"  # object: the task's id
MOUNT_HOST_PATH: Final = "mount_host_path"  # object: the host path a container mounts
# Identity, not grants: a framework's principal field, a framework or agent id bound to
# another principal. Refused whatever the ACL says.
IDENTITY: Final = "identity"
ACTIONS: Final = (
    REGISTER_FRAMEWORK,
    USE_PRIORITY_CLASS,
    TOLERATE,
    LAUNCH,
    REGISTER_AGENT,
    CLAIM_ATTRIBUTE,
    RESERVE,
    CLAIM_RESOURCES,
    CALL,
    SUBMIT_JOB,
    ACT_FOR,
    LAUNCH_FOR,
    USE_IMAGE,
    USE_HOST_NETWORK,
    MOUNT_HOST_PATH,
    IDENTITY,
)

# How a refusal reads: "principal P may not <phrase>: ...".
PHRASES: Final = {
    REGISTER_FRAMEWORK: "register a framework in role {}",
    USE_PRIORITY_CLASS: "use priority class {}",
    TOLERATE: "tolerate {}",
    LAUNCH: "launch {}",
    REGISTER_AGENT: "register agent {}",
    CLAIM_ATTRIBUTE: "claim attribute {}",
    RESERVE: "reserve resources for role {}",
    CLAIM_RESOURCES: "claim {}",
    CLAIM_HOSTNAME: "register an agent with hostname {}",
    CALL: "call {}",
    SUBMIT_JOB: "submit jobs to queue {}",
    ACT_FOR: "act for {}",
    LAUNCH_FOR: "launch for {}",
    USE_IMAGE: "run image {}",
    USE_HOST_NETWORK: "give task {} the host's network",
    MOUNT_HOST_PATH: "mount host path {} into a container",
}

# Operator endpoint groups an ACL may name instead of each endpoint (the master's endpoint
# table, master/security/endpoints.py, says which group each endpoint is in).
READ: Final = "read"
WRITE: Final = "write"
# Tasks' sandbox files (`corral logs`): what a task prints may be a secret it was given, so
# reading the state does not grant it (Kubernetes' pods/log, Mesos' access_sandboxes). A
# framework's principal reads its own tasks' files without it (master/security/endpoints.py,
# OWNER_MAY).
LOGS: Final = "logs"


@dataclass(frozen=True, slots=True)
class Principal:
    """Who calls: a certificate's common name and its certificate roles."""

    name: str
    roles: frozenset[str] = frozenset()

    def __str__(self) -> str:
        return self.name or "(anonymous)"


ANONYMOUS: Final = Principal("")  # a plain-text master's callers (--insecure): no identity


@dataclass(frozen=True, slots=True)
class Denial:
    """Why a call is refused: the action and object, the rule that refused it ("" when no rule
    grants it: deny by default) and a message that says all of it."""

    action: str
    object: str
    rule: str
    message: str


# --- what a principal is granted ------------------------------------------------------------


def _merge_caps(
    current: tuple[float, ...] | None, rule_caps: tuple[float, ...] | None
) -> tuple[float, ...]:
    grant = rule_caps if rule_caps is not None else (math.inf,) * len(SCALARS)
    if current is None:
        return grant
    return tuple(max(a, b) for a, b in zip(current, grant, strict=True))


@dataclass(slots=True)
class Grants:
    """Everything the matching rules grant one principal, with the rules for the messages."""

    rules: tuple[str, ...] = ()
    framework_roles: set[str] = field(default_factory=set)
    priority_classes: set[str] = field(default_factory=set)
    tolerations: list[TolerationGrant] = field(default_factory=list)
    framework_caps: tuple[float, ...] | None = None  # None: no rule grants frameworks
    cap_rules: tuple[str, ...] = ()  # the rules whose caps bound it
    agent: bool = False
    attributes: dict[str, set[str]] = field(default_factory=dict)
    reservations: set[str] = field(default_factory=set)
    agent_caps: tuple[float, ...] | None = None
    agent_cap_rules: tuple[str, ...] = ()
    # Globs an agent's hostname must match (``{principal}`` substituted); None: any hostname
    # (some matching rule grants agents without pinning hostnames).
    agent_hostnames: tuple[str, ...] | None = ()
    endpoints: set[str] = field(default_factory=set)
    job_queues: set[str] = field(default_factory=set)
    act_for: set[str] = field(default_factory=set)
    launch_for: set[str] = field(default_factory=set)
    images: set[str] = field(default_factory=set)
    host_network: bool = False
    host_paths: set[str] = field(default_factory=set)

    @property
    def capped(self) -> bool:
        """Whether any resource of its tasks is capped (the accept's check costs nothing else)."""
        return self.framework_caps is not None and any(c != math.inf for c in self.framework_caps)


def _grants(rules: Sequence[Rule], p: Principal) -> Grants:
    g = Grants()
    matched = [r for r in rules if r.matches(p.name, p.roles)]
    g.rules = tuple(r.name for r in matched)
    for r in matched:
        if r.frameworks is not None:
            f = r.frameworks
            g.framework_roles.update(f.roles)
            g.priority_classes.update(f.priority_classes)
            g.tolerations.extend(f.tolerations)
            g.images.update(f.images)
            g.host_network = g.host_network or f.host_network
            g.host_paths.update(f.host_paths)
            g.framework_caps = _merge_caps(g.framework_caps, f.caps)
            if f.caps is not None:
                g.cap_rules = (*g.cap_rules, r.name)
        if r.agents is not None:
            a = r.agents
            g.agent = True
            for key, values in a.attributes:
                g.attributes.setdefault(key, set()).update(values)
            g.reservations.update(a.reservations)
            g.agent_caps = _merge_caps(g.agent_caps, a.caps)
            if a.caps is not None:
                g.agent_cap_rules = (*g.agent_cap_rules, r.name)
            if a.hostnames is None or g.agent_hostnames is None:
                g.agent_hostnames = None
            else:
                pinned = tuple(h.replace("{principal}", p.name) for h in a.hostnames)
                g.agent_hostnames = (*g.agent_hostnames, *pinned)
        g.endpoints.update(r.operator)
        g.job_queues.update(r.job_queues)
        g.act_for.update(r.act_for)
        g.launch_for.update(r.launch_for)
    return g


def _granted(values: Iterable[str], item: str) -> bool:
    return any(v in (ANY, item) for v in values)


def _image_granted(globs: Iterable[str], image: str) -> bool:
    """An image name against ``frameworks.images`` globs (``registry.example.com/team/*``)."""
    return any(g == ANY or fnmatch.fnmatchcase(image, g) for g in globs)


def _path_granted(granted: Iterable[str], path: str) -> bool:
    """A host path is granted by itself or a folder above it (``/data`` grants ``/data/x``,
    never ``/database``). Paths come normalized (no ``..``: master/wire/convert_container.py)."""
    for g in granted:
        if g == ANY:
            return True
        top = g.rstrip("/") or "/"
        if path == top or path.startswith(top if top == "/" else top + "/"):
            return True
    return False


# --- the ACL ----------------------------------------------------------------------------------


class Acl:
    """An immutable ACL: its rules, a version to show, and one cached ``Grants`` per
    principal (the cache is a memo of pure functions of the rules)."""

    def __init__(
        self,
        rules: Sequence[Rule],
        version: str,
        digest: str,
        source: str,
        *,
        allow_all: bool = False,
        revoked: frozenset[str] = frozenset(),
    ) -> None:
        self.rules = tuple(rules)
        # Certificate roles this ACL means to grant nothing (``revoke_cert_roles``): a reload
        # may lock their clients in use out (``lockouts``).
        self.revoked = revoked
        self.version = version
        self.digest = digest
        self.source = source
        self.allow_all = allow_all  # a plain-text master: no principals, nothing to check
        self._grants: dict[Principal, Grants] = {}

    def describe(self) -> dict[str, Any]:
        """What state shows: where the ACL came from, its version and digest, its rules."""
        return {
            "source": self.source,
            "version": self.version,
            "digest": self.digest,
            "rules": [r.name for r in self.rules],
        }

    def grants(self, p: Principal) -> Grants:
        g = self._grants.get(p)
        if g is None:
            if len(self._grants) > 10_000:
                self._grants.clear()  # bounded: principals come and go
            g = self._grants[p] = _grants(self.rules, p)
        return g

    def _deny(self, p: Principal, action: str, obj: str, rule: str, why: str) -> Denial:
        by = f"rule {rule!r}" if rule else "no rule grants it (deny by default)"
        what = PHRASES[action].format(obj)
        return Denial(
            action, obj, rule, f"principal {p} may not {what}: {why}{by} (ACL {self.version})"
        )

    def decide(self, p: Principal, action: str, obj: str) -> Denial | None:
        """None (allowed), or why not. For the actions whose object is a name: register a
        framework in a role, use a priority class, reserve for a role, register an agent
        (``call``: an operator endpoint)."""
        if self.allow_all:
            return None
        g = self.grants(p)
        if action == REGISTER_FRAMEWORK:
            ok = _granted(g.framework_roles, obj)
        elif action == USE_PRIORITY_CLASS:
            ok = _granted(g.priority_classes, obj)
        elif action == RESERVE:
            ok = g.agent and _granted(g.reservations, obj)
        elif action == REGISTER_AGENT:
            ok = g.agent
        elif action == SUBMIT_JOB:
            ok = _granted(g.job_queues, obj)
        elif action == USE_IMAGE:
            ok = _image_granted(g.images, obj)
        elif action == USE_HOST_NETWORK:
            ok = g.host_network
        elif action == MOUNT_HOST_PATH:
            ok = _path_granted(g.host_paths, obj)
        else:
            raise ValueError(f"decide() does not take action {action!r}; see its docstring")
        return None if ok else self._deny(p, action, obj, "", "")

    def call(self, p: Principal, endpoint: str, group: str) -> Denial | None:
        """May ``p`` call operator ``endpoint`` (an Operator RPC's name; ``group``: read,
        write or logs, which an ACL may grant whole)?"""
        if self.allow_all:
            return None
        g = self.grants(p)
        if _granted(g.endpoints, endpoint) or group in g.endpoints:
            return None
        return self._deny(p, CALL, endpoint, "", "")

    def unlisted(self, p: Principal, endpoint: str) -> Denial | None:
        """An endpoint the master's table does not list: refused to everyone (a plain-text
        master has no principals and refuses nothing)."""
        if self.allow_all:
            return None
        return self._deny(p, CALL, endpoint, "", "the master's endpoint table does not list it; ")

    def claim_hostname(self, p: Principal, hostname: str) -> Denial | None:
        """May an agent of ``p`` register with ``hostname`` (NodeRestriction: a rule's
        ``agents.hostnames`` pins them, as its ``attributes`` pin labels)?"""
        if self.allow_all:
            return None
        pinned = self.grants(p).agent_hostnames
        if pinned is None or any(fnmatch.fnmatchcase(hostname, h) for h in pinned):
            return None
        return self._deny(p, CLAIM_HOSTNAME, hostname, "", "")

    def delegate(self, p: Principal, action: str, owner: str) -> Denial | None:
        """May ``p`` act for (``ACT_FOR``) or launch for (``LAUNCH_FOR``) ``owner``? A glob
        grants the names it matches; only ``"*"`` grants ``"*"`` (the objects of no owner)."""
        if self.allow_all:
            return None
        g = self.grants(p)
        globs = g.act_for if action == ACT_FOR else g.launch_for
        if owner == ANY:
            ok = ANY in globs
        else:
            ok = any(fnmatch.fnmatchcase(owner, glob) for glob in globs)
        return None if ok else self._deny(p, action, owner, "", "")

    def tolerate(self, p: Principal, t: Toleration) -> Denial | None:
        if self.allow_all:
            return None
        if any(grant.covers(t) for grant in self.grants(p).tolerations):
            return None
        return self._deny(p, TOLERATE, str(t), "", "")

    def claim_attribute(self, p: Principal, key: str, value: str) -> Denial | None:
        if self.allow_all:
            return None
        g = self.grants(p)
        values = g.attributes.get(key, set()) | g.attributes.get(ANY, set())
        if _granted(values, value):
            return None
        return self._deny(p, CLAIM_ATTRIBUTE, f"{key}={value}", "", "")

    def within_caps(
        self,
        p: Principal,
        action: str,
        total: tuple[float, ...],
        what: object,
    ) -> Denial | None:
        """``total`` (SCALARS order) against the principal's framework caps (``LAUNCH``: what
        its tasks would hold) or agent caps (``CLAIM_RESOURCES``: what one agent claims).
        ``str(what)`` names it in a denial, made only then (an agent's resources as text were
        1 % of a master registering 50,000 agents)."""
        if self.allow_all:
            return None
        g = self.grants(p)
        caps, rules = (
            (g.framework_caps, g.cap_rules)
            if action == LAUNCH
            else (g.agent_caps, g.agent_cap_rules)
        )
        if caps is None:
            return None  # the section is not granted at all: refused by decide() first
        for name, have, cap in zip(SCALARS, total, caps, strict=True):
            if not covers(cap, have):
                rule = rules[0] if len(rules) == 1 else ", ".join(rules)
                why = f"{name} {have:g} would exceed the cap of {cap:g}"
                if cap == 0 and action == CLAIM_RESOURCES:
                    why += f" (agents.max_resources names no {name}: none may be claimed)"
                return self._deny(p, action, str(what), rule, why + ": ")
        return None


def _digest(data: Any) -> str:
    text = json.dumps(data, sort_keys=True, default=str).encode()
    return "sha256:" + hashlib.sha256(text).hexdigest()[:12]


def acl_from_data(data: Any, source: str) -> Acl:
    """An ACL from a decoded document (the module's docstring); AclError naming what is wrong."""
    if not isinstance(data, Mapping):
        raise AclError("the ACL must be a mapping with a 'rules' list")
    unknown = sorted(set(data) - {"version", "rules", "revoke_cert_roles"})
    if unknown:
        raise AclError(
            f"unknown top-level field {unknown[0]!r} (fields: revoke_cert_roles, rules, version)"
        )
    rules_data = data.get("rules")
    if not isinstance(rules_data, list):
        raise AclError("'rules' must be a list (an empty list denies everything)")
    rules = [parse_rule(r, i) for i, r in enumerate(rules_data)]
    names = [r.name for r in rules]
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise AclError(f"rule name {twice[0]!r} is used twice")
    version = data.get("version", "")
    if not isinstance(version, str | int) or isinstance(version, bool):
        raise AclError(f"version must be a string or a number, got {version!r}")
    revoked = _revoked(data.get("revoke_cert_roles", []), rules)
    digest = _digest(data)
    return Acl(rules, str(version) or digest, digest, source, revoked=revoked)


def _revoked(value: Any, rules: Sequence[Rule]) -> frozenset[str]:
    """``revoke_cert_roles``: the certificate roles the document means to grant nothing. A
    rule that grants one contradicts it; so a half-written copy of a document that grants a
    role can never carry the field for it (lockouts())."""
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise AclError("revoke_cert_roles must be a list of certificate roles")
    for role in value:
        if role not in CERT_ROLES:
            raise AclError(
                f"revoke_cert_roles: unknown certificate role {role!r} "
                f"(one of {', '.join(CERT_ROLES)})"
            )
        granting = [r.name for r in rules if r.grants_cert_role(role)]
        if granting:
            raise AclError(
                f"revoke_cert_roles names {role!r}, but rule {granting[0]!r} grants it: "
                "drop one or the other"
            )
    return frozenset(value)


def lockouts(
    old: Acl, new: Acl, in_use: Iterable[tuple[Principal, str, str]]
) -> list[tuple[str, str]]:
    """The certificate roles in use that ``new`` would lock out: some principal of the role in
    use (``in_use``: each with the action it does, REGISTER_AGENT or REGISTER_FRAMEWORK, and
    its object) is allowed it by ``old``, and none by ``new``, and ``new`` does not name the
    role in ``revoke_cert_roles``. A half-written ACL file that still parses looks like this:
    its end, the rules for the agents, say, is missing. One (role, why) per role."""
    by_role: dict[str, list[tuple[Principal, str, str]]] = {}
    for item in in_use:
        for role in item[0].roles:
            by_role.setdefault(role, []).append(item)
    out = []
    for role, items in sorted(by_role.items()):
        if role in new.revoked:
            continue
        if any(old.decide(*i) is None for i in items) and all(new.decide(*i) for i in items):
            names = sorted({p.name for p, _, _ in items})
            shown = ", ".join(names[:5]) + (f" and {len(names) - 5} more" if len(names) > 5 else "")
            why = (
                f"it grants certificate role {role!r} nothing its {len(names)} principals in "
                f"use ({shown}) do"
            )
            out.append((role, why))
    return out


# What a master given no --acls grants: each certificate role what its kind of client does,
# operators everything (as k3s' admin credential is cluster-admin). One tenant per CA; write an
# ACL file to tell tenants apart.
BUILTIN: Final = {
    "version": "builtin",
    "rules": [
        {
            "name": "builtin-operators",
            "cert_roles": ["operator"],
            "frameworks": {
                "roles": [ANY],
                "priority_classes": [ANY],
                "tolerations": [ANY],
                "images": [ANY],
                "host_network": True,
                "host_paths": [ANY],
            },
            "agents": {"attributes": {ANY: [ANY]}, "reservations": [ANY]},
            "operator": [ANY],
            "jobs": {"queues": [ANY]},
            "act_for": [ANY],
            "launch_for": [ANY],
        },
        {
            "name": "builtin-frameworks",
            "cert_roles": ["framework"],
            "frameworks": {
                "roles": [ANY],
                "priority_classes": [ANY],
                "tolerations": [ANY],
                "images": [ANY],
                "host_network": True,
                "host_paths": [ANY],
            },
            # A service (the autoscaler, the job service) shows its status in the web UI.
            "operator": [READ, "PublishStatus"],
            "jobs": {"queues": [ANY]},
            # A framework may be a service launching for its callers (the serving service),
            # who may use anything here anyway.
            "launch_for": [ANY],
        },
        {
            "name": "builtin-agents",
            "cert_roles": ["agent"],
            "agents": {"attributes": {ANY: [ANY]}, "reservations": [ANY]},
        },
    ],
}


def builtin() -> Acl:
    acl = acl_from_data(BUILTIN, "builtin (no --acls)")
    return acl


def allow_all() -> Acl:
    """A plain-text master's: no principals, so nothing can be told apart or refused."""
    return Acl((), "none (--insecure)", "", "--insecure", allow_all=True)
