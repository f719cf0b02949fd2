"""HTTP clients for tests: requests to a LocalCluster master's port, and to services on this
host that use the local credential (the serving service, highly available masters), with their
CA checked and the credential presented (plain HTTP when the cluster is insecure)."""

from __future__ import annotations

import ssl

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
