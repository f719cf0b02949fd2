"""The serving service's DNS server on real UDP and TCP sockets, asked by `dig` (Debian's
bind9-dnsutils) and by dnspython as resolver clients: the names and records of docs/
frameworks.md ("Finding apps by DNS"), NXDOMAIN and empty answers, refusing or forwarding other
zones, truncation over UDP and the retry over TCP, bad packets, and answers that follow the
endpoints as they change. The whole service with dig: tests/integration/test_serving_dns.py."""

from __future__ import annotations

import asyncio
import os
import re
import shutil
import socket
import subprocess
from collections.abc import AsyncIterator

import dns.asyncquery
import dns.message
import dns.rcode
import dns.rdatatype
import pytest

from corral.frameworks.serving.dns import DnsServer
from corral.frameworks.serving.dns_names import AppView, parse_domain, parse_forward, task_label
from corral.frameworks.serving.instances import Endpoint

APPS: dict[str, AppView] = {}


def need_dig() -> str:
    dig = shutil.which("dig")
    if dig is None:
        if os.environ.get("CI"):
            pytest.fail("dig is needed in CI (.ci/run installs bind9-dnsutils)")
        pytest.skip("needs dig: apt-get install bind9-dnsutils")
    return dig


async def dig(server: DnsServer, *args: str) -> str:
    """dig's output, run in a thread: the server answers on this test's loop."""
    host, _, port = server.address.rpartition(":")
    done = await asyncio.to_thread(
        subprocess.run,
        [need_dig(), f"@{host}", "-p", port, "+time=2", "+tries=2", *args],
        capture_output=True,
        text=True,
        timeout=20,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


async def short(server: DnsServer, name: str, rdtype: str) -> list[str]:
    return sorted((await dig(server, name, rdtype, "+short")).split("\n")[:-1])


def web(n: int, ports: int = 2) -> AppView:
    return AppView(
        ("http",),
        [
            Endpoint(
                f"web.{i:04x}",
                f"10.0.0.{i % 250 + 1}",
                tuple(31000 + i * 10 + p for p in range(ports)),
                "v1",
            )
            for i in range(n)
        ],
    )


@pytest.fixture
async def server() -> AsyncIterator[DnsServer]:
    APPS.clear()
    s = DnsServer(APPS.get, "corral", ttl=2)
    await s.start("127.0.0.1:0")
    yield s
    await s.close()


async def test_a_srv_and_task_names_of_ready_instances_answered_to_dig(server: DnsServer) -> None:
    APPS["web"] = web(2)
    assert await short(server, "web.corral", "A") == ["10.0.0.1", "10.0.0.2"]
    assert await short(server, "WEB.Corral.", "A") == ["10.0.0.1", "10.0.0.2"]  # case-insensitive
    first, second = task_label("web.0000"), task_label("web.0001")
    assert first == "web-0000"
    # APP SRV: each ready instance's first port; _NAME._tcp: the named port; _portI: by index.
    assert await short(server, "web.corral", "SRV") == [
        f"0 1 31000 {first}.web.corral.",
        f"0 1 31010 {second}.web.corral.",
    ]
    assert await short(server, "_http._tcp.web.corral", "SRV") == await short(
        server, "web.corral", "SRV"
    )
    assert await short(server, "_port1._tcp.web.corral", "SRV") == [
        f"0 1 31001 {first}.web.corral.",
        f"0 1 31011 {second}.web.corral.",
    ]
    # The targets resolve, and come along in the additional section.
    assert await short(server, f"{second}.web.corral", "A") == ["10.0.0.2"]
    full = await dig(server, "web.corral", "SRV")
    assert "ADDITIONAL SECTION" in full
    assert re.search(rf"^{first}\.web\.corral\.\s+2\s+IN\s+A\s+10\.0\.0\.1$", full, re.M), full
    assert "flags: qr aa rd" in full  # authoritative
    # TTLs are the configured ones.
    answer = await dig(server, "web.corral", "A", "+noall", "+answer")
    assert all(line.split()[1] == "2" for line in answer.strip().splitlines())


async def test_unknown_names_are_nxdomain_and_empty_apps_nodata(server: DnsServer) -> None:
    APPS["web"] = web(1)
    APPS["idle"] = AppView((), [])
    for name in ("nope.corral", "x.web.corral", "_admin._tcp.web.corral", "a.b.c.d.corral"):
        assert "status: NXDOMAIN" in await dig(server, name, "A"), name
    idle = await dig(server, "idle.corral", "A")
    assert "status: NOERROR" in idle and "ANSWER: 0" in idle
    assert "AUTHORITY: 1" in idle and "SOA" in idle  # a negative answer carries the SOA
    assert "status: NOERROR" in await dig(server, "web.corral", "TXT")  # the name exists
    (soa,) = await short(server, "corral", "SOA")
    assert soa.startswith("ns.corral. hostmaster.corral. ")


async def test_other_zones_are_refused_or_forwarded(server: DnsServer) -> None:
    assert "status: REFUSED" in await dig(server, "example.com", "A")
    upstream_apps = {"db": AppView((), [Endpoint("db-1", "10.9.9.9", (5432,), "v")])}
    upstream = DnsServer(upstream_apps.get, "other", ttl=5)
    await upstream.start("127.0.0.1:0")
    try:
        host, port = parse_forward(upstream.address)
        forwarding = DnsServer(APPS.get, "corral", forward=(host, port))
        await forwarding.start("127.0.0.1:0")
        try:
            assert await short(forwarding, "db.other", "A") == ["10.9.9.9"]
            assert "status: NXDOMAIN" in await dig(forwarding, "nope.other", "A")
        finally:
            await forwarding.close()
    finally:
        await upstream.close()


async def test_a_large_answer_is_truncated_over_udp_and_whole_over_tcp(server: DnsServer) -> None:
    APPS["web"] = web(80)
    host, port = server.address.rsplit(":", 1)
    query = dns.message.make_query("web.corral", "SRV", use_edns=False)
    udp = await dns.asyncquery.udp(query, host, port=int(port), timeout=5)
    assert udp.flags & dns.flags.TC and not udp.answer
    tcp = await dns.asyncquery.tcp(query, host, port=int(port), timeout=5)
    assert len(tcp.answer[0]) == 80
    # dig retries over TCP by itself.
    assert len(await short(server, "web.corral", "SRV")) == 80


async def test_bad_packets_get_formerr_or_nothing_and_the_server_goes_on(server: DnsServer) -> None:
    APPS["web"] = web(1)
    host, port = server.address.rsplit(":", 1)

    def ask(data: bytes, timeout: float = 5) -> bytes:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
            s.settimeout(timeout)
            s.sendto(data, (host, int(port)))
            return s.recv(4096)

    reply = dns.message.from_wire(await asyncio.to_thread(ask, b"\x12\x34\x01\x00" + b"\xff" * 20))
    assert reply.id == 0x1234 and reply.rcode() == dns.rcode.FORMERR
    with pytest.raises(TimeoutError):  # not even a header: no answer
        await asyncio.to_thread(ask, b"\x00", 1)
    notify = dns.message.make_query("web.corral", "SOA")
    notify.set_opcode(dns.opcode.NOTIFY)
    answer = await dns.asyncquery.udp(notify, host, port=int(port), timeout=5)
    assert answer.rcode() == dns.rcode.NOTIMP
    assert await short(server, "web.corral", "A") == ["10.0.0.1"]


async def test_answers_follow_the_endpoints_the_moment_they_change(server: DnsServer) -> None:
    APPS["web"] = web(3)
    assert len(await short(server, "web.corral", "SRV")) == 3
    APPS["web"] = AppView(("http",), list(web(3).endpoints)[1:])  # one is no longer ready
    assert len(await short(server, "web.corral", "SRV")) == 2
    del APPS["web"]
    assert "status: NXDOMAIN" in await dig(server, "web.corral", "SRV")


def test_flags_are_checked() -> None:
    assert parse_domain("Apps.Example.") == "apps.example"
    with pytest.raises(ValueError, match="is not a domain"):
        parse_domain("a..b")
    with pytest.raises(ValueError, match="must be IP:PORT"):
        parse_forward("dns.example:53")
    with pytest.raises(ValueError, match="is not IP:PORT"):
        parse_forward("10.0.0.1:99999")
