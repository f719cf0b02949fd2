"""Mesos' v1 executor API on the agent: custom executors (ExecutorInfo) run as Mesos runs them."""
