"""Tenants of a service: each object (an app, a job) has an **owner**, the principal that created
it; what a caller may do to it and what it may ask for are the master's to decide, from the
same ACL file it enforces (docs/security.md, "Services acting for tenants"). Never the
service's own grants: a service that launched whatever its callers asked for under its own,
broader principal would launder the ACLs.

Rules (``Tenancy``):
1. A caller is who its client certificate names (``http_api.caller``); the owner of what it
   creates is that principal, with its certificate roles (an ``Owner``), kept with the object
   through restarts. Over plain text (``--insecure``) nobody can be told apart: everything is
   allowed and objects have no owner.
2. A caller may read, change and delete an object it owns; anyone else only if the master's
   ACLs let it act for the owner (the ``act_for`` grant: a team naming its members, operators
   ``"*"``), asked with ``Operator.Review``. An object with no owner (made before tenancy, or
   over plain text) is for those who may act for anyone.
3. What an object asks for (the framework it registers: role, tolerations; its demands:
   priority class, tolerations, count x shape against the cap) is reviewed by the master for
   the OWNER, before the change is kept (403 naming the rule; the master records a Denied
   event); and the service launches on the owner's behalf (``FrameworkInfo.on_behalf_of``),
   so the master checks again at every subscription, demand and launch.
4. Which job-service queues a caller may submit to is the master's too (the ``jobs.queues``
   grant), asked for the CALLER (``may_submit``), so one ACL file decides and a reloaded
   one takes effect at the next submission.
5. The master cannot be asked: 503, nothing changes (fail closed).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import corral.frameworks.sdk as sdk
from corral.frameworks.service.http_api import ApiError, Caller, Forbidden


@dataclass(frozen=True, slots=True)
class Owner:
    """The principal an object belongs to ("": none)."""

    name: str = ""
    roles: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "roles": list(self.roles)}

    @classmethod
    def from_json(cls, data: Any) -> Owner:
        if not isinstance(data, dict):
            return cls()
        return cls(str(data.get("name", "")), tuple(str(r) for r in data.get("roles", ())))

    def principal(self) -> sdk.Principal | None:
        """For ``FrameworkInfo.on_behalf_of`` (None: no owner, launch as the service)."""
        return sdk.Principal(name=self.name, roles=list(self.roles)) if self.name else None


NOBODY = Owner()


class Tenancy:
    """Rules 2-5, asked of the master through ``reviewer`` (None over plain text: rule 1)."""

    def __init__(self, reviewer: sdk.Reviewer | None) -> None:
        self.reviewer = reviewer

    @staticmethod
    def owner_of(caller: Caller) -> Owner:
        """Rule 1: who owns what ``caller`` creates."""
        if not caller.secure or not caller.name:
            return NOBODY
        return Owner(caller.name, tuple(sorted(caller.roles)))

    async def may_act_for(self, caller: Caller, owner: Owner, what: str) -> None:
        """Rule 2, or ``Forbidden`` with the master's reason. ``what``: the request, for the
        message ("scale app web")."""
        if self.reviewer is None or not caller.secure:
            return
        if owner.name and caller.name == owner.name:
            return
        result = await self._review(caller, act_for=owner.name or "*")
        if not result.allowed:
            whose = f"{owner.name}'s" if owner.name else "an unowned"
            raise Forbidden(
                f"{caller} may not {what}: it is {whose}, and the master says: {result.message}"
            )

    async def visible(self, caller: Caller, owners: Iterable[Owner]) -> set[str]:
        """The owners (names) whose objects ``caller`` may read: its own, and those the
        master lets it act for (rule 2)."""
        names = {o.name for o in owners}
        if self.reviewer is None or not caller.secure:
            return names
        out = {caller.name} & names
        for name in sorted(names - out):
            result = await self._review(caller, act_for=name or "*", quiet=True)
            if result.allowed:
                out.add(name)
        return out

    async def may_ask(
        self,
        owner: Owner,
        framework: sdk.FrameworkInfo,
        demands: Iterable[sdk.Demand],
        framework_id: str,
        what: str,
    ) -> None:
        """Rule 3: may ``owner`` register ``framework`` and ask for ``demands``?"""
        if self.reviewer is None or not owner.name:
            return
        result = await self._ask(
            (owner.name, owner.roles),
            framework=framework,
            demands=list(demands),
            framework_id=framework_id,
        )
        if not result.allowed:
            raise Forbidden(f"{what} refused by the master for its owner: {result.message}")

    async def may_submit(self, caller: Caller, queue: str) -> None:
        """Rule 4: may ``caller`` submit jobs to ``queue``? ``Forbidden`` with the master's
        reason (which names the queue and the ACL's version)."""
        if self.reviewer is None or not caller.secure:
            return
        result = await self._ask((caller.name, tuple(caller.roles)), submit_to_queue=queue)
        if not result.allowed:
            raise Forbidden(result.message)

    async def _review(self, caller: Caller, act_for: str, quiet: bool = False) -> sdk.ReviewResult:
        return await self._ask((caller.name, tuple(caller.roles)), act_for=act_for, quiet=quiet)

    async def _ask(self, subject: tuple[str, Iterable[str]], **what: Any) -> sdk.ReviewResult:
        assert self.reviewer is not None
        try:
            return await self.reviewer.review(subject, **what)
        except sdk.CallError as err:
            raise ApiError(f"cannot ask the master whether this is allowed: {err}", 503) from None

    async def close(self) -> None:
        if self.reviewer is not None:
            await self.reviewer.close()
