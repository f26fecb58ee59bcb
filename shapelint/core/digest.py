"""A content digest that is cheap to import (the GPU table snapshot and the lint cache use it).

``hashlib`` loads OpenSSL (~3 ms, a tenth of a one-file run); BLAKE2 is built into CPython, so
its module is imported directly when it is there.
"""

from __future__ import annotations

try:
    from _blake2 import blake2b
except ImportError:  # pragma: no cover - a Python built without its own BLAKE2
    from hashlib import blake2b


def digest(data: bytes) -> str:
    """A 128-bit BLAKE2b hex digest of ``data``."""
    return blake2b(data, digest_size=16).hexdigest()


def keyed_digest(data: bytes, key: bytes, size: int = 32) -> bytes:
    """A keyed BLAKE2b digest (a MAC) of ``data`` under the secret ``key``."""
    return blake2b(data, key=key, digest_size=size).digest()
