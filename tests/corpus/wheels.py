"""The benchmarks' pinned-wheel helper (``benchmarks/wheels.py``), for the corpus tests.

A benchmark script loaded by a test imports ``wheels`` too and gets this module: the same
functions and the same `Unreachable` class.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

_PATH = Path(__file__).resolve().parents[2] / "benchmarks" / "wheels.py"
_spec = importlib.util.spec_from_file_location("shapelint_bench_wheels", _PATH)
assert _spec is not None and _spec.loader is not None
_module = sys.modules.get(_spec.name) or importlib.util.module_from_spec(_spec)
if _spec.name not in sys.modules:
    sys.modules[_spec.name] = _module
    _spec.loader.exec_module(_module)

CACHE = _module.CACHE
Unreachable = _module.Unreachable
download = _module.download
unpack = _module.unpack
