"""The web UI: its JSON endpoints (paginated and filtered for clusters of 10,000 agents and
100,000 tasks), its live stream (Server-Sent Events fed by the runtime's watch, the one the
Operator ``Watch`` RPC and ``corral events --follow`` use), a ring buffer of utilisation samples,
and the page's static files (``static/``, shipped in the wheel; docs/ui.md).
"""
