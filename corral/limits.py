"""Limits on what a framework or an agent may send, one set for every process.

The master refuses anything past these with INVALID_ARGUMENT and a reason naming the limit; an
agent and the SDK use the same message size, so nothing the master accepts can be too large for
the process it is passed on to. docs/operations.md lists them.
"""

from __future__ import annotations

MiB = 1024 * 1024

# One gRPC message, either way, on every channel (master, agents, frameworks, operators).
MAX_MESSAGE_BYTES = 16 * MiB
# One task as serialized on the wire (command, environment, labels, ...): many fit one launch.
MAX_TASK_BYTES = 1 * MiB

MAX_ID_LENGTH = 255  # framework, task, agent, offer and stream ids (characters)
MAX_NAME_LENGTH = 255  # framework names, roles, principals, hostnames, attribute and label keys
MAX_VALUE_LENGTH = 1024  # attribute and label values
MAX_ATTRIBUTES = 64  # per agent
MAX_TAINTS = 64  # per agent
MAX_LABELS = 64  # per task
MAX_TOLERATIONS = 64  # per framework
MAX_CONSTRAINTS = 64  # offer constraints per framework
MAX_ROLES = 64  # roles with a reservation on one agent
MAX_TASKS_PER_ACCEPT = 10_000
MAX_OFFERS_PER_CALL = 10_000  # offer ids in one accept or decline
MAX_IDS_PER_CALL = 10_000  # task ids in one reconcile, acknowledgements in one call
MAX_UUID_BYTES = 64  # a status update's uuid (16 bytes as the agent makes them)
MAX_TASKS_PER_AGENT = 100_000  # tasks an agent may report when it registers
MAX_PRIORITY_CLASSES = 256  # priority classes in the cluster
MAX_DEMANDS = 1000  # demands one framework may hold (one SetDemands call)
MAX_DEMAND_COUNT = 100_000  # tasks one demand may ask for
# Resource quantities: finite, >= 0 and at most this, so sums over a cluster stay exact enough.
MAX_SCALAR = 1e12

# How much of an offending value an error message repeats.
ECHO_CHARS = 64


def echo(value: object) -> str:
    """``value`` as an error message may repeat it: its repr, cut to ECHO_CHARS characters."""
    text = repr(value)
    if len(text) <= ECHO_CHARS:
        return text
    return f"{text[:ECHO_CHARS]}... ({len(text)} characters)"
