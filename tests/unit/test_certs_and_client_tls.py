"""`corral certs init|issue` make what `--tls-dir` reads, and refuse what they cannot use; the
client TLS flags become the SDK's environment or a one-line usage error (exit 2)."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest
from cryptography import x509

from corral import pki
from corral.cli.main import main
from corral.frameworks.sdk import tls as sdk_tls
from corral.master.security.tls import load_dir


def _names(pem: bytes) -> set[str]:
    """The DNS names and IP addresses a certificate is for."""
    cert = x509.load_pem_x509_certificate(pem)
    try:
        san = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    except x509.ExtensionNotFound:
        return set()
    return {
        *san.get_values_for_type(x509.DNSName),
        *map(str, san.get_values_for_type(x509.IPAddress)),
    }


def test_init_and_issue_make_credentials_the_master_and_clients_read(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    d = tmp_path / "pki"
    assert main(["certs", "init", "--dir", str(d), "--host", "m1.example"]) == 0
    assert main(["certs", "issue", "team-a", "--role", "framework", "--dir", str(d)]) == 0
    assert stat.S_IMODE(os.stat(d / "ca.key").st_mode) == 0o600
    assert stat.S_IMODE(os.stat(d / "team-a" / "tls.key").st_mode) == 0o600
    server = load_dir(d / "master")
    assert pki.identity(server.cert).roles == {"master"}
    client = sdk_tls.TLS.from_dir(d / "team-a")
    who = pki.identity(client.cert.read_bytes())
    assert (who.name, who.roles) == ("team-a", frozenset({"framework"}))
    assert pki.signed_by(client.cert.read_bytes(), (d / "ca.crt").read_bytes())
    # The master's certificate names master.corral and the --host; a client's never does.
    assert {"master.corral", "m1.example", "127.0.0.1"} <= _names(server.cert)
    assert "master.corral" not in _names(client.cert.read_bytes())
    with pytest.raises(pki.CertError, match="only a master's certificate"):
        pki.issue(pki.read_ca(d), "x", "framework", hosts=["master.corral"])
    # A client's certificate is not a master's: --tls-dir refuses it, naming the file.
    with pytest.raises(pki.CertError, match="is not a master's certificate"):
        load_dir(d / "team-a")
    capsys.readouterr()


@pytest.mark.parametrize(
    ("argv", "words"),
    [
        (["certs", "issue", "bad/name", "--role", "agent"], "is not a principal name"),
        (["certs", "issue", "ok", "--role", "agent"], "no CA in"),
    ],
)
def test_bad_issues_are_one_line_and_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], argv: list[str], words: str
) -> None:
    assert main([*argv, "--dir", str(tmp_path / "none")]) == 2
    err = capsys.readouterr().err
    assert words in err and len(err.strip().splitlines()) == 1, err


def test_existing_credentials_are_not_overwritten_without_force(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    d = tmp_path / "pki"
    assert main(["certs", "init", "--dir", str(d)]) == 0
    first = (d / "ca.crt").read_bytes()
    assert main(["certs", "init", "--dir", str(d)]) == 1
    assert "exists; --force replaces it" in capsys.readouterr().err
    assert (d / "ca.crt").read_bytes() == first
    assert main(["certs", "init", "--dir", str(d), "--force"]) == 0
    assert (d / "ca.crt").read_bytes() != first


@pytest.mark.parametrize(
    ("flags", "words"),
    [
        (["--tls-dir", "/nonexistent"], "cannot read the TLS CA file /nonexistent/ca.crt"),
        (["--insecure", "--tls-dir", "/x"], "contradict"),
        (["--ca", "a"], "--ca, --cert and --key go together"),
    ],
)
def test_client_tls_flags_that_cannot_work_are_usage_errors(
    flags: list[str],
    words: str,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for name in (sdk_tls.ENV_DIR, sdk_tls.ENV_INSECURE):
        monkeypatch.delenv(name, raising=False)
    assert main(["get", "agents", *flags]) == 2
    err = capsys.readouterr().err
    assert words in err and len(err.strip().splitlines()) == 1, err


def test_the_environment_names_the_credential(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in (sdk_tls.ENV_DIR, sdk_tls.ENV_CA, sdk_tls.ENV_CERT, sdk_tls.ENV_KEY):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv(sdk_tls.ENV_HOME, str(tmp_path / "home"))
    monkeypatch.delenv(sdk_tls.ENV_INSECURE, raising=False)
    with pytest.raises(sdk_tls.NoCredentials, match="no TLS credential"):
        sdk_tls.resolve()
    monkeypatch.setenv(sdk_tls.ENV_INSECURE, "1")
    assert sdk_tls.resolve() is sdk_tls.INSECURE
    ca = pki.make_ca()
    cred = pki.write_credential(tmp_path / "c", ca.cert, pki.issue(ca, "me", "operator"))
    monkeypatch.setenv(sdk_tls.ENV_DIR, str(cred))
    found = sdk_tls.resolve()
    assert isinstance(found, sdk_tls.TLS) and found.cert == cred / "tls.crt"
    assert sdk_tls.resolve(sdk_tls.INSECURE) is sdk_tls.INSECURE  # the caller's word wins
