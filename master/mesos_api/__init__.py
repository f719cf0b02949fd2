"""Mesos' v1 scheduler API on the master (issue #46, docs/mesos-compat.md): one adapter in the
master's shell that turns Mesos calls into the core events the gRPC Scheduler service makes,
and the core's messages to frameworks into Mesos events. ``server`` runs its listener,
``scheduler`` the calls and the event stream, ``wire`` the JSON shapes, ``credentials`` HTTP
Basic, ``media`` JSON and protobuf, ``state`` the read-only endpoints."""
