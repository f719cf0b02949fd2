"""An unmodified pymesos (0.3.15) framework, run as a program by tests/integration/
test_mesos_api.py against a Corral master's Mesos API: what happens to it goes to stdout as
JSON lines, and it takes commands on stdin, one a line, so a test drives it step by step.

    python mesos_framework.py --master HOST:PORT --principal P --secret S [--name N]
        [--role R] [--tasks K] [--cpus C] [--mem M] [--command CMD] [--framework-id ID]
        [--refuse SECONDS] [--executor PROGRAM --data D1,D2,... [--shared-executor]
        [--executor-cpus C]] [--group]

It launches ``--tasks`` command tasks from its first offers (``cpus``/``mem`` each) and
declines every other offer (with --refuse's filter; none: the master's default). With
--executor, each task is run by a custom executor (ExecutorInfo) of its own: the Python program
PROGRAM (tests/integration/mesos_executor.py), with the task's data the next of --data; with
--shared-executor every task names the one executor id NAME-executor (Mesos runs them in one
executor process), with --executor-cpus the executor's own resources. With --group, the tasks
of an offer go as one LAUNCH_GROUP (Mesos' default executor) instead.
Commands: ``kill TASK``, ``reconcile [TASK...]`` (none: implicit), ``decline-filter SECONDS``
(decline what is offered from now on with that refuse filter), ``revive``, ``suppress``,
``launch K`` (K more tasks), ``stop`` (tear down), ``failover`` (stop without tearing down:
the framework stays for a new process to take over with --framework-id), ``message TASK DATA``
(a framework message to the task's executor).

Lines written: {"event": "registered", "framework_id": ...}, {"event": "offers", "offers": [
{"id", "agent_id", "hostname", "resources", "attributes"}]}, {"event": "update", "task_id",
"state", "reason", "source", "message", "has_uuid"}, {"event": "launched", "task_ids": [...]},
{"event": "error", "message"}, {"event": "message", "executor_id", "agent_id", "data"},
{"event": "agent_lost", "agent_id"} (slaveLost), {"event": "executor_lost", "executor_id",
"agent_id", "status"} (executorLost), {"event": "stopped"}.
"""

from __future__ import annotations

import argparse
import base64
import json
import sys
import threading
from typing import Any

from pymesos import MesosSchedulerDriver, Scheduler


def emit(**fields: Any) -> None:
    sys.stdout.write(json.dumps(fields) + "\n")
    sys.stdout.flush()


def scalar(name: str, value: float) -> dict[str, Any]:
    return {"name": name, "type": "SCALAR", "scalar": {"value": value}}


