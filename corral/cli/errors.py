from __future__ import annotations


class CliError(Exception):
    """A failure to report to the user as one line; exit code 1 unless it is a usage error (2)."""

    def __init__(self, message: str, exit_code: int = 1) -> None:
        super().__init__(message)
        self.exit_code = exit_code
