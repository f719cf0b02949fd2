"""The autoscaler's configuration file (docs/autoscaler.md): its options, named as Kubernetes'
Cluster Autoscaler names its flags, and the node groups. Checked whole before anything starts:
``ConfigError`` says the first problem in one line (the CLI exits 2 with it).

A template is parsed by the kernel's own parsers (``corral.resources``, ``corral.placement``),
the ones ``corral agent --resources/--attributes/--taints`` use, so a template means exactly
the agent its provider starts."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from corral.placement import Taint, parse_attributes, parse_taint
from corral.resources import Resources, parse_resources

PROVIDERS = ("process", "command", "docker")
EXPANDERS = ("random", "most-pods", "least-waste", "priority", "price")


class ConfigError(ValueError):
    """The configuration cannot be used; the text names the problem."""


@dataclass(frozen=True, slots=True)
class Template:
    resources: Resources
    attributes: dict[str, str] = field(default_factory=dict)
    taints: tuple[Taint, ...] = ()

    @property
    def resources_text(self) -> str:
        r = self.resources
        return f"cpus:{r.cpus:g};mem:{r.mem:g};disk:{r.disk:g};gpus:{r.gpus:g}"

    @property
    def attributes_text(self) -> str:
        return ";".join(f"{k}:{v}" for k, v in sorted(self.attributes.items()))

    @property
    def taints_text(self) -> str:
        return ";".join(str(t) for t in self.taints)


@dataclass(frozen=True, slots=True)
class CommandScripts:
    """The ``command`` provider's scripts (docs/autoscaler.md, "The command provider")."""

    create: str
    delete: str
    list: str = ""


@dataclass(frozen=True, slots=True)
class DockerNode:
    """The docker provider's container for a node: ``corral agent`` in ``image`` (the
    project's image, whose entrypoint is ``corral``)."""

    image: str
    network: str = "host"  # host: the agent dials the master as this host does
    master: str = ""  # the master as the container reaches it; "" is the autoscaler's --master
    volumes: tuple[str, ...] = ()  # binds, HOST:CONTAINER[:ro] (a TLS dir, say)
    env: tuple[tuple[str, str], ...] = ()
    user: str = ""  # "" is the image's (corral, uid 10001)


@dataclass(frozen=True, slots=True)
class NodeGroup:
    name: str
    min: int
    max: int
    template: Template
    provider: str = "process"
    priority: int = 0  # the priority expander: the highest wins
    price: float = 1.0  # the price expander: per node and hour
    simulate: bool = False  # process provider: `corral agent --simulate`
    agent_args: tuple[str, ...] = ()  # process provider: more `corral agent` flags
    command: CommandScripts | None = None
    docker: DockerNode | None = None


@dataclass(frozen=True, slots=True)
class Options:
    """Cluster Autoscaler's flags, by its names (seconds for its durations)."""

    scan_interval: float = 10.0
    new_pod_scale_up_delay: float = 0.0
    scale_down_enabled: bool = True
    scale_down_unneeded_time: float = 600.0
    scale_down_utilization_threshold: float = 0.5
    scale_down_delay_after_add: float = 600.0
    max_node_provision_time: float = 900.0
    initial_node_group_backoff_duration: float = 300.0
    max_node_group_backoff_duration: float = 1800.0
    expander: str = "random"
    expendable_pods_priority_cutoff: int = -10
    max_scale_down_parallelism: int = 10
    max_nodes_total: int = 0  # 0: no bound
    drain_grace_seconds: float = 30.0


@dataclass(frozen=True, slots=True)
class Config:
    options: Options
    groups: tuple[NodeGroup, ...]

    def group(self, name: str) -> NodeGroup | None:
        return next((g for g in self.groups if g.name == name), None)


_DURATIONS = (
    "scan-interval",
    "new-pod-scale-up-delay",
    "scale-down-unneeded-time",
    "scale-down-delay-after-add",
    "max-node-provision-time",
    "initial-node-group-backoff-duration",
    "max-node-group-backoff-duration",
    "drain-grace-seconds",
)
_OPTION_KEYS = {
    *_DURATIONS,
    "scale-down-enabled",
    "scale-down-utilization-threshold",
    "expander",
    "expendable-pods-priority-cutoff",
    "max-scale-down-parallelism",
    "max-nodes-total",
    "node-groups",
}
_GROUP_KEYS = {
    "name",
    "min",
    "max",
    "template",
    "provider",
    "priority",
    "price",
    "simulate",
    "agent-args",
    "command",
    "docker",
}


