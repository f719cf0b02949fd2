"""The SDK logs through structlog, as the rest of Corral does (corral/logging.py).

A program that configured structlog itself (``corral run`` does, and so may a framework) gets
the SDK's lines in its own format. One that did not gets a default when its first Driver is
made: warnings and errors only, on stderr, as JSON lines when stderr is not a terminal and
readable lines when it is. structlog's own default (everything, on stdout) would mix the SDK's
reconnection notes into a framework's output.
"""

from __future__ import annotations

import logging
import sys

import structlog


def configure_logging(level: str = "warning", json: bool | None = None) -> None:
    """Configure structlog for a framework program: ``level`` and up, on stderr, as JSON lines
    (``json=True``, the default when stderr is not a terminal) or readable lines. The same
    format as corral/logging.py's, written again here: the SDK imports only the wire contract
    (tests/unit/test_sdk_api.py)."""
    if json is None:
        json = not sys.stderr.isatty()
    renderer: structlog.typing.Processor = (
        structlog.processors.JSONRenderer() if json else structlog.dev.ConsoleRenderer()
    )
    structlog.configure(
        processors=[
            structlog.contextvars.merge_contextvars,
            structlog.processors.add_log_level,
            structlog.processors.TimeStamper(fmt="iso", utc=True),
            structlog.processors.format_exc_info
            if json
            else structlog.processors.StackInfoRenderer(),
            renderer,
        ],
        wrapper_class=structlog.make_filtering_bound_logger(
            logging.getLevelNamesMapping().get(level.upper(), logging.WARNING)
        ),
        # Not cached: a program that configures structlog later still gets the SDK's lines.
        logger_factory=structlog.PrintLoggerFactory(file=sys.stderr),
        cache_logger_on_first_use=False,
    )


def ensure_configured() -> None:
    """The default configuration, unless the program configured structlog already."""
    if not structlog.is_configured():
        configure_logging()


def get_logger(name: str) -> structlog.typing.FilteringBoundLogger:
    # A lazy proxy that never caches: each line takes the configuration in force when it is
    # logged (a program's own, made after the SDK was imported; a test's capture_logs). The
    # SDK logs rarely, so binding per line costs nothing that matters.
    logger: structlog.typing.FilteringBoundLogger = structlog.wrap_logger(
        None, cache_logger_on_first_use=False, logger_factory_args=(name,)
    )
    return logger
