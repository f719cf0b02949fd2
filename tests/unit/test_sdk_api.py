"""Pins the SDK's public surface and keeps the tutorial honest.

Changing ``__all__`` is an API change: update this list on purpose, and docs/sdk.md with it.
"""

from __future__ import annotations

import ast
import inspect
import re
import subprocess
import sys
from pathlib import Path

import corral.frameworks.sdk
import corral.frameworks.sdk.testing
from corral.frameworks import sdk

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "frameworks" / "examples" / "hello.py"
DOC = ROOT / "docs" / "sdk.md"


def test_public_api_is_pinned() -> None:
    assert corral.frameworks.sdk.__all__ == [
        "DEFAULT_MASTER",
        "DISRUPTIONS",
        "INSECURE",
        "TERMINAL_STATES",
        "TLS",
        "AgentLossReason",
        "AgentLost",
        "AgentsLostEvent",
        "Backoff",
        "CallError",
        "ConnectError",
        "Constraint",
        "ContainerInfo",
        "Demand",
        "DemandSync",
        "DisconnectedEvent",
        "Driver",
        "DriverError",
        "DriverEvent",
        "ErrorEvent",
        "ExecutorTerminated",
        "ExecutorTerminatedEvent",
        "FrameworkCapability",
        "FrameworkError",
        "FrameworkInfo",
        "Insecure",
        "NoCredentials",
        "NotSubscribedError",
        "Offer",
        "OfferPacker",
        "OfferView",
        "OffersEvent",
        "PendingDemand",
        "Placer",
        "Principal",
        "ReasonName",
        "RescindEvent",
        "Resources",
        "ReviewResult",
        "Reviewer",
        "Rule",
        "Scheduler",
        "Spread",
        "StateName",
        "StatusPublisher",
        "StatusView",
        "StopSignals",
        "SubscribedEvent",
        "TLSError",
        "TaskInfo",
        "TaskReason",
        "TaskState",
        "TaskStatus",
        "Toleration",
        "UpdateEvent",
        "binpack_order",
        "configure_logging",
        "docker",
        "fits",
        "how_many_fit",
        "is_disruption",
        "is_terminal",
        "new_task_id",
        "place_gang",
        "qos_class",
        "spread_candidates",
        "spread_order",
        "state_name",
        "task",
        "view",
        "where",
        "why_pending",
    ]
    assert corral.frameworks.sdk.testing.__all__ == [
        "FakeMaster",
        "LocalCluster",
        "RecordedCall",
        "free_port",
    ]
    for name in corral.frameworks.sdk.__all__:
        assert hasattr(corral.frameworks.sdk, name), name


def test_driver_calls_are_pinned() -> None:
    calls = {
        name: str(inspect.signature(getattr(sdk.Driver, name)))
        for name in (
            "launch",
            "decline",
            "suppress",
            "revive",
            "kill",
            "reconcile",
            "teardown",
            "stop",
            "wait",
            "events",
        )
    }
    assert calls == {
        "launch": "(self, offers: 'Sequence[Offer | str]', tasks: 'Sequence[TaskInfo]', "
        "refuse_seconds: 'float | None' = None, *, "
        "on_refused: 'Callable[[CallError], None] | None' = None) -> 'None'",
        "decline": "(self, offers: 'Sequence[Offer | str]', refuse_seconds: 'float | None' = None)"
        " -> 'None'",
        "suppress": "(self) -> 'None'",
        "revive": "(self) -> 'None'",
        "kill": (
            "(self, task_id: 'str', agent_id: 'str' = '', grace: 'float | None' = None, *, "
            "preempted: 'str | None' = None)"
            " -> 'None'"
        ),
        "reconcile": "(self, tasks: 'Iterable[tuple[str, str]]' = ()) -> 'None'",
        "teardown": "(self) -> 'None'",
        "stop": "(self) -> 'None'",
        "wait": "(self) -> 'None'",
        "events": "(self) -> 'AsyncIterator[DriverEvent]'",
    }


