"""Seals: what the master hands out and must be able to check later without its registry.

A master that restarted without its registry (``--registry memory``, or a registry lost and
accepted with ``--accept-empty-registry``) learns its cluster again from what agents report. An
agent is trusted with what it runs, not with claims about whose it is, so what matters is
sealed: an HMAC-SHA256 under a key derived from the master's token key (``token.key`` beside
its certificate, or the local CA's: the same across restarts, and on every master sharing it).

- **A framework's owner**: every task the master launches carries its framework's principal
  and role and their seal (``TaskInfo.framework_seal``). The agent keeps them with the task and
  reports them; a report whose seal does not check names no owner.
- **An agent's identity**: the secret handed out with a new agent id is the seal of that id and
  the principal that registered it, so a master that does not know the id can still tell
  whether the certificate presenting it is the one it was issued to.

Plain text (``--insecure``) has no principals and no key: nothing is sealed. The seals are the
shell's (like the TLS that names principals); the core is told whether a claim checked.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
from dataclasses import replace

from corral.master.core.types import ReportedTask

_CONTEXT = b"corral seals v1"
FRAMEWORK_SEAL_BYTES = 16  # a 128-bit tag: a forgery is a 1 in 2**128 guess
AGENT_SECRET_BYTES = 24  # as long as the random secrets before (secrets.token_urlsafe(24))


class Seals:
    def __init__(self, token_key: bytes) -> None:
        # A key of its own: a seal is never a valid token signature, nor the other way round.
        self._key = hmac.new(token_key, _CONTEXT, hashlib.sha256).digest()
        self._framework_cache: dict[tuple[str, str, str], bytes] = {}

    def _mac(self, *parts: str) -> bytes:
        message = b"\0".join(p.encode() for p in parts)
        return hmac.new(self._key, message, hashlib.sha256).digest()

    def framework(self, framework_id: str, principal: str, role: str) -> bytes:
        """The seal of a framework's owner (computed once per framework and owner: every
        launch carries it)."""
        key = (framework_id, principal, role)
        seal = self._framework_cache.get(key)
        if seal is None:
            if len(self._framework_cache) > 100_000:
                self._framework_cache.clear()  # bounded; recomputing costs a microsecond
            seal = self._mac("framework", *key)[:FRAMEWORK_SEAL_BYTES]
            self._framework_cache[key] = seal
        return seal

    def framework_ok(self, framework_id: str, principal: str, role: str, seal: bytes) -> bool:
        expected = self._mac("framework", framework_id, principal, role)[:FRAMEWORK_SEAL_BYTES]
        return hmac.compare_digest(expected, seal)

    def agent_secret(self, agent_id: str, principal: str) -> str:
        raw = self._mac("agent", agent_id, principal)[:AGENT_SECRET_BYTES]
        return base64.urlsafe_b64encode(raw).decode("ascii")

    def agent_secret_ok(self, agent_id: str, principal: str, secret: str) -> bool:
        return hmac.compare_digest(self.agent_secret(agent_id, principal).encode(), secret.encode())


def checked_owner(seals: Seals | None, task: ReportedTask, seal: bytes) -> ReportedTask:
    """The reported task with its framework's owner kept only if ``seal`` (the agent's report
    of ``TaskInfo.framework_seal``) is this master's seal of it; plain text keeps what the agent
    says (there is no principal to protect)."""
    owner = task.owner
    if owner is None or seals is None:
        return task
    if seals.framework_ok(task.framework_id, owner.principal, owner.role, seal):
        return task
    return replace(task, owner=None)
