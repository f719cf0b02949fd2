"""A highly available master (``corral master --zk zk://HOST:PORT/PATH``).

The process listens at once and joins the election (leadership.py). While another master leads
it is a standby: every call is answered with the leader's address (leader_gate.py), and it
decodes the agents' records of the registry ahead, every ``WARM_EVERY`` seconds when their
listing changed (registry/zookeeper.py, rule 4). When it is elected it fences the shared
ZooKeeper registry (the new epoch), reads it (decoding only what changed since), and starts the
runtime with that epoch, as a restarted single master starts from SQLite.
When its leadership ends (rule 3 of leadership.py) it halts at once, then exits with
``LEADERSHIP_LOST`` for its supervisor to start it again as a fresh candidate, as a Mesos master
does.
"""

from __future__ import annotations

import asyncio
import gc
import importlib.metadata
import signal
import socket
from dataclasses import dataclass
from pathlib import Path

from corral.acl import Acl
from corral.gc_tuning import MASTER, tune_gc
from corral.leader_record import master_info_json
from corral.logging import get_logger
from corral.master.allocator import AllocatorOptions
from corral.master.core.config import MasterConfig
from corral.master.ha.leader_gate import LeaderGate, http_middleware, mesos_middleware
from corral.master.ha.leadership import Contender
from corral.master.mesos_api.server import MesosApiOptions
from corral.master.registry import RegistryError
from corral.master.registry.zookeeper import DecodedAgents, ZooKeeperRegistry
from corral.master.security.tls import ServerTLS
from corral.master.server import RunningMaster, start_master, write_ready_file

log = get_logger("corral.master")

LEADERSHIP_LOST = 3  # the exit status of a master whose leadership ended
# How often a standby looks for agents' records to decode ahead: one ZooKeeper stat when nothing
# changed; while agents register, the records added since the last look.
WARM_EVERY = 5.0


@dataclass(frozen=True, slots=True)
class HaOptions:
    zk_hosts: str
    zk_path: str
    session_timeout: float = 10.0
    registry_path: str = ""  # default: zk_path + "-registry"
    advertise_host: str = ""  # default: the --grpc host, or this host's name for 0.0.0.0
    connect_timeout: float = 15.0

    @property
    def registry_root(self) -> str:
        return self.registry_path or f"{self.zk_path}-registry"


def _advertised(bound: str, host: str) -> str:
    bound_host, _, port = bound.rpartition(":")
    if not host:
        host = bound_host.strip("[]")
        if host in {"", "0.0.0.0", "::"}:
            host = socket.gethostname()
    return f"{host}:{port}"


def _version() -> str:
    try:
        return importlib.metadata.version("corral")
    except importlib.metadata.PackageNotFoundError:
        return "0"


