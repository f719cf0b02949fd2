"""The registry in ZooKeeper, shared by the masters of one cluster (``corral master --zk``).

Layout under the registry's root (by default the election path + ``-registry``: the election
path holds nothing but the contenders' znodes, as in Mesos):

    ROOT/epoch                  the leadership epoch, a decimal counter
    ROOT/agents/ID              an agent's entry        ROOT/frameworks/ID   a framework's
    ROOT/weights/ROLE           a role's weight         ROOT/quotas/ROLE     a role's quota
    ROOT/priority_classes/NAME  a class, or a deletion's tombstone, with its order

Names are percent-encoded. A record's data is ``N\\n`` then its first chunk (JSON; wire
messages inside as base64); a record over ``CHUNK`` bytes continues in N-1 children ``1``,
``2``... so no znode nears ZooKeeper's 1 MB limit.

Rules (the fence is the SDK's ``zk_election.Fence``, shared with the services' stores):
1. ``fence()`` makes this master the writer: one transaction checks that its election znode
   still exists and moves ``epoch`` up by one from the version read. The new number is the
   master's epoch.
2. Every ``apply`` is one transaction that checks ``epoch`` is still at the version this master
   left it and that its election znode exists, then writes each record with the version it was
   last written at. A master that lost its leadership (its znode went with its session) or was
   superseded (a newer leader fenced) writes nothing: the transaction fails whole and
   ``apply`` raises RegistryError, which stops the master.
3. A loop turn whose writes pass ``TXN_BYTES`` goes as several such transactions, in order,
   each fenced. A master that dies between two has made a prefix of the turn durable; since
   nothing the turn caused was sent or answered yet (durable.py, rule 4) that is the state of a
   master that died just after a smaller turn.
4. A standby keeps the agents' records decoded ahead (``warm``, into a ``DecodedAgents``): the
   read of the leader it becomes still reads every znode after its fence, but decodes only the
   records whose bytes differ from those it decoded (decoding was most of a 50,000-agent read:
   the wire checks of every agent's info). What it recovers is what ZooKeeper held when it
   read; the decoded copies only spare it decoding the same bytes twice.
"""

from __future__ import annotations

import base64
import json
import math
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote, unquote

from google.protobuf.message import DecodeError

from corral.master.core.durable import (
    AgentEntry,
    Change,
    FrameworkEntry,
    PutAgent,
    PutFramework,
    PutPriorityClass,
    PutQuota,
    PutWeight,
    RegistryState,
    RemoveAgent,
)
from corral.master.registry import maintenance_json, zk_multiread
from corral.master.registry.interface import RegistryError
from corral.master.registry.prune import MAX_REMOVED_FRAMEWORKS
from corral.master.wire.convert import (
    WireError,
    agent_spec_from_pb,
    agent_spec_to_pb,
    framework_spec_from_pb,
    framework_spec_to_pb,
)
from corral.priority import class_from_json
from corral.roles import Quota
from corral.v1 import common_pb2 as pb
from corral.zk_election import Fence, FencedOut

CHUNK = 256 * 1024  # bytes of a record per znode
TXN_BYTES = 512 * 1024  # bytes of records per transaction (ZooKeeper takes up to ~1 MB)
READ_BATCH = 500  # records a read request asks for (its answer: ~0.15 MB of agents' records)
CHUNK_READ_BATCH = 4  # a record's further chunks a read asks for (each up to CHUNK bytes)
KINDS = ("agents", "frameworks", "weights", "quotas", "priority_classes")


def encode_name(name: str) -> str:
    """A znode name for any id ("/" and "." encoded: neither may stand alone in a path)."""
    return quote(name, safe="").replace(".", "%2E")


@dataclass
class _Op:
    kind: str  # "create" | "set" | "delete"
    path: str
    data: bytes = b""
    version: int = -1


@dataclass
class _Batch:
    ops: list[_Op] = field(default_factory=list)
    size: int = 0


