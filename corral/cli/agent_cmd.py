"""``corral agent``: run one agent (real processes), or N simulated ones in one process."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import functools
import math
import signal
import socket
import tempfile
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

from corral.cli.client_tls import credentials
from corral.cli.common import add_master_arg
from corral.cli.errors import CliError
from corral.containers import CONTAINERIZERS_ATTRIBUTE, DOCKER, parse_containerizers
from corral.gc_tuning import AGENT_HOST, tune_gc
from corral.placement import parse_attributes, parse_taints
from corral.resources import Resources, parse_resources
from corral.tasks import STATUS_RETRY_SECONDS

if TYPE_CHECKING:
    from corral.agent.config import AgentConfig
    from corral.agent.core.pressure import Thresholds
    from corral.agent.core.sandbox_gc import GcPolicy
    from corral.frameworks.sdk.tls import Credentials

# Simulated agents share channels (HTTP/2 connections), each with its own stream; a few
# connections instead of one spread the master's per-connection work.
AGENTS_PER_CHANNEL = 64
# Streams the agents of one process set up at once (agent/connection.py, ChannelPool): enough
# to keep a master busy registering (it answers ~1,000 registrations a second), few enough that
# each turn of the process's event loop stays short when all of them reconnect at once.
STREAMS_SETTING_UP = 256


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = subparsers.add_parser(
        "agent",
        help="run an agent that registers with the master and runs tasks",
        description="Run an agent. Resources are detected from the host unless --resources "
        "is given. With --simulate, tasks run as timers (task.simulation) and --count N agents "
        "share this process.",
    )
    add_master_arg(p)
    p.add_argument(
        "--resources",
        metavar="SPEC",
        help="e.g. 'cpus:4;mem:8192;disk:20000;gpus:0;ports:[31000-32000,33000-33100]' "
        "(each resource once; several port ranges in one list); default: the host's",
    )
    p.add_argument("--attributes", default="", metavar="SPEC", help="e.g. 'zone:a;rack:r1'")
    p.add_argument("--taints", default="", metavar="SPEC", help="e.g. 'spot=true:NoSchedule'")
    p.add_argument(
        "--work-dir",
        metavar="DIR",
        help="sandboxes and checkpoint (default: <tmp>/corral-agent-<hostname>)",
    )
    p.add_argument("--hostname", default=None, help="default: this host's name")
    p.add_argument(
        "--name",
        default=None,
        help="a name for people, telling apart agents of one host in `corral get agents` "
        "(default: the work dir's last component)",
    )
    p.add_argument("--simulate", action="store_true", help="simulated tasks, no processes")
    p.add_argument(
        "--count",
        default="1",
        metavar="N",
        help="with --simulate: run N agents (hostnames suffixed -0..-N-1)",
    )
    p.add_argument(
        "--loss-wave",
        default="0",
        metavar="N",
        help="with --simulate: on SIGUSR1, N of these agents lose their streams at once, as in "
        "a network partition, and reconnect --loss-wave-away seconds later, plus a random "
        "part of their longest backoff (5 s), as agents retrying through it would (corral loadtest "
        "--loss-wave)",
    )
    p.add_argument(
        "--loss-wave-away",
        default="5",
        metavar="SECONDS",
        help="how long the agents of a --loss-wave stay away (default 5)",
    )
    p.add_argument(
        "--kill-grace-period",
        default="3",
        metavar="SECONDS",
        help="SIGTERM to SIGKILL delay when a task sets none (default 3)",
    )
    p.add_argument(
        "--status-retry",
        default=f"{STATUS_RETRY_SECONDS:g}",
        metavar="SECONDS",
        help="first resend of an unacknowledged status update; doubles up to 10 min "
        f"(default {STATUS_RETRY_SECONDS:g}); the master holds acknowledgements for at most "
        "half of it",
    )
    gc = p.add_argument_group("ended tasks' sandboxes (docs/operations.md, 'Agent flags')")
    gc.add_argument(
        "--sandbox-gc-delay",
        default="604800",
        metavar="SECONDS",
        help="keep an ended task's sandbox (its stdout, stderr, files) this long on an empty "
        "disk, less as the disk fills (default 604800, a week, as Mesos' --gc_delay)",
    )
    gc.add_argument(
        "--sandbox-gc-headroom",
        default="0.1",
        metavar="FRACTION",
        help="the part of the disk kept free: with used + headroom >= 1 only running tasks' "
        "sandboxes are kept (default 0.1, as Mesos' --gc_disk_headroom)",
    )
    gc.add_argument(
        "--disk-watch-interval",
        default="60",
        metavar="SECONDS",
        help="how often the disk and the sandboxes are looked at (default 60)",
    )
    p.add_argument(
        "--containerizers",
        default="process",
        metavar="LIST",
        help="what runs tasks, comma-separated (Mesos' flag): process (the default) and docker "
        "(tasks in images, on the Docker engine; docs/containers.md); advertised as the "
        "agent's attribute 'containerizers'",
    )
    p.add_argument(
        "--docker-host",
        default=None,
        metavar="URL",
        help="the Docker engine's address for --containerizers docker (default: DOCKER_HOST, "
        "else unix:///var/run/docker.sock)",
    )
    p.add_argument(
        "--gpu-devices",
        default=None,
        metavar="LIST",
        help="the GPU device indices this agent hands out, e.g. 0,1,2,3: each GPU task gets "
        "its own (CUDA_VISIBLE_DEVICES, NVIDIA_VISIBLE_DEVICES); the gpus resource is their "
        "number (docs/containers.md). Default: the devices nvidia-smi lists, where it is on the "
        "PATH; none: no GPUs",
    )
    qos = p.add_argument_group(
        "usage, limits, eviction and revocable resources (docs/operations.md, 'Agent flags')"
    )
    qos.add_argument(
        "--usage-interval",
        default="1",
        metavar="SECONDS",
        help="how often the tasks' usage is measured and reported (default 1)",
    )
    qos.add_argument(
        "--cgroups",
        default="auto",
        choices=["auto", "v2", "v1", "none"],
        help="how tasks' memory is limited and measured: cgroup v2, v1's memory controller, "
        "or none (psutil over the task's process group); auto (the default) takes the first "
        "that works here",
    )
    qos.add_argument(
        "--eviction-hard",
        metavar="memory.available<X",
        help="evict at once when available memory (mem less what tasks use) is below X "
        "(MiB, e.g. 256 or 256Mi, 1Gi, or 10%% of mem); the agent then offers mem less X",
    )
    qos.add_argument(
        "--eviction-soft",
        metavar="memory.available<X",
        help="evict when available memory stays below X for --eviction-soft-grace seconds",
    )
    qos.add_argument(
        "--eviction-soft-grace",
        metavar="SECONDS",
        help="how long --eviction-soft must hold before evicting (needed with it)",
    )
    qos.add_argument(
        "--eviction-pressure-transition",
        default="10",
        metavar="SECONDS",
        help="how long the pressure condition stays after memory is back above the thresholds "
        "(default 10)",
    )
    qos.add_argument(
        "--revocable",
        action="store_true",
        help="offer allocated-but-unused cpus and mem as revocable resources",
    )
    qos.add_argument(
        "--revocable-margin",
        default="0.2",
        metavar="FRACTION",
        help="with --revocable: the part of the unused resources kept back as a safety margin "
        "(default 0.2)",
    )
    p.add_argument(
        "--log-level",
        default="info",
        choices=["debug", "info", "warning", "error"],
        help="the least severe log lines written (default info)",
    )
    p.set_defaults(func=run, needs_server=True)


def _usage(message: str) -> CliError:
    return CliError(message, exit_code=2)


def build_configs(args: argparse.Namespace, tls: Credentials | None = None) -> list[AgentConfig]:
    """Validate the command line into one config per agent; bad values raise CliError(2).
    ``tls``: the agents' credential (None: found when they connect)."""
    from corral.agent.config import AgentConfig
    from corral.agent.core.status_updates import Backoff
    from corral.agent.gpu_devices import discover as discover_gpus
    from corral.agent.gpu_devices import parse_devices
    from corral.agent.host import detect_resources
    from corral.logging import get_logger

    try:
        count = int(args.count)
    except ValueError:
        raise _usage(f"--count must be a whole number, got {args.count!r}") from None
    if count < 1:
        raise _usage(f"--count must be at least 1, got {count}")
    if count > 1 and not args.simulate:
        raise _usage("--count > 1 needs --simulate (real agents each need their own host)")
    try:
        grace = float(args.kill_grace_period)
    except ValueError:
        grace = math.nan
    if not (math.isfinite(grace) and grace >= 0):
        raise _usage(f"--kill-grace-period must be a number >= 0, got {args.kill_grace_period!r}")
    try:
        retry = float(args.status_retry)
    except ValueError:
        retry = math.nan
    if not (math.isfinite(retry) and retry > 0):
        raise _usage(f"--status-retry must be a number > 0, got {args.status_retry!r}")
    hostname = args.hostname if args.hostname is not None else socket.gethostname()
    if not hostname.strip():
        raise _usage("--hostname must not be empty")
    work_dir = Path(args.work_dir or Path(tempfile.gettempdir()) / f"corral-agent-{hostname}")
    if work_dir.exists() and not work_dir.is_dir():
        raise _usage(f"--work-dir {work_dir} is not a directory")
    try:
        attributes = parse_attributes(args.attributes)
        containerizers = parse_containerizers(args.containerizers)
        taints = tuple(parse_taints(args.taints))
        resources: Resources | None = (
            parse_resources(args.resources) if args.resources is not None else None
        )
    except ValueError as exc:
        raise _usage(str(exc)) from None
    if CONTAINERIZERS_ATTRIBUTE in attributes:
        raise _usage(
            f"--attributes: {CONTAINERIZERS_ATTRIBUTE} is set by --containerizers, not by hand"
        )
    if DOCKER in containerizers and args.simulate:
        raise _usage("--containerizers docker runs real containers: not with --simulate")
    gpu_devices: tuple[str, ...] = ()
    if args.gpu_devices is not None:
        try:
            gpu_devices = parse_devices(args.gpu_devices)
        except ValueError as exc:
            raise _usage(str(exc)) from None
        if args.simulate and gpu_devices:
            raise _usage("--gpu-devices hands out real devices: not with --simulate")
        if resources is not None and resources.gpus and resources.gpus != len(gpu_devices):
            raise _usage(
                f"--resources gives gpus:{resources.gpus:g} and --gpu-devices lists "
                f"{len(gpu_devices)} devices: leave gpus out of --resources, or make them agree"
            )
    elif not args.simulate:
        gpu_devices, problem = discover_gpus()  # gpu_devices.py rule 5: nvidia-smi's devices
        if problem:
            get_logger("corral.agent").warning("gpu_discovery", problem=problem)
        if (
            gpu_devices
            and resources is not None
            and resources.gpus
            and resources.gpus != len(gpu_devices)
        ):
            raise _usage(
                f"--resources gives gpus:{resources.gpus:g} and nvidia-smi lists "
                f"{len(gpu_devices)} devices: name them with --gpu-devices, or make them agree"
            )
        if gpu_devices:
            get_logger("corral.agent").info("gpu_devices_found", devices=",".join(gpu_devices))
    if resources is not None and resources.is_empty():
        # An agent offering nothing registers and is never offered: refuse it instead.
        raise _usage(
            f"--resources {args.resources!r} gives the agent nothing to offer "
            "(e.g. 'cpus:4;mem:8192'; leave --resources out to detect the host's)"
        )
    if resources is None:
        resources = detect_resources(work_dir)
    if gpu_devices:
        resources = replace(resources, gpus=float(len(gpu_devices)))
    qos = _qos_settings(args, resources.mem)
    sandbox_gc, disk_watch = _gc_settings(args)
    names = [hostname] if count == 1 else [f"{hostname}-{i}" for i in range(count)]
    label = args.name if args.name is not None else work_dir.resolve().name
    if args.name is not None and not args.name.strip():
        raise _usage("--name must not be empty")
    return [
        AgentConfig(
            hostname=name,
            name=label if count == 1 else f"{label}-{name}",
            resources=resources,
            resources_detected=args.resources is None,
            work_dir=work_dir if count == 1 else work_dir / name,
            master=args.master,
            tls=tls,
            attributes=attributes,
            taints=taints,
            simulate=args.simulate,
            checkpoint=not args.simulate,
            default_grace_period=grace,
            status_backoff=Backoff(initial=retry, maximum=max(retry, 600.0)),
            usage_interval=qos.usage_interval,
            cgroups=qos.cgroups,
            thresholds=qos.thresholds,
            revocable_margin=qos.revocable_margin,
            sandbox_gc=sandbox_gc,
            disk_watch_interval=disk_watch,
            containerizers=containerizers,
            docker_host=args.docker_host,
            gpu_devices=gpu_devices,
        )
        for name in names
    ]


