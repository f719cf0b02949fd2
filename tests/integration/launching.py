"""A scheduler that launches its batches of tasks on the next offers and records what the
master answered (refusals included): shared by the container tests (issue #43)."""

from __future__ import annotations

from collections.abc import Sequence

from corral.frameworks import sdk
from tests.integration.recording import RecordingScheduler


class Launcher(RecordingScheduler):
    """Launches each batch of ``todo`` on the next offer (one agent here); a refused accept is
    recorded in ``refused`` and its offer declined; other offers are declined for a moment."""

    def __init__(self, *batches: Sequence[sdk.TaskInfo]) -> None:
        super().__init__()
        self.todo = [list(b) for b in batches]
        self.refused: list[sdk.CallError] = []
        self.offers_seen: list[sdk.Offer] = []

    def add(self, *tasks: sdk.TaskInfo) -> None:
        self.todo.append(list(tasks))

    async def offers(self, driver: sdk.Driver, offers: list[sdk.Offer]) -> None:
        self.offers_seen += offers
        self.changed.set()
        for offer in offers:
            if self.todo and self.todo[0]:
                try:
                    await driver.launch([offer], self.todo.pop(0), refuse_seconds=0.3)
                except sdk.CallError as exc:
                    self.refused.append(exc)
                    self.changed.set()
                    await driver.decline([offer], refuse_seconds=0)
            else:
                await driver.decline([offer], refuse_seconds=0.3)

    def state_of(self, task_id: str) -> str:
        last = self.last(task_id)
        return sdk.state_name(last.state) if last is not None else ""

    async def reaches(self, task_id: str, state: str, timeout: float = 60.0) -> sdk.StatusView:
        await self.until(
            f"task {task_id} {state} (now {self.state_of(task_id) or 'no status'})",
            lambda: self.state_of(task_id) == state,
            timeout,
        )
        last = self.last(task_id)
        assert last is not None
        return sdk.view(last)
