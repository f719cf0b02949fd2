"""The autoscaler's decisions, sans-IO and deterministic (time and the random expander's seed
come in): given the nodes it made, what the master says of the cluster and its what-if answer
(``Operator.Simulate``, master/core/simulation.py), what to create, drain and delete, and the
events that explain it. The service (service.py) does the IO; this module never places a task
itself: every "would it fit" is the master's answer.

Rules (docs/autoscaler.md has them for operators):
1. **Nodes** are the autoscaler's records: ``creating`` (asked of the provider, not registered
   yet: *upcoming*), ``ready`` (registered with the master under its name), ``draining``
   (Operator.Drain asked), then deleted. A node that does not register within
   ``max-node-provision-time`` is deleted and its group backs off (``initial-node-group-
   backoff-duration``, doubling to ``max-node-group-backoff-duration``); a registration ends
   the backoff.
2. **Scale up.** The master's unschedulable demands (rule 1 of simulation.py) ask for nodes
   once pending for ``new-pod-scale-up-delay``. While any node is upcoming nothing more is
   asked (they may be what the demands wait for: no double scale-up, also across a restart,
   since upcoming nodes are records). The options are the master's per group (groups backed
   off or at max offer none); the expander picks one and the group grows by the option's
   nodes, at most ``max-nodes-total`` in all. Each demand it places gets ``TriggeredScaleUp``;
   each unschedulable demand no option places gets ``NotTriggerScaleUp`` naming, per group,
   why (the master's reasons, "group at max", "backed off", "below the priority cutoff").
3. **Scale down.** A ready node whose agent the master finds removable (below
   ``scale-down-utilization-threshold``, its tasks fit elsewhere, no gang member) for
   ``scale-down-unneeded-time`` is drained, unless its group is at ``min``, a scale-up
   happened within ``scale-down-delay-after-add``, a scale-up is under way this scan, or
   ``max-scale-down-parallelism`` nodes drain already. Others get ``Unremovable`` with the
   master's reason. A draining node is deleted once its agent holds no task (or after
   ``drain-grace-seconds`` more): ``ScaleDown``.
4. Events repeat only when their message changes for their subject.
"""

from __future__ import annotations

import math
import random
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from corral.autoscaler import expanders
from corral.autoscaler.config import Config, NodeGroup

CREATING = "creating"
READY = "ready"
DRAINING = "draining"


@dataclass(slots=True)
class Node:
    name: str
    group: str
    phase: str
    created_at: float
    handle: str = ""  # the provider's id for it (a process: its pid)
    agent_id: str = ""
    registered_at: float | None = None
    drain_started_at: float | None = None

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @staticmethod
    def from_json(doc: Mapping[str, Any]) -> Node:
        return Node(**dict(doc))


@dataclass(slots=True)
class GroupState:
    name: str
    next_seq: int = 1
    failures: int = 0
    backoff_until: float = -math.inf
    last_scale_up_at: float = -math.inf

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "next_seq": self.next_seq,
            "failures": self.failures,
            # JSON has no infinity: null stands for "never".
            "backoff_until": None if math.isinf(self.backoff_until) else self.backoff_until,
            "last_scale_up_at": None
            if math.isinf(self.last_scale_up_at)
            else self.last_scale_up_at,
        }

    @staticmethod
    def from_json(doc: Mapping[str, Any]) -> GroupState:
        return GroupState(
            str(doc["name"]),
            int(doc.get("next_seq", 1)),
            int(doc.get("failures", 0)),
            -math.inf if doc.get("backoff_until") is None else float(doc["backoff_until"]),
            -math.inf if doc.get("last_scale_up_at") is None else float(doc["last_scale_up_at"]),
        )


@dataclass(frozen=True, slots=True)
class AgentSeen:
    """An agent as the master's state shows it."""

    agent_id: str
    name: str
    connected: bool
    tasks: int
    maintenance: str = ""


@dataclass(frozen=True, slots=True)
class Event:
    reason: str  # TriggeredScaleUp, NotTriggerScaleUp, ScaleDown, ScaleDownFailed, ...
    subject: str  # a demand (FRAMEWORK/NAME), a node or a group
    message: str
    at: float

    def to_json(self) -> dict[str, Any]:
        return {
            "reason": self.reason,
            "subject": self.subject,
            "message": self.message,
            "at": self.at,
        }


