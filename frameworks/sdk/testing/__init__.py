"""Test doubles shipped with the SDK: a fake master in-process, a real cluster as processes."""

from corral.frameworks.sdk.testing.fake_master import FakeMaster, RecordedCall
from corral.frameworks.sdk.testing.local_cluster import LocalCluster, free_port

__all__ = ["FakeMaster", "LocalCluster", "RecordedCall", "free_port"]
