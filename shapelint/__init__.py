"""shapelint: a static linter for transformer model configs that makes them GPU-friendly."""

import sys

__version__ = "0.1.0"

# Started as the console script: catch Ctrl-C from the first import on (see _interrupt).
if sys.argv and sys.argv[0].replace("\\", "/").rsplit("/", 1)[-1] in ("shapelint", "shapelint.exe"):
    from shapelint.core import interrupt as _interrupt

    _interrupt.install()
