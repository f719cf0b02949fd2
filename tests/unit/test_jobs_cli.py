"""`corral jobs serve` arguments: the retired --acls is a one-line usage error (exit 2) saying
where the decision went, before anything is started or read."""

from __future__ import annotations

from pathlib import Path

import pytest

from corral.cli.main import main


def test_acls_on_the_job_service_says_the_master_decides_now(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    state = tmp_path / "state"
    code = main(["jobs", "serve", "--state", str(state), "--acls", str(tmp_path / "acls.yaml")])
    err = capsys.readouterr().err
    assert code == 2
    assert err.strip().splitlines() == [
        "corral jobs: --acls: the job service no longer reads an ACL file: the master "
        "decides who may submit to which queue (the jobs.queues grant of its own --acls file, "
        "asked for each submission, so a changed file counts at once); leave --acls out "
        "(docs/jobs.md)"
    ]
    assert not state.exists()  # nothing started
