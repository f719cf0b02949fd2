"""The load test's HTTP client for the masters' ports (/health, /metrics): over TLS with the
load test's credential (the one its agents and frameworks use), or plain text when the masters
run with ``--insecure``."""

from __future__ import annotations

from typing import Any

import aiohttp

from corral.frameworks.sdk import tls as sdk_tls


class MasterSession:
    """An aiohttp session to the masters' HTTP ports. The credential is found at the first
    request: a master the load test starts writes it (~/.corral/tls) as it starts."""

    def __init__(self) -> None:
        self._session: aiohttp.ClientSession | None = None
        self._scheme = "https"
        self._extra: dict[str, Any] = {}

    def _open(self) -> aiohttp.ClientSession:
        if self._session is None:
            tls = sdk_tls.resolve()
            ssl: Any = False
            if isinstance(tls, sdk_tls.TLS):
                ssl = tls.ssl_context()
                # Checked against the name every master's certificate carries, whatever the
                # address dialled.
                self._extra = {"server_hostname": tls.server_name}
            else:
                self._scheme = "http"
            self._session = aiohttp.ClientSession(connector=aiohttp.TCPConnector(ssl=ssl))
        return self._session

    def get(self, http: str, path: str, timeout: float) -> Any:
        """``session.get`` of ``path`` on the master at ``http`` (an async context manager)."""
        session = self._open()
        return session.get(
            f"{self._scheme}://{http}{path}",
            timeout=aiohttp.ClientTimeout(total=timeout),
            **self._extra,
        )

    async def __aenter__(self) -> MasterSession:
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self._session is not None:
            await self._session.close()
