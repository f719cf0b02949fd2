"""The placement flags ``corral run batch`` and ``corral run gang`` share: taints their work
tolerates and attributes its agents must have (docs/frameworks.md, "GPU and tainted pools").
Written as agents write their taints and attributes; ``sdk.Toleration.parse`` and
``sdk.Constraint.parse`` read them. Light at import, as a ``cli`` module must be (registry.py).
"""

from __future__ import annotations

import argparse
from typing import Any

# The agents that run images (`corral agent --containerizers`: the attribute lists them in the
# order process, docker): the constraint a framework given --image places by.
CONTAINERIZERS_ATTRIBUTE = "containerizers"
DOCKER_AGENT_VALUES = ("docker", "process,docker")


def docker_agents() -> Any:
    """``sdk.Constraint``: agents that run the docker containerizer."""
    from corral.frameworks.sdk.placement import Constraint

    return Constraint.one_of(CONTAINERIZERS_ATTRIBUTE, *DOCKER_AGENT_VALUES)


def add_image_arg(parser: argparse.ArgumentParser, what: str) -> None:
    parser.add_argument(
        "--image",
        metavar="IMAGE",
        help=f"run the {what} in this Docker image (on agents started with --containerizers "
        "process,docker, which the framework then asks for; docs/containers.md)",
    )


def add_placement_args(parser: argparse.ArgumentParser, what: str) -> None:
    group = parser.add_argument_group(f"where the {what} may run")
    group.add_argument(
        "--toleration",
        action="append",
        default=[],
        metavar="KEY[=VALUE][:EFFECT]",
        help="tolerate agents' taints: gpu-sku=inference:NoSchedule tolerates that taint, "
        "gpu-sku=inference it with any effect, gpu-sku every taint of that key (repeatable; "
        "the master's ACLs must grant it)",
    )
    group.add_argument(
        "--constraint",
        action="append",
        default=[],
        metavar="ATTRIBUTE[=VALUE[,VALUE...]]",
        help="run only on agents with this attribute: zone=a, zone=a,b (one of), gpu-sku "
        "(any value) (repeatable; all must hold)",
    )


def placement_from_args(args: argparse.Namespace) -> tuple[tuple[Any, ...], tuple[Any, ...]]:
    """(tolerations, constraints) as ``sdk.Toleration``s and ``sdk.Constraint``s; a ValueError
    (exit 2) names a malformed one."""
    from corral.frameworks.sdk.placement import Constraint, Toleration

    tolerations = tuple(Toleration.parse(t) for t in args.toleration)
    constraints = tuple(Constraint.parse(c) for c in args.constraint)
    return tolerations, constraints
