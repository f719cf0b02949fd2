"""The SDK's name for finding the leading master; the code is the kernel's
(``corral.detector``, with the record format in ``corral.leader_record``), shared with the agent
and the master. Kept so frameworks' imports go on working.
"""

from corral.detector import (
    LEADER_METADATA,
    ZK_SCHEME,
    ZNODE_PREFIX,
    LeaderInfo,
    MasterDetector,
    MasterSpec,
    StaticDetector,
    check_host_port,
    leader_hint,
    leader_info,
    lowest_contender,
    make_detector,
    master_info_json,
    parse_master,
    parse_zk_url,
    sequence_of,
)

__all__ = [
    "LEADER_METADATA",
    "ZK_SCHEME",
    "ZNODE_PREFIX",
    "LeaderInfo",
    "MasterDetector",
    "MasterSpec",
    "StaticDetector",
    "check_host_port",
    "leader_hint",
    "leader_info",
    "lowest_contender",
    "make_detector",
    "master_info_json",
    "parse_master",
    "parse_zk_url",
    "sequence_of",
]
