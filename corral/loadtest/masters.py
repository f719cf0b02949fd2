"""The load test's masters: one (its registry in memory, SQLite or ZooKeeper), or several in a
ZooKeeper election with a ZooKeeper it starts (``--masters N``), and the leader's failover when
``--kill-leader-at`` kills it: the time from its death to the new leader's first offers. A
single master (SQLite: nothing else can lead) is started again on its registry and its ports,
as a supervisor (systemd, Marathon) would restart it; the failover is then that restart's."""

from __future__ import annotations

import asyncio
import contextlib
import functools
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

import aiohttp

from corral.loadtest.master_http import MasterSession
from corral.loadtest.options import LoadTestOptions
from corral.loadtest.processes import Child, ProcessFailed, ProcessGroup
from corral.loadtest.zookeeper import LocalZooKeeper, ZooKeeperUnavailable


@dataclass
class Masters:
    """The started masters; ``spec`` is what agents and frameworks are given."""

    children: dict[str, tuple[Child, str, str]] = field(default_factory=dict)  # grpc, http
    spec: str = ""
    zookeeper: LocalZooKeeper | None = None
    leader: str = ""
    session: float = 0.0  # the masters' ZooKeeper session (seconds), when they share one
    start: Callable[..., Awaitable[tuple[Child, str, str]]] | None = None  # a master, as started

    @property
    def http(self) -> str:
        return self.children[self.leader][2]

    @property
    def pid(self) -> int:
        return self.children[self.leader][0].pid

    def close(self) -> None:
        if self.zookeeper is not None:
            self.zookeeper.stop()


async def start_masters(group: ProcessGroup, opts: LoadTestOptions) -> Masters:
    masters = Masters()
    # An explicit choice each: a master's default registry is the user's ~/.corral/master.
    extra: tuple[str, ...] = ("--registry", "memory")
    if opts.registry == "sqlite":
        extra = ("--work-dir", str(group.work_dir / "master-registry"))
    elif opts.registry == "zookeeper":
        masters.zookeeper = await _start_zookeeper(group)
        masters.spec = masters.zookeeper.url("/corral")
        masters.session = opts.zk_session_timeout
        extra = ("--zk", masters.spec, "--zk-session-timeout", f"{masters.session:g}")
    try:
        return await _start_masters(group, opts, masters, extra)
    except BaseException:
        masters.close()  # failed or stopped: the caller never gets it to close
        raise


async def _start_zookeeper(group: ProcessGroup) -> LocalZooKeeper:
    zookeeper = LocalZooKeeper(group.work_dir / "zookeeper")
    # In a thread (it waits for the server to answer); shielded, so that a stop meanwhile
    # (Ctrl-C, SIGTERM: the task is cancelled) waits for the start to end, then stops it.
    starting = asyncio.get_running_loop().run_in_executor(None, zookeeper.start)
    try:
        return await asyncio.shield(starting)
    except ZooKeeperUnavailable as exc:
        raise ProcessFailed(f"cannot start ZooKeeper for --masters: {exc}") from None
    except BaseException:
        try:
            with contextlib.suppress(Exception):
                await starting
        finally:
            zookeeper.stop()
        raise


async def _start_masters(
    group: ProcessGroup, opts: LoadTestOptions, masters: Masters, extra: tuple[str, ...]
) -> Masters:
    if opts.insecure:
        extra = (*extra, "--insecure")
    if opts.acls is not None:
        extra = (*extra, "--acls", opts.acls)
    masters.start = functools.partial(
        group.start_master,
        opts.allocation_interval,
        opts.launch_pacing,
        launch_latency_target=opts.launch_latency_target,
        extra=extra,
    )
    names = ["master"] if opts.masters == 1 else [f"master-{i}" for i in range(opts.masters)]
    for name in names:
        masters.children[name] = await masters.start(name=name)
    async with MasterSession() as session:
        masters.leader = await find_leader(session, masters, timeout=60.0)
    if not masters.spec:
        masters.spec = masters.children[masters.leader][1]
    return masters


async def _role(session: MasterSession, http: str) -> str:
    with contextlib.suppress(aiohttp.ClientError, TimeoutError, ValueError):
        async with session.get(http, "/health", 2) as r:
            return str((await r.json()).get("role", "leader"))  # a single master has no role
    return ""


async def find_leader(session: MasterSession, masters: Masters, timeout: float) -> str:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for name, (child, _, http) in masters.children.items():
            if child.process.returncode is None and await _role(session, http) == "leader":
                return name
        await asyncio.sleep(0.05)  # other processes' state: there is no event to await
    raise ProcessFailed(f"no master leads after {timeout:g} s")


async def _metric(session: MasterSession, http: str, name: str) -> float:
    """A master's metric ``name`` (0 when it does not answer)."""
    with contextlib.suppress(aiohttp.ClientError, TimeoutError):
        async with session.get(http, "/metrics", 2) as r:
            for line in (await r.text()).splitlines():
                if line.startswith(f"{name} "):
                    return float(line.split()[1])
    return 0.0


async def kill_leader(group: ProcessGroup, masters: Masters) -> dict[str, object]:
    """kill -9 the leader; return once another leads and has sent offers, with the times. A
    single master is started again on its registry and its addresses (agents and frameworks
    dial those again)."""
    old = masters.leader
    child, grpc, http = masters.children.pop(old)
    died = time.monotonic()
    await group.kill(child)
    if not masters.children:
        assert masters.start is not None  # set when the masters started
        masters.children[f"{old}-restarted"] = await masters.start(
            name=f"{old}-restarted", grpc=grpc, http=http
        )
    async with MasterSession() as session:
        masters.leader = await find_leader(session, masters, timeout=120.0)
        elected = time.monotonic() - died
        while await _metric(session, masters.http, "corral_offers_sent_total") <= 0:
            if time.monotonic() - died > 120.0:
                raise ProcessFailed(f"{masters.leader} leads but sent no offer in 120 s")
            await asyncio.sleep(0.02)  # another process's counter: no event to await
        failover = time.monotonic() - died
        read = await _metric(session, masters.http, "corral_registry_read_seconds")
    return {
        "killed": old,
        "new_leader": masters.leader,
        "elected_seconds": round(elected, 3),
        "failover_seconds": round(failover, 3),
        "registry_read_seconds": round(read, 3),
    }


def describe(result: dict[str, object], masters: Masters) -> str:
    how = f"ZooKeeper session {masters.session:g} s" if masters.zookeeper else "restarted"
    return (
        f"failover: {result['killed']} killed; {result['new_leader']} led after "
        f"{result['elected_seconds']} s (its registry read {result['registry_read_seconds']} s) "
        f"and offered after {result['failover_seconds']} s ({how})"
    )