def _gc_settings(args: argparse.Namespace) -> tuple[GcPolicy, float]:
    """The sandbox collection flags; CliError(2) if bad."""
    from corral.agent.core.sandbox_gc import GcPolicy

    delay = _seconds(args.sandbox_gc_delay, "--sandbox-gc-delay")
    headroom = _fraction(args.sandbox_gc_headroom, "--sandbox-gc-headroom", one=True)
    interval = _seconds(args.disk_watch_interval, "--disk-watch-interval", positive=True)
    return GcPolicy(delay=delay, headroom=headroom), interval


def _seconds(value: str, flag: str, positive: bool = False) -> float:
    try:
        seconds = float(value)
    except ValueError:
        seconds = math.nan
    if not (math.isfinite(seconds) and (seconds > 0 if positive else seconds >= 0)):
        raise _usage(f"{flag} must be a number {'>' if positive else '>='} 0, got {value!r}")
    return seconds


def _fraction(value: str, flag: str, *, one: bool) -> float:
    """A fraction in [0, 1] (``one``) or [0, 1); CliError(2) naming ``flag`` otherwise."""
    try:
        x = float(value)
    except ValueError:
        x = math.nan
    if not (0 <= x <= 1 if one else 0 <= x < 1):
        raise _usage(f"{flag} must be a fraction in [0, 1{']' if one else ')'}, got {value!r}")
    return x


