"""DNS names for the serving service's apps, without dnspython (the CLI checks its flags with
these on a base install): labels, the task label, the flags' parsers. dns.py serves them."""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Sequence
from dataclasses import dataclass

from corral.frameworks.serving.instances import Endpoint

DEFAULT_DOMAIN = "corral"
DEFAULT_TTL = 2
_LABEL = re.compile(r"[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?")


def task_label(task_id: str) -> str:
    """A task id as a DNS label: lower case, other characters as '-', at most 63."""
    label = re.sub(r"[^a-z0-9-]", "-", task_id.lower()).strip("-")[:63].strip("-")
    return label or "task"


def is_label(text: str) -> bool:
    return bool(_LABEL.fullmatch(text.lower()))


def parse_forward(text: str) -> tuple[str, int]:
    """``--dns-forward IP:PORT`` (an address: the upstream is asked by IP); ValueError."""
    host, sep, port = text.strip().rpartition(":")
    host = host.strip("[]")
    try:
        ipaddress.ip_address(host)
    except ValueError:
        raise ValueError(f"{text!r}: the upstream must be IP:PORT (an address, not a name)") from (
            None
        )
    if not sep or not port.isdigit() or not 0 < int(port) <= 65535:
        raise ValueError(f"{text!r} is not IP:PORT")
    return host, int(port)


def parse_domain(text: str) -> str:
    """``--dns-domain`` (one or more labels); ValueError naming what is wrong."""
    labels = text.strip().strip(".").lower().split(".")
    if not all(_LABEL.fullmatch(label) for label in labels):
        raise ValueError(f"{text!r} is not a domain (labels of a-z, 0-9 and '-')")
    return ".".join(labels)


@dataclass(frozen=True)
class AppView:
    """What DNS needs of one app: its port names and its ready instances."""

    port_names: tuple[str, ...]
    endpoints: Sequence[Endpoint]
