"""What services publish about themselves for operators (``Operator.PublishStatus``): an
autoscaler's node groups, a job service's queues. The web UI's node groups and queues views read
it from here (docs/ui.md, "Services"), as Kubernetes' cluster autoscaler writes its status into a
ConfigMap the API server keeps and every tool reads.

The master keeps the newest document per (kind, service), in memory: the services publish each
evaluation, so a restarted or new leading master has them again within one of their intervals
(a status is not cluster state the core decides with; it is a window onto a service). Time comes
in as an argument, so this is sans-IO and tests replay.

Rules, each refused with a reason and nothing kept:
- the kind is one the UI knows (``KINDS``), the name a short DNS-like label;
- the document is a JSON object of at most ``MAX_DOCUMENT_BYTES`` whose kind's list (``KINDS``)
  is a list of objects, each with a string ``name`` field (``KINDS``' second entry);
- a status not yet stale is replaced only by its publisher's principal (a standby of the same
  service, with the same certificate, takes over at once; another principal once it is stale);
- at most ``MAX_STATUSES`` are kept: a new one past that is refused while every kept one is
  fresh, else the stalest goes.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from typing import Any, Final

from corral import limits

# kind -> (the document's list, each item's name field)
KINDS: Final[dict[str, tuple[str, str]]] = {
    "nodegroups": ("node_groups", "name"),
    "queues": ("queues", "cluster_queue"),
}
MAX_DOCUMENT_BYTES: Final = 1 * limits.MiB
MAX_STATUSES: Final = 64
DEFAULT_TTL: Final = 60.0
MAX_TTL: Final = 86_400.0
_NAME = re.compile(r"[a-z0-9][a-z0-9._-]{0,62}")


class StatusRefused(Exception):
    """A publication the board does not keep. ``denied``: a permission (another principal's
    fresh status), else the request itself is bad."""

    def __init__(self, message: str, denied: bool = False) -> None:
        super().__init__(message)
        self.message = message
        self.denied = denied


@dataclass(frozen=True, slots=True)
class Status:
    service: str
    kind: str
    principal: str
    published_at: float
    ttl: float
    document_json: str

    def stale(self, now: float) -> bool:
        return now > self.published_at + self.ttl

    def to_json(self, now: float) -> dict[str, Any]:
        """As GET /api/v1/services/status answers it: the document parsed, and its age."""
        return {
            "service": self.service,
            "kind": self.kind,
            "principal": self.principal,
            "published_at": self.published_at,
            "age_seconds": round(max(0.0, now - self.published_at), 3),
            "ttl_seconds": self.ttl,
            "stale": self.stale(now),
            "document": json.loads(self.document_json),
        }


def check_kind(kind: str) -> str:
    if kind not in KINDS:
        known = ", ".join(sorted(KINDS))
        raise StatusRefused(f"kind {kind[: limits.ECHO_CHARS]!r} is not one of: {known}")
    return kind


def _no_constant(name: str) -> None:
    # Python's json reads NaN and Infinity; a browser's JSON.parse does not, and the UI must.
    raise ValueError(f"{name} is not JSON")


def _check(service: str, kind: str, document_json: str, ttl: float) -> float:
    if not _NAME.fullmatch(service):
        raise StatusRefused(
            f"service {service[: limits.ECHO_CHARS]!r} is not a name: lower-case letters, "
            "digits, '.', '_' and '-', starting with a letter or digit, at most 63"
        )
    list_key, name_key = KINDS[check_kind(kind)]
    if not math.isfinite(ttl) or ttl < 0 or ttl > MAX_TTL or 0 < ttl < 1:
        raise StatusRefused(f"ttl_seconds {ttl} is not 0 (the default) or 1 to {MAX_TTL:.0f}")
    size = len(document_json.encode())
    if size > MAX_DOCUMENT_BYTES:
        raise StatusRefused(f"the document is {size} bytes, more than {MAX_DOCUMENT_BYTES}")
    try:
        document = json.loads(document_json, parse_constant=_no_constant)
    except ValueError as exc:
        raise StatusRefused(f"the document is not JSON: {exc}") from None
    if not isinstance(document, dict):
        raise StatusRefused("the document is not a JSON object")
    items = document.get(list_key)
    if not isinstance(items, list):
        raise StatusRefused(f"a {kind} document has no list {list_key!r}")
    for i, item in enumerate(items):
        if not isinstance(item, dict) or not isinstance(item.get(name_key), str):
            raise StatusRefused(f"{list_key}[{i}] is not an object with a string {name_key!r}")
    return ttl or DEFAULT_TTL


class StatusBoard:
    def __init__(self) -> None:
        self._statuses: dict[tuple[str, str], Status] = {}

    def publish(
        self, service: str, kind: str, principal: str, document_json: str, ttl: float, now: float
    ) -> Status:
        ttl = _check(service, kind, document_json, ttl)
        key = (kind, service)
        kept = self._statuses.get(key)
        if kept is not None and kept.principal != principal and not kept.stale(now):
            raise StatusRefused(
                f"the {kind} status of service {service!r} is published by principal "
                f"{kept.principal!r}; another may replace it once it is stale "
                f"({kept.published_at + kept.ttl - now:.0f} s)",
                denied=True,
            )
        if kept is None and len(self._statuses) >= MAX_STATUSES:
            stalest = min(self._statuses.values(), key=lambda s: s.published_at + s.ttl)
            if not stalest.stale(now):
                raise StatusRefused(
                    f"the master keeps {MAX_STATUSES} service statuses and none is stale"
                )
            del self._statuses[(stalest.kind, stalest.service)]
        status = Status(service, kind, principal, now, ttl, document_json)
        self._statuses[key] = status
        return status

    def listing(self, kind: str = "") -> list[Status]:
        """Every kept status of ``kind`` (every kind if empty), by kind, then service."""
        if kind:
            check_kind(kind)
        return [s for key, s in sorted(self._statuses.items()) if not kind or s.kind == kind]

    def validate(self) -> None:
        assert len(self._statuses) <= MAX_STATUSES, len(self._statuses)
        for (kind, service), s in self._statuses.items():
            assert (s.kind, s.service) == (kind, service), (kind, service, s)
            assert kind in KINDS and _NAME.fullmatch(service), s
            assert 1 <= s.ttl <= MAX_TTL, s
