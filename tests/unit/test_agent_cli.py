"""`corral agent` argument validation: bad values are one-line usage errors (exit 2)."""

from __future__ import annotations

import argparse
from pathlib import Path

import psutil
import pytest

from corral.agent.checkpoint import AgentIdentity, FileAgentIdStore, WorkDirBusy, WorkDirLock
from corral.agent.host import DEFAULT_PORTS, memory_reserve_mib
from corral.cli import agent_cmd
from corral.cli.errors import CliError


def parse(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    sub = parser.add_subparsers(dest="command")
    agent_cmd.register(sub)
    return parser.parse_args(["agent", *argv])


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--count", "3"], "needs --simulate"),
        (["--simulate", "--count", "0"], "at least 1"),
        (["--simulate", "--count", "x"], "whole number"),
        (["--resources", "cpus:-1"], "cpus is negative"),
        (["--resources", "cpus:4;bogus:1"], "unknown resource 'bogus'"),
        (["--resources", "ports:[2-1]"], "inverted"),
        (["--resources", "cpus:4;cpus:8"], "cpus is given twice"),
        (["--resources", ""], "gives the agent nothing to offer"),
        (["--resources", "cpus:0;mem:0"], "gives the agent nothing to offer"),
        (["--resources", "cpus:1;ports:[1-2],[3-4]"], r"one bracketed list of ranges, like "),
        (["--attributes", "zone"], "name:value"),
        (["--taints", "spot=true"], "key=value:Effect"),
        (["--kill-grace-period", "-1"], ">= 0"),
        (["--hostname", " "], "must not be empty"),
        (["--containerizers", "process,rkt"], "unknown containerizer 'rkt'"),
        (["--attributes", "containerizers:docker"], "set by --containerizers"),
        (["--simulate", "--containerizers", "docker"], "not with --simulate"),
        (["--gpu-devices", "0,zero"], "not a device index"),
        (["--gpu-devices", "0,1", "--resources", "cpus:1;gpus:3"], "make them agree"),
        (["--simulate", "--gpu-devices", "0"], "not with --simulate"),
        (["--usage-interval", "0"], "--usage-interval must be a number > 0"),
        (["--eviction-hard", "mem<1"], "--eviction-hard: 'mem<1' is not memory.available<X"),
        (
            ["--resources", "mem:1000", "--eviction-hard", "memory.available<2000"],
            "not below the agent's mem",
        ),
        (["--eviction-hard", "memory.available<0Mi"], "must be more than 0"),
        (["--eviction-hard", "memory.available<150%"], "between 0 and 100"),
        (["--eviction-soft", "memory.available<100"], "needs --eviction-soft-grace"),
        (["--eviction-soft-grace", "5"], "--eviction-soft, which is not given"),
        (
            ["--eviction-soft", "memory.available<10", "--eviction-soft-grace", "x"],
            "--eviction-soft-grace must be a number >= 0",
        ),
        (
            [
                *("--eviction-hard", "memory.available<200"),
                *("--eviction-soft", "memory.available<100", "--eviction-soft-grace", "5"),
            ],
            "below --eviction-hard",
        ),
        (["--eviction-pressure-transition", "-1"], "must be a number >= 0"),
        (["--revocable", "--revocable-margin", "1"], "fraction in \\[0, 1\\)"),
        (["--simulate", "--revocable"], "needs real tasks"),
    ],
)
def test_bad_values_are_usage_errors(argv: list[str], message: str, tmp_path: Path) -> None:
    with pytest.raises(CliError, match=message) as info:
        agent_cmd.build_configs(parse("--work-dir", str(tmp_path), *argv))
    assert info.value.exit_code == 2


def test_simulated_fleet_gets_suffixed_hostnames_and_memory_ids(tmp_path: Path) -> None:
    configs = agent_cmd.build_configs(
        parse(
            "--simulate",
            "--count",
            "3",
            "--hostname",
            "sim",
            "--work-dir",
            str(tmp_path),
            "--resources",
            "cpus:4;mem:8192;disk:20000;gpus:0;ports:[31000-32000]",
            "--attributes",
            "zone:a;rack:r1",
            "--taints",
            "spot=true:NoSchedule",
        )
    )
    assert [c.hostname for c in configs] == ["sim-0", "sim-1", "sim-2"]
    assert all(c.simulate and not c.checkpoint for c in configs)
    assert configs[0].resources.cpus == 4 and configs[0].resources.ports == ((31000, 32000),)
    assert configs[0].attributes == {"zone": "a", "rack": "r1"}
    assert str(configs[0].taints[0]) == "spot=true:NoSchedule"


def test_default_resources_are_detected(tmp_path: Path) -> None:
    (config,) = agent_cmd.build_configs(parse("--work-dir", str(tmp_path), "--hostname", "h"))
    res = config.resources
    assert res.cpus == psutil.cpu_count(logical=True)
    assert 0 < res.mem < psutil.virtual_memory().total / 2**20
    assert res.disk > 0 and res.gpus == 0 and res.ports == DEFAULT_PORTS
    assert config.checkpoint and config.work_dir == tmp_path


