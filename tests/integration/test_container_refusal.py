"""A container task goes only to an agent that runs the docker containerizer (issue #43): the
master refuses it at Accept, naming the containerizer, on an agent that advertises only
``process``; the refused accept keeps its offer and launches nothing."""

from __future__ import annotations

from corral.frameworks import sdk
from corral.frameworks.sdk.testing import LocalCluster
from tests.integration.launching import Launcher


async def test_a_container_task_is_refused_on_an_agent_without_docker() -> None:
    image = sdk.task("boxed", ["true"], cpus=0.1, mem=16, container=sdk.docker("app:1.2.3"))
    plain = sdk.task("plain", "sleep 30", cpus=0.1, mem=16, task_id="plain")
    s = Launcher([image], [plain])
    cluster = LocalCluster(agents=1, master_args=("--allocation-interval", "0.2"))
    async with cluster as c, sdk.Driver(s, sdk.FrameworkInfo(name="containers"), master=c.master):
        await s.until("the container task refused", lambda: bool(s.refused))
        (refusal,) = s.refused
        assert refusal.code.name == "FAILED_PRECONDITION", refusal
        assert "'docker' containerizer" in refusal.message, refusal.message
        assert "app:1.2.3" in refusal.message and "runs only process" in refusal.message
        # An agent that runs processes only says nothing more (corral.containers rule 1); the
        # same offer then launches a process task.
        assert "containerizers" not in s.offers_seen[0].attributes
        await s.reaches("plain", "RUNNING")
        assert s.last(image.task_id) is None
