"""Which queues a principal may submit jobs to: the ``jobs.queues`` grant of the master's own
ACL file (``corral jobs serve --acls FILE``, the file ``corral master --acls`` reads; docs/
jobs.md, docs/security.md), checked for the **caller** (the submitting principal, from its
certificate). Everything else a job asks for (its framework's role and tolerations, its
demands' classes and size) the master reviews for the job's owner (service/tenancy.py), and
who may read or change a job is the master's ``act_for``.

No ``--acls``: the master's built-in grants (operators and frameworks: every queue); over plain
text (``--insecure``) nobody can be told apart and all is allowed.

The file is read again when it changes (its time, size or inode), as the master does; a file
that no longer checks is logged and the last good one is kept.
"""

from __future__ import annotations

from pathlib import Path

import structlog

from corral import acl as acls
from corral.acl import Acl, AclError, Principal
from corral.acl_files import load, stamp
from corral.frameworks.service.http_api import Caller

log = structlog.get_logger("corral.jobs")


class QueueGrants:
    def __init__(self, path: Path | None) -> None:
        self.path = path
        self.acl = load(path) if path is not None else acls.builtin()
        self._stamp = self._stat()

    def _stat(self) -> tuple[int, int, int] | None:
        return None if self.path is None else stamp(self.path)

    def _current(self) -> Acl:
        stamp = self._stat()
        if self.path is not None and stamp != self._stamp:
            self._stamp = stamp
            try:
                self.acl = load(self.path)
                log.info("acls_loaded", file=str(self.path), version=self.acl.version)
            except AclError as exc:
                log.error("acls_rejected", error=str(exc), kept=self.acl.version)
        return self.acl

    def submit(self, caller: Caller, queue: str) -> str | None:
        if not caller.secure:
            return None
        denied = self._current().decide(
            Principal(caller.name, caller.roles), acls.SUBMIT_JOB, queue
        )
        return None if denied is None else denied.message
