"""Command checks of an instance that runs in a container, run inside it through the Docker
engine's exec (Marathon's COMMAND checks of a Docker app run in the container too): the
command sees the container's files, environment and network, as the instance itself does.

The serving framework talks to the engine that runs the instance: ``DOCKER_HOST``, else the
engine's usual socket, as the agent's ``--docker-host`` defaults. So it must run on the
instance's host or reach its engine over ``tcp://``; where it cannot, the check fails with a
reason that says so (docs/frameworks.md).
"""

from __future__ import annotations

import json
import os

import aiodocker
import aiohttp

DEFAULT_HOST = "unix:///var/run/docker.sock"
LABEL_TASK = "corral.task"  # the agent labels each task's container (agent/executor_docker.py)
_ENGINE_ERRORS = (aiodocker.DockerError, aiohttp.ClientError, OSError)


def engine_url() -> str:
    return os.environ.get("DOCKER_HOST") or DEFAULT_HOST


async def run_in_container(task_id: str, command: str) -> tuple[bool, str]:
    """``/bin/sh -c command`` in the running container of task ``task_id``: (exit 0, why not).
    The caller bounds the time (health.check's timeout)."""
    url = engine_url()
    docker = aiodocker.Docker(url=url)
    try:
        boxes = await docker.containers.list(
            filters=json.dumps({"label": [f"{LABEL_TASK}={task_id}"], "status": ["running"]})
        )
        if not boxes:
            return False, f"no running container of task {task_id} on the engine at {url}"
        run = await boxes[0].exec(["/bin/sh", "-c", command], stdout=True, stderr=True)
        async with run.start(detach=False) as stream:
            while await stream.read_out() is not None:
                pass  # the output is not kept; the exit code is the answer
        code = (await run.inspect()).get("ExitCode")
    except _ENGINE_ERRORS as err:
        return False, f"the docker engine at {url}: {err}"
    finally:
        await docker.close()
    return (True, "") if code == 0 else (False, f"exit code {code} (in the container)")
