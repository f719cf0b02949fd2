"""The batch framework (Spark-like): a job of stages of many short tasks, binpacked at low
priority, retried when they fail or are preempted. ``corral run batch`` (docs/frameworks.md).

``job`` is the pure model (stages, retries, binpack), ``scheduler`` the SDK scheduler,
``progress`` what the user sees, ``run`` the program, ``cli`` its ``corral run`` entry.
"""
