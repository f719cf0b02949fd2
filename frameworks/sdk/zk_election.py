"""The SDK's name for leader election and fencing in ZooKeeper (services use it); the code is
the kernel's ``corral.zk_election``, shared with the master.
"""

from corral.leader_record import ZNODE_PREFIX, LeaderInfo, leader_info, lowest_contender
from corral.zk_election import (
    Contender,
    Fence,
    FencedOut,
    ZooKeeperUnreachable,
)

__all__ = [
    "ZNODE_PREFIX",
    "Contender",
    "Fence",
    "FencedOut",
    "LeaderInfo",
    "ZooKeeperUnreachable",
    "leader_info",
    "lowest_contender",
]
