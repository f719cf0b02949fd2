"""Who may use the job service, decided with the master's own ACL file (``corral jobs serve
--acls FILE``, the file ``corral master --acls`` reads; docs/jobs.md, docs/security.md).

- Submitting to a queue needs the rule's ``jobs.queues`` grant for the **caller** (the
  submitting principal, from its certificate), and the job's priority class and tolerations
  must be granted to the caller too (its ``frameworks`` grants): the service never lends its
  own broader grant (design.md, "Services on the SDK").
- A job is seen and changed (cancel, suspend, resume, history) by its owner and by principals
  granted its queue; to anyone else it does not exist (404).
- No ``--acls``: the master's built-in grants (operators and frameworks: every queue); over
  plain text (``--insecure``) nobody can be told apart and all is allowed.

The file is read again when it changes (its time, size or inode), as the master does; a file
that no longer checks is logged and the last good one is kept.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import structlog

from corral import acl as acls
from corral.acl import Acl, AclError, Principal, acl_from_data
from corral.frameworks.jobs.spec import JobFile
from corral.frameworks.service.http_api import Caller
from corral.placement import TaintEffect, Toleration

log = structlog.get_logger("corral.jobs")


def load(path: Path) -> Acl:
    """The ACL in ``path`` (YAML or JSON); AclError naming the file and the problem."""
    try:
        text = path.read_text()
    except (OSError, UnicodeDecodeError) as exc:
        raise AclError(f"{path}: cannot read it: {exc}") from None
    document: Any
    try:
        document = json.loads(text)
    except ValueError:
        import yaml

        try:
            document = yaml.safe_load(text)
        except yaml.YAMLError as exc:
            raise AclError(f"{path}: neither JSON nor YAML: {' '.join(str(exc).split())}") from None
    try:
        return acl_from_data(document, str(path))
    except AclError as exc:
        raise AclError(f"{path}: {exc}") from None


class AclAuthorizer:
    def __init__(self, path: Path | None) -> None:
        self.path = path
        self.acl = load(path) if path is not None else acls.builtin()
        self._stamp = self._stat()

    def _stat(self) -> tuple[int, int, int] | None:
        if self.path is None:
            return None
        try:
            st = os.stat(self.path)
        except OSError:
            return None
        return (st.st_mtime_ns, st.st_size, st.st_ino)

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

    def submit(self, caller: Caller, queue: str, job: JobFile) -> str | None:
        if not caller.secure:
            return None
        acl, p = self._current(), Principal(caller.name, caller.roles)
        denied = acl.decide(p, acls.SUBMIT_JOB, queue)
        if denied is None and job.priority_class:
            denied = acl.decide(p, acls.USE_PRIORITY_CLASS, job.priority_class)
        for t in job.tolerations:
            if denied is not None:
                break
            effect = TaintEffect(t.effect) if t.effect else None
            denied = acl.tolerate(p, Toleration(t.key, t.value, t.any_value, effect))
        return None if denied is None else denied.message

    def manage(self, caller: Caller, owner: str, queue: str) -> bool:
        if not caller.secure or caller.name == owner:
            return True
        p = Principal(caller.name, caller.roles)
        return self._current().decide(p, acls.SUBMIT_JOB, queue) is None