class Program(Scheduler):  # type: ignore[misc]
    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self.lock = threading.Lock()
        self.to_launch = args.tasks
        self.launched = 0
        self.refuse: float | None = args.refuse
        self.agents: dict[str, Any] = {}  # task id: the agent its executor runs on

    def registered(self, driver: Any, framework_id: Any, master_info: Any) -> None:
        emit(event="registered", framework_id=framework_id["value"], master=dict(master_info))

    def reregistered(self, driver: Any, master_info: Any) -> None:
        emit(event="reregistered", framework_id=driver.framework_id)

    def resourceOffers(self, driver: Any, offers: list[Any]) -> None:
        emit(
            event="offers",
            offers=[
                {
                    "id": o["id"]["value"],
                    "agent_id": o["agent_id"]["value"],
                    "hostname": o["hostname"],
                    "resources": o["resources"],
                    "attributes": o.get("attributes", []),
                }
                for o in offers
            ],
        )
        for offer in offers:
            with self.lock:
                cpus = sum(r["scalar"]["value"] for r in offer["resources"] if r["name"] == "cpus")
                mem = sum(r["scalar"]["value"] for r in offer["resources"] if r["name"] == "mem")
                tasks = []
                while (
                    self.to_launch > 0
                    and cpus >= self.args.cpus - 1e-9
                    and mem >= self.args.mem - 1e-9
                ):
                    self.launched += 1
                    self.to_launch -= 1
                    cpus -= self.args.cpus
                    mem -= self.args.mem
                    task_id = f"{self.args.name}-{self.launched}"
                    task: dict[str, Any] = {
                        "name": task_id,
                        "task_id": {"value": task_id},
                        "agent_id": offer["agent_id"],
                        "resources": [
                            scalar("cpus", self.args.cpus),
                            scalar("mem", self.args.mem),
                        ],
                    }
                    if self.args.executor:
                        data = self.args.data.split(",")[self.launched - 1]
                        task["data"] = base64.b64encode(data.encode()).decode()
                        executor_id = (
                            f"{self.args.name}-executor"
                            if self.args.shared_executor
                            else f"{task_id}-executor"
                        )
                        task["executor"] = {
                            "executor_id": {"value": executor_id},
                            "name": "test executor",
                            "command": {
                                "shell": False,  # its process is the executor's own
                                "value": sys.executable,
                                "arguments": [sys.executable, self.args.executor],
                            },
                        }
                        if self.args.executor_cpus:
                            task["executor"]["resources"] = [
                                scalar("cpus", self.args.executor_cpus)
                            ]
                        self.agents[task_id] = offer["agent_id"]
                    else:
                        task["command"] = {"value": self.args.command}
                    tasks.append(task)
                refuse = self.refuse
            if tasks and self.args.group:  # one task group, for Mesos' default executor
                executor = {"type": "DEFAULT", "executor_id": {"value": "group-executor"}}
                group = {"executor": executor, "task_group": {"tasks": tasks}}
                driver.acceptOffers(
                    [offer["id"]], [{"type": "LAUNCH_GROUP", "launch_group": group}]
                )
                emit(event="launched", task_ids=[t["task_id"]["value"] for t in tasks])
            elif tasks:
                driver.launchTasks(offer["id"], tasks)
                emit(event="launched", task_ids=[t["task_id"]["value"] for t in tasks])
            elif refuse is not None:
                driver.declineOffer(offer["id"], {"refuse_seconds": refuse})
                emit(event="declined", offer_id=offer["id"]["value"], refuse_seconds=refuse)
            else:
                driver.declineOffer(offer["id"])
                emit(event="declined", offer_id=offer["id"]["value"], refuse_seconds=None)

    def offerRescinded(self, driver: Any, offer_id: Any) -> None:
        emit(event="rescinded", offer_id=offer_id["value"])

    def statusUpdate(self, driver: Any, update: Any) -> None:
        emit(
            event="update",
            task_id=update["task_id"]["value"],
            state=update["state"],
            reason=update.get("reason"),
            source=update.get("source"),
            message=update.get("message", ""),
            agent_id=update.get("agent_id", {}).get("value"),
            has_uuid="uuid" in update,
        )

    def frameworkMessage(self, driver: Any, executor_id: Any, agent_id: Any, data: str) -> None:
        emit(
            event="message",
            executor_id=executor_id["value"],
            agent_id=agent_id["value"],
            data=base64.b64decode(data).decode(),
        )

    def slaveLost(self, driver: Any, agent_id: Any) -> None:
        emit(event="agent_lost", agent_id=agent_id["value"])

    def executorLost(self, driver: Any, executor_id: Any, agent_id: Any, status: int) -> None:
        emit(
            event="executor_lost",
            executor_id=executor_id["value"],
            agent_id=agent_id["value"],
            status=status,
        )

    def error(self, driver: Any, message: str) -> None:
        emit(event="error", message=message)


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--master", required=True)
    p.add_argument("--principal")
    p.add_argument("--secret")
    p.add_argument("--name", default="pymesos")
    p.add_argument("--role", default="")
    p.add_argument("--tasks", type=int, default=0)
    p.add_argument("--cpus", type=float, default=0.1)
    p.add_argument("--mem", type=float, default=32.0)
    p.add_argument("--command", default="sleep 300")
    p.add_argument("--framework-id", default="")
    p.add_argument("--failover-timeout", type=float, default=0.0)
    p.add_argument("--refuse", type=float, default=None, help="decline with this filter")
    p.add_argument("--executor", default="", help="run each task by this executor program")
    p.add_argument("--data", default="", help="the tasks' data, comma-separated, in order")
    p.add_argument(
        "--shared-executor", action="store_true", help="every task names one executor id"
    )
    p.add_argument("--executor-cpus", type=float, default=0.0, help="the executor's own cpus")
    p.add_argument("--group", action="store_true", help="launch as one LAUNCH_GROUP")
    args = p.parse_args()
    framework: dict[str, Any] = {"user": "", "name": args.name, "hostname": "localhost"}
    if args.role:
        framework["roles"] = [args.role]
        framework["capabilities"] = [{"type": "MULTI_ROLE"}]
    if args.framework_id:
        framework["id"] = {"value": args.framework_id}
    if args.failover_timeout:
        framework["failover_timeout"] = args.failover_timeout
    program = Program(args)
    driver = MesosSchedulerDriver(
        program, framework, args.master, principal=args.principal, secret=args.secret
    )
    driver.start()
    # Commands on a thread of their own: the main thread waits in join(), which returns when
    # the driver stops (a command) or aborts (pymesos then interrupts the main thread).
    threading.Thread(target=commands, args=(driver, program), daemon=True).start()
    driver.join()
    emit(event="stopped")
    return 0


def commands(driver: Any, program: Program) -> None:
    for line in sys.stdin:
        words = line.split()
        if not words:
            continue
        verb, rest = words[0], words[1:]
        if verb == "kill":
            driver.killTask({"value": rest[0]})
        elif verb == "reconcile":
            driver.reconcileTasks([{"task_id": {"value": t}} for t in rest])
        elif verb == "decline-filter":
            with program.lock:
                program.refuse = float(rest[0])
        elif verb == "revive":
            driver.reviveOffers()
        elif verb == "suppress":
            driver.suppressOffers()
        elif verb == "launch":
            with program.lock:
                program.to_launch += int(rest[0])
            driver.reviveOffers()
        elif verb == "message":
            task_id, data = rest
            driver.sendFrameworkMessage(
                {"value": f"{task_id}-executor"},
                program.agents[task_id],
                base64.b64encode(data.encode()).decode(),
            )
        elif verb == "stop":
            driver.stop()
            return
        elif verb == "failover":
            driver.stop(failover=True)
            return
        emit(event="done", command=line.strip())


if __name__ == "__main__":
    sys.exit(main())
