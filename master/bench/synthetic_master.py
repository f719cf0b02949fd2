"""A real master (its gRPC and HTTP ports, runtime and loops; plain text) whose core is given N
agents by registration events, with no agent processes: the master's side at a size the load
generator cannot reach on one machine (issue #48: 50,000 agents), for `scripts/ui_bench.py
--synthetic` and the web UI's paging test.

The agents never heartbeat, so the agent timeouts are set past any run; they have zones
``z0``..``z9`` and racks, and Mesos' benchmark's shape (``cpus:24;mem:4096;disk:4096``).
"""

from __future__ import annotations

import hashlib

from corral.master.core import events as ev
from corral.master.core.config import MasterConfig
from corral.master.core.types import AgentSpec
from corral.master.server import RunningMaster, start_master
from corral.resources import parse_resources

SHAPE = "cpus:24;mem:4096;disk:4096"
BATCH = 5000  # registrations submitted before the core is let catch up (a bounded inbox)


def agent_id(i: int) -> str:
    """Agent ``i``'s id: registration order is not id order, as with real agents' random ids
    (a listing sorted by id must not be handed its order by the dict's)."""
    digest = hashlib.sha1(str(i).encode()).hexdigest()[:8]
    return f"agent-{digest}-{i:05d}"


async def master_with_agents(agents: int, zones: int = 10) -> RunningMaster:
    config = MasterConfig(agent_timeout=1e7, agent_reregister_timeout=1e7)
    master = await start_master(config, "127.0.0.1:0", "127.0.0.1:0", tls=None)
    rt = master.runtime
    resources = parse_resources(SHAPE)
    for i in range(agents):
        spec = AgentSpec(
            agent_id="",
            hostname=f"host-{i:05d}",
            resources=resources,
            attributes={"zone": f"z{i % zones}", "rack": f"r{i % 500}"},
        )
        rt.submit(
            ev.AgentRegister(
                stimulus_id=rt.stimulus("bench-agent"),
                now=rt.clock(),
                connection=10**8 + i,
                spec=spec,
                new_agent_id=agent_id(i),
            )
        )
        if i % BATCH == BATCH - 1:
            await rt.query(lambda core: len(core.agents))
    known = await rt.query(lambda core: len(core.agents))
    if known != agents:
        await master.stop()
        raise RuntimeError(f"{known} agents registered of {agents}")
    return master
