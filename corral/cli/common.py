"""Argument helpers shared by sub-commands."""

from __future__ import annotations

import argparse

# Re-exported: the CLI's commands take them from here; frameworks from the SDK.
from corral.frameworks.sdk.argtypes import non_negative_float as non_negative_float
from corral.frameworks.sdk.argtypes import non_negative_int as non_negative_int
from corral.frameworks.sdk.argtypes import positive_float as positive_float
from corral.frameworks.sdk.argtypes import positive_int as positive_int

DEFAULT_MASTER = "127.0.0.1:5050"
DEFAULT_HTTP = "127.0.0.1:5080"


def host_port(text: str) -> str:
    """argparse type for HOST:PORT; a bad value is a usage error (exit 2)."""
    host, sep, port = text.rpartition(":")
    if not sep or not host or not port.isdigit() or not 0 <= int(port) <= 65535:
        raise argparse.ArgumentTypeError(f"{text!r} is not HOST:PORT")
    return text


def add_master_arg(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--master",
        type=host_port,
        default=DEFAULT_MASTER,
        metavar="HOST:PORT",
        help=f"the master's gRPC address (default {DEFAULT_MASTER})",
    )
