"""The job service: batch and gang jobs submitted to queues with quotas (Kueue's model), run as
frameworks on the public SDK (docs/jobs.md).

The pure parts, sans-IO and deterministic (time comes in as an argument): ``queues`` (the
queue configuration: resource flavors, cluster queues, cohorts, local queues), ``admission``
(whole-job admission, borrowing, reclaim, explanations), ``cron`` (periodic jobs, CronJob's
rules) and ``spec`` (what a job file says)."""
