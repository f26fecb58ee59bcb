"""Ctrl-C while the command line is starting: one line and exit 130, not a traceback.

`shapelint.cli.main.main` catches KeyboardInterrupt, but the imports that run before it (most of
the package) cannot. When started as the console script, ``shapelint/__init__.py`` calls
`install`: a SIGINT handler that exits at once (there is nothing to clean up yet); `restore`
puts back the previous handler once ``main`` can catch the interrupt itself. A program that
imports shapelint as a library keeps its own Ctrl-C behaviour.
"""

from __future__ import annotations

import os
import signal
from types import FrameType
from typing import Any

MESSAGE = b"shapelint: interrupted\n"
EXIT_CODE = 130


def exit_now(signum: int, frame: FrameType | None) -> None:
    """A SIGINT handler: write the one line and leave with 130 without unwinding."""
    os.write(2, MESSAGE)
    os._exit(EXIT_CODE)


_previous: Any = None


def install() -> None:
    """Exit at once on SIGINT (the console script calls this before its imports)."""
    global _previous
    try:
        _previous = signal.signal(signal.SIGINT, exit_now)
    except ValueError:  # not the main thread: signals are not ours to change
        _previous = None


def restore() -> None:
    """Put back the SIGINT handler that `install` replaced (nothing when it did not run)."""
    if _previous is not None and signal.getsignal(signal.SIGINT) is exit_now:
        signal.signal(signal.SIGINT, _previous)
