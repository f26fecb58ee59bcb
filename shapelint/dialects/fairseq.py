"""fairseq and its forks (metaseq): architecture functions read through ``safe_getattr``.

A registered architecture function fills the ``args`` namespace with
``args.k = safe_getattr(args, "k", default)``; ``safe_getattr(obj, k, default)`` is ``getattr``
that also gives the default for a value of None, and ``safe_hasattr(obj, k)`` is ``getattr(obj,
k, None) is not None`` (fairseq/utils.py:830-842 at 3d262bb2). The Python reader follows
architecture functions (`shapelint.readers.python.flow`); this module teaches it those two
helpers. Key names are read by the key lexicon.
"""

from __future__ import annotations

from shapelint.readers.hooks import PythonIdioms, ReaderHooks

NAME = "fairseq"

READER_HOOKS = ReaderHooks(
    python_idioms=PythonIdioms(getters=frozenset({"safe_getattr"}), has=frozenset({"safe_hasattr"}))
)
