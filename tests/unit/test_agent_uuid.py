"""Status update ids: version-4 UUIDs, distinct."""

from __future__ import annotations

import uuid

from corral.agent.runtime import random_uuid


def test_random_uuid_is_a_distinct_version_4_uuid() -> None:
    ids = [random_uuid() for _ in range(10_000)]
    assert len(set(ids)) == len(ids)
    for raw in ids[:100]:
        u = uuid.UUID(bytes=raw)
        assert u.version == 4 and u.variant == uuid.RFC_4122
