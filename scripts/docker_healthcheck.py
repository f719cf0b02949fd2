"""Container health check for the one Corral image (installed as /usr/local/bin/corral-healthcheck).

Why a script instead of curl: slim images have no curl, and the same image runs the master, agents
and frameworks. A container running `corral master` is healthy when the master answers GET
/health on its --http address; any other role is healthy while its corral process is alive.
CORRAL_HEALTH_URL overrides the probed URL. Standard library only: it runs with the system python.
The master's HTTP port is HTTPS unless it runs with --insecure; /health needs no credential, and
the probe does not check the certificate: it asks the master in its own container whether it is
up, it does not trust the answer with anything.
"""

from __future__ import annotations

import os
import ssl
import sys
import urllib.request

DEFAULT_HTTP = "127.0.0.1:5080"


def corral_commands() -> list[list[str]]:
    """Argument vectors of every running process whose argv mentions corral."""
    found = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as fh:
                argv = [a.decode(errors="replace") for a in fh.read().split(b"\0") if a]
        except OSError:
            continue
        if any(os.path.basename(a) == "corral" or a.endswith("/corral") for a in argv[:2]):
            found.append(argv)
    return found


def http_address(argv: list[str]) -> str:
    for i, arg in enumerate(argv):
        if arg == "--http" and i + 1 < len(argv):
            return argv[i + 1]
        if arg.startswith("--http="):
            return arg.split("=", 1)[1]
    return DEFAULT_HTTP


def probe(url: str) -> int:
    unchecked = ssl.create_default_context()
    unchecked.check_hostname = False
    unchecked.verify_mode = ssl.CERT_NONE
    try:
        with urllib.request.urlopen(url, timeout=3, context=unchecked) as resp:
            ok = 200 <= resp.status < 300
    except OSError as exc:
        print(f"unhealthy: {url}: {exc}")
        return 1
    print(f"{'healthy' if ok else 'unhealthy'}: {url}")
    return 0 if ok else 1


def main() -> int:
    override = os.environ.get("CORRAL_HEALTH_URL")
    if override:
        return probe(override)
    commands = corral_commands()
    for argv in commands:
        if "master" in argv:
            host, _, port = http_address(argv).rpartition(":")
            if host in ("", "0.0.0.0", "::", "[::]"):
                host = "127.0.0.1"
            scheme = "http" if "--insecure" in argv else "https"
            return probe(f"{scheme}://{host}:{port}/health")
    if commands:
        print("healthy: corral process running")
        return 0
    print("unhealthy: no corral process")
    return 1


if __name__ == "__main__":
    sys.exit(main())
