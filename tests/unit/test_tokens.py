"""master/security/tokens.py: a token is its principal until it expires, and nothing else
verifies."""

from __future__ import annotations

import pytest

from corral.acl import Principal
from corral.master.security import tokens

KEY = b"k" * 32
ALICE = Principal("alice", frozenset({"operator"}))


def test_a_token_is_its_principal_until_it_expires() -> None:
    token, expires = tokens.issue(KEY, ALICE, 1000.0, 60.0)
    assert expires == 1060.0
    assert tokens.verify(KEY, token, 1059.0) == ALICE
    assert tokens.verify(KEY, token, 1060.0) is None


@pytest.mark.parametrize(
    "mangle",
    [
        lambda t: t[:-2] + ("AA" if not t.endswith("AA") else "BB"),  # another signature
        lambda t: "x" + t,  # another body
        lambda t: t.replace(".", ""),
        lambda t: "",
        lambda t: "a.b",
        lambda t: "." * 5000,
    ],
)
def test_a_changed_or_made_up_token_does_not_verify(mangle: object) -> None:
    token, _ = tokens.issue(KEY, ALICE, 1000.0, 60.0)
    assert tokens.verify(KEY, mangle(token), 1001.0) is None  # type: ignore[operator]
    assert tokens.verify(b"other" * 8, token, 1001.0) is None


def test_the_lifetime_is_bounded() -> None:
    assert tokens.ttl_of(0) == tokens.DEFAULT_TTL
    for bad in (-1.0, float("nan"), tokens.MAX_TTL + 1):
        with pytest.raises(ValueError, match="ttl_seconds"):
            tokens.ttl_of(bad)
