"""The exceptions a framework author can catch; all derive from ``DriverError``."""

from __future__ import annotations

import grpc

_PERMANENT = frozenset({grpc.StatusCode.INVALID_ARGUMENT, grpc.StatusCode.PERMISSION_DENIED})


class DriverError(Exception):
    """Base class of every error the SDK raises on purpose."""


class CallError(DriverError):
    """The master refused a call, or the call could not reach it.

    ``code`` is the gRPC status (``INVALID_ARGUMENT`` for a malformed accept, ``UNAVAILABLE``
    when the master is down, ...) and ``message`` the master's reason, kept verbatim so a
    framework can log it.
    """

    def __init__(self, method: str, code: grpc.StatusCode, message: str) -> None:
        super().__init__(f"{method} failed: {code.name}: {message}")
        self.method = method
        self.code = code
        self.message = message

    @property
    def permanent(self) -> bool:
        """The master will refuse the same call again: it is wrong (INVALID_ARGUMENT, e.g. an
        unknown priority class) or not granted to this principal (PERMISSION_DENIED, e.g. a
        class the ACLs do not grant). Sending it again changes nothing, so a framework should
        say so and stop, not retry; any other failure (UNAVAILABLE, ...) may pass."""
        return self.code in _PERMANENT


class NotSubscribedError(CallError):
    """A call was made while the driver holds no subscription (before SUBSCRIBED, or while it
    reconnects). It is a CallError with code UNAVAILABLE, so one ``except CallError`` handles
    every call that did not happen."""

    def __init__(self, method: str) -> None:
        super().__init__(method, grpc.StatusCode.UNAVAILABLE, "the driver is not subscribed")


class ConnectError(DriverError):
    """The driver could not subscribe to the master within its ``connect_timeout``."""


class FrameworkError(DriverError):
    """The master ended the framework (an ERROR event, or a subscription it will never accept).
    The driver stops; it does not reconnect."""
