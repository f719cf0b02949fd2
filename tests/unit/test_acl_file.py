"""master/security/acl_file.py's settle rule: a file is read for a reload only once its size, time,
inode and content stayed the same across the settle interval. The interval's sleep is the
test's, so a writer that goes on writing during it is made to, not hoped for."""

from __future__ import annotations

import os
from pathlib import Path

from corral.master.security.acl_file import settled

WHOLE = b"version: 2\nrules:\n  - name: ops\n    cert_roles: [operator]\n    operator: ['*']\n"


async def test_a_file_still_being_written_is_not_read(tmp_path: Path) -> None:
    path = tmp_path / "acls.yaml"
    path.write_bytes(WHOLE[:30])  # the writer's first half: it parses as YAML

    async def writer_goes_on(_: float) -> None:
        with path.open("ab") as f:
            f.write(WHOLE[30:])

    assert await settled(path, 0.5, writer_goes_on) is None


async def test_a_rewrite_of_the_same_size_is_seen_by_its_digest(tmp_path: Path) -> None:
    path = tmp_path / "acls.yaml"
    path.write_bytes(WHOLE)
    stat = path.stat()

    async def same_size_same_time(_: float) -> None:
        path.write_bytes(WHOLE.replace(b"ops", b"opz"))
        os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns))  # a coarse clock: same time

    assert await settled(path, 0.5, same_size_same_time) is None


async def test_a_file_that_stopped_changing_is_read_once(tmp_path: Path) -> None:
    path = tmp_path / "acls.yaml"
    path.write_bytes(WHOLE)
    waited: list[float] = []

    async def quiet(seconds: float) -> None:
        waited.append(seconds)

    read = await settled(path, 0.5, quiet)
    assert read is not None and read[1] == WHOLE and waited == [0.5]
