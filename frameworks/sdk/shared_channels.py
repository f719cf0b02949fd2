"""The SDK's name for channels shared per process; the code is the kernel's
``corral.shared_channels``.
"""

from corral.shared_channels import (
    shared,
    stamp,
)

__all__ = [
    "shared",
    "stamp",
]
