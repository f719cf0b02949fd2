"""What the job service keeps, as the scaffold's records (``corral.frameworks.service.records``:
SQLite ``jobs.db`` beside ``jobs.lock``, written before memory changes).

Kinds:

- ``job`` (key: the job's name): the job file as submitted, its owner, queue, priority,
  submission time and sequence number (the queue order after a restart), phase and why, its
  flavor and admission time, its framework id and run token, its summary once ended, and for a
  periodic job its schedule's last acted-on time;
- ``task`` (key ``JOB/STAGE/INDEX``): a batch job's task records (``Job.saved``), each written
  before its launch goes to the master, with the agent;
- ``gang`` (key: the job): a gang's run (``Run.saved``), written before the gang's launch;
- ``history`` (key ``JOB/SEQ``): what happened to the job, in order (the newest
  ``KEEP_HISTORY`` per job), which ``corral job history`` and the events feed show.
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from typing import Any

from corral.frameworks.batch.job import Job
from corral.frameworks.service.records import Delete, Op, Put, Record, Records

KEEP_HISTORY = 200
JOB, TASK, GANG, HISTORY, META = "job", "task", "gang", "history", "meta"


class JobStore:
    def __init__(self, records: Records) -> None:
        self.records = records
        # history keys per job, in order (rebuilt from the records at start)
        self._history: dict[str, list[str]] = {}
        for key in sorted(records.all(HISTORY)):
            job, _, _ = key.rpartition("/")
            self._history.setdefault(job, []).append(key)
        self._tasks: dict[str, set[str]] = {}
        for key in records.all(TASK):
            self._tasks.setdefault(key.rsplit("/", 2)[0], set()).add(key)
        # Periodic jobs, and the runs each has made (the service's step looks at these only).
        self.periodic: set[str] = set()
        self._runs: dict[str, set[str]] = {}
        for rec in records.all(JOB).values():
            self._index(rec)
        meta = records.get(META, "seq")
        self.seq = int(meta["next"]) if meta else 0
        self._event_seq = int(meta.get("events", 0)) if meta else 0

    # -- jobs -----------------------------------------------------------------------------

    def jobs(self) -> list[Record]:
        return list(self.records.all(JOB).values())

    def job(self, name: str) -> Record | None:
        return self.records.get(JOB, name)

    def add_job(self, record: Record, note: tuple[str, str]) -> None:
        """A new job (its ``seq`` drawn here), with its first history line, in one write."""
        record["seq"] = self.seq
        self.seq += 1
        self.records.write(
            Put(JOB, record["name"], record),
            self._meta(),
            self._history_ops(record["name"], *note),
        )
        self._index(record)

    def _index(self, rec: Record) -> None:
        if rec.get("spec", {}).get("schedule"):
            self.periodic.add(rec["name"])
        if rec.get("parent"):
            self._runs.setdefault(rec["parent"], set()).add(rec["name"])

    def runs_of(self, parent: str) -> list[Record]:
        """The runs a periodic job has made that are still kept."""
        found = (self.records.get(JOB, n) for n in sorted(self._runs.get(parent, ())))
        return [r for r in found if r is not None]

    def set_fields(self, name: str, note: tuple[str, str] | None = None, **fields: Any) -> None:
        rec = self.records.get(JOB, name)
        if rec is None:
            return
        ops: list[Op] = [Put(JOB, name, {**rec, **fields})]
        if note is not None:
            ops += self._history_ops(name, *note)
        self.records.write(ops)

    def note(self, name: str, kind: str, message: str) -> None:
        self.records.write(self._history_ops(name, kind, message))

    def delete_job(self, name: str) -> None:
        rec = self.records.get(JOB, name)
        if rec is not None and rec.get("parent"):
            self._runs.get(rec["parent"], set()).discard(name)
        self.periodic.discard(name)
        ops: list[Op] = [Delete(JOB, name), Delete(GANG, name)]
        ops += [Delete(TASK, k) for k in self._tasks.pop(name, set())]
        ops += [Delete(HISTORY, k) for k in self._history.pop(name, [])]
        self.records.write(ops)

    # -- tasks ----------------------------------------------------------------------------

    def tasks(self, name: str) -> list[Record]:
        return [self.records.all(TASK)[k] for k in sorted(self._tasks.get(name, ()))]

    def save_tasks(
        self, name: str, job: Job, where: Iterable[tuple[int, int]], agent_id: str = ""
    ) -> None:
        ops: list[Op] = []
        keys = self._tasks.setdefault(name, set())
        for stage, index in where:
            key = f"{name}/{stage}/{index}"
            saved = job.saved(stage, index)
            old = self.records.get(TASK, key)
            kept = (old or {}).get("agent", "")
            saved["agent"] = (agent_id or kept) if saved["live"] else ""
            keys.add(key)
            ops.append(Put(TASK, key, saved))
        self.records.write(ops)

    def live_tasks(self, name: str) -> list[tuple[str, str]]:
        """(task id, agent id) of the job's live attempts, as saved."""
        return [(t["live"], t.get("agent", "")) for t in self.tasks(name) if t["live"]]

    def gang(self, name: str) -> Record | None:
        return self.records.get(GANG, name)

    def save_gang(self, name: str, saved: dict[str, Any]) -> None:
        self.records.write(Put(GANG, name, saved))

    # -- history --------------------------------------------------------------------------

    def history(self, name: str) -> list[Record]:
        return [self.records.all(HISTORY)[k] for k in self._history.get(name, [])]

    def _history_ops(self, name: str, kind: str, message: str) -> list[Op]:
        self._event_seq += 1
        key = f"{name}/{self._event_seq:012d}"
        keys = self._history.setdefault(name, [])
        keys.append(key)
        ops: list[Op] = [
            Put(HISTORY, key, {"at": time.time(), "job": name, "kind": kind, "message": message}),
            self._meta(),
        ]
        while len(keys) > KEEP_HISTORY:
            ops.append(Delete(HISTORY, keys.pop(0)))
        return ops

    def recent_events(self, limit: int) -> list[Record]:
        """The newest ``limit`` history lines of every job, oldest first."""
        every = self.records.all(HISTORY)
        newest = sorted(every, key=lambda k: k.rsplit("/", 1)[1])[-limit:]
        return [every[k] for k in newest]

    def _meta(self) -> Put:
        return Put(META, "seq", {"next": self.seq, "events": self._event_seq})