@dataclass(slots=True)
class Plan:
    """What one evaluation decided; the service carries it out in this order."""

    registered: list[Node] = field(default_factory=list)  # creating -> ready
    timed_out: list[Node] = field(default_factory=list)  # delete, the group backs off
    create: list[Node] = field(default_factory=list)  # new records, then the provider
    drain: list[Node] = field(default_factory=list)
    delete: list[Node] = field(default_factory=list)  # drained: the provider, then the master
    events: list[Event] = field(default_factory=list)
    groups_changed: set[str] = field(default_factory=set)


class Policy:
    def __init__(self, config: Config, seed: int = 0) -> None:
        self.config = config
        self.rng = random.Random(seed)
        self.nodes: dict[str, Node] = {}
        self.groups: dict[str, GroupState] = {g.name: GroupState(g.name) for g in config.groups}
        # Not durable: after a restart a delay starts again, which only waits longer.
        self.pending_since: dict[str, float] = {}
        self.unneeded_since: dict[str, float] = {}
        self.last_message: dict[tuple[str, str], str] = {}

    # --- what the service keeps -----------------------------------------------------------

    def restore(self, nodes: Sequence[Node], groups: Sequence[GroupState]) -> None:
        self.nodes = {n.name: n for n in nodes}
        for g in groups:
            if g.name in self.groups:
                self.groups[g.name] = g

    def of_group(self, name: str) -> list[Node]:
        return sorted((n for n in self.nodes.values() if n.group == name), key=lambda n: n.name)

    def upcoming(self) -> list[Node]:
        return [n for n in self.nodes.values() if n.phase == CREATING]

    # --- rule 1 ---------------------------------------------------------------------------

    def registrations(self, agents: Sequence[AgentSeen], now: float, plan: Plan) -> None:
        by_name = {a.name: a for a in agents if a.name}
        opts = self.config.options
        for node in sorted(self.upcoming(), key=lambda n: n.name):
            seen = by_name.get(node.name)
            g = self.groups[node.group]
            if seen is not None and seen.connected:
                node.phase, node.agent_id, node.registered_at = READY, seen.agent_id, now
                plan.registered.append(node)
                if g.failures or not math.isinf(g.backoff_until):
                    g.failures, g.backoff_until = 0, -math.inf
                plan.groups_changed.add(g.name)
            elif now - node.created_at >= opts.max_node_provision_time:
                plan.timed_out.append(node)
                del self.nodes[node.name]
                g.failures += 1
                back = min(
                    opts.initial_node_group_backoff_duration * 2 ** (g.failures - 1),
                    opts.max_node_group_backoff_duration,
                )
                g.backoff_until = now + back
                plan.groups_changed.add(g.name)
                self._event(
                    plan,
                    "ScaleUpTimedOut",
                    node.name,
                    f"node {node.name} of group {node.group} did not register within "
                    f"{opts.max_node_provision_time:g} s: deleted; group backs off {back:g} s",
                    now,
                    always=True,
                )

    # --- the what-if question -------------------------------------------------------------

    def simulate_request(self) -> dict[str, Any]:
        """The request's fields (service.py makes the message): each group's template and how
        many more nodes it may have; the ready nodes the master may judge for removal."""
        opts = self.config.options
        total = len(self.nodes)
        room_total = opts.max_nodes_total - total if opts.max_nodes_total else None
        groups = []
        for g in self.config.groups:
            room = max(0, g.max - len(self.of_group(g.name)))
            if room_total is not None:
                room = max(0, min(room, room_total))
            groups.append({"group": g, "max_new": room})
        remove = sorted(n.agent_id for n in self.nodes.values() if n.phase == READY and n.agent_id)
        return {
            "groups": groups,
            "remove": remove,
            "priority_cutoff": opts.expendable_pods_priority_cutoff,
            "utilization_threshold": opts.scale_down_utilization_threshold,
        }

    # --- rules 2 and 3 --------------------------------------------------------------------

    def evaluate(self, answer: Mapping[str, Any], agents: Sequence[AgentSeen], now: float) -> Plan:
        plan = Plan()
        self.registrations(agents, now, plan)
        scaling_up = self._scale_up(answer, now, plan)
        self._scale_down(answer, agents, now, plan, scaling_up)
        return plan

    def _scale_up(self, answer: Mapping[str, Any], now: float, plan: Plan) -> bool:
        opts = self.config.options
        wanting: list[dict[str, Any]] = []
        keys_now: set[str] = set()
        for p in answer.get("pending", []):
            key = f"{p['framework_id']}/{p['demand']}"
            if p.get("schedulable"):
                self.pending_since.pop(key, None)
                continue
            keys_now.add(key)
            since = self.pending_since.setdefault(key, now)
            if p.get("expendable"):
                self._event(
                    plan,
                    "NotTriggerScaleUp",
                    key,
                    f"priority {p['priority']} is below the priority cutoff "
                    f"{opts.expendable_pods_priority_cutoff}",
                    now,
                )
                continue
            if now - since < opts.new_pod_scale_up_delay:
                continue
            wanting.append(p)
        for key in list(self.pending_since):
            if key not in keys_now:
                del self.pending_since[key]
                self.last_message.pop(("NotTriggerScaleUp", key), None)
        if not wanting:
            return False
        upcoming = self.upcoming()
        if upcoming:
            names = ", ".join(sorted(n.name for n in upcoming))
            for p in wanting:
                key = f"{p['framework_id']}/{p['demand']}"
                self._event(
                    plan, "NotTriggerScaleUp", key, f"waiting for upcoming nodes: {names}", now
                )
            return True
        wanted = {(p["framework_id"], p["demand"]) for p in wanting}
        backed_off = {name for name, g in self.groups.items() if g.backoff_until > now}
        options = [
            o
            for o in answer.get("options", [])
            if o["group"] not in backed_off
            and any((d["framework_id"], d["demand"]) in wanted for d in o["demands"])
        ]
        chosen = (
            expanders.choose(self.config.options.expander, options, self.config, self.rng)
            if options
            else None
        )
        placed: set[tuple[str, str]] = set()
        if chosen is not None:
            group = self.config.group(chosen["group"])
            assert group is not None
            made = self._create(group, int(chosen["nodes"]), now, plan)
            by_key = {(p["framework_id"], p["demand"]): p for p in wanting}
            for d in chosen["demands"]:
                placed.add((d["framework_id"], d["demand"]))
                not_placed = by_key.get((d["framework_id"], d["demand"]), {}).get("not_placed")
                others = "; ".join(f"{g}: {r}" for g, r in sorted((not_placed or {}).items()))
                self._event(
                    plan,
                    "TriggeredScaleUp",
                    f"{d['framework_id']}/{d['demand']}",
                    f"group {group.name}: +{len(made)} node{'s' if len(made) != 1 else ''} "
                    f"({', '.join(n.name for n in made)}) for {d['tasks']} task"
                    f"{'s' if d['tasks'] != 1 else ''} (expander {self.config.options.expander})"
                    + (f"; not {others}" if others else ""),
                    now,
                    always=True,
                )
        for p in wanting:
            pair = (p["framework_id"], p["demand"])
            if pair in placed:
                continue
            why = dict(p.get("not_placed", {}))
            for name in backed_off:
                why[name] = "backed off after a node failed to register"
            for o in answer.get("options", []):
                if o["group"] not in why and any(
                    (d["framework_id"], d["demand"]) == pair for d in o["demands"]
                ):
                    why[o["group"]] = "another group was chosen"
            said = "; ".join(f"{g}: {r}" for g, r in sorted(why.items())) or "no node group"
            self._event(plan, "NotTriggerScaleUp", f"{pair[0]}/{pair[1]}", said, now)
        return chosen is not None

    def _create(self, group: NodeGroup, n: int, now: float, plan: Plan) -> list[Node]:
        g = self.groups[group.name]
        made = []
        for _ in range(n):
            node = Node(f"{group.name}-{g.next_seq}", group.name, CREATING, now)
            g.next_seq += 1
            self.nodes[node.name] = node
            made.append(node)
        g.last_scale_up_at = now
        plan.create.extend(made)
        plan.groups_changed.add(group.name)
        return made

    def _scale_down(
        self,
        answer: Mapping[str, Any],
        agents: Sequence[AgentSeen],
        now: float,
        plan: Plan,
        scaling_up: bool,
    ) -> None:
        opts = self.config.options
        by_id = {a.agent_id: a for a in agents}
        # Draining nodes: deleted once their agent is empty, or after the grace.
        for node in sorted(self.nodes.values(), key=lambda n: n.name):
            if node.phase != DRAINING:
                continue
            seen = by_id.get(node.agent_id)
            started = node.drain_started_at if node.drain_started_at is not None else now
            if seen is None or seen.tasks == 0 or now - started >= opts.drain_grace_seconds + 30:
                plan.delete.append(node)
                del self.nodes[node.name]
                self.unneeded_since.pop(node.name, None)
                plan.groups_changed.add(node.group)
                self._event(
                    plan,
                    "ScaleDown",
                    node.name,
                    f"node {node.name} of group {node.group} (agent {node.agent_id}) removed",
                    now,
                    always=True,
                )
        removable: dict[str, dict[str, Any]] = {
            r["agent_id"]: r for r in answer.get("removals", [])
        }
        ready = [n for n in self.nodes.values() if n.phase == READY]
        draining = sum(1 for n in self.nodes.values() if n.phase == DRAINING)
        counts = {g.name: len(self.of_group(g.name)) for g in self.config.groups}
        last_up = max((g.last_scale_up_at for g in self.groups.values()), default=-math.inf)
        for node in sorted(ready, key=lambda n: n.name):
            r = removable.get(node.agent_id)
            if r is None or not r.get("removable"):
                self.unneeded_since.pop(node.name, None)
                if r is not None and r.get("reason") and not r["reason"].startswith("utilization"):
                    self._event(plan, "Unremovable", node.name, str(r["reason"]), now)
                continue
            since = self.unneeded_since.setdefault(node.name, now)
            group = self.config.group(node.group)
            assert group is not None
            why = ""
            if not opts.scale_down_enabled:
                why = "scale-down is disabled"
            elif now - since < opts.scale_down_unneeded_time:
                continue  # not unneeded for long enough yet: nothing to say
            elif counts[node.group] <= group.min:
                why = f"group {group.name} is at its min {group.min}"
            elif scaling_up:
                why = "a scale-up is under way"
            elif now - last_up < opts.scale_down_delay_after_add:
                why = f"a scale-up happened less than {opts.scale_down_delay_after_add:g} s ago"
            elif draining >= opts.max_scale_down_parallelism:
                why = f"{draining} nodes are draining already (max-scale-down-parallelism)"
            if why:
                self._event(plan, "Unremovable", node.name, why, now)
                continue
            node.phase, node.drain_started_at = DRAINING, now
            counts[node.group] -= 1
            draining += 1
            plan.drain.append(node)
            plan.groups_changed.add(node.group)
            self._event(
                plan,
                "ScaleDownStarted",
                node.name,
                f"node {node.name} unneeded for {now - since:g} s "
                f"(utilization {float(r.get('utilization', 0.0)):.2f}): draining",
                now,
                always=True,
            )

    def drain_refused(self, node: Node, why: str, now: float) -> Event:
        """The master refused the drain (a disruption budget it now breaks, the agent gone):
        the node is ready again, its unneeded time starts over, nothing is deleted."""
        node.phase, node.drain_started_at = READY, None
        self.unneeded_since.pop(node.name, None)
        return Event("ScaleDownFailed", node.name, f"drain refused: {why}", now)

    def _event(
        self, plan: Plan, reason: str, subject: str, message: str, now: float, always: bool = False
    ) -> None:
        key = (reason, subject)
        if not always and self.last_message.get(key) == message:
            return
        self.last_message[key] = message
        plan.events.append(Event(reason, subject, message, now))

    # --- views ----------------------------------------------------------------------------

    def groups_view(self, now: float) -> list[dict[str, Any]]:
        out = []
        for g in self.config.groups:
            nodes = self.of_group(g.name)
            st = self.groups[g.name]
            out.append(
                {
                    "name": g.name,
                    "min": g.min,
                    "max": g.max,
                    "provider": g.provider,
                    "nodes": len(nodes),
                    "ready": sum(1 for n in nodes if n.phase == READY),
                    "upcoming": sum(1 for n in nodes if n.phase == CREATING),
                    "draining": sum(1 for n in nodes if n.phase == DRAINING),
                    "backoff_seconds": max(0.0, st.backoff_until - now),
                    "priority": g.priority,
                    "price": g.price,
                    "template": {
                        "resources": g.template.resources_text,
                        "attributes": dict(g.template.attributes),
                        "taints": [str(t) for t in g.template.taints],
                    },
                    "node_names": [n.name for n in nodes],
                }
            )
        return out
