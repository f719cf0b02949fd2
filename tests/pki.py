"""Certificates for tests that start a master in-process: a CA of their own, the master's
certificate and client credentials issued by it (corral.pki, as `corral certs` makes them)."""

from __future__ import annotations

from pathlib import Path

from corral import pki
from corral.frameworks.sdk import tls as sdk_tls
from corral.master.security.tls import ServerTLS


class TestPKI:
    """A CA in ``directory``; ``server`` is the master's TLS, ``client(name, role)`` a
    credential for a client (the default: an operator)."""

    __test__ = False  # not a test class, whatever its name

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self.ca = pki.make_ca("test-ca")
        master = pki.issue(self.ca, "master", pki.MASTER_ROLE, hosts=["127.0.0.1", "localhost"])
        self.server = ServerTLS(self.ca.cert, master.cert, master.key, b"k" * 32, "test CA")
        self.operator = self.client("tester", "operator")
        self.agent = self.client("agent-1", "agent")

    def client(self, name: str, role: str, hosts: tuple[str, ...] = ()) -> sdk_tls.TLS:
        pem = pki.issue(self.ca, name, role, hosts=hosts)
        return sdk_tls.TLS.from_dir(pki.write_credential(self.directory / name, self.ca.cert, pem))
