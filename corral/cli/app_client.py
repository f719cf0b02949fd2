"""What `corral app` needs besides its parser: the serving service's HTTP API as calls, an app
file read (JSON, or YAML with PyYAML), and endpoints as an nginx or HAProxy block.

Standard library only (urllib): `corral app` is a client command of the base install."""

from __future__ import annotations

import json
import os
import ssl
import sys
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from corral.cli.client_tls import credentials
from corral.cli.errors import CliError
from corral.frameworks.sdk import tls as sdk_tls

DEFAULT_SERVING = "https://127.0.0.1:5090"


def service_url(env_var: str, default: str) -> str:
    """A service's URL when the command names none: ``$ENV_VAR``, else ``default`` (the local
    service): https, or http with --insecure."""
    env = os.environ.get(env_var)
    if env:
        return env
    insecure = isinstance(sdk_tls.from_environment(), sdk_tls.Insecure)
    return default.replace("https://", "http://") if insecure else default


def default_url() -> str:
    """$CORRAL_SERVING, else the local serving service."""
    return service_url("CORRAL_SERVING", DEFAULT_SERVING)


def leader_url(zk: str, timeout: float) -> str:
    """The URL of the service that leads under ``zk`` (``zk://HOSTS/PATH``, the services'
    ``--zk``): its election znode says where it serves."""
    from corral.frameworks.sdk.detector import lowest_contender, parse_zk_url
    from corral.frameworks.sdk.zk_detector import kazoo_client

    try:
        hosts, path = parse_zk_url(zk)
        client = kazoo_client(hosts, session_timeout=max(timeout, 2.0))
    except (ValueError, ImportError) as err:
        raise CliError(str(err), exit_code=2) from None
    try:
        try:
            client.start(timeout=timeout)
        except Exception:  # kazoo's own timeout: nothing answered
            raise CliError(f"cannot reach ZooKeeper at {hosts} within {timeout:g} s") from None
        from kazoo.exceptions import NoNodeError

        for _ in range(3):  # the leader may go between the two reads
            try:
                name = lowest_contender(client.get_children(path))
                if name is None:
                    break
                data, _stat = client.get(f"{path}/{name}")
                return str(json.loads(data)["url"])
            except NoNodeError:
                continue
            except (ValueError, KeyError, TypeError):
                break
        raise CliError(f"no serving service leads in ZooKeeper at {zk}")
    finally:
        client.stop()
        client.close()


class Serving:
    """The serving service at ``base`` (https://HOST:PORT; http:// when it runs --insecure;
    ``zk://HOSTS/PATH``: the one that leads there). Over HTTPS the command presents its
    credential (--tls-dir, ~/.corral/tls) and checks the service's certificate against the
    cluster's CA and the URL's host. A standby's 503 names the leader: the call goes there."""

    # How an unreachable service is named, and the command that starts it.
    service_name = "serving service"
    start_command = "corral serving serve"
    url_hint = "--serving URL or CORRAL_SERVING"

    def __init__(self, base: str, timeout: float) -> None:
        if base.startswith("zk://"):
            base = leader_url(base, timeout)
        self.base = base.rstrip("/")
        self.timeout = timeout
        self.context: ssl.SSLContext | None = None
        if self.base.startswith("https://"):
            tls = credentials()
            if isinstance(tls, sdk_tls.Insecure):
                raise CliError(f"{self.base} is HTTPS: drop --insecure, or use http://", 2)
            try:
                self.context = tls.ssl_context()
            except sdk_tls.TLSError as exc:
                raise CliError(str(exc), exit_code=2) from None

    def url(self, path: str) -> str:
        return self.base + path

    def call(self, method: str, path: str, body: object = None) -> Any:
        """The answer's JSON; an error answer raises CliError with its message (exit 2 for
        400: the input was bad)."""
        try:
            return self._call(method, path, body)
        except _Standby as standby:
            self.base = standby.leader.rstrip("/")
            return self._call(method, path, body, follow=False)

    def _call(self, method: str, path: str, body: object, follow: bool = True) -> Any:
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(self.url(path), data=data, method=method)
        if data is not None:
            request.add_header("Content-Type", "application/json")
        try:
            with urllib.request.urlopen(
                request, timeout=self.timeout, context=self.context
            ) as response:
                return json.loads(response.read() or b"null")
        except urllib.error.HTTPError as err:
            answer = _answer(err)
            leader = answer.get("leader")
            if err.code == 503 and follow and isinstance(leader, str) and leader:
                raise _Standby(leader) from None
            message = str(answer.get("error") or f"HTTP {err.code} {err.reason}")
            raise CliError(message, exit_code=2 if err.code == 400 else 1) from None
        except (urllib.error.URLError, OSError) as err:
            raise self._unreachable(err) from None
        except json.JSONDecodeError:
            raise CliError(f"{self.base} answered something that is not JSON") from None

    def lines(self, path: str) -> Iterator[dict[str, Any]]:
        """A watch: each JSON line as it comes (empty keepalive lines skipped), until the
        service ends the stream."""
        request = urllib.request.Request(self.url(path))
        try:
            # No read timeout: a watch waits for changes; the service's keepalive lines and
            # TCP keep the connection honest.
            response = urllib.request.urlopen(request, context=self.context)
        except urllib.error.HTTPError as err:
            raise CliError(_message(err), exit_code=2 if err.code == 400 else 1) from None
        except (urllib.error.URLError, OSError) as err:
            raise self._unreachable(err) from None
        with response:
            for raw in response:
                if raw.strip():
                    yield json.loads(raw)

    def _unreachable(self, err: Exception) -> CliError:
        why = getattr(err, "reason", None) or err
        return CliError(
            f"cannot reach the {self.service_name} at {self.base} ({why}); is "
            f"`{self.start_command}` running? ({self.url_hint})"
        )


