"""The services scaffold: what the services on the SDK (serving, jobs, ...) share, so that each
is only its own policy (docs/architecture.md, "Services on the SDK").

A service is a framework process that keeps its own state, serves an HTTP API, and survives
its own restarts without touching what it runs. The scaffold gives it:

``records`` — the durable state as JSON records, ``(kind, key) -> dict``:
    ``Records(backend)`` loads every record into memory; ``get(kind, key)``, ``all(kind)``
    read from memory; ``write(Put(kind, key, record), Delete(kind, key), [...])`` is one
    transaction, written to the backend before memory changes. ``StoreError``: the store
    cannot be used; ``Fenced``: this process no longer leads (end it).
``sqlite_records.SqliteRecords(path, migrate=None)`` — the backend for one host.
``store_lock.StoreLock(state_dir, name)`` — one process per store (``NAME.lock``, flock);
    ``StoreLocked`` names the holder.
``http_api`` — ``build_api(name, errors=..., require_role=..., health=...)`` makes the aiohttp
    application with ``/v1/health`` and ``/metrics``; the service adds routes. Handlers raise
    ``BadRequest`` (400), ``Forbidden`` (403), ``NotFound`` (404), ``ApiError(msg, status)``,
    or their own exceptions mapped by ``errors``; they read bodies with ``read_json``,
    ``json_object``, ``known_fields`` and answer with ``json_response``. ``caller(request)``
    is the ``Caller`` (certificate name, roles). ``STOPPING`` is set when the service stops.
``process`` — ``serve(Options(name, state_dir, listen, standby=..., ready_file=...,
    require_role=..., migrate=...), make, stop)`` runs the whole process: leadership (lock or
    standby), the records (``NAME.db``), ``make(records, tls) -> Hosted``, ``Hosted.start()``,
    the API over the process's TLS credential, the ready file, and the orderly stop.
    ``main(options, make)`` is the same until SIGINT/SIGTERM. ``Hosted`` is the protocol a
    service implements: ``errors``, ``start``, ``close``, ``add_routes``, ``health``,
    ``describe``.

The serving service (``corral.frameworks.serving.serve``) is the worked example.
"""
