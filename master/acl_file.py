"""The ``--acls`` file: read (YAML or JSON), checked (corral.acl), and read again when it
changes, so an operator edits the file and the master decides with it within a second.

A file that does not parse or does not check is refused at start (``corral master`` exits 2
naming the problem); on a reload the master keeps the ACL it has, logs the error, counts it
(``corral_acl_reloads_total{result="rejected"}``) and records an AclsRejected event. The
version the master decides with is in its state (``acls``) and in an AclsLoaded event.
"""

from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path

import yaml

from corral import events as cluster_events
from corral.acl import Acl, AclError, acl_from_data
from corral.logging import get_logger
from corral.master.core import commands as cmd
from corral.master.runtime import MasterRuntime

log = get_logger("corral.master.acls")

POLL_SECONDS = 1.0
MAX_BYTES = 4 * 1024 * 1024


def load(path: Path) -> Acl:
    """The ACL in ``path``; AclError naming the file and the problem."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise AclError(f"{path}: cannot read it: {exc.strerror or exc}") from None
    if len(data) > MAX_BYTES:
        raise AclError(f"{path}: {len(data)} bytes, more than {MAX_BYTES}")
    try:
        text = data.decode()
    except UnicodeDecodeError as exc:
        raise AclError(f"{path}: not UTF-8: {exc}") from None
    try:
        document = json.loads(text)
    except ValueError:
        try:
            document = yaml.safe_load(text)
        except yaml.YAMLError as exc:
            raise AclError(f"{path}: neither JSON nor YAML: {' '.join(str(exc).split())}") from None
    try:
        return acl_from_data(document, str(path))
    except AclError as exc:
        raise AclError(f"{path}: {exc}") from None


def _stamp(path: Path) -> tuple[int, int, int] | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_mtime_ns, st.st_size, st.st_ino)


async def watch(runtime: MasterRuntime, path: Path, poll: float = POLL_SECONDS) -> None:
    """Reload ``path`` whenever it changes (its time, size or inode: an editor's rename
    counts), until cancelled."""
    seen = _stamp(path)
    while True:
        await asyncio.sleep(poll)
        stamp = _stamp(path)
        if stamp == seen:
            continue
        seen = stamp
        try:
            acl = await asyncio.to_thread(load, path)
        except AclError as exc:
            runtime.metrics.acl_reloads.labels("rejected").inc()
            log.error("acls_rejected", file=str(path), error=str(exc), kept=runtime.acl.version)
            reject(runtime, f"{exc}; still deciding with version {runtime.acl.version}")
            continue
        if acl.digest == runtime.acl.digest:
            continue  # touched, not changed
        runtime.metrics.acl_reloads.labels("loaded").inc()
        log.info("acls_loaded", file=str(path), version=acl.version, rules=len(acl.rules))
        runtime.set_acl(acl)


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
