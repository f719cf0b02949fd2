"""The job service's HTTP API (docs/jobs.md), on the services scaffold (``http_api``): beside
the scaffold's ``/v1/health`` and ``/metrics``:

| route | what |
|---|---|
| ``POST /v1/jobs`` (the job as the body) | submit (201) |
| ``GET /v1/jobs`` (``?queue=Q``) | the jobs the caller may see, in queue order |
| ``GET /v1/jobs/NAME`` | one job: phase, why, progress, tasks |
| ``GET /v1/jobs/NAME/explain`` | why it waits: its queue's reason, the master's why-pending |
| ``GET /v1/jobs/NAME/history`` | what happened to it |
| ``POST /v1/jobs/NAME/cancel``, ``/suspend``, ``/resume`` | |
| ``GET /v1/queues`` | every queue: nominal, used, borrowed, lent, pending, admitted |
| ``GET /v1/events`` | the newest events of the jobs the caller may see |

Metrics: ``corral_queue_pending_jobs{queue}``, ``corral_queue_admitted_jobs{queue}``,
``corral_queue_admitted_resources{queue,flavor,resource}``, ``..._nominal_resources``,
``..._borrowed_resources``, ``..._lent_resources``, ``corral_job_service_cycle_seconds`` (the
last admission cycle) and ``corral_job_service_preemptions_total``.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator

from aiohttp import web
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric

from corral.frameworks.jobs.queues import RESOURCES
from corral.frameworks.jobs.service import JobService
from corral.frameworks.service.http_api import (
    METRICS,
    BadRequest,
    caller,
    json_response,
    read_json,
)

# The service, once this process leads (the scaffold routes requests only then).
SERVICE: web.AppKey[Callable[[], JobService]] = web.AppKey("jobs")


def add_routes(app: web.Application, service: Callable[[], JobService]) -> None:
    app[SERVICE] = service
    app.router.add_post("/v1/jobs", submit)
    app.router.add_get("/v1/jobs", list_jobs)
    app.router.add_get("/v1/jobs/{name}", get_job)
    app.router.add_get("/v1/jobs/{name}/explain", explain)
    app.router.add_get("/v1/jobs/{name}/history", history)
    app.router.add_post("/v1/jobs/{name}/cancel", cancel)
    app.router.add_post("/v1/jobs/{name}/suspend", suspend)
    app.router.add_post("/v1/jobs/{name}/resume", resume)
    app.router.add_get("/v1/queues", queues)
    app.router.add_get("/v1/events", events)
    app[METRICS].register(_QueueMetrics(service))


def _service(request: web.Request) -> JobService:
    return request.app[SERVICE]()


async def submit(request: web.Request) -> web.Response:
    body = await read_json(request)
    return json_response(await _service(request).submit(body, caller(request)), 201)


async def list_jobs(request: web.Request) -> web.Response:
    queue = request.query.get("queue")
    return json_response({"jobs": await _service(request).jobs(caller(request), queue)})


async def get_job(request: web.Request) -> web.Response:
    return json_response(await _service(request).get(request.match_info["name"], caller(request)))


async def explain(request: web.Request) -> web.Response:
    s, name, who = _service(request), request.match_info["name"], caller(request)
    job = await s.get(name, who)
    return json_response(
        {
            "name": name,
            "phase": job["phase"],
            "explain": job["explain"],
            "why_pending": await s.why_pending(name, who),
        }
    )


async def history(request: web.Request) -> web.Response:
    name = request.match_info["name"]
    return json_response(
        {"name": name, "history": await _service(request).history(name, caller(request))}
    )


async def cancel(request: web.Request) -> web.Response:
    name = request.match_info["name"]
    return json_response(await _service(request).cancel(name, caller(request)))


async def suspend(request: web.Request) -> web.Response:
    name = request.match_info["name"]
    return json_response(await _service(request).suspend(name, caller(request)))


async def resume(request: web.Request) -> web.Response:
    name = request.match_info["name"]
    return json_response(await _service(request).resume(name, caller(request)))


async def queues(request: web.Request) -> web.Response:
    return json_response(_service(request).queues())


async def events(request: web.Request) -> web.Response:
    raw = request.query.get("limit", "200")
    if not raw.isdigit() or not 0 < int(raw) <= 1000:
        raise BadRequest(f"limit: a whole number from 1 to 1000, got {raw!r}")
    return json_response({"events": await _service(request).events(caller(request), int(raw))})


class _QueueMetrics:
    """The queues' figures, read at each scrape (none before this process leads)."""

    def __init__(self, service: Callable[[], JobService]) -> None:
        self.service = service

    def collect(self) -> Iterator[Metric]:
        try:
            s = self.service()
        except AssertionError:
            return
        pending = GaugeMetricFamily(
            "corral_queue_pending_jobs", "Jobs waiting in the queue", labels=["queue"]
        )
        admitted = GaugeMetricFamily(
            "corral_queue_admitted_jobs", "Jobs holding the queue's quota", labels=["queue"]
        )
        figures = {
            name: GaugeMetricFamily(
                f"corral_queue_{name}_resources", help_, labels=["queue", "flavor", "resource"]
            )
            for name, help_ in (
                ("admitted", "What the queue's admitted jobs reserve"),
                ("nominal", "The queue's nominal quota"),
                ("borrowed", "What the queue uses beyond its nominal quota"),
                ("lent", "What of the queue's nominal quota its cohort uses"),
            )
        }
        seen: set[str] = set()
        for row in s.admission.status():
            if row.cluster_queue not in seen:
                seen.add(row.cluster_queue)
                pending.add_metric([row.cluster_queue], row.pending)
                admitted.add_metric([row.cluster_queue], row.admitted)
            for name, vector in (
                ("admitted", row.used),
                ("nominal", row.nominal),
                ("borrowed", row.borrowed),
                ("lent", row.lent),
            ):
                for r, value in zip(RESOURCES, vector, strict=True):
                    if not math.isinf(value):
                        figures[name].add_metric([row.cluster_queue, row.flavor, r], value)
        cycle = GaugeMetricFamily(
            "corral_job_service_cycle_seconds", "The last admission cycle's duration"
        )
        cycle.add_metric([], s.last_cycle_ms / 1000)
        preempted = CounterMetricFamily(
            "corral_job_service_preemptions", "Jobs preempted by their queues' reclaim"
        )
        preempted.add_metric([], s.preemptions)
        yield pending
        yield admitted
        yield from figures.values()
        yield cycle
        yield preempted
