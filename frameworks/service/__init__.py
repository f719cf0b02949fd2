"""The services scaffold: what the services on the SDK (serving, jobs, ...) share, so that each
is only its own policy (docs/architecture.md, "Services on the SDK").

A service is a framework process that keeps its own state, serves an HTTP API, and survives
its own restarts and failovers without touching what it runs. The scaffold gives it:

``records`` — the durable state as JSON records, ``(kind, key) -> dict``:
    ``Records(backend)`` loads every record into memory; ``get(kind, key)``, ``all(kind)``
    read from memory; ``write(Put(kind, key, record), Delete(kind, key), [...])`` is one
    transaction, written to the backend before memory changes. ``StoreError``: the store
    cannot be used; ``Fenced``: this process no longer leads (end it).
``sqlite_records.SqliteRecords(path, migrate=None)`` — the backend for one host;
``zk_records.ZooKeeperRecords(client, root, leader_znode)`` — in ZooKeeper, every write
    fenced (the leader's election znode, the store's epoch).
``store_lock.StoreLock(state_dir, name)`` — one process per SQLite store (``NAME.lock``).
``leadership`` — ``FileLeadership`` (the lock) or ``ZooKeeperLeadership`` (``--zk``: an
    election, standbys on other hosts); ``process`` drives either.
``http_api`` — ``build_api(name, errors=..., require_role=..., health=..., gate=...)`` makes the
    aiohttp application with ``/v1/health`` and ``/metrics``; the service adds routes. Handlers
    raise ``BadRequest`` (400), ``Forbidden`` (403), ``NotFound`` (404), ``ApiError(msg,
    status)``, or their own exceptions mapped by ``errors``; they read bodies with
    ``read_json``, ``json_object``, ``known_fields`` and answer with ``json_response``.
    ``caller(request)`` is the ``Caller`` (certificate name, roles). ``STOPPING`` is set when
    the service stops. A standby answers 503 naming the leader (``Gate``).
``tenancy`` — ``Owner`` (an object's principal, kept with it), ``Tenancy(reviewer)``:
    ``owner_of(caller)``, ``await may_act_for(caller, owner, what)``, ``await visible(caller,
    owners)``, ``await may_ask(owner, framework_info, demands, framework_id, what)``: each
    asks the master (``sdk.Reviewer``) and raises ``Forbidden`` with its reason. Launch with
    ``FrameworkInfo(on_behalf_of=owner.principal())``.
``process`` — ``serve(Options(name, state_dir, listen, ready_file=..., require_role=...,
    migrate=..., leading=Leading(standby=..., zk=..., zk_session_timeout=..., advertise=...)),
    make, stop)`` runs the whole process: ``make(tls) -> Hosted``, leadership (lock, standby, or
    ZooKeeper), the records, ``Hosted.start(records)``, the API over the process's TLS
    credential, the ready file, the orderly stop (exit 3 when leadership is lost).
    ``main(options, make)`` is the same until SIGINT/SIGTERM. ``Hosted`` is the protocol a
    service implements: ``errors``, ``add_routes(app)``, ``start(records)``, ``close()``,
    ``health()``, ``describe()``.

The serving service (``corral.frameworks.serving.serve``) is the worked example.
"""
