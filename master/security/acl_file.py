"""The ``--acls`` file: read (YAML or JSON), checked (corral.acl), and read again when it
changes, so an operator edits the file and the master decides with it within a second or two.

A file that does not parse or does not check is refused at start (``corral master`` exits 2
naming the problem); on a reload the master keeps the ACL it has, logs the error, counts it
(``corral_acl_reloads_total{result="rejected"}``) and records an AclsRejected event. The
version the master decides with is in its state (``acls``) and in an AclsLoaded event.

A file being written is not read half-way (issue #41): a changed file is reloaded only once it
has stopped changing, its size, time and content digest the same across ``SETTLE_SECONDS``
(write a new file and rename it over the old one, and there is nothing to wait for). A file
written half-way that stopped (a crash, a full disk) may still parse, with its last rules
missing: a reload that would lock out a certificate role in use (every agent, or every
framework, that is connected) is refused, naming the role, unless the file says it means it
(``revoke_cert_roles``: corral.acl.lockouts).
"""

from __future__ import annotations

import asyncio
import hashlib
from collections.abc import Awaitable, Callable
from pathlib import Path

from corral import events as cluster_events
from corral.acl import AclError, lockouts
from corral.acl_files import load, parse
from corral.acl_files import stamp as _stamp
from corral.logging import get_logger
from corral.master.core import authz
from corral.master.core import commands as cmd
from corral.master.runtime import MasterRuntime

log = get_logger("corral.master.acls")

POLL_SECONDS = 1.0
SETTLE_SECONDS = 0.5


def _snapshot(path: Path) -> tuple[tuple[int, int, int] | None, bytes, str]:
    """The file's stamp, its bytes (b"" if it cannot be read: load() says why) and digest."""
    stamp = _stamp(path)
    try:
        data = path.read_bytes()
    except OSError:
        data = b""
    return stamp, data, hashlib.sha256(data).hexdigest()


async def settled(
    path: Path,
    settle: float = SETTLE_SECONDS,
    sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
) -> tuple[tuple[int, int, int] | None, bytes] | None:
    """The file's stamp and content if it stayed the same (time, size, inode and digest)
    across ``settle`` seconds, else None: someone is still writing it."""
    first = await asyncio.to_thread(_snapshot, path)
    await sleep(settle)
    second = await asyncio.to_thread(_snapshot, path)
    if first[0] != second[0] or first[2] != second[2]:
        return None
    return second[0], second[1]


async def watch(
    runtime: MasterRuntime,
    path: Path,
    poll: float = POLL_SECONDS,
    settle: float = SETTLE_SECONDS,
) -> None:
    """Reload ``path`` whenever it changes (its time, size or inode: an editor's rename
    counts) and has then stopped changing, until cancelled."""
    seen = _stamp(path)
    while True:
        await asyncio.sleep(poll)
        if _stamp(path) == seen:
            continue
        read = await settled(path, settle)
        if read is None:
            log.info("acls_changing", file=str(path), detail="still being written: read later")
            continue  # seen stays: looked at again at the next poll
        seen, data = read
        try:
            acl = parse(path, data) if data else load(path)
        except AclError as exc:
            _rejected(runtime, path, str(exc))
            continue
        if acl.digest == runtime.acl.digest:
            continue  # touched, not changed
        locked_out = lockouts(runtime.acl, acl, await runtime.query(authz.in_use))
        if locked_out:
            _rejected(
                runtime,
                path,
                f"{path}: refused: {'; '.join(why for _, why in locked_out)}. A file written "
                "half-way looks so (write the whole file, then rename it over this one); to "
                "lock them out on purpose, say so in the file: revoke_cert_roles: "
                f"[{', '.join(role for role, _ in locked_out)}]",
            )
            continue
        runtime.metrics.acl_reloads.labels("loaded").inc()
        log.info("acls_loaded", file=str(path), version=acl.version, rules=len(acl.rules))
        runtime.set_acl(acl)


def _rejected(runtime: MasterRuntime, path: Path, why: str) -> None:
    runtime.metrics.acl_reloads.labels("rejected").inc()
    log.error("acls_rejected", file=str(path), error=why, kept=runtime.acl.version)
    reject(runtime, f"{why}; still deciding with version {runtime.acl.version}")


def reject(runtime: MasterRuntime, message: str) -> None:
    """An AclsRejected event: the file changed and the master could not use it."""
    reason, object_kind = cluster_events.KINDS["acls_rejected"]
    runtime.publish(
        [
            cmd.ClusterEvent(
                stimulus_id=runtime.stimulus("acls"),
                kind="acls_rejected",
                subject=runtime.master_id,
                message=message,
                timestamp=runtime.clock(),
                reason=reason,
                object_kind=object_kind,
            )
        ]
    )
