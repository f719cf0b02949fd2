"""``corral loadtest``: a master, simulated agents and load frameworks, measured end to end.

- ``options``: the parameters, validated.
- ``processes``: starting and stopping the master, agent and framework processes.
- ``scrape``: reading the master's Prometheus ``/metrics``.
- ``collect``: the workers' JSON lines and the scrapes, as time series and window totals.
- ``figures``: the final figures (the JSON written by ``--json``).
- ``report``: the live display and the final table (rich); ``plot``: the PNG (matplotlib).
- ``run``: the orchestration.
"""
