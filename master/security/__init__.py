"""The master's security room: its TLS (certificate, key, the CA clients must present), who is
calling (principals of gRPC calls and HTTP requests, bearer tokens, the HTTP port's guard), the
operator endpoints as the ACLs name them, the ``--acls`` file, seals the master can check
later, ``Operator.Review`` for services acting for tenants, who asked for an operator's action,
and the audit trail of refusals. The decisions themselves are the kernel's (``corral.acl``)
and the core's."""