class _Qos(NamedTuple):
    usage_interval: float
    cgroups: str
    thresholds: Thresholds
    revocable_margin: float | None


def _qos_settings(args: argparse.Namespace, mem: float) -> _Qos:
    """The usage, eviction and revocable flags as AgentConfig fields; CliError(2) if bad."""
    from corral.agent.core.pressure import Thresholds, parse_threshold

    interval = _seconds(args.usage_interval, "--usage-interval", positive=True)
    hard = soft = None
    try:
        if args.eviction_hard is not None:
            hard = parse_threshold(args.eviction_hard, mem)
    except ValueError as exc:
        raise _usage(f"--eviction-hard: {exc}") from None
    try:
        if args.eviction_soft is not None:
            soft = parse_threshold(args.eviction_soft, mem)
    except ValueError as exc:
        raise _usage(f"--eviction-soft: {exc}") from None
    if soft is not None and args.eviction_soft_grace is None:
        raise _usage("--eviction-soft needs --eviction-soft-grace SECONDS (as kubelet's does)")
    if soft is None and args.eviction_soft_grace is not None:
        raise _usage("--eviction-soft-grace is for --eviction-soft, which is not given")
    grace = (
        _seconds(args.eviction_soft_grace, "--eviction-soft-grace")
        if args.eviction_soft_grace is not None
        else 0.0
    )
    if hard is not None and soft is not None and soft < hard:
        raise _usage(
            f"--eviction-soft ({soft:g} MiB) is below --eviction-hard ({hard:g} MiB): "
            "the soft threshold is the earlier warning"
        )
    transition = _seconds(args.eviction_pressure_transition, "--eviction-pressure-transition")
    margin = _fraction(args.revocable_margin, "--revocable-margin", one=False)
    if args.revocable and args.simulate:
        raise _usage("--revocable needs real tasks to measure (not --simulate)")
    return _Qos(
        usage_interval=interval,
        cgroups=args.cgroups,
        thresholds=Thresholds(hard=hard, soft=soft, soft_grace=grace, transition=transition),
        revocable_margin=margin if args.revocable else None,
    )


