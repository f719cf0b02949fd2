"""The serving service's parts without a master: the app JSON round trip, readiness in the
instance model, the deployment's rules, the SQLite store (a real file), the store lock, and the
proxy blocks `corral app endpoints` writes."""

from __future__ import annotations

import random
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from corral.cli import app_client
from corral.frameworks.service.store_lock import StoreLock, StoreLocked
from corral.frameworks.serving.app import AppError, AppSpec
from corral.frameworks.serving.deployment import Deployment, rolled_out
from corral.frameworks.serving.instances import Instance, Instances
from corral.frameworks.serving.store import DeploymentRecord, Store


def spec(**fields: object) -> AppSpec:
    return AppSpec.from_json({"id": "web", "command": "./serve", "ports": 1, **fields})


def test_an_app_reads_back_from_its_json_whole() -> None:
    s = spec(
        instances=3,
        env={"A": "1"},
        constraints=[["hostname", "UNIQUE"], ["zone", "MAX_PER", "2"]],
        spread={"topology_key": "zone", "max_skew": 2, "when_unsatisfiable": "ScheduleAnyway"},
        tolerations=[{"key": "spot", "operator": "Exists", "effect": "NoSchedule"}],
        health_check={"protocol": "TCP", "interval": 1},
        readiness_check={"path": "/ready", "interval": 0.5},
        upgrade={"failure_threshold": 5, "progress_deadline": 30},
        kill_grace_period=3,
    )
    assert AppSpec.from_json(s.to_json()) == s


def test_readiness_checks_are_checked_like_health_checks() -> None:
    with pytest.raises(AppError, match=r"readiness_check\.port_index: 1 needs ports >= 2"):
        spec(readiness_check={"port_index": 1})
    with pytest.raises(AppError, match="readiness_check: unknown field 'grace_period'"):
        spec(readiness_check={"grace_period": 3})
    with pytest.raises(AppError, match=r"upgrade\.failure_threshold"):
        spec(upgrade={"failure_threshold": -1})


def test_a_restart_generation_makes_a_new_version_of_the_same_app() -> None:
    import dataclasses

    s = spec()
    assert dataclasses.replace(s, restart_generation=1).version != s.version
    assert dataclasses.replace(s, restart_generation=0).version == s.version
    assert "restart_generation" not in s.to_json()


def running(app: Instances, task_id: str, version: str, now: float = 0.0) -> Instance:
    i = Instance(task_id, version, "a1", {"hostname": "h"}, [31000], now)
    app.add(i)
    app.running(task_id, now)
    return i


def test_with_a_readiness_check_only_ready_instances_are_endpoints_and_count_for_a_step() -> None:
    app = Instances(spec(instances=1, readiness_check={"path": "/ready"}), random.Random(0))
    old = running(app, "old", "v0")
    old.ready = True
    new = running(app, "new", app.spec.version)
    assert [e.task_id for e in app.endpoints()] == ["old"]
    # minimum_health_capacity 1: the old one stays until the new one is ready, not just up.
    assert app.to_kill(1.0) == []
    app.readiness("new", True)
    assert [e.task_id for e in app.endpoints()] == ["new", "old"]
    assert app.to_kill(1.0) == [(old, "upgrade")]
    assert new.ready is True


def test_a_held_app_launches_nothing_and_kills_no_old_instance() -> None:
    app = Instances(spec(instances=2), random.Random(0))
    running(app, "old", "v0")
    app.held = True
    assert app.missing() == 0
    assert app.to_kill(1.0) == []
    app.held = False
    assert app.missing() == 2


def test_a_deployment_succeeds_when_every_instance_is_current_and_ready() -> None:
    app = Instances(spec(instances=2), random.Random(0))
    d = Deployment.start("web", 1, app.spec.version, wall=1000.0, now=0.0)
    running(app, "a", app.spec.version)
    assert not d.assess(app, 1.0, 1001.0) and d.running
    running(app, "b", app.spec.version)
    assert rolled_out(app)
    assert d.assess(app, 2.0, 1002.0)
    assert (d.record.state, d.record.ended_at) == ("succeeded", 1002.0)


def test_a_deployment_fails_after_its_failure_threshold_with_the_last_reason() -> None:
    app = Instances(spec(instances=1, upgrade={"failure_threshold": 2}), random.Random(0))
    d = Deployment.start("web", 2, app.spec.version, wall=0.0, now=0.0)
    d.failed_instance("other-version", "ignored")
    d.failed_instance(app.spec.version, "web-1 FAILED")
    assert not d.assess(app, 1.0, 1.0)
    d.failed_instance(app.spec.version, "web-2 killed by its health check (HTTP 500)")
    assert d.assess(app, 2.0, 2.0)
    assert d.record.state == "failed"
    assert "2 instances of version" in d.record.reason
    assert "HTTP 500" in d.record.reason