class _Standby(Exception):
    def __init__(self, leader: str) -> None:
        self.leader = leader


def _answer(err: urllib.error.HTTPError) -> dict[str, Any]:
    try:
        answer = json.loads(err.read())
    except (ValueError, OSError):
        return {}
    return answer if isinstance(answer, dict) else {}


def _message(err: urllib.error.HTTPError) -> str:
    return str(_answer(err).get("error") or f"HTTP {err.code} {err.reason}")


def quote(app_id: str) -> str:
    return urllib.parse.quote(app_id, safe="")


def read_document(path: str, what: str) -> dict[str, Any]:
    """A file (``-``: standard input) of one object as JSON, or YAML when it is not JSON
    (needs PyYAML: ``pip install 'corral[yaml]'``). Usage errors (exit 2) name the file;
    ``what`` names the object ("app", "job")."""
    try:
        text = sys.stdin.read() if path == "-" else Path(path).read_text()
    except OSError as err:
        raise CliError(f"cannot read {path}: {err.strerror or err}", exit_code=2) from None
    except UnicodeDecodeError as err:
        raise CliError(f"{path}: not text: {err.reason}", exit_code=2) from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as err:
        data = _yaml(path, text, err)
    if not isinstance(data, dict):
        raise CliError(f"{path}: the {what} must be an object, got {type(data).__name__}", 2)
    return data


def read_app(path: str) -> dict[str, Any]:
    """An app file (``read_document``) with its ``id``."""
    data = read_document(path, "app")
    if not isinstance(data.get("id"), str) or not data["id"]:
        raise CliError(f"{path}: id: required (the app's name)", exit_code=2)
    return data


def _yaml(path: str, text: str, json_error: json.JSONDecodeError) -> Any:
    looks_yaml = path.endswith((".yaml", ".yml")) or not text.lstrip().startswith(("{", "["))
    if not looks_yaml:
        raise CliError(f"{path}: not JSON: {json_error}", exit_code=2)
    try:
        import yaml
    except ImportError:
        raise CliError(
            f"{path}: reading YAML needs PyYAML (pip install 'corral[yaml]'); JSON needs nothing",
            exit_code=2,
        ) from None
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as err:
        raise CliError(f"{path}: not YAML: {' '.join(str(err).split())}", exit_code=2) from None


# -- endpoints for proxies -------------------------------------------------------------------


def addresses(endpoints: list[dict[str, Any]], port_index: int) -> list[tuple[str, str]]:
    """(task id, host:port) of each endpoint's port ``port_index``."""
    out = []
    for e in endpoints:
        ports = e.get("ports") or []
        if port_index < len(ports):
            out.append((e["task_id"], f"{e['host']}:{ports[port_index]}"))
    return out


def nginx(app_id: str, endpoints: list[dict[str, Any]], port_index: int) -> str:
    """An nginx ``upstream`` block; with no ready instance, a placeholder marked ``down``
    (nginx refuses an empty upstream), so a reload still succeeds and clients get 502."""
    lines = [f"upstream {app_id} {{"]
    found = addresses(endpoints, port_index)
    for task_id, address in found:
        lines.append(f"    server {address};  # {task_id}")
    if not found:
        lines.append("    server 127.0.0.1:9 down;  # no ready instance")
    lines.append("}")
    return "\n".join(lines) + "\n"


def haproxy(app_id: str, endpoints: list[dict[str, Any]], port_index: int) -> str:
    """An HAProxy ``backend`` section."""
    lines = [f"backend {app_id}", "    balance roundrobin"]
    for task_id, address in addresses(endpoints, port_index):
        lines.append(f"    server {task_id} {address} check")
    return "\n".join(lines) + "\n"
