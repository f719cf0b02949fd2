"""The master's wire room: protobuf messages <-> core values, both ways. Decoders validate and
raise ``WireError`` naming the field (``convert_checks``: the input limits every decoder
shares); ``offers`` writes OFFERS events straight to wire bytes, ``usage`` agents' usage
reports; ``call_events`` makes a framework call's core event. No IO and no policy."""