def run(args: argparse.Namespace) -> int:
    from corral.agent.checkpoint import ConfigChanged, WorkDirBusy
    from corral.agent.memory_control import ControlUnavailable
    from corral.logging import configure

    # No credential found is a usage error now, not a retry loop later.
    configs = build_configs(args, credentials())
    wave = loss_wave_settings(args, len(configs))
    configure(args.log_level)
    tune_gc(AGENT_HOST)  # thousands of simulated agents are long-lived objects (corral.gc_tuning)
    try:
        return asyncio.run(_run_agents(configs, wave))
    except WorkDirBusy as exc:
        raise CliError(str(exc)) from None
    except ConfigChanged as exc:
        raise CliError(str(exc), exit_code=2) from None
    except ControlUnavailable as exc:
        raise CliError(f"--cgroups {args.cgroups}: {exc}", exit_code=2) from None


def loss_wave_settings(args: argparse.Namespace, count: int) -> tuple[int, float]:
    """--loss-wave and --loss-wave-away, checked; CliError(2) if bad."""
    try:
        size = int(args.loss_wave)
    except ValueError:
        raise _usage(f"--loss-wave must be a whole number, got {args.loss_wave!r}") from None
    if not 0 <= size <= count:
        raise _usage(f"--loss-wave must be between 0 and --count ({count}), got {size}")
    if size and not args.simulate:
        raise _usage("--loss-wave is for simulated agents (--simulate)")
    away = _seconds(args.loss_wave_away, "--loss-wave-away", positive=True)
    return size, away


