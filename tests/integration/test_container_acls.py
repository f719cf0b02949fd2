"""Which images, networks and host paths a tenant's container tasks may use (issue #43): the
ACL's ``frameworks.images`` globs, ``host_network`` and ``host_paths``, on a real master with
TLS principals. Refusals happen at Accept (PERMISSION_DENIED naming what was refused) before
anything reaches the agent; the agent's engine address leads nowhere, so no container runs."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from corral.frameworks import sdk
from corral.frameworks.sdk.testing import LocalCluster
from tests.integration.recording import WAIT
from tests.integration.test_security import cred, denied, make_pki

pytestmark = pytest.mark.e2e

ACLS = """
version: "containers-1"
rules:
  - name: operators
    cert_roles: [operator]
    operator: ["*"]
  - name: inference-team
    principals: [inference]
    frameworks:
      roles: [inference]
      images: ["registry.example.com/inference/*"]
      host_paths: [/srv/models]
  - name: batch-team
    principals: [batch]
    frameworks:
      roles: [batch]
      images: ["*"]
      host_network: true
  - name: nodes
    cert_roles: [agent]
    agents:
      attributes: {"*": ["*"]}
      max_resources: "cpus:64;mem:262144;disk:1000000"
"""


@pytest.fixture
async def cluster(tmp_path: Path) -> AsyncIterator[LocalCluster]:
    pki = await asyncio.to_thread(make_pki, tmp_path)
    acls = tmp_path / "acls.yaml"
    acls.write_text(ACLS)
    async with LocalCluster(
        agents=1,
        agent_resources="cpus:4;mem:1024;disk:100;ports:{ports}",
        work_dir=tmp_path / "cluster",
        master_args=("--tls-dir", str(pki / "master"), "--acls", str(acls)),
        agent_args=(
            *("--containerizers", "process,docker"),
            *("--docker-host", f"unix://{tmp_path}/no-engine.sock"),
        ),
        tls=cred(pki, "ops"),
        agent_tls=cred(pki, "node-1"),
    ) as c:
        c.pki = pki  # type: ignore[attr-defined]
        yield c


async def first_offer(driver: sdk.Driver) -> sdk.Offer:
    async with asyncio.timeout(WAIT):
        async for event in driver.events():
            if isinstance(event, sdk.OffersEvent) and event.offers:
                return event.offers[0]
    raise AssertionError("no offers")


def boxed(name: str, image: str, **docker: object) -> sdk.TaskInfo:
    return sdk.task(
        name,
        None,
        cpus=0.1,
        mem=16,
        task_id=name,
        container=sdk.docker(image, **docker),  # type: ignore[arg-type]
    )


async def test_images_host_network_and_host_paths_are_for_those_granted(
    cluster: LocalCluster,
) -> None:
    pki: Path = cluster.pki  # type: ignore[attr-defined]
    info = sdk.FrameworkInfo(name="inf", role="inference")
    async with sdk.Driver(None, info, cluster.master, tls=cred(pki, "inference")) as d:
        offer = await first_offer(d)
        message = await denied(
            d.launch([offer], [boxed("a", "docker.io/evil:1", network="bridge")])
        )
        assert "may not run image docker.io/evil:1" in message, message
        assert "deny by default" in message
        # A granted image on the host's network, which this tenant is not granted.
        mine = "registry.example.com/inference/server:2"
        message = await denied(d.launch([offer], [boxed("b", mine)]))
        assert "may not give task b the host's network" in message, message
        message = await denied(
            d.launch([offer], [boxed("c", mine, network="bridge", volumes=[("/etc", "/x")])])
        )
        assert "may not mount host path /etc into a container" in message, message
        # A path under the granted one, on the bridge, in a granted image: accepted.
        ok = boxed("d", mine, network="bridge", volumes=[("/srv/models/llama", "/models")])
        await d.launch([offer], [ok])
    batch = sdk.FrameworkInfo(name="b", role="batch")
    async with sdk.Driver(None, batch, cluster.master, tls=cred(pki, "batch")) as d:
        offer = await first_offer(d)
        message = await denied(
            d.launch([offer], [boxed("e", "any:1", volumes=[("/srv/models", "/m")])])
        )
        assert "may not mount host path /srv/models" in message, message
        await d.launch([offer], [boxed("f", "any:1")])  # any image, the host's network
