"""The master's benchmarks (``corral bench launches|offers|demands``): the master's CPU per
launched task, per offer and per allocation tick with demands, measured in process without the
network, and the per-unit result they print (``step_costs``)."""
