"""The SDK's name for the ZooKeeper detector; the code is the kernel's ``corral.zk_detector``."""

from corral.leader_record import LeaderInfo, leader_info, lowest_contender
from corral.zk_detector import (
    NEEDS_KAZOO,
    ZooKeeperDetector,
    find_leader,
    kazoo_client,
    read_leader,
)

__all__ = [
    "NEEDS_KAZOO",
    "LeaderInfo",
    "ZooKeeperDetector",
    "find_leader",
    "kazoo_client",
    "leader_info",
    "lowest_contender",
    "read_leader",
]
