"""An ACL file read from disk (YAML or JSON, at most ``MAX_BYTES``), checked (corral.acl), and
its stamp (time, size, inode) to tell when it changed: what the master's ``--acls`` watch
(master/security/acl_file.py) and ``corral master``'s check of the file at start
(corral/cli/master_security.py) read; the master is the only reader (the job service asks it,
``Operator.Review``). yaml is imported when a file is not JSON.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from corral.acl import Acl, AclError, acl_from_data

MAX_BYTES = 4 * 1024 * 1024


def load(path: Path) -> Acl:
    """The ACL in ``path`` (YAML or JSON); AclError naming the file and the problem."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise AclError(f"{path}: cannot read it: {exc.strerror or exc}") from None
    return parse(path, data)


def parse(path: Path, data: bytes) -> Acl:
    """The ACL in ``data``, read from ``path``; AclError naming the file and the problem."""
    if len(data) > MAX_BYTES:
        raise AclError(f"{path}: {len(data)} bytes, more than {MAX_BYTES}")
    try:
        text = data.decode()
    except UnicodeDecodeError as exc:
        raise AclError(f"{path}: not UTF-8: {exc}") from None
    try:
        document = json.loads(text)
    except ValueError:
        import yaml

        try:
            document = yaml.safe_load(text)
        except yaml.YAMLError as exc:
            raise AclError(f"{path}: neither JSON nor YAML: {' '.join(str(exc).split())}") from None
    try:
        return acl_from_data(document, str(path))
    except AclError as exc:
        raise AclError(f"{path}: {exc}") from None


def stamp(path: Path) -> tuple[int, int, int] | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_mtime_ns, st.st_size, st.st_ino)
