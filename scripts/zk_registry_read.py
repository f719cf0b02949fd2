"""Time a new leader's read of a ZooKeeper registry of N agents (docs/performance.md, "Master
failover at 50,000 agents"): a local ZooKeeper (Debian's package) is started, a first leader
writes N agent records as the master writes them, then a second leader fences and reads them
all, ``--reads`` times, each read's wall clock and CPU printed.

    .venv/bin/python scripts/zk_registry_read.py --agents 10000 --reads 3
"""

from __future__ import annotations

import argparse
import dataclasses
import tempfile
import time
from pathlib import Path

from kazoo.client import KazooClient

from corral.loadtest.zookeeper import LocalZooKeeper
from corral.master.core.durable import AgentEntry, PutAgent
from corral.master.core.types import AgentSpec
from corral.master.registry.zookeeper import ZooKeeperRegistry
from corral.resources import parse_resources

AGENT = AgentEntry(
    spec=AgentSpec(
        agent_id="",
        hostname="",
        resources=parse_resources("cpus:24;mem:4096;disk:4096;ports:[31000-31999]"),
        attributes={"zone": "b", "rack": "r7"},
    ),
    secret="s3cret-s3cret-s3cret",
    registered_at=100.0,
)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--agents", type=int, default=10_000)
    parser.add_argument("--reads", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp, LocalZooKeeper(Path(tmp) / "zk").start() as zk:
        client = KazooClient(hosts=zk.hosts, timeout=10.0)
        client.start(timeout=15)
        try:

            def leader() -> ZooKeeperRegistry:
                znode = client.create(
                    "/corral/json.info_", b"{}", ephemeral=True, sequence=True, makepath=True
                )
                registry = ZooKeeperRegistry(client, "/corral-registry", znode)
                registry.fence()
                return registry

            writer = leader()
            changes = [
                PutAgent(
                    dataclasses.replace(
                        AGENT,
                        spec=dataclasses.replace(
                            AGENT.spec, agent_id=f"agent-{i:06d}", hostname=f"node-{i}"
                        ),
                    )
                )
                for i in range(args.agents)
            ]
            started = time.perf_counter()
            for i in range(0, len(changes), 1000):  # a registration storm's loop turns
                writer.apply(changes[i : i + 1000])
            print(f"wrote {args.agents} agents in {time.perf_counter() - started:.1f} s")
            for _ in range(args.reads):
                reader = leader()
                wall, cpu = time.perf_counter(), time.process_time()
                state = reader.load()
                print(
                    f"read {len(state.agents)} agents: {time.perf_counter() - wall:.2f} s wall, "
                    f"{time.process_time() - cpu:.2f} s CPU"
                )
        finally:
            client.stop()
            client.close()


if __name__ == "__main__":
    main()