def test_a_deployment_without_progress_fails_at_its_deadline_naming_why_pending() -> None:
    app = Instances(spec(instances=2, upgrade={"progress_deadline": 10}), random.Random(0))
    d = Deployment.start("web", 1, app.spec.version, wall=0.0, now=0.0)
    running(app, "a", app.spec.version)
    assert not d.assess(app, 5.0, 5.0)  # one ready: progress at 5 s
    assert d.stuck(10.0, app.spec)
    d.stuck_why = ["2 of 2 agents: insufficient cpus"]
    assert not d.assess(app, 14.0, 14.0)
    assert d.assess(app, 15.0, 15.0)
    assert d.record.state == "failed"
    assert "1 instances cannot be placed (2 of 2 agents: insufficient cpus)" in d.record.reason


def test_a_deployment_whose_demand_the_master_refuses_fails_at_once_naming_why() -> None:
    # Issue #40, defect 3: the serving service's apps are held with the master's reason.
    app = Instances(spec(instances=1), random.Random(0))
    d = Deployment.start("web", 1, app.spec.version, wall=0.0, now=0.0)
    why = "SetDemands failed: PERMISSION_DENIED: principal serving may not use priority class x"
    assert d.refused(why, 1.0)
    assert d.record.state == "failed" and why in d.record.reason
    assert not d.refused(why, 2.0)  # once


def test_the_store_keeps_apps_revisions_instances_and_deployments_across_opens(
    tmp_path: Path,
) -> None:
    store = Store.sqlite(tmp_path)
    r1 = store.add_revision("web", spec().to_json(), 0, "create")
    r2 = store.add_revision("web", spec(instances=3).to_json(), 0, "scale 1 -> 3")
    store.set_framework_id("web", "M-F1")
    inst = Instance("web-1", "v1", "a1", {"hostname": "h", "zone": "a"}, [31000], 5.0)
    inst.state, inst.healthy, inst.ready = "running", True, False
    store.put_instances("web", [inst, Instance("web-2", "v1", "a2", {}, [], 6.0)])
    store.delete_instances(["web-2"])
    store.put_deployment(DeploymentRecord("web", 2, "v1", "failed", "why", 3, 100.0, 101.0))
    store.close()

    again = Store.sqlite(tmp_path)
    (app,) = again.apps()
    assert (app.id, app.framework_id, app.revision, app.deleting) == ("web", "M-F1", 2, False)
    assert [r.revision for r in again.revisions("web")] == [r1.revision, r2.revision] == [1, 2]
    assert again.revision("web", 2) == r2
    (back,) = again.instances("web")
    assert (back.task_id, back.where, back.ports, back.state) == (
        "web-1",
        {"hostname": "h", "zone": "a"},
        [31000],
        "running",
    )
    assert (back.healthy, back.ready) == (True, False)
    assert abs(back.launched_at - 5.0) < 1.0  # monotonic, through the wall clock
    assert again.deployment("web") == DeploymentRecord(
        "web", 2, "v1", "failed", "why", 3, 100.0, 101.0
    )
    again.delete_app("web")
    assert again.apps() == [] and again.instances("web") == [] and again.revisions("web") == []
    again.close()
    assert Store.sqlite(tmp_path).apps() == []


def test_a_store_file_of_the_table_per_kind_layout_is_converted_once(tmp_path: Path) -> None:
    """serving.db as the service wrote it before the records table: its apps come back."""
    import sqlite3

    db = sqlite3.connect(tmp_path / "serving.db")
    db.executescript(
        """
        CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
        INSERT INTO meta VALUES ('schema', '1');
        CREATE TABLE apps (id TEXT PRIMARY KEY, framework_id TEXT, revision INTEGER,
            deleting INTEGER, created_at REAL, updated_at REAL);
        CREATE TABLE revisions (app_id TEXT, revision INTEGER, spec TEXT, restarts INTEGER,
            change TEXT, created_at REAL);
        CREATE TABLE instances (task_id TEXT PRIMARY KEY, app_id TEXT, version TEXT,
            agent_id TEXT, placement TEXT, ports TEXT, launched_at REAL, state TEXT,
            healthy INTEGER, ready INTEGER, kill_reason TEXT);
        CREATE TABLE deployments (app_id TEXT PRIMARY KEY, revision INTEGER, version TEXT,
            state TEXT, reason TEXT, failures INTEGER, started_at REAL, ended_at REAL);
        """
    )
    body = '{"id": "web", "command": "./serve"}'
    db.execute("INSERT INTO apps VALUES ('web', 'M-F1', 1, 0, 10.0, 11.0)")
    db.execute("INSERT INTO revisions VALUES ('web', 1, ?, 0, 'create', 10.0)", (body,))
    db.execute(
        "INSERT INTO instances VALUES ('web-1', 'web', 'v1', 'a1', '{\"hostname\": \"h\"}', "
        "'[31000]', 12.0, 'running', 1, NULL, '')"
    )
    db.execute("INSERT INTO deployments VALUES ('web', 1, 'v1', 'succeeded', '', 0, 10.0, 12.0)")
    db.commit()
    db.close()
    for _ in range(2):  # converted on the first open; the second reads the records
        store = Store.sqlite(tmp_path)
        (app,) = store.apps()
        assert (app.id, app.framework_id, app.revision) == ("web", "M-F1", 1)
        assert store.revision("web", 1).spec == {"id": "web", "command": "./serve"}  # type: ignore[union-attr]
        (inst,) = store.instances("web")
        assert (inst.task_id, inst.where, inst.healthy, inst.ready) == (
            "web-1",
            {"hostname": "h"},
            True,
            None,
        )
        assert store.deployment("web").state == "succeeded"  # type: ignore[union-attr]
        store.close()


