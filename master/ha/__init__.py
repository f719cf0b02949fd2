"""The master's high-availability room: a master that is one of several (``corral master
--zk``): its part in the ZooKeeper election (``leadership``, over the kernel's
``corral.zk_election``), what a standby answers (``leader_gate``: the leader's address), and
the process that listens, waits to lead, fences the shared registry and runs (``candidate``)."""
