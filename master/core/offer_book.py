"""The offer book: outstanding offers, indexed three ways (here by id, in their framework's set,
in their agent's set), and the agents' free ports that travel with them.

Rules (the core's validate() checks them after every event in its tests):
- An offer is in all three indexes or in none; its agent is in the allocator and its framework
  subscribed.
- Its scalars stay charged in the allocator until it is used (accept), returned (decline, a
  stream gone: ``give_back``) or rescinded (its agent detached: ``rescind_agent``).
- An agent's ports are each in one place: free, in one offer, or in one task. An offer carries
  all of its agent's free ports; they come back with the offer. A gang's offers carry them
  too (a demand's shape has no ports, but a gang's members do: a trainer's rank 0 listens on
  one); what the accepted tasks leave comes back at the accept.
- ``offers`` is in the order offers were made (``make``, ``make_one`` and ``make_gang`` add to
  it, each with the time of the event in hand), so the oldest outstanding offer is its first
  entry: expiring offers (``expire``) looks at the front and stops at the first one still in
  time, with no index of its own.
- A gang's offers (``gangs``, gangs.py) are all outstanding or none: whoever returns or uses
  one returns or uses them all (``siblings``), and dropping one forgets the gang.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence

from corral.limits import echo
from corral.master.allocator.interface import Allocator, Plan, PlanSource, Scalars
from corral.master.core import commands as cmd
from corral.master.core.gangs import Gang
from corral.master.core.records import AgentRecord, FrameworkRecord, OfferRecord
from corral.master.core.refusals import CallRejected, Refusal
from corral.resources import Resources, normalize_ranges


class OfferBook:
    def __init__(
        self,
        master_id: str,
        agents: dict[str, AgentRecord],
        frameworks: dict[str, FrameworkRecord],
        allocator: Allocator,
        freed: Callable[[AgentRecord], None],
    ) -> None:
        self.offers: dict[str, OfferRecord] = {}
        self._agents = agents
        self._frameworks = frameworks
        self._allocator = allocator
        self._freed = freed  # resources of the agent came back to the pool
        self._prefix = f"{master_id}-O"
        self._seq = 0
        self.gangs: dict[str, Gang] = {}  # outstanding bundles by gang id
        self._gang_seq = 0
        self._gang_prefix = f"{master_id}-G"
        # Seconds each agent's freed resources waited to be offered (take_waits).
        self.waits: list[float] = []
        self.expired = 0  # offers rescinded for their age since the shell last took the count

    def make(
        self, plan: Plan, allowance: float, now: float
    ) -> tuple[dict[str, list[OfferRecord]], float]:
        """Turn a cycle's plan into offers, per framework, up to ``allowance`` cpus; what is
        past it goes back to the allocator. Returns the offers and the allowance left."""
        per_fw: dict[str, list[OfferRecord]] = defaultdict(list)
        agents, frameworks, offers = self._agents, self._frameworks, self.offers
        prefix, seq = self._prefix, self._seq
        held: list[tuple[str, str, Scalars]] = []
        waits = self.waits
        source, handles = plan.source, plan.handles()
        for i, (fid, aid, s) in enumerate(zip(*plan.columns(), strict=True)):
            if allowance <= 0:
                # Paced: not offered this cycle. The allocator stopped its walk at the
                # allowance, so this is the rest of the last agent walked (split between
                # frameworks), not some framework's share.
                held.append((fid, aid, (s[0], s[1], s[2], s[3])))
                continue
            allowance -= s[0]
            agent = agents.get(aid)
            fw = frameworks.get(fid)
            if agent is None or fw is None or fw.connection is None or agent.connection is None:
                # Cannot happen while rule 3 holds; give the resources back rather than lose them.
                held.append((fid, aid, (s[0], s[1], s[2], s[3])))
                continue
            seq += 1
            if agent.freed_at is not None:
                waits.append(now - agent.freed_at)
                agent.freed_at = None
            ports, agent.free_ports = agent.free_ports, ()
            offer = OfferRecord(
                f"{prefix}{seq}",
                fid,
                aid,
                agent.spec.hostname,
                s,
                ports,
                agent.spec.attributes,
                now,
                "",
                source,
                handles[i] if source is not None else -1,
            )
            offers[offer.offer_id] = offer
            fw.offers.add(offer.offer_id)
            agent.offers.add(offer.offer_id)
            per_fw[fid].append(offer)
        self._seq = seq
        if held:
            self._allocator.recover_many(held)
        return per_fw, allowance

    def make_one(
        self, fw: FrameworkRecord, agent: AgentRecord, scalars: Scalars, now: float
    ) -> OfferRecord:
        """One offer of resources already charged to the framework outside a cycle (a
        preemption's nominated room); it carries the agent's free ports as any offer does."""
        self._seq += 1
        ports, agent.free_ports = agent.free_ports, ()
        offer = OfferRecord(
            f"{self._prefix}{self._seq}",
            fw.framework_id,
            agent.agent_id,
            agent.spec.hostname,
            list(scalars),
            ports,
            agent.spec.attributes,
            now,
        )
        self.offers[offer.offer_id] = offer
        fw.offers.add(offer.offer_id)
        agent.offers.add(offer.offer_id)
        return offer

    def make_gang(
        self,
        fw: FrameworkRecord,
        demand: str,
        members: int,
        slots: Sequence[tuple[str, Scalars]],
        now: float,
    ) -> list[OfferRecord]:
        """Charge and offer one bundle: ``slots`` are (agent id, scalars), one per agent."""
        self._gang_seq += 1
        gang_id = f"{self._gang_prefix}{self._gang_seq}"
        fid = fw.framework_id
        made: list[OfferRecord] = []
        for aid, scalars in slots:
            agent = self._agents[aid]
            self._allocator.allocate(fid, aid, scalars)
            self._seq += 1
            if agent.freed_at is not None:
                self.waits.append(now - agent.freed_at)
                agent.freed_at = None
            ports, agent.free_ports = agent.free_ports, ()
            offer = OfferRecord(
                f"{self._prefix}{self._seq}",
                fid,
                aid,
                agent.spec.hostname,
                list(scalars),
                ports,
                agent.spec.attributes,
                now,
                gang_id,
            )
            self.offers[offer.offer_id] = offer
            fw.offers.add(offer.offer_id)
            agent.offers.add(offer.offer_id)
            made.append(offer)
        self.gangs[gang_id] = Gang(gang_id, fid, demand, members, tuple(o.offer_id for o in made))
        return made

    def siblings(self, offers: Sequence[OfferRecord]) -> list[OfferRecord]:
        """``offers`` and the other offers of their gangs (rule: all or none), each once."""
        if not self.gangs or not any(o.gang_id for o in offers):
            return list(offers)
        out: dict[str, OfferRecord] = {}
        for o in offers:
            out[o.offer_id] = o
            gang = self.gangs.get(o.gang_id) if o.gang_id else None
            if gang is not None:
                for oid in gang.offer_ids:
                    out.setdefault(oid, self.offers[oid])
        return list(out.values())

    def own(self, fw: FrameworkRecord, offer_ids: Iterable[str]) -> list[OfferRecord]:
        """The framework's outstanding offers by id; CallRejected if any is not one."""
        ids = list(offer_ids)
        if not ids:
            raise CallRejected(Refusal.INVALID_ARGUMENT, "no offer ids")
        out: list[OfferRecord] = []
        for oid in ids:
            offer = self.offers.get(oid)
            if offer is None or offer.framework_id != fw.framework_id:
                raise CallRejected(
                    Refusal.INVALID_ARGUMENT,
                    f"offer {echo(oid)} is unknown, rescinded or already used",
                )
            out.append(offer)
        return out

    def known(self, fw: FrameworkRecord, offer_ids: Iterable[str]) -> list[OfferRecord]:
        """The framework's outstanding offers among ``offer_ids``; the rest are skipped (a
        decline racing a rescind is normal)."""
        known, fid = self.offers, fw.framework_id
        return [o for o in map(known.get, offer_ids) if o is not None and o.framework_id == fid]

    def drop(self, offer: OfferRecord) -> AgentRecord | None:
        """Forget the offer (used, or on its way back); returns its agent (None if gone)."""
        del self.offers[offer.offer_id]
        if offer.gang_id:
            self.gangs.pop(offer.gang_id, None)
        fw = self._frameworks.get(offer.framework_id)
        if fw is not None:
            fw.offers.discard(offer.offer_id)
        agent = self._agents.get(offer.agent_id)
        if agent is not None:
            agent.offers.discard(offer.offer_id)
        return agent

    def give_back(self, offers: Iterable[OfferRecord]) -> None:
        """Decline, rescind or a stream gone: whole offers go back to the pool (declines come
        thousands at a time: this is a per-offer path). An offer of a cycle goes back by its
        handle in the plan, the rest by ids and scalars, each kind in one allocator call."""
        returns: list[tuple[str, str, Sequence[float]]] = []
        by_source: dict[int, tuple[PlanSource, list[int], list[Sequence[float]]]] = {}
        last: tuple[PlanSource, list[int], list[Sequence[float]]] | None = None
        freed = self._freed
        for offer in offers:
            agent = self.drop(offer)
            if agent is None:
                continue
            if offer.ports:
                agent.free_ports = normalize_ranges(list(agent.free_ports) + list(offer.ports))
            if not agent.in_allocator:
                continue
            freed(agent)
            source = offer.source
            if source is None:
                returns.append((offer.framework_id, offer.agent_id, offer.scalars))
                continue
            if last is None or last[0] is not source:
                last = by_source.setdefault(id(source), (source, [], []))
            last[1].append(offer.handle)
            last[2].append(offer.scalars)
        for source, handles, scalars in by_source.values():
            self._allocator.recover_handles(source, handles, scalars)
        if returns:
            self._allocator.recover_many(returns)

    def take_back(self, fw: FrameworkRecord) -> None:
        """The framework's stream is gone or replaced: its offers return without a RESCIND."""
        self.give_back([self.offers[oid] for oid in sorted(fw.offers)])

    def rescind_agent(self, agent: AgentRecord, sid: str) -> list[cmd.Command]:
        """The agent is leaving the allocator: its offers return, and their frameworks are told
        (RESCIND) if they can hear it."""
        return self._rescind([self.offers[oid] for oid in sorted(agent.offers)], sid)

    def expire(self, made_before: float, sid: str) -> tuple[list[cmd.Command], dict[str, int]]:
        """Rescind the offers made before ``made_before`` (the offer timeout ran out): they go
        back as a decline without a filter does. Returns the RESCIND commands and how many
        offers each framework lost.

        Cost: the offers that expire, plus one look at the front of ``offers`` (oldest first,
        see the module's rules), however many are outstanding."""
        old: list[OfferRecord] = []
        for offer in self.offers.values():
            if offer.created_at >= made_before:
                break
            old.append(offer)
        if not old:
            return [], {}
        self.expired += len(old)
        per_fw: dict[str, int] = defaultdict(int)
        for offer in old:
            per_fw[offer.framework_id] += 1
        return self._rescind(old, sid), per_fw

    def _rescind(self, offers: list[OfferRecord], sid: str) -> list[cmd.Command]:
        """The offers return to the pool; their frameworks are told (RESCIND) if they can hear."""
        per_fw: dict[str, list[str]] = defaultdict(list)
        offers = self.siblings(offers)
        for offer in offers:
            per_fw[offer.framework_id].append(offer.offer_id)
        self.give_back(offers)
        out: list[cmd.Command] = []
        for fw_id, ids in per_fw.items():
            fw = self._frameworks.get(fw_id)
            if fw is not None and fw.connection is not None:
                out.append(
                    cmd.SendRescind(stimulus_id=sid, framework_id=fw_id, offer_ids=tuple(ids))
                )
        return out

    def free_ports(self, agent: AgentRecord) -> tuple[tuple[int, int], ...]:
        """The agent's ports in neither a task nor an offer (recomputed at registration)."""
        used: list[tuple[int, int]] = []
        for task in agent.tasks.values():
            used += task.spec.resources.ports
        for oid in agent.offers:
            used += self.offers[oid].ports
        free = agent.spec.resources - Resources(ports=normalize_ranges(used))
        return free.ports
