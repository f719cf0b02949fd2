"""The master: its sans-IO core (``core``), the DRF allocator (``allocator``), the registry's
stores (``registry``), and its IO shell in rooms by job: ``rpc`` (gRPC servicers), ``wire``
(protobuf <-> core values), ``http`` (the HTTP port), ``security`` (TLS, principals, tokens,
ACL files, audit), ``ha`` (election and standby), ``bench`` (benchmarks), ``ui`` (the web
page). The runtime (``runtime``: one asyncio task owns the core), the process (``server``),
the outbox, metrics, views and sandbox relay stay at this level: they tie the rooms together."""
