"""An unmodified pymesos (0.3.15) custom executor, run by a Corral agent as Mesos runs one
(tests/integration/test_mesos_api.py launches it through tests/integration/mesos_framework.py
--executor). It runs ``MesosExecutorDriver`` on the agent's ``/api/v1/executor``.

Its task: TASK_RUNNING at once, whose message is JSON of what it was given (its pid, Mesos'
environment variables, the task's data); then a task whose data is ``finish`` ends
TASK_FINISHED, the others run until killed (KILL: TASK_KILLED) or until the test kills this
process. Subscribed again (its agent restarted), it says so: TASK_RUNNING again, message
``reregistered``. A framework message is answered with a framework message ``echo:<data>``.
"""

from __future__ import annotations

import base64
import json
import os
import sys
from typing import Any

from pymesos import Executor, MesosExecutorDriver


def status(task: Any, state: str, message: str = "") -> dict[str, Any]:
    return {"task_id": task["task_id"], "state": state, "message": message}


class Program(Executor):  # type: ignore[misc]
    def __init__(self) -> None:
        self.tasks: list[Any] = []

    def reregistered(self, driver: Any, agent_info: Any) -> None:
        for task in self.tasks:
            driver.sendStatusUpdate(status(task, "TASK_RUNNING", "reregistered"))

    def launchTask(self, driver: Any, task: Any) -> None:
        self.tasks.append(task)
        data = base64.b64decode(task.get("data", "")).decode()
        given = {
            "pid": os.getpid(),
            "data": data,
            "executor_id": task["executor"]["executor_id"]["value"],
            "env": {k: v for k, v in os.environ.items() if k.startswith("MESOS_")},
        }
        driver.sendStatusUpdate(status(task, "TASK_RUNNING", json.dumps(given)))
        if data == "finish":
            driver.sendStatusUpdate(status(task, "TASK_FINISHED", "done"))

    def killTask(self, driver: Any, task_id: Any) -> None:
        driver.sendStatusUpdate({"task_id": task_id, "state": "TASK_KILLED", "message": "asked"})

    def frameworkMessage(self, driver: Any, message: Any) -> None:
        data = base64.b64decode(message).decode()
        driver.sendFrameworkMessage(base64.b64encode(f"echo:{data}".encode()).decode())


def main() -> int:
    driver = MesosExecutorDriver(Program())
    driver.run()
    return 0


if __name__ == "__main__":
    sys.exit(main())
