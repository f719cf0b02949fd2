"""The records in ZooKeeper (``records.py``), for a service whose standbys run on other hosts
(``--zk zk://HOSTS/PATH``): the leader is elected under ``PATH`` (``sdk.zk_election``) and its
records live under ``ROOT`` (by default ``PATH-store``).

Layout: ``ROOT/epoch`` (the fence's counter) and ``ROOT/KIND/KEY``, each record's JSON in its
znode; kinds and keys are percent-encoded ("/" and "." too). Rules:
1. ``open`` fences the store for the leader (``zk_election.Fence``: its election znode must
   still exist, and the epoch moves up by one), then reads every record, keeping each znode's
   version.
2. Every ``write`` is one ZooKeeper transaction: the fence's two checks, then each record
   created, set at the version last written, or deleted at that version. A leader that lost
   its election, or was fenced out by a newer one, writes nothing (``Fenced``); a record
   changed by anything else fails the transaction whole (``StoreError``).
3. A kind's folder is created (outside the transaction, harmlessly) the first time a record of
   it is written.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any
from urllib.parse import quote, unquote

from corral.frameworks.sdk.zk_election import Fence, FencedOut
from corral.frameworks.service.records import Delete, Fenced, Op, Put, Record, StoreError, encode

_ROLLED_BACK = ("RolledBackError", "RuntimeInconsistency")


def encode_name(name: str) -> str:
    """A znode name for any kind or key ("/" and "." encoded: neither may stand alone)."""
    return quote(name, safe="").replace(".", "%2E")


class ZooKeeperRecords:
    """The leader's handle on the records; ``client`` is the started KazooClient of its
    election (one session: losing it loses both)."""

    def __init__(self, client: Any, root: str, leader_znode: str) -> None:
        self.client = client
        self.root = root.rstrip("/")
        self.fence = Fence(client, self.root, leader_znode)
        self._versions: dict[str, int] = {}  # record znode -> version last read or written
        self._kinds: set[str] = set()  # kind folders known to exist

    def describe(self) -> str:
        return f"zookeeper:{self.root} (epoch {self.fence.epoch})"

    def open(self) -> None:
        """Rule 1's fence (blocking)."""
        try:
            self.fence.fence()
        except FencedOut as exc:
            raise Fenced(f"cannot fence {self.root}: {exc}") from None
        except Exception as exc:  # kazoo's: ZooKeeper could not be asked
            raise StoreError(f"cannot fence {self.root}: {exc!r}") from None

    def load(self) -> dict[str, dict[str, Record]]:
        try:
            out: dict[str, dict[str, Record]] = {}
            for folder in self.client.get_children(self.root):
                if folder == "epoch":
                    continue
                self._kinds.add(folder)
                out[unquote(folder)] = self._read_kind(folder)
            return out
        except Exception as exc:  # kazoo's errors, or a record that is not JSON
            raise StoreError(f"cannot read {self.root}: {exc!r}") from None

    def _read_kind(self, folder: str) -> dict[str, Record]:
        path = f"{self.root}/{folder}"
        names = self.client.get_children(path)
        pending = {name: self.client.get_async(f"{path}/{name}") for name in names}
        records: dict[str, Record] = {}
        for name, result in pending.items():
            data, stat = result.get()
            self._versions[f"{path}/{name}"] = stat.version
            records[unquote(name)] = json.loads(data)
        return records

    def _path(self, kind: str, key: str) -> str:
        return f"{self.root}/{encode_name(kind)}/{encode_name(key)}"

    def write(self, ops: Sequence[Op]) -> None:
        # The last op on a znode wins within one call (a versioned write of one znode twice in
        # a transaction would need the version of the first).
        last: dict[str, Op] = {}
        for op in ops:
            last[self._path(op.kind, op.key)] = op
        try:
            for op in last.values():
                folder = encode_name(op.kind)
                if isinstance(op, Put) and folder not in self._kinds:
                    self.client.ensure_path(f"{self.root}/{folder}")
                    self._kinds.add(folder)
            txn = self.fence.transaction()
            planned: list[tuple[str, str]] = []
            for path, op in last.items():
                version = self._versions.get(path)
                if isinstance(op, Put):
                    data = encode(op.record)
                    if version is None:
                        txn.create(path, data)
                        planned.append(("create", path))
                    else:
                        txn.set_data(path, data, version=version)
                        planned.append(("set", path))
                elif isinstance(op, Delete) and version is not None:
                    txn.delete(path, version=version)
                    planned.append(("delete", path))
            results = self.fence.commit(txn)
        except FencedOut as exc:
            raise Fenced(str(exc)) from None
        except StoreError:
            raise
        except Exception as exc:  # kazoo's: ZooKeeper could not be asked
            raise StoreError(f"cannot write {self.root}: {exc!r}") from None
        failed = [(p, r) for p, r in zip(planned, results, strict=True) if isinstance(r, Exception)]
        # The op that failed first, not those ZooKeeper rolled back with it.
        failed.sort(
            key=lambda f: type(f[1]).__name__ in ("RolledBackError", "RuntimeInconsistency")
        )
        if failed:
            (kind, path), error = failed[0]
            raise StoreError(
                f"cannot write {self.root}: {kind} {path}: {error!r} (was it changed by "
                "something other than this leader?)"
            )
        for (kind, path), result in zip(planned, results, strict=True):
            if kind == "create":
                self._versions[path] = 0
            elif kind == "set":
                self._versions[path] = result.version
            else:
                self._versions.pop(path, None)

    def close(self) -> None:
        """Nothing to release: the client belongs to the election."""
