"""A progress line for long runs: on a terminal's stderr, once a run passes about a second.

Nothing is shown when stderr is not a terminal (a pipe, a file, pre-commit's capture), under
CI (the ``CI`` variable GitHub Actions, GitLab and most CI services set), or when the caller
asks for quiet (``-q``). The line is rewritten in place (``\\r``) at most ten times a second
and erased when the run ends, so the report that follows starts on a clean line.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Mapping
from typing import TextIO

# Shown only for runs longer than this: a short run prints nothing extra.
DELAY_S = 1.0
# Redrawn at most this often.
INTERVAL_S = 0.1


def in_ci(env: Mapping[str, str] | None = None) -> bool:
    """True under a CI service (``CI`` set, and not to ``false`` or ``0``)."""
    value = (os.environ if env is None else env).get("CI", "")
    return value.strip().lower() not in ("", "0", "false")


class ProgressLine:
    """``shapelint: 1234/4000 files (2 s)`` on a terminal, from ``delay_s`` on (`DELAY_S`).

    ``text(done, total, elapsed_s)`` words the line; call the object with ``done`` of
    ``total`` as work finishes, and `close` it at the end.
    """

    def __init__(
        self,
        err: TextIO,
        text: Callable[[int, int, float], str],
        *,
        quiet: bool = False,
        delay_s: float | None = None,
        env: Mapping[str, str] | None = None,
    ) -> None:
        self.err = err
        self.text = text
        isatty = getattr(err, "isatty", None)
        self.on = bool(isatty and isatty()) and not quiet and not in_ci(env)
        self.start = time.monotonic()
        self.delay_s = DELAY_S if delay_s is None else delay_s
        self.drawn_at: float | None = None
        self.shown = False

    def __call__(self, done: int, total: int) -> None:
        """Show ``done`` of ``total`` (only on a terminal, after the delay, ten times a
        second at most, and always the last one)."""
        if not self.on:
            return
        now = time.monotonic()
        elapsed = now - self.start
        if elapsed < self.delay_s:
            return
        if done < total and self.drawn_at is not None and now - self.drawn_at < INTERVAL_S:
            return
        self.drawn_at = now
        self.shown = True
        self.err.write("\r" + self.text(done, total, elapsed) + "\x1b[K")
        self.err.flush()

    def close(self) -> None:
        """Erase the line."""
        if self.shown:
            self.err.write("\r\x1b[K")
            self.err.flush()
            self.shown = False


def files_text(done: int, total: int, elapsed_s: float) -> str:
    """``shapelint: 1234/4000 files (2 s)``: the words of ``check``'s line."""
    return f"shapelint: {done}/{total} files ({elapsed_s:.0f} s)"
