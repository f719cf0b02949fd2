"""The serving service's DNS server (``corral serving serve --dns HOST:PORT``): its apps' ready
instances by name, from the same live endpoints the endpoints watch follows (docs/
frameworks.md, "Finding apps by DNS"). dnspython reads and writes the wire format.

Names, under ``DOMAIN`` (``--dns-domain``, default ``corral``):

- ``APP.DOMAIN``: ``A``/``AAAA``, the hosts of the app's ready instances; ``SRV``, one record
  per ready instance with its first port (Consul's ``web.service.consul SRV``).
- ``_PORT._tcp.APP.DOMAIN`` (or ``_udp``): ``SRV``, one record per ready instance with its port
  named ``PORT`` (the app's ``port_names``, or ``port0``, ``port1``, ... by index), as
  Mesos-DNS's ``_web._tcp.marathon.mesos``.
- ``TASK.APP.DOMAIN``: ``A``/``AAAA`` of one ready instance (the targets SRV records name, their
  addresses in the answer's additional section). ``TASK`` is the task id as a DNS label.

Rules:
1. Only ready instances are named (readiness, not liveness: running, healthy if checked, and
   passing the readiness check if any); an instance being drained or killed is not. An answer
   is built from the endpoints as they are at the moment of the query: it changes the moment
   the endpoints do.
2. TTLs are short (``--dns-ttl``, default 2 s), negative answers too (the SOA's minimum).
3. A name under ``DOMAIN`` that names no app, task or port: NXDOMAIN. An app with no ready
   instance, or a type not served: an empty answer (NOERROR), with the SOA.
4. A name outside ``DOMAIN``: forwarded to ``--dns-forward HOST:PORT`` when given (its answer
   relayed), else REFUSED. Only standard queries: another opcode is NOTIMP, a packet that
   does not parse FORMERR (or nothing, if not even its header does).
5. UDP and TCP on the same port; a UDP answer larger than the client's payload (512 bytes, or
   its EDNS size) is truncated (TC), and the client asks again over TCP.

An app id is served only when it is a DNS label (letters, digits, '-'; names are
case-insensitive); app ids that are not are left out.
"""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import re
import socket
import struct
import time
from collections.abc import Callable, Sequence

import dns.asyncquery
import dns.exception
import dns.flags
import dns.message
import dns.name
import dns.opcode
import dns.rcode
import dns.rdataclass
import dns.rdatatype
import dns.rrset
import structlog

from corral.frameworks.serving.dns_names import DEFAULT_DOMAIN, DEFAULT_TTL, AppView, task_label
from corral.frameworks.serving.instances import Endpoint

log = structlog.get_logger("corral.serving.dns")

FORWARD_TIMEOUT = 2.0
TCP_IDLE_SECONDS = 10.0
MAX_IN_FLIGHT = 1024  # UDP queries being answered at once; more are dropped (clients retry)
HOST_CACHE_SECONDS = 30.0  # agents' hostnames resolved to addresses
_IN = dns.rdataclass.IN
A, AAAA, SRV, SOA, NS, ANY = (
    dns.rdatatype.A,
    dns.rdatatype.AAAA,
    dns.rdatatype.SRV,
    dns.rdatatype.SOA,
    dns.rdatatype.NS,
    dns.rdatatype.ANY,
)


Lookup = Callable[[str], AppView | None]  # an app by its DNS label, None if there is none


def port_index(view: AppView, name: str) -> int | None:
    """The index of the port ``name`` (a name from ``port_names``, or ``portI``)."""
    if name in view.port_names:
        return view.port_names.index(name)
    match = re.fullmatch(r"port(\d{1,3})", name)
    return int(match.group(1)) if match else None