def read(path: Path) -> Config:
    """The file's configuration (JSON or YAML); ConfigError naming the file's problem."""
    try:
        text = path.read_text()
    except (OSError, UnicodeDecodeError) as err:
        raise ConfigError(f"{path}: cannot read it: {err}") from None
    try:
        doc = json.loads(text)
    except ValueError:
        import yaml

        try:
            doc = yaml.safe_load(text)
        except yaml.YAMLError as err:
            raise ConfigError(
                f"{path}: neither JSON nor YAML: {' '.join(str(err).split())}"
            ) from None
    return parse(doc)


def parse(doc: Any) -> Config:
    if not isinstance(doc, dict):
        raise ConfigError("the configuration must be a mapping with node-groups")
    unknown = sorted(set(map(str, doc)) - _OPTION_KEYS)
    if unknown:
        raise ConfigError(
            f"unknown option {unknown[0]!r} (known: {', '.join(sorted(_OPTION_KEYS))})"
        )
    kw: dict[str, Any] = {}
    for key in _DURATIONS:
        if key in doc:
            kw[key.replace("-", "_")] = _number(doc[key], key, low=0.0)
    if kw.get("scan_interval", 1.0) <= 0:
        raise ConfigError("scan-interval must be above 0")
    if "scale-down-enabled" in doc:
        if not isinstance(doc["scale-down-enabled"], bool):
            raise ConfigError("scale-down-enabled must be true or false")
        kw["scale_down_enabled"] = doc["scale-down-enabled"]
    if "scale-down-utilization-threshold" in doc:
        t = _number(doc["scale-down-utilization-threshold"], "scale-down-utilization-threshold")
        if not 0.0 <= t <= 1.0:
            raise ConfigError(f"scale-down-utilization-threshold must be 0..1, got {t:g}")
        kw["scale_down_utilization_threshold"] = t
    if "expander" in doc:
        if doc["expander"] not in EXPANDERS:
            raise ConfigError(
                f"unknown expander {doc['expander']!r} (one of {', '.join(EXPANDERS)})"
            )
        kw["expander"] = doc["expander"]
    for key in ("expendable-pods-priority-cutoff", "max-scale-down-parallelism", "max-nodes-total"):
        if key in doc:
            kw[key.replace("-", "_")] = _integer(
                doc[key], key, low=None if key.startswith("expendable") else 0
            )
    groups_doc = doc.get("node-groups")
    if not isinstance(groups_doc, list) or not groups_doc:
        raise ConfigError("node-groups must be a non-empty list of node groups")
    groups = tuple(_group(g, i) for i, g in enumerate(groups_doc))
    names = [g.name for g in groups]
    for n in names:
        if names.count(n) > 1:
            raise ConfigError(f"node group {n!r} is named twice")
    return Config(Options(**kw), groups)


def _group(doc: Any, index: int) -> NodeGroup:
    if not isinstance(doc, dict):
        raise ConfigError(f"node-groups[{index}] must be a mapping")
    name = doc.get("name")
    if not isinstance(name, str) or not name or not all(c.isalnum() or c in "-_" for c in name):
        raise ConfigError(f"node-groups[{index}]: name must be letters, digits, - and _")
    where = f"node group {name}"
    unknown = sorted(set(map(str, doc)) - _GROUP_KEYS)
    if unknown:
        raise ConfigError(f"{where}: unknown key {unknown[0]!r}")
    low = _integer(doc.get("min", 0), f"{where}: min", low=0)
    high = _integer(doc.get("max"), f"{where}: max", low=0)
    if low > high:
        raise ConfigError(f"{where}: min {low} is greater than max {high}")
    provider = doc.get("provider", "process")
    if provider not in PROVIDERS:
        raise ConfigError(f"{where}: unknown provider {provider!r} (one of {', '.join(PROVIDERS)})")
    command = None
    if provider == "command":
        c = doc.get("command")
        if (
            not isinstance(c, dict)
            or not isinstance(c.get("create"), str)
            or not isinstance(c.get("delete"), str)
        ):
            raise ConfigError(f"{where}: the command provider needs command: {{create, delete}}")
        command = CommandScripts(c["create"], c["delete"], str(c.get("list", "")))
    docker = _docker(doc.get("docker"), where) if provider == "docker" else None
    args = doc.get("agent-args", [])
    if not isinstance(args, list) or not all(isinstance(a, str) for a in args):
        raise ConfigError(f"{where}: agent-args must be a list of strings")
    simulate = doc.get("simulate", False)
    if not isinstance(simulate, bool):
        raise ConfigError(f"{where}: simulate must be true or false")
    return NodeGroup(
        name,
        low,
        high,
        _template(doc.get("template"), where),
        provider,
        _integer(doc.get("priority", 0), f"{where}: priority", low=None),
        _number(doc.get("price", 1.0), f"{where}: price", low=0.0),
        simulate,
        tuple(args),
        command,
        docker,
    )


