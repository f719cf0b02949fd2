"""``corral master``'s flags for launch pacing, the admission bounds and preemption (their
defaults read from MasterConfig, where each is written once: master/core/config.py)."""

from __future__ import annotations

import argparse

from corral.cli.common import positive_float, positive_int
from corral.master.core.config import default


def add_scheduling_flags(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--launch-pacing",
        action=argparse.BooleanOptionalAction,
        default=default("launch_pacing"),
        help="hold offers back so that accept->RUNNING stays under --launch-latency-target "
        "(admission control, on by default; --no-launch-pacing offers everything the "
        "allocator plans, for experiments: see docs/operations.md, admission control)",
    )
    p.add_argument(
        "--launch-latency-target",
        type=positive_float,
        default=default("launch_latency_target"),
        metavar="SECONDS",
        help="with launch pacing: the accept->RUNNING time to stay under "
        f"(default {default('launch_latency_target'):g})",
    )
    p.add_argument(
        "--paced-allocation-interval",
        type=positive_float,
        default=default("paced_allocation_interval"),
        metavar="SECONDS",
        help="with launch pacing: seconds between cycles while it holds offers back "
        "(--allocation-interval if that is shorter; "
        f"default {default('paced_allocation_interval'):g})",
    )
    p.add_argument(
        "--max-agent-launches",
        type=positive_int,
        default=default("max_agent_launches"),
        metavar="N",
        help="tasks launching (accepted, not yet RUNNING) on one agent; at it the agent is "
        "offered to nobody until they move on, and an accept past it is refused with "
        f"RESOURCE_EXHAUSTED (default {default('max_agent_launches')})",
    )
    p.add_argument(
        "--max-framework-pending-statuses",
        type=positive_int,
        default=default("max_framework_pending_statuses"),
        metavar="N",
        help="status updates one framework has not acknowledged; at it the framework is "
        "offered nothing and its accepts are refused with RESOURCE_EXHAUSTED "
        f"(default {default('max_framework_pending_statuses')})",
    )
    p.add_argument(
        "--max-waiting-accepts",
        type=positive_int,
        default=default("max_waiting_accepts"),
        metavar="N",
        help="accept calls waiting for the master; past it an accept is refused at once with "
        "RESOURCE_EXHAUSTED, and while half of it wait no offers are made "
        f"(default {default('max_waiting_accepts')})",
    )
    p.add_argument(
        "--no-preemption",
        action="store_true",
        help="never kill lower-priority tasks to make room for a demand (docs/scheduling.md, "
        "Preemption); priority still orders offers",
    )
    p.add_argument(
        "--preemption-nomination",
        type=positive_float,
        default=default("preemption_nomination_seconds"),
        metavar="SECONDS",
        help="how long the room preemption freed is offered to the preempting framework "
        f"alone before it goes back to everyone "
        f"(default {default('preemption_nomination_seconds'):g})",
    )
    p.add_argument(
        "--preemption-victims-burst",
        type=positive_int,
        default=default("preemption_victims_burst"),
        metavar="N",
        help="victims one preempting framework may take at once; its budget refills at "
        f"--preemption-victims-per-minute (default {default('preemption_victims_burst')})",
    )
    p.add_argument(
        "--preemption-victims-per-minute",
        type=positive_float,
        default=default("preemption_victims_per_minute"),
        metavar="N",
        help="how fast a preempting framework's victim budget refills "
        f"(default {default('preemption_victims_per_minute'):g})",
    )
    p.add_argument(
        "--preemption-unused-backoff",
        type=positive_float,
        default=default("preemption_unused_backoff"),
        metavar="SECONDS",
        help="a demand whose preempted room went unused preempts nothing for this long, doubled "
        f"per unused nomination in a row (default {default('preemption_unused_backoff'):g})",
    )
