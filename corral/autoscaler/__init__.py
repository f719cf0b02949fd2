"""`corral autoscaler`: a cluster autoscaler that asks the master where work would go
(docs/autoscaler.md). ``config`` (the file), ``policy`` (the decisions, sans-IO), ``expanders``,
``providers`` (process, command), ``service`` (the loop), ``serve`` (the process, on the
services scaffold), ``bench`` (one evaluation at scale)."""
