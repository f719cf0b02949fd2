"""Why the core refuses a call: a closed set of codes, each named after the gRPC status the
shell answers with (one mapping, ``master/rpc/common.py``; HTTP has its own,
``master/http/routes.py``).

A StrEnum so a code reads and compares as its name ("INVALID_ARGUMENT") in logs, metrics labels
and tests, while an unknown code cannot be written at all. ``invalid`` and ``no_repeats`` are the
refusals every handler shares.
"""

from __future__ import annotations

from collections.abc import Sequence
from enum import StrEnum

from corral.acl import Denial
from corral.limits import echo


class Refusal(StrEnum):
    INVALID_ARGUMENT = "INVALID_ARGUMENT"  # the call itself is wrong; nothing changed
    NOT_FOUND = "NOT_FOUND"  # it names a framework or task the master does not know
    FAILED_PRECONDITION = "FAILED_PRECONDITION"  # right call, wrong moment (a stale stream)
    PERMISSION_DENIED = "PERMISSION_DENIED"  # an identity the master cannot believe
    RESOURCE_EXHAUSTED = "RESOURCE_EXHAUSTED"  # a bound was reached; try again later
    DEADLINE_EXCEEDED = (
        "DEADLINE_EXCEEDED"  # the caller's deadline passed before the core got to it
    )
    UNAVAILABLE = "UNAVAILABLE"  # the master cannot serve it now (its registry failed)
    INTERNAL = "INTERNAL"  # a bug: the handler raised (logged loudly, counted)


class CallRejected(Exception):
    """A call refused with a code and a reason naming the problem."""

    def __init__(self, code: Refusal, message: str) -> None:
        super().__init__(message)
        self.code = Refusal(code)  # a plain string that names no code fails here, loudly
        self.message = message


class Overloaded(CallRejected):
    """RESOURCE_EXHAUSTED because a backlog bound was reached (admission.py, the runtime's
    waiting accepts); ``bound`` names which, for the metrics (``accepts_refused{bound}``)."""

    def __init__(self, bound: str, message: str) -> None:
        super().__init__(Refusal.RESOURCE_EXHAUSTED, message)
        self.bound = bound


class Denied(CallRejected):
    """PERMISSION_DENIED by the ACLs or for an identity (corral.acl): the refusal names the
    rule; the shell counts it (``denied_total{action}``) and records it as a cluster event
    with reason Denied, the audit trail."""

    def __init__(self, denial: Denial, principal: str) -> None:
        super().__init__(Refusal.PERMISSION_DENIED, denial.message)
        self.denial = denial
        self.principal = principal


def denied(denial: Denial | None, principal: str) -> None:
    """Raise ``Denied`` for a denial (None: allowed, nothing to do)."""
    if denial is not None:
        raise Denied(denial, principal)


def invalid(message: str) -> CallRejected:
    return CallRejected(Refusal.INVALID_ARGUMENT, message)


def no_repeats(ids: Sequence[str], what: str) -> None:
    """Refuse a call that names an id twice, before anything changes (an id listed twice was
    dropped twice: a KeyError halfway through a decline left an agent never offered again)."""
    if len(set(ids)) == len(ids):
        return
    seen: set[str] = set()
    for i in ids:
        if i in seen:
            raise invalid(f"{what} {echo(i)} appears twice")
        seen.add(i)
