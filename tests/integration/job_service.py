"""A real `corral jobs serve` process for tests (the serving service's harness with the job
service's commands)."""

from __future__ import annotations

from typing import Any

from tests.integration.serving_service import ServingProcess, until, until_async

__all__ = ["JobsProcess", "until", "until_async"]


class JobsProcess(ServingProcess):
    serve_command = ("jobs", "serve")
    client_command = ("job",)
    url_flag = "--jobs"

    async def job(self, name: str) -> Any:
        return await self.ok("GET", f"/v1/jobs/{name}")

    async def phase(self, name: str) -> str:
        return str((await self.job(name))["phase"])

    async def wait_phase(self, name: str, *phases: str, timeout: float = 60) -> Any:
        async def check() -> Any:
            j = await self.job(name)
            return j if j["phase"] in phases else None

        return await until_async(
            check, timeout, f"job {name} to be {' or '.join(phases)}", self.logs
        )