class DecodedAgents:
    """Agents' records decoded ahead by a standby (rule 4), by znode, each with the bytes it was
    decoded from; the lock keeps a warm-up and the takeover's read from overlapping."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.entries: dict[str, tuple[bytes, AgentEntry]] = {}
        self.listing_version = -1  # the agents' znode's cversion when last listed
        self.reused = 0  # records a read took from here instead of decoding them


class ZooKeeperRegistry:
    """One master's handle on the shared registry; ``client`` is a started KazooClient owned
    by the caller (the master's election uses the same session). ``decoded``: the agents'
    records its standby decoded ahead (rule 4)."""

    blocking = True  # waits on ZooKeeper: applied in a worker thread (interface.py)

    def __init__(
        self, client: Any, root: str, leader_znode: str, decoded: DecodedAgents | None = None
    ) -> None:
        self._client = client
        self._decoded = decoded
        self.root = root.rstrip("/")
        self.leader_znode = leader_znode
        self._fence = Fence(client, self.root, leader_znode)
        self.epoch = 0
        self._versions: dict[str, int] = {}  # record and chunk znodes -> version last written
        self._chunks: dict[str, int] = {}  # record znode -> chunk count
        self._removed: dict[str, float] = {}  # removed frameworks -> removed_at (pruning)
        self._pc_seq = 0
        self.transactions = 0  # commits (tests check a turn is one)

    def describe(self) -> str:
        hosts = getattr(self._client, "hosts", "")
        where = ",".join(f"{h}:{p}" for h, p in hosts) if isinstance(hosts, list) else hosts
        return f"zookeeper:{where}{self.root} (epoch {self.epoch})"

    def close(self) -> None:
        """Nothing to release: the client belongs to the master's election."""

    # --- rule 1: the fence ---------------------------------------------------------------------

    def fence(self) -> int:
        """Become the registry's one writer (rule 1); returns the new epoch."""
        from kazoo.exceptions import KazooException

        try:
            for kind in KINDS:
                self._client.ensure_path(f"{self.root}/{kind}")
            self.epoch = self._fence.fence()
        except FencedOut as exc:
            raise RegistryError(f"cannot fence the registry {self.root}: {exc}") from None
        except (KazooException, ValueError) as exc:
            raise RegistryError(f"cannot fence the registry {self.root}: {exc!r}") from None
        return self.epoch

    # --- reading -----------------------------------------------------------------------------

    def load(self) -> RegistryState:
        """Every record, read with a few multiRead requests (zk_multiread.py), not one request
        per znode: 50,000 agents are a hundred round trips. Blocking: a master calls it from a
        worker thread (``MasterRuntime.read_registry``), never from its event loop's."""
        decoded = self._decoded
        try:
            if decoded is None:
                return self._decode(self._read_all())
            with decoded.lock:
                state = self._decode(self._read_all())
                decoded.entries = {}  # they served their one takeover
                return state
        except RegistryError:
            raise
        except Exception as exc:  # kazoo's errors, or a record that does not decode
            raise RegistryError(f"cannot read the registry {self.root}: {exc!r}") from None

    def warm(self) -> int:
        """Decode the agents' records not decoded ahead yet (rule 4): a standby's, unfenced,
        read-only. Only when the agents' listing changed since the last time; returns how many
        records it decoded. Raises RegistryError (a record removed while it read: the next
        warm-up reads again)."""
        decoded = self._decoded
        if decoded is None:
            raise ValueError("warm() needs a DecodedAgents to keep what it decodes")
        where = f"{self.root}/agents"
        with decoded.lock:
            try:
                stat = self._client.exists(where)
                if stat is None or stat.cversion == decoded.listing_version:
                    return 0
                paths = {f"{where}/{name}" for name in self._client.get_children(where)}
                entries = decoded.entries
                for gone in entries.keys() - paths:
                    del entries[gone]
                heads = self._get_many(sorted(paths - entries.keys()))
                for path, (data, _) in heads.items():
                    count, _, body = data.partition(b"\n")
                    if int(count) == 1:  # (a chunked record is decoded when it is read)
                        entries[path] = (data, _agent_entry(json.loads(body)))
                decoded.listing_version = stat.cversion
                return len(heads)
            except RegistryError:
                raise
            except Exception as exc:
                raise RegistryError(f"cannot read the registry {self.root}: {exc!r}") from None

    def _read_all(self) -> dict[str, dict[str, Any]]:
        from kazoo.exceptions import NoNodeError

        listings = {k: self._client.get_children_async(f"{self.root}/{k}") for k in KINDS}
        records: dict[str, list[str]] = {}  # kind -> its records' znodes
        for kind, listing in listings.items():
            try:
                names = listing.get()
            except NoNodeError:
                names = []
            records[kind] = [f"{self.root}/{kind}/{name}" for name in names]
        heads = self._get_many([path for paths in records.values() for path in paths])
        counts: dict[str, int] = {}
        for path, (data, _) in heads.items():
            counts[path] = int(data.partition(b"\n")[0])
        rest = self._get_many(
            [f"{path}/{i}" for path, count in counts.items() for i in range(1, count)],
            batch=CHUNK_READ_BATCH,
        )
        ahead = self._decoded.entries if self._decoded is not None else {}
        raw: dict[str, dict[str, Any]] = {}
        for kind, paths in records.items():
            raw[kind] = {}
            for path in paths:
                data, stat = heads[path]
                self._versions[path] = stat.version
                known = ahead.get(path)
                if known is not None and known[0] == data and counts[path] == 1:
                    self._chunks[path] = 1
                    raw[kind][unquote(path.rsplit("/", 1)[1])] = known[1]  # rule 4
                    assert self._decoded is not None
                    self._decoded.reused += 1
                    continue
                parts = [data.partition(b"\n")[2]]
                for i in range(1, counts[path]):
                    part, pstat = rest[f"{path}/{i}"]
                    parts.append(part)
                    self._versions[f"{path}/{i}"] = pstat.version
                self._chunks[path] = counts[path]
                raw[kind][unquote(path.rsplit("/", 1)[1])] = json.loads(b"".join(parts))
        return raw

    def _get_many(self, paths: list[str], batch: int = READ_BATCH) -> dict[str, tuple[bytes, Any]]:
        """Each znode's data and stat, ``batch`` znodes a request, every request sent before
        the first answer is awaited (kazoo pipelines them on the one session). A znode that
        cannot be read fails the whole read, naming it."""
        from kazoo.exceptions import UnimplementedError

        if not paths:
            return {}
        batches = [paths[i : i + batch] for i in range(0, len(paths), batch)]
        pending = [zk_multiread.get_many_async(self._client, b) for b in batches]
        read: dict[str, tuple[bytes, Any]] = {}
        for batch_paths, answer in zip(batches, pending, strict=True):
            try:
                results = answer.get()
            except UnimplementedError:  # and the server drops the connection
                raise RegistryError(
                    f"cannot read the registry {self.root}: the ZooKeeper server has no "
                    "multiRead (ZooKeeper 3.6 or later is needed)"
                ) from None
            if len(results) != len(batch_paths):
                raise RegistryError(
                    f"cannot read the registry {self.root}: {len(results)} answers to a read "
                    f"of {len(batch_paths)} znodes"
                )
            for path, result in zip(batch_paths, results, strict=True):
                if isinstance(result, Exception):
                    raise RegistryError(f"cannot read the registry {self.root}: {path}: {result!r}")
                read[path] = result
        return read

    def _decode(self, raw: dict[str, dict[str, Any]]) -> RegistryState:
        try:
            agents = sorted(
                (
                    r if isinstance(r, AgentEntry) else _agent_entry(r)  # (rule 4)
                    for r in raw["agents"].values()
                ),
                key=lambda a: (a.registered_at, a.agent_id),
            )
            frameworks = sorted(
                (
                    FrameworkEntry(
                        spec=framework_spec_from_pb(pb.FrameworkInfo.FromString(_unb64(r["info"]))),
                        registered_at=float(r["registered_at"]),
                        disconnected_at=_opt_float(r.get("disconnected_at")),
                        removed_at=_opt_float(r.get("removed_at")),
                    )
                    for r in raw["frameworks"].values()
                ),
                key=lambda f: (f.registered_at, f.framework_id),
            )
            weights = tuple(
                sorted((role, float(r["weight"])) for role, r in raw["weights"].items())
            )
            quotas = tuple(
                sorted(
                    (role, _quota(r["guarantee"], r["limit"])) for role, r in raw["quotas"].items()
                )
            )
            ordered = sorted(raw["priority_classes"].items(), key=lambda kv: int(kv[1]["seq"]))
            classes = tuple(
                (name, None if r["body"] is None else class_from_json(r["body"]))
                for name, r in ordered
            )
        except (KeyError, TypeError, ValueError, DecodeError, WireError) as exc:
            raise RegistryError(f"cannot read the registry {self.root}: {exc!r}") from None
        self._removed = {f.framework_id: f.removed_at for f in frameworks if f.removed_at}
        self._pc_seq = max((int(r["seq"]) for _, r in ordered), default=0)
        return RegistryState(
            agents=tuple(agents),
            frameworks=tuple(frameworks),
            weights=weights,
            quotas=quotas,
            priority_classes=classes,
            extra={"registry_epoch": str(self.epoch)},
            durable=True,
        )

    # --- writing (rules 2 and 3) ----------------------------------------------------------------

    def apply(self, changes: Sequence[Change]) -> None:
        if self._fence.epoch_version < 0:
            raise RegistryError(
                f"the registry {self.root} was not fenced: this master is no leader"
            )
        # A record changed twice in one turn is written once, as it was last: two versioned
        # writes of one znode in one transaction would need the version of the first.
        latest: dict[str, dict[str, Any] | None] = {}
        pruned = False
        for change in changes:
            path, record = self._record(change)
            pruned |= isinstance(change, PutFramework) and change.entry.removed_at is not None
            latest[path] = record
        if pruned:
            for fw_id in self._to_forget():
                latest[f"{self.root}/frameworks/{encode_name(fw_id)}"] = None
        batches = [_Batch()]
        for path, record in latest.items():
            self._plan(batches, path, record)
        for batch in batches:
            if batch.ops:
                self._commit(batch)

    def _record(self, change: Change) -> tuple[str, dict[str, Any] | None]:
        """The znode of a change and its record (None: delete it)."""
        if isinstance(change, PutAgent):
            a = change.entry
            info = agent_spec_to_pb(a.spec, pb.AgentInfo()).SerializeToString()
            return self._path("agents", a.agent_id), {
                "info": _b64(info),
                "secret": a.secret,
                "registered_at": a.registered_at,
                "unreachable_at": a.unreachable_at,
                "maintenance": maintenance_json.to_json(a.maintenance),
            }
        if isinstance(change, RemoveAgent):  # pruned (pruning.py) or deleted by an operator
            return self._path("agents", change.agent_id), None
        if isinstance(change, PutFramework):
            f = change.entry
            if f.removed_at is not None:
                self._removed[f.framework_id] = f.removed_at
            info = framework_spec_to_pb(f.spec, pb.FrameworkInfo()).SerializeToString()
            return self._path("frameworks", f.framework_id), {
                "info": _b64(info),
                "registered_at": f.registered_at,
                "disconnected_at": f.disconnected_at,
                "removed_at": f.removed_at,
            }
        if isinstance(change, PutWeight):
            return self._path("weights", change.role), {"weight": change.weight}
        if isinstance(change, PutQuota):
            if change.quota.is_none():
                return self._path("quotas", change.role), None
            limit = [None if v == math.inf else v for v in change.quota.limit]
            return self._path("quotas", change.role), {
                "guarantee": list(change.quota.guarantee),
                "limit": limit,
            }
        self._pc_seq += 1
        body = change.priority_class.to_json() if isinstance(change, PutPriorityClass) else None
        return self._path("priority_classes", change.name), {"seq": self._pc_seq, "body": body}

    def _path(self, kind: str, name: str) -> str:
        return f"{self.root}/{kind}/{encode_name(name)}"

    def _to_forget(self) -> list[str]:
        removed = sorted((at, fw_id) for fw_id, at in self._removed.items())
        excess = len(removed) - MAX_REMOVED_FRAMEWORKS
        forget = [fw_id for _, fw_id in removed[:excess]] if excess > 0 else []
        for fw_id in forget:
            del self._removed[fw_id]
        return forget

    def _plan(self, batches: list[_Batch], path: str, record: dict[str, Any] | None) -> None:
        """The operations that make ``path`` hold ``record`` (or not exist), added to the last
        batch, or to a new one when the last is full (rule 3)."""
        ops: list[_Op] = []
        old = self._chunks.get(path, 0)
        if record is None:
            if not old:
                return
            ops += [_Op("delete", f"{path}/{i}") for i in range(old - 1, 0, -1)]
            ops.append(_Op("delete", path))
        else:
            data = json.dumps(record, separators=(",", ":")).encode()
            chunks = [data[i : i + CHUNK] for i in range(0, len(data), CHUNK)] or [b""]
            count = len(chunks)
            names = [path] + [f"{path}/{i}" for i in range(1, count)]
            bodies = [f"{count}\n".encode() + chunks[0], *chunks[1:]]
            for i, (name, body) in enumerate(zip(names, bodies, strict=True)):
                ops.append(_Op("set" if i < old else "create", name, body))
            ops += [_Op("delete", f"{path}/{i}") for i in range(old - 1, count - 1, -1)]
        batch = batches[-1]
        size = sum(len(op.data) + len(op.path) for op in ops)
        if batch.ops and batch.size + size > TXN_BYTES:
            batch = _Batch()
            batches.append(batch)
        batch.ops += ops
        batch.size += size

    def _commit(self, batch: _Batch) -> None:
        from kazoo.exceptions import KazooException

        txn = self._fence.transaction()  # rule 2's two checks first
        for op in batch.ops:
            if op.kind == "create":
                txn.create(op.path, op.data)
            elif op.kind == "set":
                txn.set_data(op.path, op.data, version=self._versions.get(op.path, -1))
            else:
                txn.delete(op.path, version=self._versions.get(op.path, -1))
        try:
            results = self._fence.commit(txn)
        except KazooException as exc:
            raise RegistryError(f"cannot write the registry {self.root}: {exc!r}") from None
        except FencedOut as exc:
            self.transactions += 1
            if exc.superseded:
                raise RegistryError(
                    f"fenced: another master leads now (the registry {self.root} is past epoch "
                    f"{self.epoch})"
                ) from None
            raise RegistryError(
                f"fenced: this master's election znode {self.leader_znode} is gone (its "
                "ZooKeeper session expired): it no longer leads"
            ) from None
        self.transactions += 1
        failed = [(op, r) for op, r in zip(batch.ops, results, strict=True) if _failed(r)]
        if failed:
            op, error = failed[0]
            raise RegistryError(
                f"cannot write the registry {self.root}: {op.kind} {op.path}: {error!r} (was it "
                "changed by something other than this master?)"
            )
        for op, result in zip(batch.ops, results, strict=True):
            if op.kind == "create":
                self._versions[op.path] = 0
            elif op.kind == "set":
                self._versions[op.path] = result.version
            else:
                self._versions.pop(op.path, None)
            if "/" not in op.path[len(self.root) + 1 :].split("/", 1)[1]:  # a record's own node
                if op.kind == "delete":
                    self._chunks.pop(op.path, None)
                else:
                    self._chunks[op.path] = int(op.data.partition(b"\n")[0])


def _agent_entry(r: dict[str, Any]) -> AgentEntry:
    """An agent's record as read (its JSON); raises what a damaged record raises."""
    return AgentEntry(
        spec=agent_spec_from_pb(pb.AgentInfo.FromString(_unb64(r["info"]))),
        secret=str(r["secret"]),
        registered_at=float(r["registered_at"]),
        unreachable_at=_opt_float(r.get("unreachable_at")),
        maintenance=maintenance_json.from_json(r.get("maintenance")),
    )


def _failed(result: Any) -> bool:
    return isinstance(result, Exception)


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def _unb64(text: Any) -> bytes:
    return base64.b64decode(str(text), validate=True)


def _opt_float(value: Any) -> float | None:
    return None if value is None else float(value)


def _quota(guarantee: Any, limit: Any) -> Quota:
    g = [float(v) for v in guarantee]
    lim = [math.inf if v is None else float(v) for v in limit]
    if len(g) != 4 or len(lim) != 4:
        raise ValueError(f"a quota has {len(g)} and {len(lim)} amounts, not 4 and 4")
    return Quota(guarantee=(g[0], g[1], g[2], g[3]), limit=(lim[0], lim[1], lim[2], lim[3]))
