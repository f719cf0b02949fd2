"""The gang ML trainer: N workers placed together as one gang, data-parallel training with a
restart of the whole gang from its last checkpoint when a member fails. ``corral run gang``
(docs/frameworks.md).

``spec`` is what to run, ``plan`` the pure decisions (placement, environment, restarts),
``scheduler`` the SDK scheduler, ``run`` the program, ``cli`` its ``corral run`` entry.
The default worker program is ``worker`` (its math in ``train``, its allreduce in ``comm``,
its checkpoints in ``checkpoint``).
"""
