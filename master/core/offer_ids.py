"""Offer ids as the offer book writes them (``PREFIX`` then a sequence number, no leading zero)
and finding a call's ids in the book's batches: a run of consecutive numbers at a time, so a
decline of what one OFFERS message held costs one bisection per batch (offer_book.py)."""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Sequence
from itertools import repeat

import numpy as np

from corral.master.core.offer_columns import OfferColumns

Entries = dict[OfferColumns, list[int]]


def seq_of(prefix: str, oid: str) -> int | None:
    """The sequence number of an id this book could have written, else None."""
    if not oid.startswith(prefix):
        return None
    tail = oid[len(prefix) :]
    # Only ids this book writes: int() would also take " 7", "+7", "0_7" or non-ASCII digits.
    if not (tail.isascii() and tail.isdigit()) or (tail[0] == "0" and len(tail) > 1):
        return None
    return int(tail)


def one_run(prefix: str, offer_ids: Sequence[str]) -> int | None:
    """The first id's sequence number if the ids are exactly the ones this book writes for
    a run of consecutive numbers from it (what declining one OFFERS message sends): the
    first id is checked as ``seqs`` checks each, the rest by writing them and comparing."""
    if not offer_ids:
        return None
    first = offer_ids[0]
    tail = first[len(prefix) :]
    if not (
        first.startswith(prefix)
        and tail.isascii()
        and tail.isdigit()
        and tail[0] != "0"
        and len(tail) <= 18
    ):
        return None
    q = int(tail)
    n = len(offer_ids)
    if q + n > 10**18:  # past int64: not ids of this book's
        return None
    written = [prefix + d for d in map(str, range(q, q + n))]
    ids = offer_ids if isinstance(offer_ids, list) else list(offer_ids)
    return q if written == ids else None


def seqs(prefix: str, offer_ids: Sequence[str]) -> list[int] | None:
    """The ids' sequence numbers if every id is one this book could have written."""
    if not all(map(str.startswith, offer_ids, repeat(prefix))):
        return None
    n = len(prefix)
    tails = [oid[n:] for oid in offer_ids]
    digits = "".join(tails)
    firsts = {t[:1] for t in tails}
    if not (digits.isascii() and digits.isdigit()) or "" in firsts or "0" in firsts:
        return None
    if max(map(len, tails), default=0) > 18:  # past int64: not an id of this book's
        return None
    return list(map(int, tails))


def runs(
    bases: list[int],
    batches: dict[int, OfferColumns],
    seqs: Sequence[int],
    breaks: list[int] | None = None,
) -> Entries:
    """Entries of ``seqs``, found a run of consecutive numbers at a time: one bisection per
    run and batch, and one per number not in any batch, so a call costs O(n log n) at
    worst whatever order the ids come in. ``breaks``: where a run starts, but the first
    (found here unless the caller knows)."""
    out: Entries = {}
    n = len(seqs)
    if not n:
        return out
    if breaks is None:
        breaks = (np.flatnonzero(np.diff(np.array(seqs, dtype=np.int64)) != 1) + 1).tolist()
    for start, end in zip([0, *breaks], [*breaks, n], strict=True):
        i, s = start, seqs[start]
        while i < end:
            k = bisect_right(bases, s) - 1
            cols = batches.get(bases[k]) if k >= 0 else None
            lo = s - cols.base if cols is not None else 0
            if cols is None or lo >= len(cols.alive):
                i, s = i + 1, s + 1  # not an outstanding batch's
                continue
            m = min(end - i, len(cols.alive) - lo)
            alive = cols.alive
            if alive.find(0, lo, lo + m) == -1:
                idx = list(range(lo, lo + m))
            else:
                idx = [j for j in range(lo, lo + m) if alive[j]]
            if idx:
                got = out.get(cols)
                if got is None:
                    out[cols] = idx
                else:
                    got += idx
            i, s = i + m, s + m
    return out
