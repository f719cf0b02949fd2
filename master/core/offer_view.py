"""The offer book's outstanding offers by id, as a mapping of records made on demand (views,
explain, validate())."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING

from corral.master.core.records import OfferRecord

if TYPE_CHECKING:
    from corral.master.core.offer_book import OfferBook


class OfferView(Mapping[str, OfferRecord]):
    """The outstanding offers by id, as records made on demand (views, explain, validate())."""

    def __init__(self, book: OfferBook) -> None:
        self._book = book

    def __getitem__(self, oid: str) -> OfferRecord:
        got = self._book.get(oid)
        if got is None:
            raise KeyError(oid)
        return got

    def __iter__(self) -> Iterator[str]:
        return iter(self._book)

    def __len__(self) -> int:
        return self._book.count

    def __contains__(self, oid: object) -> bool:
        return isinstance(oid, str) and self._book.get(oid) is not None
