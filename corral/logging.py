"""structlog set-up: JSON lines when stderr is not a terminal, readable output when it is."""

from __future__ import annotations

import logging
import sys

import structlog


def configure(level: str = "info", json: bool | None = None) -> None:
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
            logging.getLevelNamesMapping().get(level.upper(), logging.INFO)
        ),
        logger_factory=structlog.PrintLoggerFactory(file=sys.stderr),
        cache_logger_on_first_use=True,
    )


def get_logger(name: str) -> structlog.typing.FilteringBoundLogger:
    logger: structlog.typing.FilteringBoundLogger = structlog.get_logger(name)
    return logger


def uncached_logger(name: str) -> structlog.typing.FilteringBoundLogger:
    """A lazy proxy that never caches: each line takes the configuration in force when it is
    logged (a program's own, made after the kernel module was imported; a test's
    capture_logs). For the modules the SDK shares with the master (the detector, the election),
    which log rarely; the same as the SDK's own ``get_logger``."""
    logger: structlog.typing.FilteringBoundLogger = structlog.wrap_logger(
        None, cache_logger_on_first_use=False, logger_factory_args=(name,)
    )
    return logger
