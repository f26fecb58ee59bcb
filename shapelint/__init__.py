"""shapelint: a static linter for transformer model configs that makes them GPU-friendly.

The Python API (`check`, `explain`, `suggest`, `schema` and the types they return; see
``__all__`` and docs/api.md) is loaded from `shapelint.api` on first use: ``import
shapelint`` alone imports nothing more, so the command line starts as fast as before.
"""

import sys

__version__ = "0.1.0"

# The public API, with its stability note, in shapelint.api; everything else is internal.
__all__ = [
    "CheckResult",
    "Dim",
    "Estimate",
    "Explanation",
    "Finding",
    "Fix",
    "ModelConfig",
    "ShapelintError",
    "Span",
    "Suggestions",
    "__version__",
    "check",
    "explain",
    "schema",
    "suggest",
]

# `typing` is not imported for this: a name TYPE_CHECKING is what type checkers look for.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from shapelint.api import (
        CheckResult,
        Dim,
        Estimate,
        Explanation,
        Finding,
        Fix,
        ModelConfig,
        ShapelintError,
        Span,
        Suggestions,
        check,
        explain,
        schema,
        suggest,
    )


def __getattr__(name: str) -> object:
    """Load an API name from `shapelint.api` on first use (PEP 562)."""
    if name in __all__:
        import importlib

        # By name, as the rules registry imports its rules: every layer imports this root for
        # __version__, and the API above them all is loaded only when a program asks for it.
        value = getattr(importlib.import_module("shapelint.api"), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'shapelint' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})


# Started as the console script: catch Ctrl-C from the first import on (see _interrupt).
if sys.argv and sys.argv[0].replace("\\", "/").rsplit("/", 1)[-1] in ("shapelint", "shapelint.exe"):
    from shapelint.core import interrupt as _interrupt

    _interrupt.install()
