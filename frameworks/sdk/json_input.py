"""The SDK's name for the bounded JSON reader (the services' HTTP APIs use it); the code is
the kernel's ``corral.json_input``, shared with the master's shell and the CLI.
"""

from corral.json_input import (
    MAX_JSON_BYTES,
    MAX_JSON_DEPTH,
    BadJson,
    HttpRequest,
    parse_json,
    read_json_body,
)

__all__ = [
    "MAX_JSON_BYTES",
    "MAX_JSON_DEPTH",
    "BadJson",
    "HttpRequest",
    "parse_json",
    "read_json_body",
]