async def _run_agents(configs: list[AgentConfig], wave: tuple[int, float] = (0, 0.0)) -> int:
    from corral.agent.connection import ChannelPool
    from corral.agent.registration_ramp import RegistrationRamp
    from corral.agent.runtime import Agent
    from corral.frameworks.sdk.detector import make_detector, parse_master
    from corral.logging import get_logger

    loop = asyncio.get_running_loop()
    log = get_logger("corral.agent")
    # The agents start as the master acknowledges their registrations (registration_ramp.py).
    ramp = RegistrationRamp(len(configs))
    wake = asyncio.Event()

    def acknowledged(index: int) -> None:
        ramp.acknowledged(index, loop.time())
        wake.set()

    # One detector (one ZooKeeper session) and one pool for the agents of this process.
    detector = make_detector(parse_master(configs[0].master))
    pool = ChannelPool(configs[0].tls, setting_up=STREAMS_SETTING_UP)
    try:
        agents = [
            Agent(
                cfg,
                detector=detector,
                pool=pool,
                slot=i // AGENTS_PER_CHANNEL,
                on_registered=functools.partial(acknowledged, i),
            )
            for i, cfg in enumerate(configs)
        ]
    except BaseException:  # --cgroups v1/v2 that cannot be used: nothing runs yet
        await pool.close()
        await detector.close()
        raise
    runs: list[asyncio.Task[int]] = []
    stopping = False

    def stop(signame: str) -> None:
        nonlocal stopping
        get_logger("corral.agent").info("signal received, stopping", signal=signame)
        stopping = True
        wake.set()
        for agent in agents[: len(runs)]:  # the others never start
            agent.stop(signame)

    async def start_all() -> None:
        began = loop.time()
        while not stopping:
            for i in ramp.to_start(loop.time()):
                runs.append(loop.create_task(agents[i].run(), name=f"agent-{i}"))
            if ramp.done:
                break
            wake.clear()
            expiry = ramp.next_expiry()
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(None if expiry is None else expiry - loop.time()):
                    await wake.wait()
        if len(agents) > 1:
            log.info(
                "agents started",
                agents=len(runs),
                seconds=round(loop.time() - began, 2),
                registered=ramp.registered,
                stalled=ramp.stalled,
                window=round(ramp.window),
            )

    def loss_wave() -> None:
        size, away = wave
        dropped = 0
        for agent in agents[: len(runs)]:
            if dropped >= size:
                break
            if agent.connection is not None and agent.connection.connected:
                agent.connection.drop(away)
                dropped += 1
        log.warning("loss wave", agents=dropped, away=away)

    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop, sig.name)
    if wave[0]:
        loop.add_signal_handler(signal.SIGUSR1, loss_wave)
    try:
        await start_all()
        codes = await asyncio.gather(*runs)
    finally:
        for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGUSR1):
            loop.remove_signal_handler(sig)
        await pool.close()
        await detector.close()
    return max(codes, default=0)
