"""Roles' weights and quotas: the operator's vocabulary, checked and parsed in one place.

A **weight** is a finite number > 0 (1 unless set): DRF orders roles by share ÷ weight, so a role
of weight 3 is offered first until it holds three times the share of a role of weight 1.

A **quota** bounds a role per scalar resource (cpus, mem, disk, gpus): its **guarantee** is
served first while the role is below it (all zeros: no guarantee); its **limit** is what the
role is never offered past (``inf``: unlimited). A limit is written naming only the bounded
resources (``'cpus:40'``: mem, disk and gpus unlimited). A quota of no guarantee and no limit is
no quota at all ("cleared").

A **role name** follows Mesos' rules (a role is a path of ``/``-separated components, as
``eng/web``): ``*`` (the default role) alone, or components that are neither empty (no leading,
trailing or doubled ``/``), ``.``, ``..`` nor ``*``, and do not start with ``-``; and, as in
Mesos, no whitespace or control character anywhere; Corral also keeps ``,`` and ``=`` out (the
``--weights`` syntax) and names to 255 characters.

Every check raises ``RoleError`` (a ValueError) naming the problem: a role name that breaks the
rules above; a weight or quantity that is negative, NaN, infinite
or past ``corral.limits.MAX_SCALAR``; an unknown resource (ports are not part of a quota); a
limit below the guarantee. The master's core runs the checks on every call whatever it came
through; the CLI and the HTTP shell parse text and JSON with the same functions.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from corral.limits import MAX_NAME_LENGTH, echo
from corral.pairs import items
from corral.resources import SCALARS, ResourceError, check_quantity

Scalars = tuple[float, float, float, float]

DEFAULT_WEIGHT = 1.0
NO_GUARANTEE: Scalars = (0.0, 0.0, 0.0, 0.0)
UNLIMITED: Scalars = (math.inf, math.inf, math.inf, math.inf)

_FORBIDDEN_IN_ROLE = frozenset(",=")


class RoleError(ValueError):
    """A role name, weight or quota that cannot be applied; the message names the problem."""


def check_role(role: object) -> str:
    """``role`` if it is a valid role name (the module's rules); RoleError saying why not."""
    if not isinstance(role, str):
        raise RoleError(f"a role must be a string, got {echo(role)}")
    if not role:
        raise RoleError("the role is empty")
    if len(role) > MAX_NAME_LENGTH:
        raise RoleError(
            f"role {echo(role)} is {len(role)} characters, more than the limit of {MAX_NAME_LENGTH}"
        )
    bad = [c for c in role if c.isspace() or not c.isprintable() or c in _FORBIDDEN_IN_ROLE]
    if bad:
        raise RoleError(f"role {echo(role)} contains {echo(bad[0])}")
    if role == "*":
        return role
    if role.startswith("/") or role.endswith("/") or "//" in role:
        raise RoleError(
            f"role {echo(role)} has an empty component: '/' separates the parts of a "
            "hierarchical role (eng/web) and may not lead, end or repeat"
        )
    for part in role.split("/"):
        if part in (".", "..", "*"):
            why = "'*' is the default role, alone" if part == "*" else "'.' and '..' name no role"
            raise RoleError(f"role {echo(role)} has {echo(part)} as a component ({why})")
        if part.startswith("-"):
            raise RoleError(f"role {echo(role)} has a component starting with '-': {echo(part)}")
    return role


def _number(value: object, what: str) -> float:
    """A finite number in [0, MAX_SCALAR] (the rule of a resource quantity)."""
    try:
        return check_quantity(what, value)
    except ResourceError as exc:
        raise RoleError(str(exc)) from None


def check_weight(role: str, weight: object) -> float:
    w = _number(weight, f"the weight of role {echo(role)}")
    if w <= 0:
        raise RoleError(f"the weight of role {echo(role)} must be more than 0, got {w:g}")
    return w


@dataclass(frozen=True, slots=True)
class Quota:
    guarantee: Scalars = NO_GUARANTEE
    limit: Scalars = UNLIMITED

    def is_none(self) -> bool:
        """No guarantee and no limit: the same as no quota."""
        return self.guarantee == NO_GUARANTEE and self.limit == UNLIMITED

    def to_json(self) -> dict[str, dict[str, float]]:
        """``{"guarantee": {...}, "limit": {...}}`` naming only guaranteed and bounded
        resources; ``quota_from_json`` reads it back."""
        return {
            "guarantee": {n: v for n, v in zip(SCALARS, self.guarantee, strict=True) if v > 0},
            "limit": {n: v for n, v in zip(SCALARS, self.limit, strict=True) if v != math.inf},
        }

    def __str__(self) -> str:
        if self.is_none():
            return "none"
        return f"guarantee {format_scalars(self.guarantee)}, limit {format_scalars(self.limit)}"


def format_scalars(values: Sequence[float]) -> str:
    """``cpus:10;mem:4096``: zeros and unlimited (inf) resources left out; ``-`` if nothing."""
    parts = [f"{n}:{v:g}" for n, v in zip(SCALARS, values, strict=True) if v > 0 and v != math.inf]
    return ";".join(parts) or "-"


def check_quota(role: str, guarantee: Sequence[float], limit: Sequence[float]) -> Quota:
    """A quota from four guaranteed and four limit quantities (``inf``: unlimited)."""
    if len(guarantee) != len(SCALARS) or len(limit) != len(SCALARS):
        raise RoleError(f"a quota has {len(SCALARS)} quantities ({', '.join(SCALARS)})")
    who = f"quota of role {echo(role)}"
    g = tuple(
        _number(v, f"{who}: the guarantee of {n}") for n, v in zip(SCALARS, guarantee, strict=True)
    )
    lim = tuple(
        math.inf if v == math.inf else _number(v, f"{who}: the limit of {n}")
        for n, v in zip(SCALARS, limit, strict=True)
    )
    for n, gv, lv in zip(SCALARS, g, lim, strict=True):
        if lv < gv:
            raise RoleError(f"{who}: the limit of {n} ({lv:g}) is below its guarantee ({gv:g})")
    return Quota((g[0], g[1], g[2], g[3]), (lim[0], lim[1], lim[2], lim[3]))


# ---- text and JSON forms ------------------------------------------------------------------


def parse_scalars(text: str, what: str) -> dict[str, float]:
    """``'cpus:10;mem:4096'`` as {name: quantity}; unknown or repeated names are refused."""
    values: dict[str, float] = {}
    for name, value, part in items(text, ";", ":"):
        if value is None:
            raise RoleError(f"{what}: {echo(part)} has no ':' (expected name:value)")
        if name not in SCALARS:
            raise RoleError(
                f"{what}: unknown resource {echo(name)} (a quota knows {', '.join(SCALARS)})"
            )
        if name in values:
            raise RoleError(f"{what}: {name} appears twice")
        try:
            number = float(value)
        except ValueError:
            raise RoleError(f"{what}: {name} must be a number, got {echo(value)}") from None
        values[name] = _number(number, f"{what}: {name}")
    return values


def _named(value: object, what: str) -> dict[str, float]:
    """A guarantee or limit given as text (``'cpus:10'``) or as a JSON object."""
    if isinstance(value, str):
        return parse_scalars(value, what)
    if isinstance(value, Mapping):
        out: dict[str, float] = {}
        for name, number in value.items():
            if name not in SCALARS:
                raise RoleError(
                    f"{what}: unknown resource {echo(name)} (a quota knows {', '.join(SCALARS)})"
                )
            out[name] = _number(number, f"{what}: {name}")
        return out
    raise RoleError(f"{what} must be a string like 'cpus:10;mem:4096' or an object")


def make_quota(
    role: str, guarantee: Mapping[str, float] | None, limit: Mapping[str, float] | None
) -> Quota:
    """A quota from named quantities; resources left out are not guaranteed / not limited."""
    g = [(guarantee or {}).get(n, 0.0) for n in SCALARS]
    lim = [(limit or {}).get(n, math.inf) for n in SCALARS]
    return check_quota(role, g, lim)


def parse_quota(role: str, guarantee: str | None, limit: str | None) -> Quota:
    """The CLI's form: ``--guarantee 'cpus:10;mem:4096' --limit 'cpus:40'``."""
    return make_quota(
        check_role(role),
        None if guarantee is None else parse_scalars(guarantee, "guarantee"),
        None if limit is None else parse_scalars(limit, "limit"),
    )


def quota_from_json(role: str, body: object) -> Quota:
    """``{"guarantee": "cpus:10;mem:4096", "limit": {"cpus": 40}}``: either key may be left
    out, each given as text or as an object; ``{}`` is no quota."""
    check_role(role)
    if not isinstance(body, Mapping):
        raise RoleError(f"the quota of role {echo(role)} must be an object")
    unknown = sorted(set(body) - {"guarantee", "limit"})
    if unknown:
        raise RoleError(
            f"the quota of role {echo(role)} has an unknown key {echo(unknown[0])} "
            "(expected guarantee, limit)"
        )
    g = body.get("guarantee")
    lim = body.get("limit")
    return make_quota(
        role,
        None if g is None else _named(g, f"the guarantee of role {echo(role)}"),
        None if lim is None else _named(lim, f"the limit of role {echo(role)}"),
    )


def quotas_from_json(body: object) -> dict[str, Quota]:
    """The master's ``--quotas FILE``: ``{"role": {"guarantee": ..., "limit": ...}, ...}``."""
    if not isinstance(body, Mapping):
        raise RoleError('quotas must be a JSON object: {"role": {"guarantee": ..., "limit": ...}}')
    return {check_role(role): quota_from_json(role, q) for role, q in body.items()}


def parse_weights(text: str) -> dict[str, float]:
    """Mesos' ``--weights`` form: ``'web=3,batch=1'``."""
    weights: dict[str, float] = {}
    for role, value, part in items(text, ",", "="):
        if value is None:
            raise RoleError(f"{echo(part)} is not role=weight")
        check_role(role)
        if role in weights:
            raise RoleError(f"role {echo(role)} appears twice")
        try:
            number = float(value)
        except ValueError:
            raise RoleError(
                f"the weight of role {echo(role)} must be a number, got {echo(value)}"
            ) from None
        weights[role] = check_weight(role, number)
    if not weights:
        raise RoleError("no role=weight given")
    return weights
