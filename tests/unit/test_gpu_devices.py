"""GPU devices assigned, not only counted (issue #43; agent/gpu_devices.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from corral.agent.core.types import TaskSpec
from corral.agent.executor_docker import container_config
from corral.agent.gpu_devices import GpuDevices, parse_devices, visible_env
from corral.containers import ContainerSpec


def test_each_task_gets_its_own_devices_lowest_first_and_never_shared(tmp_path: Path) -> None:
    gpus = GpuDevices(("0", "1", "2", "3"), tmp_path / "g.json")
    assert gpus.assign(("f", "a"), 2) == ("0", "1")
    assert gpus.assign(("f", "b"), 1) == ("2",)
    assert gpus.assign(("f", "a"), 2) == ("0", "1")  # asked again: the same ones
    with pytest.raises(ValueError, match="asks for 2 GPU devices and 1 are free"):
        gpus.assign(("f", "c"), 2)
    gpus.release(("f", "a"))
    assert gpus.assign(("f", "c"), 2) == ("0", "1")
    with pytest.raises(ValueError, match="not a whole number"):
        gpus.assign(("f", "d"), 0.5)
    held = [d for devs in gpus.held.values() for d in devs]
    assert len(held) == len(set(held))


def test_assignments_survive_a_restart_and_the_dead_tasks_free_theirs(tmp_path: Path) -> None:
    path = tmp_path / "g.json"
    first = GpuDevices(("0", "1", "2"), path)
    first.assign(("f", "alive"), 1)
    first.assign(("f", "dead"), 1)
    again = GpuDevices(("0", "1", "2"), path)
    assert again.held == {("f", "alive"): ("0",), ("f", "dead"): ("1",)}
    again.keep_only({("f", "alive")})
    assert again.assign(("f", "new"), 2) == ("1", "2")
    assert GpuDevices(("0", "1", "2"), path).held[("f", "alive")] == ("0",)


def test_the_flag_and_what_a_task_sees() -> None:
    assert parse_devices("0, 1,3") == ("0", "1", "3")
    for bad, why in (("", "at least one"), ("0,x", "not a device index"), ("1,1", "twice")):
        with pytest.raises(ValueError, match=why):
            parse_devices(bad)
    assert visible_env(("1", "3")) == {
        "CUDA_VISIBLE_DEVICES": "1,3",
        "NVIDIA_VISIBLE_DEVICES": "1,3",
    }


def test_a_container_asks_the_engine_for_its_devices(tmp_path: Path) -> None:
    task = TaskSpec("t", "f", gpus=2, gpu_devices=("0", "1"))
    config = container_config(task, ContainerSpec("img"), "a", tmp_path, tmp_path, {})
    assert config["HostConfig"]["DeviceRequests"] == [
        {"Driver": "nvidia", "DeviceIDs": ["0", "1"], "Capabilities": [["gpu"]]}
    ]
    plain = container_config(TaskSpec("t", "f"), ContainerSpec("img"), "a", tmp_path, tmp_path, {})
    assert "DeviceRequests" not in plain["HostConfig"]


def test_discover_reads_nvidia_smis_indices_and_says_why_when_it_cannot() -> None:
    import subprocess

    from corral.agent.gpu_devices import NVIDIA_SMI_QUERY, discover

    def answer(code: int, out: str = "", err: str = "") -> object:
        def run(argv: list[str], **kw: object) -> subprocess.CompletedProcess[str]:
            assert argv == ["/x/nvidia-smi", *NVIDIA_SMI_QUERY] and kw["timeout"]
            return subprocess.CompletedProcess(argv, code, out, err)

        return run

    def which(name: str) -> str:
        return "/x/nvidia-smi"

    assert discover(lambda _: None) == ((), "")  # no nvidia-smi: nothing to say
    assert discover(which, answer(0, "0\n1\n")) == (("0", "1"), "")  # type: ignore[arg-type]
    assert discover(which, answer(0, "")) == ((), "")  # type: ignore[arg-type]
    devices, why = discover(which, answer(6, err="NVIDIA-SMI has failed\nmore"))  # type: ignore[arg-type]
    assert devices == () and "nvidia-smi failed (NVIDIA-SMI has failed)" in why
    devices, why = discover(which, answer(0, "GPU 0: Tesla\n"))  # type: ignore[arg-type]
    assert devices == () and "not device indices" in why

    def hang(argv: list[str], **kw: object) -> subprocess.CompletedProcess[str]:
        raise subprocess.TimeoutExpired(argv, 10.0)

    devices, why = discover(which, hang)
    assert devices == () and "did not answer" in why
    assert parse_devices("none") == ()
