"""Pages of a listing in a stable order, with a cursor rather than an offset (issue #48).

A page is the ``limit`` smallest keys above the cursor (the last key of the previous page), so
an object added or removed between two pages does not shift the others: every object present
from the first page to the last is listed exactly once, in key order, whatever changed around
it (an offset would skip or repeat one for each removal or insertion before it). This is
kubectl's ``?limit=&continue=`` and etcd's range reads by key.

The cursor travels as an opaque page token: the list's name and the key, as JSON in URL-safe
base64, so a token of one list given to another, or any text this master did not make, is a
``BadPage`` naming the problem (gRPC INVALID_ARGUMENT, HTTP 400). The token holds only ids the
caller already saw, so there is nothing in it to forge.

Cost: one pass over the listing plus a bounded heap (``heapq.nsmallest``): O(n log limit) per
page, no sort of the whole list, nothing kept between calls.
"""

from __future__ import annotations

import base64
import binascii
import heapq
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Generic, TypeVar

DEFAULT_LIMIT = 500  # a page when the caller names none: a few hundred KB of JSON at most
MAX_LIMIT = 5000
MAX_TOKEN = 4096  # characters: a token is a list's name and one or two ids

T = TypeVar("T")
Key = tuple[str, ...]


class BadPage(ValueError):
    """A limit or page token the listing refuses; its text is the reason to show."""


def limit_of(asked: int | None) -> int:
    """The page size: ``asked`` (None or 0: the default), at most MAX_LIMIT."""
    if asked is None or asked == 0:
        return DEFAULT_LIMIT
    if not 1 <= asked <= MAX_LIMIT:
        raise BadPage(f"limit must be between 1 and {MAX_LIMIT} (0 or none: {DEFAULT_LIMIT})")
    return asked


def parse_limit(text: str | None) -> int:
    """``limit`` of an HTTP query: an integer as ``limit_of`` takes it."""
    if text is None or text == "":
        return DEFAULT_LIMIT
    try:
        value = int(text)
    except ValueError:
        raise BadPage(f"limit must be an integer, got {text[:40]!r}") from None
    return limit_of(value) if value != 0 else DEFAULT_LIMIT


def token_of(listing: str, key: Key) -> str:
    raw = json.dumps([listing, *key], separators=(",", ":")).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def key_of(listing: str, token: str, arity: int) -> Key | None:
    """The cursor in ``token`` (empty: None, the first page); BadPage if it is not a token of
    ``listing`` this master gives."""
    if not token:
        return None
    refused = BadPage(
        f"page token {token[:40]!r} is not one of the {listing} list's; pass the "
        "next_page_token (HTTP: next) of the previous page, or none for the first page"
    )
    if len(token) > MAX_TOKEN:
        raise refused
    try:
        raw = base64.urlsafe_b64decode(token + "=" * (-len(token) % 4))
        decoded = json.loads(raw)
    except (binascii.Error, ValueError, UnicodeDecodeError):
        raise refused from None
    if (
        not isinstance(decoded, list)
        or len(decoded) != arity + 1
        or decoded[0] != listing
        or not all(isinstance(part, str) for part in decoded[1:])
    ):
        raise refused
    return tuple(decoded[1:])


@dataclass(frozen=True, slots=True)
class Page(Generic[T]):
    items: list[T]
    total: int  # the listing's size when the page was read
    next_key: Key | None  # the cursor of the next page; None: this was the last

    def next_token(self, listing: str) -> str:
        return "" if self.next_key is None else token_of(listing, self.next_key)


def page_after(entries: Iterable[tuple[Key, T]], after: Key | None, limit: int) -> Page[T]:
    """The ``limit`` entries with the smallest keys above ``after`` (all of them: None), in key
    order; keys must be unique. One pass, a heap of ``limit + 1``."""
    total = 0

    def counted() -> Iterable[tuple[Key, T]]:
        nonlocal total
        for entry in entries:
            total += 1
            if after is None or entry[0] > after:
                yield entry

    chosen = heapq.nsmallest(limit + 1, counted(), key=lambda entry: entry[0])
    more = len(chosen) > limit
    chosen = chosen[:limit]
    return Page(
        items=[item for _, item in chosen],
        total=total,
        next_key=chosen[-1][0] if more and chosen else None,
    )


def page_by_id(objects: Mapping[str, T], after: Key | None, limit: int) -> Page[T]:
    """``page_after`` of a mapping by its keys, the key its only part: the same page, made
    from the bare strings (a C-level heap and filter, about 5 times faster at 50,000 agents
    than building a tuple per object)."""
    ids: Iterable[str] = objects.keys() if after is None else [k for k in objects if k > after[0]]
    chosen = heapq.nsmallest(limit + 1, ids)
    more = len(chosen) > limit
    chosen = chosen[:limit]
    return Page(
        items=[objects[k] for k in chosen],
        total=len(objects),
        next_key=(chosen[-1],) if more and chosen else None,
    )
