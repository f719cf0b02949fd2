"""The text form every flag and spec of Corral shares: items split by a separator, each
``name<assign>value`` (``'cpus:4;mem:8192'``, ``'zone:a;rack:r1'``, ``'web=3,batch=1'``).

One tokenizer for all of them; each parser checks the names and values itself and raises its
own error with its own wording.
"""

from __future__ import annotations

from collections.abc import Iterator


def items(text: str, separator: str, assign: str) -> Iterator[tuple[str, str | None, str]]:
    """``(name, value, item)`` for each non-empty item of ``text``: name and value stripped,
    value None when the item has no ``assign``; ``item`` is the stripped item, for errors."""
    for raw in text.split(separator):
        item = raw.strip()
        if not item:
            continue
        name, sep, value = item.partition(assign)
        yield name.strip(), (value.strip() if sep else None), item
