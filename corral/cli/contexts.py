"""Where the CLI finds the master when no flag says: ``CORRAL_MASTER``, then the current context
of the config file (kubectl's kubeconfig, in JSON), then ``127.0.0.1:5050``.

The file is ``$CORRAL_CONFIG``, else ``config.json`` in Corral's per-user directory
(``$CORRAL_HOME``, default ``~/.corral``):

    {"current_context": "prod",
     "contexts": {"prod": {"master": "m1:5050,m2:5050", "operator": "alice"},
                  "lab": {"master": "zk://zk1:2181/corral"}}}

A context holds a master spec (an address, a list, or a zk:// URL, as ``--master``/``--zk``
take) and optionally the operator name the CLI declares for operators' actions (``--as``). The
file is written whole, atomically, readable by its owner only. A file the CLI cannot read is an
error naming it (exit 2), never silently ignored.
"""

from __future__ import annotations

import json
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from corral.cli.errors import CliError
from corral.frameworks.sdk.detector import parse_master
from corral.frameworks.sdk.tls import home

ENV_MASTER = "CORRAL_MASTER"
ENV_CONFIG = "CORRAL_CONFIG"
DEFAULT_MASTER = "127.0.0.1:5050"


@dataclass(frozen=True, slots=True)
class Context:
    name: str
    master: str
    operator: str = ""


def config_path() -> Path:
    env = os.environ.get(ENV_CONFIG)
    return Path(env) if env else home() / "config.json"


def _bad(path: Path, why: str) -> CliError:
    return CliError(f"config file {path}: {why}", exit_code=2)


def load(path: Path | None = None) -> tuple[str, dict[str, Context]]:
    """(current context name, contexts by name); an absent file is empty."""
    path = path or config_path()
    try:
        raw = path.read_text()
    except FileNotFoundError:
        return "", {}
    except OSError as exc:
        raise _bad(path, exc.strerror or str(exc)) from None
    try:
        data = json.loads(raw)
    except ValueError as exc:
        raise _bad(path, f"not JSON: {exc}") from None
    if not isinstance(data, dict) or not isinstance(data.get("contexts", {}), dict):
        raise _bad(path, 'expected {"current_context": NAME, "contexts": {NAME: {...}}}')
    contexts: dict[str, Context] = {}
    for name, c in data.get("contexts", {}).items():
        if not isinstance(c, dict) or not isinstance(c.get("master"), str):
            raise _bad(path, f'context {name!r} needs a "master" string')
        try:
            parse_master(c["master"])
        except ValueError as exc:
            raise _bad(path, f"context {name!r}: {exc}") from None
        operator = c.get("operator", "")
        if not isinstance(operator, str) or not _sendable(operator):
            raise _bad(path, f'context {name!r}: "operator" must be printable ASCII text')
        contexts[name] = Context(name, c["master"], operator)
    current = data.get("current_context", "")
    if not isinstance(current, str) or (current and current not in contexts):
        raise _bad(path, f"current_context {current!r} is not one of its contexts")
    return current, contexts


def save(current: str, contexts: dict[str, Context], path: Path | None = None) -> Path:
    path = path or config_path()
    data: dict[str, Any] = {
        "current_context": current,
        "contexts": {
            c.name: {"master": c.master, **({"operator": c.operator} if c.operator else {})}
            for c in contexts.values()
        },
    }
    try:
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".config-")
        with os.fdopen(fd, "w") as f:
            json.dump(data, f, indent=2)
            f.write("\n")
        os.replace(tmp, path)
    except OSError as exc:
        raise _bad(path, f"cannot write it: {exc.strerror or exc}") from None
    return path


def current() -> Context | None:
    name, contexts = load()
    return contexts.get(name) if name else None


def default_master() -> tuple[str, str]:
    """The master spec to use when no flag gives one, and where it came from."""
    env = os.environ.get(ENV_MASTER, "").strip()
    if env:
        try:
            parse_master(env)
        except ValueError as exc:
            raise CliError(f"{ENV_MASTER}: {exc}", exit_code=2) from None
        return env, ENV_MASTER
    ctx = current()
    if ctx is not None:
        return ctx.master, f"context {ctx.name}"
    return DEFAULT_MASTER, "the default"


def _sendable(name: str) -> bool:
    """A name a gRPC header carries and the master records (empty: none declared)."""
    return len(name) <= 255 and name.isprintable() and name.isascii()


def operator_name(flag: str | None) -> str:
    """The operator name to declare: ``--as``, the context's, else the login name (left out
    if it is not plain printable text: a login name is a courtesy, not worth failing for)."""
    if flag:
        return flag
    ctx = current()
    if ctx is not None and ctx.operator:
        return ctx.operator
    login = os.environ.get("USER") or os.environ.get("USERNAME") or ""
    return login if _sendable(login) else ""
