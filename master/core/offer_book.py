"""The offer book: outstanding offers, kept as columns (offer_columns.py) in batches made
together, and the agents' free ports that travel with them.

Offers come and go by the ten thousand a second in a large cluster, mostly declined unseen: a
per-offer record with a dict entry and an entry in its framework's and its agent's sets was
most of the master's cost per offer. Here an offer is an entry of a batch: its id is the
batch's base plus its index (found by arithmetic and one bisection), its framework is the
batch's, and an agent's offers are found through an index made only when asked for (a rescind,
a registration, the views), dropped whenever offers are made.

Rules (the core's validate() checks them after every event in its tests):
- An offer is outstanding while its entry is alive; a batch with no entry alive is gone from
  the book (``_batches``, its framework's ``_of_fw``); ``count`` is the number alive. Its agent
  is in the allocator and its framework subscribed.
- Its scalars stay charged in the allocator until it is used (accept), returned (decline, a
  stream gone: ``give_back``) or rescinded (its agent detached: ``rescind_agent``).
- An agent's ports are each in one place: free, in one offer, or in one task. An offer carries
  all of its agent's free ports; they come back with the offer. A gang's offers carry them
  too (a demand's shape has no ports, but a gang's members do: a trainer's rank 0 listens on
  one); what the accepted tasks leave comes back at the accept.
- Batches are in the order they were made (``make``, ``make_one`` and ``make_gang``, each with
  the time of the event in hand, take ids from one sequence), so the oldest outstanding offers
  are in the first batch: expiring offers (``expire``) looks at the front and stops at the
  first batch still in time, with no index of its own.
- A gang's offers (``gangs``, gangs.py) are one batch, all outstanding or none: whoever
  returns or uses one returns or uses them all (``_whole_gangs``), and dropping one forgets the
  gang.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping, Sequence
from itertools import repeat
from operator import attrgetter
from typing import cast

import numpy as np
import numpy.typing as npt

from corral.limits import echo
from corral.master.allocator.interface import Allocator, Plan, PlanSource, Scalars
from corral.master.core import commands as cmd
from corral.master.core import offer_ids as offer_ids_mod
from corral.master.core.gang_bundle import Gang
from corral.master.core.offer_columns import OfferColumns
from corral.master.core.pacing import allowance_cut
from corral.master.core.records import AgentRecord, FrameworkRecord, OfferRecord
from corral.master.core.refusals import CallRejected, Refusal
from corral.resources import PortRanges, Resources, normalize_ranges

_CONNECTION = attrgetter("connection")
_FREE_PORTS = attrgetter("free_ports")
_SPEC = attrgetter("spec")

# Entries of batches, each batch with the indices of some of its entries.
Entries = dict[OfferColumns, list[int]]
Handles = npt.NDArray[np.int64]
Rows = npt.NDArray[np.float64]


class OfferBook:
    def __init__(
        self,
        master_id: str,
        agents: dict[str, AgentRecord],
        frameworks: dict[str, FrameworkRecord],
        allocator: Allocator,
        clock: Callable[[], float],
    ) -> None:
        self._agents = agents
        self._frameworks = frameworks
        self._allocator = allocator
        self._clock = clock  # the time of the event in hand
        self._prefix = f"{master_id}-O"
        self._seq = 0
        self._batches: dict[int, OfferColumns] = {}  # by base, oldest first
        # Bases in increasing order, for the bisection from an id; may hold bases of batches
        # gone (a lookup finds them missing from _batches), compacted as they pile up.
        self._bases: list[int] = []
        self.bases_slack = 64  # bases of batches gone kept before compacting (tests set 0)
        self._of_fw: dict[str, dict[int, OfferColumns]] = {}  # a framework's batches by base
        # Agent id -> its entries, made when first asked for since offers were last made;
        # entries that died since are skipped when read.
        self._of_agent: dict[str, list[tuple[OfferColumns, int]]] | None = None
        self.count = 0  # offers outstanding
        # Moves whenever an offer is made or stops being outstanding: a kept agent view
        # (agent_view.py) sums the offers again only when it has moved.
        self.version = 0
        self.offers: Mapping[str, OfferRecord] = OfferView(self)
        self.gangs: dict[str, Gang] = {}  # outstanding bundles by gang id
        self._gang_seq = 0
        self._gang_prefix = f"{master_id}-G"
        # Seconds each agent's freed resources waited to be offered (take_waits), from when
        # resources of the agent came back to the pool with none of it offered since (task
        # end, decline, accept leftover, registration), by agent id.
        self.waits: list[float] = []
        self._freed_at: dict[str, float] = {}
        self.expired = 0  # offers rescinded for their age since the shell last took the count

    # ------------------------------------------------------------------ making offers

    def make(
        self, plan: Plan, allowance: float, now: float
    ) -> tuple[dict[str, list[OfferColumns]], float]:
        """Turn a cycle's plan into offers, per framework, up to ``allowance`` cpus; what is
        past it goes back to the allocator. Returns the offers and the allowance left."""
        scalars = plan.scalar_array()
        source = plan.source
        handles = plan.handle_array() if source is not None else None
        # Paced: what is past the cut is not offered this cycle. The allocator stopped its walk
        # at the allowance, so that is the rest of the last agent walked (split between
        # frameworks), not some framework's share.
        cut, allowance = allowance_cut(scalars[:, 0], allowance)
        held: list[int] = list(range(cut, len(plan)))
        agents, frameworks = self._agents, self._frameworks
        per_fw: dict[str, list[OfferColumns]] = {}
        for fid, idx in plan.by_framework(cut):
            fw = frameworks.get(fid)
            if fw is None or fw.connection is None:
                held += idx.tolist()  # cannot happen while rule 3 holds: give back, not lose
                continue
            aids = plan.agents_at(idx)
            records = list(map(agents.get, aids))
            # Checked per entry in C (a record is never false; ``None in records`` would call
            # the dataclass's __eq__ per entry); the entries found only when one is gone.
            if not all(records) or None in map(_CONNECTION, records):
                gone = [k for k, a in enumerate(records) if a is None or a.connection is None]
                held += idx[gone].tolist()  # as above
                keep = np.ones(len(idx), dtype=bool)
                keep[gone] = False
                idx = idx[keep]
                kept = keep.nonzero()[0].tolist()
                aids = [aids[k] for k in kept]
                records = [records[k] for k in kept]
                if not aids:
                    continue
            agent_records = cast(list[AgentRecord], records)
            ports = _take_ports(agent_records) if any(map(_FREE_PORTS, agent_records)) else {}
            self._offered(aids, now)
            cols = OfferColumns(
                self._prefix,
                self._seq + 1,
                fid,
                aids,
                list(map(_SPEC, agent_records)),
                scalars[idx],
                ports,
                now,
                source=source,
                handles=handles[idx] if handles is not None else None,
            )
            self._add(cols)
            per_fw[fid] = [cols]
        if held:
            fids, all_aids = plan.ids()
            rows = scalars[held].tolist()
            self._allocator.recover_many(
                [(fids[i], all_aids[i], tuple(s)) for i, s in zip(held, rows, strict=True)]
            )
        return per_fw, allowance

    def make_one(
        self, fw: FrameworkRecord, agent: AgentRecord, scalars: Scalars, now: float
    ) -> OfferColumns:
        """One offer of resources already charged to the framework outside a cycle (a
        preemption's nominated room); it carries the agent's free ports as any offer does."""
        ports = _take_ports([agent])
        self._freed_at.pop(agent.agent_id, None)  # offered at once: no wait to measure
        cols = OfferColumns(
            self._prefix,
            self._seq + 1,
            fw.framework_id,
            [agent.agent_id],
            [agent.spec],
            np.array([scalars], dtype=np.float64),
            ports,
            now,
        )
        self._add(cols)
        return cols

    def make_gang(
        self,
        fw: FrameworkRecord,
        demand: str,
        members: int,
        slots: Sequence[tuple[str, Scalars]],
        now: float,
    ) -> OfferColumns:
        """Charge and offer one bundle: ``slots`` are (agent id, scalars), one per agent."""
        self._gang_seq += 1
        gang_id = f"{self._gang_prefix}{self._gang_seq}"
        fid = fw.framework_id
        agents = [self._agents[aid] for aid, _ in slots]
        for aid, scalars in slots:
            self._allocator.allocate(fid, aid, scalars)
        ports = _take_ports(agents)
        self._offered([aid for aid, _ in slots], now)
        cols = OfferColumns(
            self._prefix,
            self._seq + 1,
            fid,
            [aid for aid, _ in slots],
            [a.spec for a in agents],
            np.array([s for _, s in slots], dtype=np.float64).reshape(-1, 4),
            ports,
            now,
            gang_id,
        )
        self._add(cols)
        self.gangs[gang_id] = Gang(gang_id, fid, demand, members, tuple(cols.ids()))
        return cols

    def freed(self, agent_ids: Iterable[str], now: float) -> None:
        """Resources of these agents came back to the pool: an offer of them waited from now,
        unless an earlier return is still unoffered."""
        freed_at = self._freed_at
        fresh = set(agent_ids).difference(freed_at)
        if fresh:
            freed_at.update(dict.fromkeys(fresh, now))

    def _offered(self, agent_ids: list[str], now: float) -> None:
        """The agents were offered: how long what came back waited."""
        came = list(map(self._freed_at.pop, agent_ids, repeat(None)))
        self.waits += [now - t for t in came if t is not None]

    def _add(self, cols: OfferColumns) -> None:
        self._seq += len(cols)
        self._batches[cols.base] = cols
        self._bases.append(cols.base)
        self._of_fw.setdefault(cols.framework_id, {})[cols.base] = cols
        self.count += len(cols)
        self._of_agent = None
        self.version += 1

    def _kill(self, cols: OfferColumns, idx: Sequence[int]) -> None:
        """The entries are no longer outstanding (used or on their way back)."""
        alive = cols.alive
        if len(idx) == cols.live:
            alive[:] = bytes(len(alive))
        else:
            for i in idx:
                alive[i] = 0
        cols.live -= len(idx)
        self.count -= len(idx)
        self.version += 1
        if cols.gang_id:
            self.gangs.pop(cols.gang_id, None)
        if cols.live == 0:
            del self._batches[cols.base]
            of_fw = self._of_fw[cols.framework_id]
            del of_fw[cols.base]
            if not of_fw:
                del self._of_fw[cols.framework_id]
            if len(self._bases) > 2 * len(self._batches) + self.bases_slack:
                self._bases = list(self._batches)  # in order: bases only grow

    # ------------------------------------------------------------------ finding offers

    def _find(self, oid: str) -> tuple[OfferColumns, int] | None:
        seq = offer_ids_mod.seq_of(self._prefix, oid)
        if seq is None:
            return None
        bases = self._bases
        k = bisect_right(bases, seq) - 1
        if k < 0:
            return None
        cols = self._batches.get(bases[k])
        if cols is None:
            return None
        i = seq - cols.base
        if i >= len(cols.alive) or not cols.alive[i]:
            return None
        return cols, i

    def get(self, oid: str) -> OfferRecord | None:
        found = self._find(oid)
        return None if found is None else found[0].record(found[1])

    def own(self, fw: FrameworkRecord, offer_ids: Iterable[str]) -> list[OfferRecord]:
        """The framework's outstanding offers by id; CallRejected if any is not one."""
        ids = list(offer_ids)
        if not ids:
            raise CallRejected(Refusal.INVALID_ARGUMENT, "no offer ids")
        out: list[OfferRecord] = []
        for oid in ids:
            found = self._find(oid)
            if found is None or found[0].framework_id != fw.framework_id:
                raise CallRejected(
                    Refusal.INVALID_ARGUMENT,
                    f"offer {echo(oid)} is unknown, rescinded or already used",
                )
            out.append(found[0].record(found[1]))
        return out

    def known(self, fw: FrameworkRecord, offer_ids: Sequence[str]) -> Entries:
        """The framework's outstanding offers among ``offer_ids`` with the rest of their gangs
        (a gang goes back whole); unknown ids are skipped (a decline racing a rescind is
        normal). Ids must not repeat.

        A framework usually declines what one OFFERS message held: ids of one batch, in a
        row. Those are found a run at a time (``_runs``); any id not of this book's making
        sends the whole call the slow way, one ``_find`` per id."""
        first = offer_ids_mod.one_run(self._prefix, offer_ids)
        if first is not None:
            out = self._runs(range(first, first + len(offer_ids)), breaks=[])
        else:
            seqs = offer_ids_mod.seqs(self._prefix, offer_ids)
            out = self._runs(seqs) if seqs is not None else self._one_by_one(offer_ids)
        fid = fw.framework_id
        for cols in [c for c in out if c.framework_id != fid]:
            del out[cols]  # another framework's: not this one's to decline
        return self._whole_gangs(out)

    def _one_by_one(self, offer_ids: Iterable[str]) -> Entries:
        out: Entries = {}
        for oid in offer_ids:
            found = self._find(oid)
            if found is not None:
                out.setdefault(found[0], []).append(found[1])
        return out

    def _runs(self, seqs: Sequence[int], breaks: list[int] | None = None) -> Entries:
        return offer_ids_mod.runs(self._bases, self._batches, seqs, breaks)

    def _whole_gangs(self, entries: Entries) -> Entries:
        for cols in entries:
            if cols.gang_id:
                entries[cols] = cols.live_indices()
        return entries

    def _agent_index(self) -> dict[str, list[tuple[OfferColumns, int]]]:
        index = self._of_agent
        if index is None:
            index = {}
            for cols in self._batches.values():
                alive = cols.alive
                for i, aid in enumerate(cols.agent_ids):
                    if alive[i]:
                        index.setdefault(aid, []).append((cols, i))
            self._of_agent = index
        return index

    def _agent_entries(self, agent_id: str) -> Entries:
        out: Entries = {}
        for cols, i in self._agent_index().get(agent_id, ()):
            if cols.alive[i]:
                out.setdefault(cols, []).append(i)
        return out

    def agents_offered(self) -> Collection[str]:
        """The agents that may have outstanding offers: none outside it has one (an agent in it
        may have none left)."""
        return self._agent_index().keys()

    def of_agent(self, agent_id: str) -> list[OfferRecord]:
        """The agent's outstanding offers, oldest first."""
        return [c.record(i) for c, idx in self._agent_entries(agent_id).items() for i in idx]

    def of_framework(self, framework_id: str) -> list[OfferRecord]:
        """The framework's outstanding offers, oldest first."""
        batches = self._of_fw.get(framework_id, {})
        return [c.record(i) for c in batches.values() for i in c.live_indices()]

    def offered_rows(
        self, index: Mapping[str, int], n: int, framework_id: str | None = None
    ) -> Rows:
        """[n, 4]: per row of ``index`` (agent id -> row), the scalars its agent's outstanding
        offers hold (only ``framework_id``'s, if given); agents not in ``index`` are left out.
        Array work per batch, no record per offer: the why-pending scan asks it of every offer."""
        out = np.zeros((n, 4), dtype=np.float64)
        batches = (
            self._batches if framework_id is None else self._of_fw.get(framework_id, {})
        ).values()
        for cols in batches:
            size = len(cols)
            at = np.fromiter(
                map(index.get, cols.agent_ids, repeat(-1, size)), dtype=np.intp, count=size
            )
            keep = at >= 0
            if cols.live != size:
                keep &= np.frombuffer(cols.alive, dtype=np.uint8).astype(np.bool_)
            np.add.at(out, at[keep], cols.scalars[keep])
        return out

    def count_of(self, framework_id: str) -> int:
        return sum(c.live for c in self._of_fw.get(framework_id, {}).values())

    def __iter__(self) -> Iterator[str]:
        for cols in self._batches.values():
            for i in cols.live_indices():
                yield cols.offer_id(i)

    # ------------------------------------------------------------------ offers going

    def drop(self, offer: OfferRecord) -> AgentRecord | None:
        """Forget the offer (used, or on its way back); returns its agent (None if gone)."""
        if offer.columns is None:
            raise ValueError(f"offer {offer.offer_id} is not one of the book's")
        self._kill(offer.columns, [offer.index])
        return self._agents.get(offer.agent_id)

    def give_back(self, offers: Iterable[OfferRecord]) -> None:
        """Whole offers go back to the pool (see ``give_back_entries``)."""
        entries: Entries = {}
        for o in offers:
            if o.columns is None:
                raise ValueError(f"offer {o.offer_id} is not one of the book's")
            entries.setdefault(o.columns, []).append(o.index)
        self.give_back_entries(entries)

    def give_back_entries(self, entries: Entries) -> None:
        """Decline, rescind or a stream gone: whole offers go back to the pool (declines come
        thousands at a time: this is a per-offer path). A cycle's offers go back by their
        handles in the plan, the rest by ids and scalars, each kind in one allocator call."""
        returns: list[tuple[str, str, Sequence[float]]] = []
        by_source: dict[int, tuple[PlanSource, list[Handles], list[Rows]]] = {}
        agents, now = self._agents, self._clock()
        for cols, idx in entries.items():
            self._kill(cols, idx)
            aids, scalars, ports = cols.agent_ids, cols.scalars, cols.ports
            # An outstanding offer's agent is known and attached (the module's rules): no
            # per-offer look at it, except to give its ports back.
            if ports:
                for i in idx:
                    p = ports.get(i)
                    if p:
                        return_ports(agents[aids[i]], p)
            self.freed(map(aids.__getitem__, idx), now)
            source, handles = cols.source, cols.handles
            if source is None or handles is None:
                fid, rows = cols.framework_id, cols.scalar_rows()
                returns += [(fid, aids[i], rows[i]) for i in idx]
                continue
            group = by_source.get(id(source))
            if group is None:
                group = by_source[id(source)] = (source, [], [])
            if len(idx) == len(handles):
                group[1].append(handles)
                group[2].append(scalars)
            elif idx:
                group[1].append(handles[idx])
                group[2].append(scalars[idx])
        for source, hs, ss in by_source.values():
            if len(hs) == 1:
                self._allocator.recover_handles(source, hs[0], ss[0])
            else:
                self._allocator.recover_handles(source, np.concatenate(hs), np.concatenate(ss))
        if returns:
            self._allocator.recover_many(returns)

    def take_back(self, fw: FrameworkRecord) -> None:
        """The framework's stream is gone or replaced: its offers return without a RESCIND."""
        batches = self._of_fw.get(fw.framework_id)
        if batches:
            self.give_back_entries({c: c.live_indices() for c in list(batches.values())})

    def rescind_agent(self, agent: AgentRecord, sid: str) -> list[cmd.Command]:
        """The agent is leaving the allocator: its offers return, and their frameworks are told
        (RESCIND) if they can hear it. Nothing of it waits to be offered any more."""
        out = self._rescind(self._agent_entries(agent.agent_id), sid)
        self._freed_at.pop(agent.agent_id, None)
        return out

    def expire(
        self, made_before: float, sid: str
    ) -> tuple[list[cmd.Command], dict[str, dict[str, tuple[float, ...]]]]:
        """Rescind the offers made before ``made_before`` (the offer timeout ran out): they go
        back as a declined offer does (its filter is the caller's: offer_expiry.py). Returns
        the RESCIND commands and, per framework, per agent, what its expired offers held.

        Cost: the offers that expire, plus one look at the front of the batches (oldest first,
        see the module's rules), however many are outstanding."""
        old: Entries = {}
        for cols in self._batches.values():
            if cols.created_at >= made_before:
                break
            old[cols] = cols.live_indices()
        if not old:
            return [], {}
        old = self._whole_gangs(old)
        per_fw: dict[str, dict[str, tuple[float, ...]]] = {}
        for cols, idx in old.items():
            held = per_fw.setdefault(cols.framework_id, {})
            rows = cols.scalar_rows()
            for i in idx:
                aid = cols.agent_ids[i]
                had = held.get(aid)
                row = tuple(rows[i])
                held[aid] = row if had is None else tuple(map(sum, zip(had, row, strict=True)))
            self.expired += len(idx)
        return self._rescind(old, sid), per_fw

    def _rescind(self, entries: Entries, sid: str) -> list[cmd.Command]:
        """The offers return to the pool; their frameworks are told (RESCIND) if they can hear."""
        entries = self._whole_gangs(entries)
        per_fw: dict[str, list[str]] = {}
        for cols, idx in entries.items():
            per_fw.setdefault(cols.framework_id, []).extend(cols.offer_id(i) for i in idx)
        self.give_back_entries(entries)
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
        for cols, idx in self._agent_entries(agent.agent_id).items():
            for i in idx:
                used += cols.ports.get(i, ())
        free = agent.spec.resources - Resources(ports=normalize_ranges(used))
        return free.ports

    def validate(self) -> list[str]:
        """The book's own rules, as faults found (validate.py asks)."""
        faults: list[str] = []
        live = 0
        for base, cols in self._batches.items():
            n = sum(cols.alive)
            if cols.base != base or n != cols.live or n == 0:
                faults.append(f"batch {base}: filed at {cols.base}, {cols.live} live of {n}")
            if self._of_fw.get(cols.framework_id, {}).get(base) is not cols:
                faults.append(f"batch {base} missing from framework {cols.framework_id}'s")
            live += n
        if live != self.count:
            faults.append(f"{self.count} offers counted, {live} alive")
        if sum(len(b) for b in self._of_fw.values()) != len(self._batches):
            faults.append("a framework holds a batch the book does not")
        if self._bases != sorted(self._bases) or not set(self._batches) <= set(self._bases):
            faults.append("the bases are out of order or miss a batch")
        detached = [
            a for a in self._freed_at if not getattr(self._agents.get(a), "in_allocator", 0)
        ]
        if detached:
            faults.append(f"agents waiting to be offered are not attached: {sorted(detached)}")
        return faults


class OfferView(Mapping[str, OfferRecord]):
    """The outstanding offers by id, as records made on demand (views, explain, validate())."""

    def __init__(self, book: OfferBook) -> None:
        self._book = book

    def __getitem__(self, oid: str) -> OfferRecord:
        got = self._book.get(oid)
        if got is None:
            raise KeyError(oid)
        return got

    def __iter__(self) -> Iterator[str]:
        return iter(self._book)

    def __len__(self) -> int:
        return self._book.count

    def __contains__(self, oid: object) -> bool:
        return isinstance(oid, str) and self._book.get(oid) is not None


class AllOffers(Mapping[str, OfferRecord]):
    """Every outstanding offer by id: the book's and the revocable ones (revocable.py keeps
    them apart), the book's first; records are made only for the ids read (the core's
    ``all_offers``: GetState, ListOffers, the Mesos API's ACCEPT)."""

    def __init__(self, book: Mapping[str, OfferRecord], revocable: Mapping[str, OfferRecord]):
        self._book = book
        self._revocable = revocable

    def __getitem__(self, offer_id: str) -> OfferRecord:
        found = self._revocable.get(offer_id)
        return found if found is not None else self._book[offer_id]

    def __iter__(self) -> Iterator[str]:
        yield from self._book
        yield from self._revocable

    def __len__(self) -> int:
        return len(self._book) + len(self._revocable)


def return_ports(agent: AgentRecord, ports: PortRanges) -> None:
    """Ports an offer carried, its accept left unused, or an ended task held are the agent's
    free ports again."""
    if ports:
        agent.free_ports = normalize_ranges(list(agent.free_ports) + list(ports))


def _take_ports(agents: Sequence[AgentRecord]) -> dict[int, PortRanges]:
    """An offer carries all of its agent's free ports (the module's rules): taken from each
    agent that has any, by its index among ``agents``."""
    ports: dict[int, PortRanges] = {}
    for k, agent in enumerate(agents):
        if agent.free_ports:
            ports[k], agent.free_ports = agent.free_ports, ()
    return ports
