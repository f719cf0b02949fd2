"""The SDK's default logging, in a fresh process that did not configure structlog: warnings as
JSON lines on stderr (not a terminal here), info hidden, stdout left to the framework.

Constructing a Driver is what sets the default up; it connects to nothing, so the programs
say which credential to use (plain text) rather than depend on one being found."""

from __future__ import annotations

import json
import subprocess
import sys

PROGRAM = """
from corral.frameworks import sdk
from corral.frameworks.sdk.driver import log
sdk.Driver(sdk.Scheduler(), sdk.FrameworkInfo(name="x"), tls=sdk.INSECURE)
log.info("subscribed", master="m")
log.warning("acknowledgements not sent", count=2, error="UNAVAILABLE")
print("framework output")
"""

CONFIGURED = """
import structlog
structlog.configure(processors=[structlog.processors.KeyValueRenderer(key_order=["event"])])
from corral.frameworks import sdk
from corral.frameworks.sdk.driver import log
sdk.Driver(sdk.Scheduler(), sdk.FrameworkInfo(name="x"), tls=sdk.INSECURE)
log.info("subscribed", master="m")
"""


def _run(program: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", program], capture_output=True, text=True, timeout=60, check=True
    )


def test_unconfigured_programs_get_warnings_as_json_on_stderr() -> None:
    done = _run(PROGRAM)
    assert done.stdout == "framework output\n"
    (line,) = done.stderr.splitlines()
    record = json.loads(line)
    assert {k: record[k] for k in ("event", "level", "count", "error")} == {
        "event": "acknowledgements not sent",
        "level": "warning",
        "count": 2,
        "error": "UNAVAILABLE",
    }


def test_a_program_that_configured_structlog_keeps_its_configuration() -> None:
    done = _run(CONFIGURED)
    assert done.stdout == "event='subscribed' master='m'\n"  # its own renderer, info included