_DOCKER_KEYS = {"image", "network", "master", "volumes", "env", "user"}


def _docker(doc: Any, where: str) -> DockerNode:
    if not isinstance(doc, dict) or not isinstance(doc.get("image"), str) or not doc["image"]:
        raise ConfigError(f"{where}: the docker provider needs docker: {{image: IMAGE}}")
    unknown = sorted(set(map(str, doc)) - _DOCKER_KEYS)
    if unknown:
        raise ConfigError(f"{where}: docker: unknown key {unknown[0]!r}")
    for key in ("network", "master", "user"):
        if not isinstance(doc.get(key, ""), str):
            raise ConfigError(f"{where}: docker: {key} must be a string")
    volumes = doc.get("volumes", [])
    if not isinstance(volumes, list) or not all(isinstance(v, str) and ":" in v for v in volumes):
        raise ConfigError(f"{where}: docker: volumes must be a list of 'HOST:CONTAINER[:ro]'")
    env = doc.get("env", {})
    if not isinstance(env, dict):
        raise ConfigError(f"{where}: docker: env must be a mapping")
    return DockerNode(
        doc["image"],
        doc.get("network", "host") or "host",
        doc.get("master", ""),
        tuple(volumes),
        tuple((str(k), str(v)) for k, v in sorted(env.items())),
        doc.get("user", ""),
    )


def _template(doc: Any, where: str) -> Template:
    if not isinstance(doc, dict) or "resources" not in doc:
        raise ConfigError(f"{where}: template must be a mapping with resources")
    unknown = sorted(set(map(str, doc)) - {"resources", "attributes", "taints"})
    if unknown:
        raise ConfigError(f"{where}: template: unknown key {unknown[0]!r}")
    try:
        resources = parse_resources(str(doc["resources"]))
        attrs = doc.get("attributes", {})
        if isinstance(attrs, str):
            attrs = parse_attributes(attrs)
        if not isinstance(attrs, dict):
            raise ValueError("attributes must be a mapping or 'key:value;...'")
        attributes = {str(k): str(v) for k, v in attrs.items()}
        parse_attributes(";".join(f"{k}:{v}" for k, v in attributes.items()))  # same checks
        taints_doc = doc.get("taints", [])
        if isinstance(taints_doc, str):
            taints_doc = [t for t in taints_doc.replace(",", ";").split(";") if t.strip()]
        if not isinstance(taints_doc, list):
            raise ValueError("taints must be a list of 'key=value:Effect'")
        taints = tuple(parse_taint(str(t)) for t in taints_doc)
    except ValueError as err:
        raise ConfigError(f"{where}: template: {err}") from None
    if resources.cpus <= 0 and resources.mem <= 0 and resources.gpus <= 0:
        # An agent with nothing to offer: no task of any demand could ever go there.
        raise ConfigError(f"{where}: template: resources hold nothing a task could use")
    return Template(resources, attributes, taints)


def _number(value: Any, what: str, low: float | None = None) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise ConfigError(f"{what} must be a number, got {value!r}")
    if low is not None and value < low:
        raise ConfigError(f"{what} must be at least {low:g}, got {value:g}")
    return float(value)


def _integer(value: Any, what: str, low: int | None = None) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise ConfigError(f"{what} must be a whole number, got {value!r}")
    if low is not None and value < low:
        raise ConfigError(f"{what} must be at least {low}, got {value}")
    return value
