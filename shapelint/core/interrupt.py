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
from collections.abc import Iterator
from contextlib import contextmanager
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


class Terminated(KeyboardInterrupt):
    """SIGTERM or SIGHUP, raised where the command is, so that it unwinds as Ctrl-C does: a
    fix's temporary file is removed, nothing is left half-written. A KeyboardInterrupt, so
    every cleanup that handles Ctrl-C handles these too."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum

    @property
    def exit_code(self) -> int:
        """128 + the signal's number, as a shell reports a process the signal ended."""
        return 128 + self.signum

    @property
    def message(self) -> str:
        """The one line printed."""
        return f"shapelint: terminated ({signal.Signals(self.signum).name})"


TERMINATING = tuple(
    getattr(signal, name) for name in ("SIGTERM", "SIGHUP") if hasattr(signal, name)
)


@contextmanager
def terminate_as_interrupt() -> Iterator[None]:
    """While the block runs, SIGTERM and SIGHUP raise `Terminated` in this process (a signal
    already ignored, as under ``nohup``, stays ignored). A process forked inside the block (a
    worker) is ended by the signal as if no handler were set. Outside the main thread this
    does nothing."""
    owner = os.getpid()

    def terminated(signum: int, frame: FrameType | None) -> None:
        if os.getpid() != owner:  # a forked worker: end as the signal says, at once
            signal.signal(signum, signal.SIG_DFL)
            os.kill(os.getpid(), signum)
            return
        raise Terminated(signum)

    previous: dict[int, Any] = {}
    try:
        for signum in TERMINATING:
            if signal.getsignal(signum) == signal.SIG_DFL:
                previous[signum] = signal.signal(signum, terminated)
    except ValueError:  # not the main thread: signals are not ours to change
        pass
    try:
        yield
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