def test_the_lock_lets_one_process_act_and_names_the_holder(tmp_path: Path) -> None:
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            textwrap.dedent(
                f"""
                import sys, time
                from pathlib import Path
                from corral.frameworks.service.store_lock import StoreLock
                StoreLock(Path({str(tmp_path)!r}), 'serving').acquire()
                print("held", flush=True)
                time.sleep(60)
                """
            ),
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "held\n"
        lock = StoreLock(tmp_path, "serving")
        with pytest.raises(StoreLocked, match=f"pid {holder.pid}"):
            lock.acquire()
        holder.kill()  # as kill -9: the kernel drops the lock
        holder.wait()
        lock.acquire()
        lock.release()
    finally:
        if holder.poll() is None:
            holder.kill()
            holder.wait()
        if holder.stdout is not None:
            holder.stdout.close()


def test_proxy_blocks_list_each_ready_instance_and_stay_valid_when_empty() -> None:
    found = [
        {"task_id": "web-1", "host": "h1", "ports": [31000, 31001], "version": "v"},
        {"task_id": "web-2", "host": "h2", "ports": [31005], "version": "v"},
    ]
    assert app_client.nginx("web", found, 0) == (
        "upstream web {\n    server h1:31000;  # web-1\n    server h2:31005;  # web-2\n}\n"
    )
    assert "server h1:31001;" in app_client.nginx("web", found, 1)
    assert "h2" not in app_client.nginx("web", found, 1)  # it has no second port
    assert "server 127.0.0.1:9 down;" in app_client.nginx("web", [], 0)
    assert "    server web-2 h2:31005 check\n" in app_client.haproxy("web", found, 0)


def test_app_files_read_as_json_or_yaml_and_bad_ones_are_usage_errors(tmp_path: Path) -> None:
    (tmp_path / "a.yaml").write_text("id: web\ncommand: ./serve\ninstances: 2\n")
    assert app_client.read_app(str(tmp_path / "a.yaml"))["instances"] == 2
    (tmp_path / "a.json").write_text('{"id": "web", "command": "x"}')
    assert app_client.read_app(str(tmp_path / "a.json"))["id"] == "web"
    for name, text, words in (
        ("b.json", '{"id": ', "not JSON"),
        ("c.yaml", "command: x\n", "id: required"),
        ("d.yaml", "- 1\n", "must be an object"),
    ):
        (tmp_path / name).write_text(text)
        with pytest.raises(app_client.CliError, match=words) as err:
            app_client.read_app(str(tmp_path / name))
        assert err.value.exit_code == 2


class RecordingDriver:
    """The driver calls the scheduler makes on a subscription and a status."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, object]] = []

    async def reconcile(self, tasks: list[tuple[str, str]]) -> None:
        self.calls.append(("reconcile", sorted(tasks)))

    async def kill(self, task_id: str, agent_id: str = "") -> None:
        self.calls.append(("kill", task_id))

    async def set_demands(self, demands: list[object]) -> None:
        self.calls.append(("demands", len(demands)))

    async def revive(self) -> None:
        self.calls.append(("revive", None))


async def test_restored_instances_are_reconciled_and_an_unknown_live_task_is_killed() -> None:
    from corral.frameworks import sdk
    from corral.frameworks.serving.scheduler import ServingScheduler

    s = ServingScheduler(spec(instances=2))
    kept = [Instance(f"web-{n}", s.spec.version, f"a{n}", {}, [31000], 0.0) for n in (1, 2)]
    for i in kept:
        i.state = "running"
    s.restore(kept)
    d = RecordingDriver()
    await s.subscribed(d, "F1")  # type: ignore[arg-type]
    await s.settle()
    assert ("reconcile", [("web-1", "a1"), ("web-2", "a2")]) in d.calls
    assert s.app.to_launch(0.0) == 0  # both still count: nothing is launched
    running = sdk.TaskStatus(task_id="web-9", state=sdk.TaskState.TASK_STATE_RUNNING, agent_id="a3")
    await s.status(d, running)  # type: ignore[arg-type]
    assert ("kill", "web-9") in d.calls
    assert set(s.app.live) == {"web-1", "web-2"}
    await s.close()
