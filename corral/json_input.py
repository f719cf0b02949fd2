"""One reader, with one set of bounds, for JSON that comes from outside: the body of every HTTP
API in Corral (the master's, the serving service's) and the JSON files an operator hands a
command (``--quotas``, ``--priority-classes``, an app's spec).

Bounds: at most ``MAX_JSON_BYTES`` of body, arrays and objects nested at most ``MAX_JSON_DEPTH``
deep. Corral's own documents nest three deep; a deeper one is refused before anything walks it,
so no check or error message can recurse past Python's stack limit (issue #30: a body nested
100,000 deep answered the master 500; issue #40: the serving service still did). A refusal is
``BadJson``, a ``ValueError`` whose text is the reason and whose ``status`` is the HTTP status
an API answers with: 413 for a body past the size bound, 400 otherwise.

It lives in the kernel, stdlib only: the master's shell, the CLI and the SDK (which re-exports
it as ``corral.frameworks.sdk.json_input`` for the services) all import it
(tests/unit/test_layering.py). It reads an aiohttp request through the small ``HttpRequest``
protocol, so neither it nor the SDK imports aiohttp.
"""

from __future__ import annotations

import json
from typing import Any, Protocol

MAX_JSON_BYTES = 1 << 20
MAX_JSON_DEPTH = 32


class BadJson(ValueError):
    """JSON refused; ``str(exc)`` is the reason, ``status`` the HTTP status to answer."""

    def __init__(self, reason: str, status: int = 400) -> None:
        super().__init__(reason)
        self.status = status


def parse_json(raw: str | bytes, what: str = "the body") -> Any:
    """``raw`` parsed; BadJson naming ``what`` when it is larger than MAX_JSON_BYTES, is not
    JSON (nor UTF-8), or is nested past MAX_JSON_DEPTH."""
    size = len(raw.encode() if isinstance(raw, str) else raw)
    if size > MAX_JSON_BYTES:
        raise BadJson(f"{what} is larger than {MAX_JSON_BYTES} bytes", status=413)
    too_deep = f"{what} is JSON nested more than {MAX_JSON_DEPTH} deep (arrays and objects)"
    try:
        value = json.loads(raw)
    except RecursionError:
        raise BadJson(too_deep) from None
    except (ValueError, UnicodeDecodeError) as exc:  # JSONDecodeError is a ValueError
        raise BadJson(f"{what} is not JSON: {exc}") from None
    # Walked with a stack of its own: a document that parsed may still be too deep to recurse.
    todo: list[tuple[Any, int]] = [(value, 1)]
    while todo:
        item, depth = todo.pop()
        if isinstance(item, dict):
            children = list(item.values())
        elif isinstance(item, list):
            children = item
        else:
            continue
        if depth > MAX_JSON_DEPTH:
            raise BadJson(too_deep)
        todo.extend((child, depth + 1) for child in children)
    return value


class _Stream(Protocol):
    async def read(self, n: int = -1) -> bytes: ...


class HttpRequest(Protocol):
    """What of an ``aiohttp.web.Request`` the reader uses."""

    @property
    def content(self) -> _Stream: ...


async def read_json_body(request: HttpRequest) -> Any | None:
    """The request's body parsed (None when it is empty or blank); BadJson as ``parse_json``.
    Reads at most one byte past the bound, so a large body costs no more than that."""
    parts: list[bytes] = []
    size = 0
    while size <= MAX_JSON_BYTES:  # a read returns what has arrived, maybe less than asked
        part = await request.content.read(MAX_JSON_BYTES + 1 - size)
        if not part:
            break
        parts.append(part)
        size += len(part)
    raw = b"".join(parts)
    if not raw.strip():
        return None
    return parse_json(raw)