class DnsServer:
    def __init__(
        self,
        lookup: Lookup,
        domain: str = DEFAULT_DOMAIN,
        ttl: int = DEFAULT_TTL,
        forward: tuple[str, int] | None = None,
    ) -> None:
        self.lookup = lookup
        self.origin = dns.name.from_text(domain)
        self.ttl = ttl
        self.forward = forward
        self.address = ""
        self._udp: asyncio.DatagramTransport | None = None
        self._tcp: asyncio.Server | None = None
        self._in_flight: set[asyncio.Task[None]] = set()
        self._hosts: dict[str, tuple[float, list[str]]] = {}
        self._serial = int(time.time())
        self.queries = 0

    # -- the sockets --------------------------------------------------------------------------

    async def start(self, address: str) -> str:
        """Listen on ``address`` (HOST:PORT; port 0: a free one, the same for UDP and TCP);
        the bound HOST:PORT. OSError if it cannot."""
        host, _, port_text = address.rpartition(":")
        host = host.strip("[]")
        loop = asyncio.get_running_loop()
        for _ in range(5):  # port 0: UDP's free port may be taken for TCP; try another
            udp, _protocol = await loop.create_datagram_endpoint(
                lambda: _Udp(self), local_addr=(host, int(port_text))
            )
            port = udp.get_extra_info("sockname")[1]
            try:
                self._tcp = await asyncio.start_server(self._tcp_client, host, port)
            except OSError:
                udp.close()
                if int(port_text):
                    raise
                continue
            self._udp = udp
            self.address = f"{host}:{port}"
            return self.address
        raise OSError(f"cannot bind UDP and TCP on one free port at {host}")

    async def close(self) -> None:
        if self._udp is not None:
            self._udp.close()
        if self._tcp is not None:
            self._tcp.close()
            with contextlib.suppress(Exception):
                await self._tcp.wait_closed()
        for task in list(self._in_flight):
            task.cancel()

    def _datagram(self, data: bytes, peer: tuple[str, int]) -> None:
        if len(self._in_flight) >= MAX_IN_FLIGHT:
            return
        task = asyncio.get_running_loop().create_task(self._answer_udp(data, peer))
        self._in_flight.add(task)
        task.add_done_callback(self._in_flight.discard)

    async def _answer_udp(self, data: bytes, peer: tuple[str, int]) -> None:
        wire = await self.handle(data, tcp=False)
        if wire is not None and self._udp is not None and not self._udp.is_closing():
            self._udp.sendto(wire, peer)

    async def _tcp_client(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                async with asyncio.timeout(TCP_IDLE_SECONDS):
                    (size,) = struct.unpack("!H", await reader.readexactly(2))
                    data = await reader.readexactly(size)
                wire = await self.handle(data, tcp=True)
                if wire is None:
                    break
                writer.write(struct.pack("!H", len(wire)) + wire)
                await writer.drain()
        except (TimeoutError, asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()
            with contextlib.suppress(Exception):
                await writer.wait_closed()

    # -- the answers --------------------------------------------------------------------------

    async def handle(self, data: bytes, tcp: bool) -> bytes | None:
        """The answer to one query's wire bytes (None: nothing can be answered)."""
        self.queries += 1
        try:
            query = dns.message.from_wire(data)
        except Exception:  # any parse error: answer FORMERR if the header can be read
            if len(data) < 12:
                return None
            (query_id,) = struct.unpack("!H", data[:2])
            bad = dns.message.Message(id=query_id)
            bad.flags = dns.flags.QR
            bad.set_rcode(dns.rcode.FORMERR)
            return bad.to_wire()
        try:
            response = await self.answer(query)
        except Exception:  # a bug must not take the server down: SERVFAIL, logged
            log.exception("dns answer failed", query=str(query.question))
            response = dns.message.make_response(query)
            response.set_rcode(dns.rcode.SERVFAIL)
        limit = 65535 if tcp else max(512, query.payload if query.edns >= 0 else 512)
        try:
            return response.to_wire(max_size=limit)
        except dns.exception.TooBig:
            short = dns.message.make_response(query)
            short.flags |= dns.flags.TC | dns.flags.AA
            return short.to_wire(max_size=limit)

    async def answer(self, query: dns.message.Message) -> dns.message.Message:
        response = dns.message.make_response(query)
        if query.opcode() != dns.opcode.QUERY:
            response.set_rcode(dns.rcode.NOTIMP)
            return response
        if len(query.question) != 1:
            response.set_rcode(dns.rcode.FORMERR)
            return response
        question = query.question[0]
        name, rdtype = question.name, question.rdtype
        if not name.is_subdomain(self.origin):
            return await self._elsewhere(query, response)
        response.flags |= dns.flags.AA
        relative = name.relativize(self.origin).labels
        labels = [label.decode(errors="replace").lower() for label in relative]
        labels = [] if labels == ["@"] else labels
        found = await self._ours(response, name, rdtype, labels)
        if not found:
            response.set_rcode(dns.rcode.NXDOMAIN)
        if not response.answer:
            response.authority.append(self._soa())
        return response

    async def _ours(
        self, response: dns.message.Message, name: dns.name.Name, rdtype: int, labels: list[str]
    ) -> bool:
        """Fill the answer for a name in the zone; False if the name does not exist."""
        if not labels:  # the zone's apex
            if rdtype in (SOA, ANY):
                response.answer.append(self._soa())
            return True
        view = self.lookup(labels[-1])
        if view is None:
            return False
        if len(labels) == 1:  # APP
            if rdtype in (A, AAAA, ANY):
                await self._addresses(response.answer, name, rdtype, view.endpoints)
            if rdtype in (SRV, ANY):
                await self._srv(response, name, view, 0)
            return True
        if len(labels) == 2:  # TASK.APP
            chosen = [e for e in view.endpoints if task_label(e.task_id) == labels[0]]
            if not chosen:
                return False
            if rdtype in (A, AAAA, ANY):
                await self._addresses(response.answer, name, rdtype, chosen)
            return True
        if len(labels) == 3 and labels[0].startswith("_") and labels[1] in ("_tcp", "_udp"):
            index = port_index(view, labels[0][1:])
            if index is None:
                return False
            if rdtype in (SRV, ANY):
                await self._srv(response, name, view, index)
            return True
        return False

    async def _srv(
        self, response: dns.message.Message, name: dns.name.Name, view: AppView, index: int
    ) -> None:
        app = name.relativize(self.origin).labels[-1].decode().lower()
        records, targets = [], []
        for e in view.endpoints:
            if index < len(e.ports) and e.host:
                target = dns.name.from_text(f"{task_label(e.task_id)}.{app}", self.origin)
                records.append(f"0 1 {e.ports[index]} {target.to_text()}")
                targets.append((target, e))
        if records:
            response.answer.append(dns.rrset.from_text_list(name, self.ttl, _IN, SRV, records))
        for target, e in targets:
            await self._addresses(response.additional, target, ANY, [e])

    async def _addresses(
        self,
        section: list[dns.rrset.RRset],
        name: dns.name.Name,
        rdtype: int,
        endpoints: Sequence[Endpoint],
    ) -> None:
        v4: list[str] = []
        v6: list[str] = []
        for e in endpoints:
            for address in await self._resolve(e.host):
                kind = v4 if ipaddress.ip_address(address).version == 4 else v6
                if address not in kind:
                    kind.append(address)
        if v4 and rdtype in (A, ANY):
            section.append(dns.rrset.from_text_list(name, self.ttl, _IN, A, sorted(v4)))
        if v6 and rdtype in (AAAA, ANY):
            section.append(dns.rrset.from_text_list(name, self.ttl, _IN, AAAA, sorted(v6)))

    async def _resolve(self, host: str) -> list[str]:
        """An agent's address(es): the host itself when it is an address, else its name
        resolved (cached ``HOST_CACHE_SECONDS``)."""
        if not host:
            return []
        with contextlib.suppress(ValueError):
            return [str(ipaddress.ip_address(host.strip("[]")))]
        now = time.monotonic()
        cached = self._hosts.get(host)
        if cached is not None and cached[0] > now:
            return cached[1]
        try:
            infos = await asyncio.get_running_loop().getaddrinfo(
                host, None, type=socket.SOCK_STREAM
            )
            found = sorted({str(info[4][0]) for info in infos})
        except OSError:
            found = []
        self._hosts[host] = (now + HOST_CACHE_SECONDS, found)
        return found

    def _soa(self) -> dns.rrset.RRset:
        ns = dns.name.from_text("ns", self.origin).to_text()
        mbox = dns.name.from_text("hostmaster", self.origin).to_text()
        ttl = self.ttl
        text = f"{ns} {mbox} {self._serial} {max(ttl, 1)} {max(ttl, 1)} 86400 {ttl}"
        return dns.rrset.from_text(self.origin, ttl, _IN, SOA, text)

    async def _elsewhere(
        self, query: dns.message.Message, response: dns.message.Message
    ) -> dns.message.Message:
        """Rule 4: forward, or refuse."""
        if self.forward is None:
            response.set_rcode(dns.rcode.REFUSED)
            return response
        host, port = self.forward
        try:
            answer, _tcp = await dns.asyncquery.udp_with_fallback(
                query, host, timeout=FORWARD_TIMEOUT, port=port
            )
        except (dns.exception.DNSException, OSError) as err:
            log.info("dns forward failed", upstream=f"{host}:{port}", error=repr(err))
            response.set_rcode(dns.rcode.SERVFAIL)
            return response
        return answer


class _Udp(asyncio.DatagramProtocol):
    def __init__(self, server: DnsServer) -> None:
        self.server = server

    def datagram_received(self, data: bytes, addr: tuple[str | int, ...]) -> None:
        self.server._datagram(data, (str(addr[0]), int(addr[1])))
