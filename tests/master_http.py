"""HTTP clients for tests: requests to a LocalCluster master's port, and to services on this
host that use the local credential (the serving service, highly available masters), with their
CA checked and the credential presented (plain HTTP when the cluster is insecure)."""

from __future__ import annotations

import asyncio
import json
import ssl
from datetime import datetime
from typing import NamedTuple

import aiohttp

from corral.frameworks.sdk import tls as sdk_tls
from corral.frameworks.sdk.testing import LocalCluster


def master_session(cluster: LocalCluster) -> aiohttp.ClientSession:
    return aiohttp.ClientSession(connector=aiohttp.TCPConnector(ssl=cluster.ssl_context() or False))


def local_context() -> ssl.SSLContext:
    """The credential clients on this host find (~/.corral/tls, or $CORRAL_TLS_DIR): the
    master's and the serving service's certificates name 127.0.0.1."""
    tls = sdk_tls.resolve()
    assert isinstance(tls, sdk_tls.TLS), f"tests run with TLS, got {tls!r}"
    return tls.ssl_context()


def local_session() -> aiohttp.ClientSession:
    return aiohttp.ClientSession(connector=aiohttp.TCPConnector(ssl=local_context()))


class Token(NamedTuple):
    value: str
    expires: float  # seconds since the epoch, rounded down to the second


async def issue_token(cluster: LocalCluster, ttl: float = 0.0) -> Token:
    """A token from `corral token` (the real CLI, with the cluster's operator credential), as an
    operator gets one for the web page."""
    tls = cluster.tls
    assert isinstance(tls, sdk_tls.TLS), f"tokens need a TLS master, got {tls!r}"
    proc = await asyncio.create_subprocess_exec(
        *cluster.corral,
        *("token", "-o", "json", "--master", cluster.master, "--ttl", str(ttl)),
        *("--ca", str(tls.ca), "--cert", str(tls.cert), "--key", str(tls.key)),
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await asyncio.wait_for(proc.communicate(), 60)
    assert proc.returncode == 0, err.decode()
    answer = json.loads(out)
    return Token(answer["token"], datetime.fromisoformat(answer["expires"]).timestamp())


def browser_session(cluster: LocalCluster) -> aiohttp.ClientSession:
    """An HTTP client as the web page is: it checks the master's certificate against the
    cluster's CA, presents no certificate of its own, and keeps the cookie /login sets
    (aiohttp keeps none from an IP address unless told)."""
    tls = cluster.tls
    assert isinstance(tls, sdk_tls.TLS), f"the page signs in to a TLS master, got {tls!r}"
    context = ssl.create_default_context(cafile=str(tls.ca))
    return aiohttp.ClientSession(
        connector=aiohttp.TCPConnector(ssl=context), cookie_jar=aiohttp.CookieJar(unsafe=True)
    )
