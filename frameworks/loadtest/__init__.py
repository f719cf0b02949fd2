"""Load frameworks for ``corral loadtest``: programs on the public SDK that keep demand high.

``scheduler`` holds the scheduler (launch or decline every offer), ``histogram`` the latency
histogram the workers report, ``worker`` the process that runs many frameworks and reports
counters as JSON lines on stdout.
"""
