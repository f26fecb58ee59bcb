"""How to install an optional extra (``plot``, ``lsp``), said where a command needs one.

shapelint is installed from a clone or a release tag until it is on a package index, so
``pip install 'shapelint[plot]'`` alone would fail for most users: the hint names all three.
"""

from __future__ import annotations

from shapelint import __version__

REPOSITORY = "https://github.com/shapelint/shapelint"


def install_hint(extra: str) -> str:
    """``pip install '.[EXTRA]'`` in a clone, the release tag from git, and the index once
    published, in one line."""
    return (
        f"in a clone of shapelint, pip install '.[{extra}]'; from the release, "
        f"pip install 'shapelint[{extra}] @ git+{REPOSITORY}@v{__version__}'; "
        f"once published, pip install 'shapelint[{extra}]'"
    )
