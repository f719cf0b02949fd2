"""The UI endpoints' query parameters, checked: a name the endpoint does not take, a repeated
name, a number that is not one or out of range, a value not among the allowed ones, each is a
``ValueError`` naming it (the handler answers 400 with it). A misspelt filter must not quietly
return everything, as ``/api/v1/state``'s filters do not.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from corral.limits import echo

DEFAULT_LIMIT = 100
MAX_LIMIT = 1000  # rows in one page: a page of 10,000 agents is what pagination avoids
MAX_OFFSET = 10_000_000
MAX_TEXT = 256  # characters of a search or filter value


def query_of(pairs: Iterable[tuple[str, str]], allowed: Iterable[str]) -> dict[str, str]:
    """The query as a dict; ValueError for a name not ``allowed`` or given twice."""
    names = tuple(allowed)
    given: dict[str, str] = {}
    for name, value in pairs:
        if name not in names:
            listed = ", ".join(names) if names else "none"
            raise ValueError(f"unknown query parameter {echo(name)}; the parameters are {listed}")
        if name in given:
            raise ValueError(f"{name} is given twice")
        if len(value) > MAX_TEXT:
            raise ValueError(f"{name} is longer than {MAX_TEXT} characters")
        given[name] = value
    return given


def integer(query: Mapping[str, str], name: str, default: int, low: int, high: int) -> int:
    text = query.get(name)
    if text is None:
        return default
    try:
        value = int(text)
    except ValueError:
        raise ValueError(f"{name} must be an integer, got {echo(text)}") from None
    if not low <= value <= high:
        raise ValueError(f"{name} must be between {low} and {high}, got {value}")
    return value


def choice(query: Mapping[str, str], name: str, allowed: Iterable[str], default: str = "") -> str:
    """``query[name]`` if it is one of ``allowed`` (case as given), ``default`` when absent."""
    text = query.get(name)
    if text is None or text == "":
        return default
    options = tuple(allowed)
    if text not in options:
        raise ValueError(f"{name} must be one of {', '.join(options)}; got {echo(text)}")
    return text


def boolean(query: Mapping[str, str], name: str, default: bool) -> bool:
    text = query.get(name)
    if text is None:
        return default
    if text.lower() not in ("true", "false"):
        raise ValueError(f"{name} must be true or false, got {echo(text)}")
    return text.lower() == "true"


@dataclass(frozen=True, slots=True)
class Page:
    offset: int
    limit: int

    PARAMS = ("offset", "limit")

    @classmethod
    def of(cls, query: Mapping[str, str]) -> Page:
        return cls(
            offset=integer(query, "offset", 0, 0, MAX_OFFSET),
            limit=integer(query, "limit", DEFAULT_LIMIT, 1, MAX_LIMIT),
        )

    def envelope(self, total: int, items: list[object]) -> dict[str, object]:
        """A page as every paginated endpoint answers it."""
        return {"total": total, "offset": self.offset, "limit": self.limit, "items": items}
