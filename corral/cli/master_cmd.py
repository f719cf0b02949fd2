"""`corral master`: run the master (gRPC for frameworks, agents and operators; HTTP for people)."""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import math
from pathlib import Path

from corral.cli.common import (
    DEFAULT_HTTP,
    DEFAULT_MASTER,
    host_port,
    non_negative_float,
    non_negative_int,
    positive_float,
)
from corral.cli.errors import CliError
from corral.cli.listen_check import cannot_listen
from corral.cli.master_files import (
    budgets_from_args,
    priority_classes_from_args,
    roles_from_args,
)
from corral.cli.master_mesos import add_mesos_args, mesos_from_args
from corral.cli.master_scheduling_flags import add_scheduling_flags
from corral.cli.master_security import acl_from_args, add_security_args, security_from_args
from corral.frameworks.sdk.detector import parse_zk_url
from corral.master.core.config import (
    MAX_AGENT_ACK_HOLD,
    MIN_STREAM_QUEUE_BYTES,
    MasterConfig,
    default,
)
from corral.priority import PriorityClass
from corral.roles import Quota
from corral.work_dirs import WorkDirBusy, WorkDirLock

MIB = 1024 * 1024
DEFAULT_WORK_DIR = "~/.corral/master"


def zk_url(text: str) -> str:
    """argparse type for zk://HOST:PORT[,HOST:PORT...]/PATH (a bad one: exit 2)."""
    try:
        parse_zk_url(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    return text


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("master", help="run the master")
    p.add_argument(
        "--grpc",
        type=host_port,
        default=DEFAULT_MASTER,
        metavar="HOST:PORT",
        help=f"gRPC listen address (default {DEFAULT_MASTER}; port 0 picks a free one)",
    )
    p.add_argument(
        "--http",
        type=host_port,
        default=DEFAULT_HTTP,
        metavar="HOST:PORT",
        help=f"HTTP listen address (default {DEFAULT_HTTP})",
    )
    p.add_argument(
        "--allocation-interval",
        type=positive_float,
        default=default("allocation_interval"),
        metavar="SECONDS",
        help="seconds between allocation cycles, each of which sends offers of what is free; "
        f"shorter places tasks sooner at more CPU on the master "
        f"(default {default('allocation_interval'):g})",
    )
    p.add_argument(
        "--agent-timeout",
        type=positive_float,
        default=default("agent_timeout"),
        metavar="SECONDS",
        help=f"an agent silent this long is marked unreachable "
        f"(default {default('agent_timeout'):g})",
    )
    p.add_argument(
        "--agent-heartbeat",
        type=positive_float,
        default=None,
        metavar="SECONDS",
        help="how often agents heartbeat (default: a third of --agent-timeout, at most "
        f"{default('agent_heartbeat_interval'):g})",
    )
    p.add_argument(
        "--max-agent-heartbeats",
        type=positive_float,
        default=default("max_agent_heartbeats_per_second"),
        metavar="PER_SECOND",
        help="cap on all agents' heartbeats together: a larger cluster is asked to heartbeat "
        f"less often, with timeouts stretched to match "
        f"(default {default('max_agent_heartbeats_per_second'):g})",
    )
    p.add_argument(
        "--work-dir",
        type=Path,
        default=None,
        metavar="DIR",
        help="keep the registry (admitted agents, frameworks, operators' weights and quotas) in "
        "DIR/registry.db, so a restarted master remembers them; one master per work dir "
        f"(default {DEFAULT_WORK_DIR}, i.e. $CORRAL_HOME/master)",
    )
    p.add_argument(
        "--registry",
        choices=("sqlite", "memory"),
        default=None,
        help="sqlite: the registry in the work dir (default); memory: none, the master forgets "
        "every agent and framework when it stops (logged as a warning; a lab or a benchmark "
        "only). With --zk the registry is ZooKeeper's",
    )
    ha = p.add_argument_group("high availability (docs/operations.md, 'Highly available masters')")
    ha.add_argument(
        "--zk",
        type=zk_url,
        default=None,
        metavar="zk://HOST:PORT[,HOST:PORT...]/PATH",
        help="join the masters' leader election in ZooKeeper under PATH and keep the registry "
        "there (PATH-registry), shared by every master; instead of --work-dir",
    )
    ha.add_argument(
        "--zk-session-timeout",
        type=positive_float,
        default=10.0,
        metavar="SECONDS",
        help="the ZooKeeper session: a leader that dies is replaced this long after (at "
        "least 2 ticks of the server's tickTime; default 10)",
    )
    ha.add_argument(
        "--zk-registry",
        default="",
        metavar="PATH",
        help="where in ZooKeeper the registry lives (default: the --zk path + '-registry')",
    )
    ha.add_argument(
        "--advertise-host",
        default="",
        metavar="HOST",
        help="the host other masters, agents and frameworks reach this master at (default: "
        "the --grpc host, or this host's name when it listens on 0.0.0.0)",
    )
    p.add_argument(
        "--agent-reregister-timeout",
        type=positive_float,
        default=default("agent_reregister_timeout"),
        metavar="SECONDS",
        help="after a restart, agents in the registry that have not re-registered this long "
        f"are marked unreachable and their tasks reported lost "
        f"(default {default('agent_reregister_timeout'):g})",
    )
    p.add_argument(
        "--registry-max-agent-age",
        type=positive_float,
        default=default("registry_max_agent_age"),
        metavar="SECONDS",
        help="forget an agent unreachable this long: its record leaves the state and the "
        "registry, and it is admitted as a new one if it comes back (Mesos' "
        f"registry_max_agent_age; default {default('registry_max_agent_age'):.0f}, two weeks)",
    )
    p.add_argument(
        "--registry-max-agent-count",
        type=non_negative_int,
        default=default("registry_max_agent_count"),
        metavar="N",
        help="keep at most N unreachable agents' records, forgetting the oldest first "
        f"(Mesos' registry_max_agent_count; default {default('registry_max_agent_count')})",
    )
    p.add_argument(
        "--accept-empty-registry",
        action="store_true",
        help="start even though the registry this work dir held is gone (DIR/registry.db "
        "deleted, emptied or replaced while DIR/registry.id remains): the master starts with "
        "an empty cluster and a new registry. Without it the master refuses to start",
    )
    p.add_argument(
        "--adopt-unknown-agents",
        action="store_true",
        help="for this start, take in the tasks that agents with ids the registry does not hold "
        "report (after restoring a backup: the agents admitted since it), and such ids whose "
        "secrets the master cannot check (issued before secrets were sealed); otherwise those "
        "ids are refused and such tasks killed as tasks the master never launched",
    )
    p.add_argument(
        "--agent-removal-rate",
        type=positive_float,
        default=None,
        metavar="PER_SECOND",
        help="mark at most this many agents unreachable per second, so a mass partition does "
        "not declare every task lost at once (default: no limit)",
    )
    p.add_argument(
        "--failover-timeout",
        type=positive_float,
        default=default("framework_failover_timeout"),
        metavar="SECONDS",
        help="default for frameworks that ask for 0 "
        f"(default {default('framework_failover_timeout'):g})",
    )
    p.add_argument(
        "--max-failover-timeout",
        type=positive_float,
        default=default("max_failover_timeout"),
        metavar="SECONDS",
        help="a framework asking for a longer failover timeout gets this one, so none is kept "
        "forever once it goes away (default "
        f"{default('max_failover_timeout'):.0f}, four weeks: Marathon asks for one, Aurora three)",
    )
    p.add_argument(
        "--offer-timeout",
        type=non_negative_float,
        default=default("offer_timeout"),
        metavar="SECONDS",
        help="rescind an offer outstanding this long and take it as declined: the framework is "
        "not offered that agent again for twice this, doubling while its offers keep running "
        "out, so a framework that holds offers cannot keep them from others "
        f"(default {default('offer_timeout'):g}; 0: never)",
    )
    p.add_argument(
        "--max-completed-frameworks",
        type=non_negative_int,
        default=default("max_completed_frameworks"),
        metavar="N",
        help="removed frameworks kept in memory and in the state "
        f"(default {default('max_completed_frameworks')}, as Mesos)",
    )
    p.add_argument(
        "--max-completed-tasks-per-framework",
        type=non_negative_int,
        default=default("max_completed_tasks_per_framework"),
        metavar="N",
        help="ended tasks kept per framework, for the state, reconciliation and agents that "
        "report a task the master declared ended "
        f"(default {default('max_completed_tasks_per_framework')}, as Mesos)",
    )
    p.add_argument(
        "--stream-queue-mib",
        type=positive_float,
        default=default("stream_queue_bytes") / MIB,
        metavar="MIB",
        help="a framework's or agent's stream with more than this queued unsent (it stopped "
        "reading or reads too slowly) is cut; a framework keeps its tasks for its failover "
        "timeout and gets its pending statuses when it subscribes again "
        f"(default {default('stream_queue_bytes') / MIB:g}, at least "
        f"{MIN_STREAM_QUEUE_BYTES / MIB:g}: the largest message the master writes)",
    )
    p.add_argument(
        "--agent-ack-hold",
        type=non_negative_float,
        default=default("agent_ack_hold"),
        metavar="SECONDS",
        help="an agent's status acknowledgements wait up to this long, while nothing else is "
        "queued for it, for more to go in the same message: a master's writes are most of "
        "what a launch costs it, and an agent resends an unacknowledged status only after 10 "
        f"s (default {default('agent_ack_hold'):g}, at most "
        f"{MAX_AGENT_ACK_HOLD:g}; 0 writes each at once)",
    )
    add_scheduling_flags(p)  # launch pacing, admission bounds, preemption
    p.add_argument(
        "--allocator",
        choices=("numba", "numpy", "reference"),
        default="numba",
        help="numba: the DRF allocator with its walks compiled (default); numpy: the same "
        "walks run as Python, no compiler; reference: the plain-Python specification (slow)",
    )
    p.add_argument(
        "--min-allocatable-resources",
        default="cpus:0.01|mem:32",
        metavar="SPEC",
        help="an offer is made only if it has all of one alternative, as in Mesos: "
        "alternatives separated by '|', each a ';'-list (default 'cpus:0.01|mem:32')",
    )
    p.add_argument(
        "--filter-gpu-resources",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="offer agents with GPUs only to frameworks with the GPU_RESOURCES capability, "
        "as Mesos does (default on)",
    )
    p.add_argument(
        "--fair-sharing-excluded-resources",
        default="gpus",
        metavar="NAMES",
        help="resources left out of dominant shares, comma-separated (default 'gpus'; '' for none)",
    )
    p.add_argument(
        "--weights",
        default=None,
        metavar="ROLE=W,...",
        help="roles' weights at start, e.g. 'web=3,batch=1' (default 1 each; "
        "`corral set weight` changes them later)",
    )
    p.add_argument(
        "--quotas",
        type=Path,
        default=None,
        metavar="FILE",
        help='roles\' quotas at start, a JSON file: {"web": {"guarantee": "cpus:10;mem:4096", '
        '"limit": "cpus:40"}} (`corral set quota` changes them later)',
    )
    p.add_argument(
        "--priority-classes",
        type=Path,
        default=None,
        metavar="FILE",
        help="priority classes at start, a JSON list set over the defaults (system, serving, "
        'default, batch) by name: [{"name": "gold", "value": 5000, "preemption_policy": '
        '"Never", "description": "...", "global_default": false}] (`corral set priorityclass` '
        "changes them later)",
    )
    p.add_argument(
        "--disruption-budgets",
        type=Path,
        default=None,
        metavar="FILE",
        help='disruption budgets drains and the autoscaler keep, a JSON list: [{"name": "web", '
        '"selector": {"app": "web"}, "min_available": 2}] (selector: labels, app, framework; '
        "or max_unavailable; docs/autoscaler.md)",
    )
    add_security_args(p)
    add_mesos_args(p)
    p.add_argument(
        "--ready-file",
        type=Path,
        default=None,
        help="write {grpc, http, master_id, tls} as JSON here once serving",
    )
    p.add_argument(
        "--log-level",
        default="info",
        choices=("debug", "info", "warning", "error"),
        help="the least severe log lines written (default info)",
    )
    p.add_argument(
        "--log-json", action="store_true", default=None, help="JSON logs even on a terminal"
    )
    p.set_defaults(func=run, needs_server=True)


def config_from_args(
    args: argparse.Namespace,
    weights: dict[str, float],
    quotas: dict[str, Quota],
    classes: tuple[PriorityClass, ...],
) -> MasterConfig:
    """The core's knobs from the flags (ValueError for a combination it refuses)."""
    return MasterConfig(
        allocation_interval=args.allocation_interval,
        agent_timeout=args.agent_timeout,
        agent_heartbeat_interval=(
            args.agent_heartbeat
            if args.agent_heartbeat is not None
            else min(default("agent_heartbeat_interval"), args.agent_timeout / 3)
        ),
        framework_failover_timeout=args.failover_timeout,
        max_failover_timeout=args.max_failover_timeout,
        registry_max_agent_age=args.registry_max_agent_age,
        registry_max_agent_count=args.registry_max_agent_count,
        agent_reregister_timeout=args.agent_reregister_timeout,
        agent_removal_rate=(
            args.agent_removal_rate if args.agent_removal_rate is not None else math.inf
        ),
        max_agent_heartbeats_per_second=args.max_agent_heartbeats,
        launch_pacing=args.launch_pacing,
        launch_latency_target=args.launch_latency_target,
        paced_allocation_interval=args.paced_allocation_interval,
        max_agent_launches=args.max_agent_launches,
        max_framework_pending_statuses=args.max_framework_pending_statuses,
        max_waiting_accepts=args.max_waiting_accepts,
        offer_timeout=args.offer_timeout,
        max_completed_frameworks=args.max_completed_frameworks,
        max_completed_tasks_per_framework=args.max_completed_tasks_per_framework,
        stream_queue_bytes=max(1, int(args.stream_queue_mib * MIB)),
        agent_ack_hold=args.agent_ack_hold,
        role_weights=tuple(weights.items()),
        role_quotas=tuple(quotas.items()),
        priority_classes=classes,
        preemption=not args.no_preemption,
        adopt_unknown_agents=args.adopt_unknown_agents,
        preemption_nomination_seconds=args.preemption_nomination,
        preemption_victims_burst=args.preemption_victims_burst,
        preemption_victims_per_minute=args.preemption_victims_per_minute,
        preemption_unused_backoff=args.preemption_unused_backoff,
    )


def run(args: argparse.Namespace) -> int:
    from corral.logging import configure
    from corral.master.allocator.options import make_options
    from corral.master.ha.candidate import HaOptions, serve_ha
    from corral.master.registry import RegistryError
    from corral.master.server import serve_forever

    weights, quotas = roles_from_args(args)
    classes = priority_classes_from_args(args)
    configure(args.log_level, json=args.log_json)
    acl = acl_from_args(args)  # a bad file stops here; TLS is set up once the ports are free
    mesos = mesos_from_args(args)  # so does a bad --mesos-credentials
    try:
        config = dataclasses.replace(
            config_from_args(args, weights, quotas, classes),
            disruption_budgets=budgets_from_args(args),
        )
        excluded = [n.strip() for n in args.fair_sharing_excluded_resources.split(",")]
        allocator_options = make_options(
            args.min_allocatable_resources,
            [n for n in excluded if n],
            filter_gpu_resources=args.filter_gpu_resources,
        )
    except ValueError as exc:
        raise CliError(str(exc), exit_code=2) from None
    if args.zk is not None:
        for flag, given in (("--work-dir", args.work_dir), ("--registry", args.registry)):
            if given is not None:
                raise CliError(
                    f"--zk keeps the registry in ZooKeeper, shared by the masters: drop {flag}",
                    exit_code=2,
                )
        hosts, path = parse_zk_url(args.zk)
        if args.zk_registry and (
            not args.zk_registry.startswith("/") or args.zk_registry.rstrip("/") == path
        ):
            raise CliError(
                f"--zk-registry must be an absolute path other than the election's {path}, "
                f"got {args.zk_registry!r}",
                exit_code=2,
            )
        ha = HaOptions(
            zk_hosts=hosts,
            zk_path=path,
            session_timeout=args.zk_session_timeout,
            registry_path=args.zk_registry.rstrip("/"),
            advertise_host=args.advertise_host,
        )
        _check_ports(args)
        security = security_from_args(args, acl)
        try:
            return asyncio.run(
                serve_ha(
                    config,
                    args.grpc,
                    args.http,
                    args.allocator,
                    args.ready_file,
                    ha,
                    allocator_options=allocator_options,
                    mesos=mesos,
                    **security,
                )
            )
        except (OSError, RegistryError) as exc:
            raise CliError(f"cannot start: {exc}") from None
    _check_ports(args)
    registry_dir, _lock = _work_dir(args)  # the lock is held until run() returns
    security = security_from_args(args, acl)
    try:
        return asyncio.run(
            serve_forever(
                config,
                args.grpc,
                args.http,
                args.allocator,
                args.ready_file,
                allocator_options=allocator_options,
                work_dir=registry_dir,
                accept_empty_registry=args.accept_empty_registry,
                mesos=mesos,
                **security,
            )
        )
    except (OSError, RegistryError) as exc:
        raise CliError(f"cannot start: {exc}") from None


def _work_dir(args: argparse.Namespace) -> tuple[Path | None, WorkDirLock | None]:
    """Where the registry lives (None: in memory), and the lock that keeps the work dir this
    master's (held while the caller keeps it).

    Mesos' master requires a work dir; Corral's has a default (``$CORRAL_HOME/master``), so a
    master started with no flags remembers the agents and frameworks it admitted, and who owns
    each, across a restart. Forgetting is an explicit choice (``--registry memory``): a master
    that forgot must believe what agents report after a restart (docs/security.md). ``args.
    work_dir`` is set to the directory used (TLS writes its certificate there)."""
    from corral.frameworks.sdk.tls import home
    from corral.logging import get_logger

    log = get_logger("corral.master")
    if args.registry == "memory":
        log.warning(
            "registry_in_memory",
            detail="--registry memory: every agent and framework admitted is forgotten when "
            "this master stops; after a restart it believes what agents report",
        )
    elif args.work_dir is None:
        args.work_dir = home() / "master"
    if args.work_dir is None:
        return None, None
    lock = WorkDirLock(args.work_dir, "master.lock", "master")
    try:
        lock.acquire()
    except WorkDirBusy as exc:
        raise CliError(f"cannot start: {exc}") from None
    except OSError as exc:
        raise CliError(f"cannot start: work dir {args.work_dir}: {exc}") from None
    return (None if args.registry == "memory" else args.work_dir), lock


def _check_ports(args: argparse.Namespace) -> None:
    """Before anything starts: a taken port is one line (not gRPC's log line first, nor the
    start-up logs of a master that then stops)."""
    for what, address in (("gRPC", args.grpc), ("HTTP", args.http)):
        why = cannot_listen(address)
        if why is not None:
            raise CliError(f"cannot start: cannot listen for {what} on {address}: {why}")