def test_qos_flags_become_the_agents_thresholds_and_margin(tmp_path: Path) -> None:
    (config,) = agent_cmd.build_configs(
        parse(
            *("--work-dir", str(tmp_path), "--resources", "cpus:2;mem:1000"),
            *(
                "--eviction-hard",
                "memory.available<10%",
                "--eviction-soft",
                "memory.available<0.25Gi",
            ),
            *("--eviction-soft-grace", "30", "--eviction-pressure-transition", "5"),
            *("--revocable", "--revocable-margin", "0.3", "--cgroups", "none"),
            *("--usage-interval", "2"),
        )
    )
    t = config.thresholds
    assert (t.hard, t.soft, t.soft_grace, t.transition) == (100.0, 256.0, 30.0, 5.0)
    assert (config.revocable_margin, config.cgroups, config.usage_interval) == (0.3, "none", 2.0)
    # It offers its mem less the hard threshold (kubelet's allocatable); the rest as given.
    assert config.allocatable.mem == 900 and config.resources.mem == 1000
    assert config.allocatable.cpus == 2
    (plain,) = agent_cmd.build_configs(parse("--work-dir", str(tmp_path), "--resources", "mem:10"))
    assert plain.revocable_margin is None and not plain.thresholds.enabled
    assert plain.allocatable == plain.resources


def test_memory_reserve() -> None:
    assert memory_reserve_mib(16384) == 1024
    assert memory_reserve_mib(1000) == 500


def test_agent_id_checkpoint_round_trip_and_lock(tmp_path: Path) -> None:
    store = FileAgentIdStore(tmp_path)
    assert store.load() == AgentIdentity()
    store.save(AgentIdentity("agent-7", "s3cret", "node-1"))
    assert FileAgentIdStore(tmp_path).load() == AgentIdentity("agent-7", "s3cret", "node-1")
    assert (tmp_path / "agent_id").stat().st_mode & 0o077 == 0, "the secret is readable by others"
    (tmp_path / "agent_id").write_text("agent-6\n")  # a checkpoint from before secrets
    assert FileAgentIdStore(tmp_path).load() == AgentIdentity("agent-6")
    (tmp_path / "agent_id").write_text("agent-5\nk\n")  # ... and from before principals
    assert FileAgentIdStore(tmp_path).load() == AgentIdentity("agent-5", "k")
    first = WorkDirLock(tmp_path)
    first.acquire()
    with pytest.raises(WorkDirBusy, match="in use"):
        WorkDirLock(tmp_path).acquire()
    first.release()
    again = WorkDirLock(tmp_path)
    again.acquire()
    again.release()


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--simulate", "--count", "4", "--loss-wave", "5"], "between 0 and --count \\(4\\)"),
        (["--simulate", "--loss-wave", "x"], "whole number"),
        (["--loss-wave", "1"], "for simulated agents"),
        (["--simulate", "--loss-wave", "1", "--loss-wave-away", "0"], "must be a number > 0"),
    ],
)
def test_bad_loss_waves_are_usage_errors(argv: list[str], message: str, tmp_path: Path) -> None:
    args = parse("--work-dir", str(tmp_path), "--resources", "cpus:1", *argv)
    configs = agent_cmd.build_configs(args)
    with pytest.raises(CliError, match=message) as info:
        agent_cmd.loss_wave_settings(args, len(configs))
    assert info.value.exit_code == 2


def test_a_loss_wave_is_a_size_and_a_time_away(tmp_path: Path) -> None:
    args = parse(
        *("--work-dir", str(tmp_path), "--resources", "cpus:1", "--simulate", "--count", "4"),
        *("--loss-wave", "3", "--loss-wave-away", "2.5"),
    )
    assert agent_cmd.loss_wave_settings(args, 4) == (3, 2.5)
    assert agent_cmd.loss_wave_settings(parse("--resources", "cpus:1"), 1) == (0, 5.0)


def _fake_nvidia_smi(bin_dir: Path, script: str) -> None:
    tool = bin_dir / "nvidia-smi"
    tool.write_text("#!/bin/sh\n" + script + "\n")
    tool.chmod(0o755)


def test_without_gpu_devices_the_agent_takes_the_devices_nvidia_smi_lists(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A real nvidia-smi stand-in on the PATH, run as a process (gpu_devices.py rule 5).
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    _fake_nvidia_smi(
        bin_dir,
        '[ "$1 $2" = "--query-gpu=index --format=csv,noheader" ] || exit 9\nprintf "0\\n1\\n2\\n"',
    )
    monkeypatch.setenv("PATH", f"{bin_dir}:/usr/bin:/bin")
    work = tmp_path / "w"
    (config,) = agent_cmd.build_configs(parse("--work-dir", str(work), "--resources", "cpus:4"))
    assert config.gpu_devices == ("0", "1", "2") and config.resources.gpus == 3
    (none,) = agent_cmd.build_configs(
        parse("--work-dir", str(work), "--resources", "cpus:4", "--gpu-devices", "none")
    )
    assert none.gpu_devices == () and none.resources.gpus == 0
    with pytest.raises(CliError, match="nvidia-smi lists 3 devices"):
        agent_cmd.build_configs(parse("--work-dir", str(work), "--resources", "cpus:4;gpus:2"))


def test_an_nvidia_smi_that_fails_gives_no_gpus_and_the_agent_starts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    _fake_nvidia_smi(bin_dir, 'echo "NVIDIA-SMI has failed: no driver" >&2; exit 6')
    monkeypatch.setenv("PATH", f"{bin_dir}:/usr/bin:/bin")
    (config,) = agent_cmd.build_configs(
        parse("--work-dir", str(tmp_path / "w"), "--resources", "cpus:4")
    )
    assert config.gpu_devices == () and config.resources.gpus == 0