def test_scheduler_callbacks_are_the_documented_eight() -> None:
    callbacks = [n for n, v in vars(sdk.Scheduler).items() if inspect.iscoroutinefunction(v)]
    assert callbacks == [
        "subscribed",
        "offers",
        "rescinded",
        "status",
        "error",
        "agents_lost",
        "executor_terminated",
        "disconnected",
    ]


def test_docs_example_is_byte_identical_to_the_example_file() -> None:
    text = DOC.read_text()
    marker = "<!-- example: frameworks/examples/hello.py"
    assert marker in text, "docs/sdk.md lost the example marker"
    after = text[text.index(marker) :]
    match = re.search(r"```python\n(.*?)```", after, re.DOTALL)
    assert match is not None, "no python block after the example marker in docs/sdk.md"
    assert match.group(1) == EXAMPLE.read_text()


def test_example_uses_only_the_public_sdk() -> None:
    tree = ast.parse(EXAMPLE.read_text())
    imported = {
        (node.module, alias.name)
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom)
        for alias in node.names
    }
    assert imported == {("corral.frameworks", "sdk")}
    used = {
        node.attr
        for node in ast.walk(tree)
        if isinstance(node, ast.Attribute)
        and isinstance(node.value, ast.Name)
        and node.value.id == "sdk"
    }
    assert used <= set(corral.frameworks.sdk.__all__), used - set(corral.frameworks.sdk.__all__)


# The exceptions: the ZooKeeper detector and the election (masters' and services') import kazoo
# inside their functions, so only a process given a zk:// URL needs it (the `ha` extra).
LAZY_IMPORTS = {("zk_detector.py", "kazoo"), ("zk_election.py", "kazoo")}


def _lazy_imports(tree: ast.Module) -> set[int]:
    """Ids of the import nodes inside a function's body."""
    inside: set[int] = set()
    for fn in ast.walk(tree):
        if isinstance(fn, ast.FunctionDef | ast.AsyncFunctionDef):
            inside |= {id(n) for n in ast.walk(fn) if isinstance(n, ast.Import | ast.ImportFrom)}
    return inside


# The kernel modules the SDK shares with the master and the agent (and re-exports under its old
# names): held to the SDK's own rule, since a base install imports them.
SHARED_KERNEL = (
    "leader_record",
    "broadcast",
    "wakeup",
    "detector",
    "zk_detector",
    "zk_election",
    "tls",
    "shared_channels",
    "json_input",
    "logging",
)


def test_sdk_imports_only_the_wire_contract_resources_grpc_structlog_and_the_stdlib() -> None:
    allowed_roots = {"corral", "grpc", "structlog"}
    shared = [ROOT / "corral" / f"{name}.py" for name in SHARED_KERNEL]
    for path in [*(ROOT / "frameworks" / "sdk").rglob("*.py"), *shared]:
        tree = ast.parse(path.read_text())
        lazy = _lazy_imports(tree)
        for node in ast.walk(tree):
            names: list[str] = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            for name in names:
                root = name.split(".")[0]
                if root == "corral":
                    # corral.resources: the one fit test and tolerance, shared with the master
                    # (numpy-free; tests/unit/test_resource_fit.py imports it without numpy).
                    kernel = name.removeprefix("corral.")
                    assert (
                        name == "corral.resources"
                        or kernel in SHARED_KERNEL
                        or name.startswith(("corral.v1", "corral.frameworks.sdk"))
                    ), f"{path}: imports {name}"
                elif (path.name, root) in LAZY_IMPORTS:
                    assert id(node) in lazy, f"{path}: imports {name} at the top, not lazily"
                elif root not in allowed_roots:
                    assert root in sys.stdlib_module_names, f"{path}: imports {name}"


def test_importing_the_sdk_and_making_a_static_detector_does_not_import_kazoo() -> None:
    code = (
        "import sys, asyncio\n"
        "from corral.frameworks import sdk\n"
        "from corral.frameworks.sdk.detector import make_detector, parse_master\n"
        "d = make_detector(parse_master('127.0.0.1:1,127.0.0.1:2'))\n"
        "assert asyncio.run(d.leader()) == '127.0.0.1:1'\n"
        "print('kazoo' in sys.modules)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    )
    assert out.stdout.strip() == "False", out