async def serve_ha(
    config: MasterConfig,
    grpc_address: str,
    http_address: str,
    allocator: str,
    ready_file: Path | None,
    ha: HaOptions,
    allocator_options: AllocatorOptions | None = None,
    tls: ServerTLS | None = None,
    acl: Acl | None = None,
    acl_file: Path | None = None,
    mesos: MesosApiOptions | None = None,
) -> int:
    """Serve as a candidate, a standby and, once elected, the leader; 0 after SIGINT or
    SIGTERM, LEADERSHIP_LOST when the leadership ended, 1 when a loop of the runtime died."""
    tune_gc(MASTER)
    contender = Contender(ha.zk_hosts, ha.zk_path, ha.session_timeout, b"")
    await contender.connect(ha.connect_timeout)  # raises ZooKeeperUnreachable (an OSError)
    gate = LeaderGate(contender, "", "")
    try:
        master = await start_master(
            config,
            grpc_address,
            http_address,
            allocator,
            allocator_options=allocator_options,
            lead=False,
            interceptors=[gate],
            http_middlewares=[http_middleware(gate)],
            tls=tls,
            acl=acl,
            acl_file=acl_file,
            mesos=mesos,
            mesos_middlewares=[mesos_middleware(gate)],
        )
    except BaseException:
        await contender.close()
        raise
    runtime = master.runtime
    gate.master_id = runtime.master_id
    gate.grpc_address = _advertised(master.grpc_address, ha.advertise_host)
    http = _advertised(master.http_address, ha.advertise_host)

    def halt() -> None:
        gate.close()
        runtime.halt()

    contender.on_lost.append(halt)
    mesos_address = (
        _advertised(master.mesos.address, ha.advertise_host) if master.mesos is not None else ""
    )
    contender.info = master_info_json(
        runtime.master_id, gate.grpc_address, http, socket.gethostname(), _version(), mesos_address
    )
    try:
        await contender.join()
    except Exception as exc:
        await master.stop()
        await contender.close()
        raise OSError(f"cannot join the election at {ha.zk_hosts}{ha.zk_path}: {exc!r}") from None
    gc.freeze()
    write_ready_file(ready_file, master, znode=contender.znode)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    try:
        return await _serve(master, contender, gate, ha, stop)
    finally:
        await master.stop()
        await contender.close()  # a graceful stop deletes the znode: the next leads at once


async def _first(*events: asyncio.Event) -> None:
    waits = [asyncio.create_task(e.wait()) for e in events]
    try:
        await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for w in waits:
            w.cancel()


async def _keep_warm(registry: ZooKeeperRegistry) -> None:
    """A standby's: decode the registry's agents' records ahead (registry/zookeeper.py, rule 4).
    A failed warm-up costs only the time it would have saved: said, and tried again."""
    while True:
        try:
            await asyncio.to_thread(registry.warm)
        except RegistryError as exc:
            log.info("registry_warm_up_failed", error=str(exc))
        await asyncio.sleep(WARM_EVERY)


async def _serve(
    master: RunningMaster,
    contender: Contender,
    gate: LeaderGate,
    ha: HaOptions,
    stop: asyncio.Event,
) -> int:
    runtime = master.runtime
    decoded = DecodedAgents()
    ahead = ZooKeeperRegistry(contender.client, ha.registry_root, contender.znode, decoded)
    warming = asyncio.create_task(_keep_warm(ahead))
    try:
        await _first(stop, contender.elected, contender.lost)
    finally:
        warming.cancel()
    if stop.is_set():
        log.info("master_stopping", role=gate.role)
        return 0
    if contender.elected.is_set() and not contender.lost.is_set():
        gate.taking_over = True
        registry = ZooKeeperRegistry(contender.client, ha.registry_root, contender.znode, decoded)
        try:
            epoch = await asyncio.to_thread(registry.fence)
            runtime.registry = registry
            if contender.lost.is_set():
                return LEADERSHIP_LOST
            state = await runtime.read_registry()
            if contender.lost.is_set():
                return LEADERSHIP_LOST
            runtime.start(state, epoch)
            # What the registry held lives as long as the leadership: out of the collector's
            # way, as a single master's start-up is (server.py), before the agents come back
            # and the collections they bring walk it.
            gc.freeze()
        except RegistryError as exc:
            log.error("leadership_not_taken", error=str(exc))
            return LEADERSHIP_LOST
        gate.taking_over = False
        gate.open(epoch)
        log.info(
            "leading",
            master_id=runtime.master_id,
            epoch=epoch,
            znode=contender.znode,
            registry=registry.describe(),
            agents_decoded_ahead=decoded.reused,
        )
        await _first(stop, contender.lost, runtime.died)
    if runtime.died.is_set() and not contender.lost.is_set():
        log.error("master_failed", reason=runtime.death)
        return 1
    if contender.lost.is_set():
        log.error("master_exiting", reason=contender.lost_reason, exit_status=LEADERSHIP_LOST)
        return LEADERSHIP_LOST
    log.info("master_stopping", role=gate.role)
    return 0
