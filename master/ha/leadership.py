"""A master's part in the ZooKeeper election: the SDK's ``zk_election.Contender``, one module
for masters and services (``corral serving serve --zk``), which both may import. Its rules
(Mesos' layout, a leader that stops at once when its connection is lost, a standby that joins
again when its session expires) are written there."""

from __future__ import annotations

from corral.zk_election import Contender, ZooKeeperUnreachable

__all__ = ["Contender", "ZooKeeperUnreachable"]
