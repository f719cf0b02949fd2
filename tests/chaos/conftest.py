"""The chaos suite runs with ``make chaos`` (CORRAL_CHAOS=1), not in ``make test``: each test
starts a real cluster, kills parts of it under load and checks the whole run afterwards."""

from __future__ import annotations

import os

collect_ignore_glob = [] if os.environ.get("CORRAL_CHAOS") == "1" else ["test_*.py"]
