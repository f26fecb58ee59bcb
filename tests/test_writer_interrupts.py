"""An interrupt at any moment of a write leaves the old file or the new one, and no temporary
file: the fix's write (`write_atomic`), an output (`write_output`) and the cache's `replace_in`
are stopped by a KeyboardInterrupt raised at each bytecode they run in turn, which is every
point where a signal handler (Ctrl-C, or SIGTERM and SIGHUP as `Terminated`) can raise.

The moments a real signal can arrive are a subset of these, so a write that passes here
cannot leave a temporary file behind a signal (the CI run that failed: one ``.shapelint.tmp``
left by SIGTERM in a ``--fix`` of 60 files, the signal having landed between the temporary
file's creation and the block that removes it).
"""

from __future__ import annotations

import dis
import os
import sys
from collections.abc import Callable
from pathlib import Path
from types import FrameType
from typing import Any

import pytest

from shapelint.engine import writer
from shapelint.engine.reading import read_snapshot

OLD = b'{"hidden_size": 1000}\n'
NEW = b'{"hidden_size": 1024}\n'
WRITER = writer.__file__
# A no-op cannot raise: no signal handler runs there (CPython checks for signals on calls,
# backward jumps and function entry), and the ``try:`` line's NOP can lie outside the block
# it opens.
NOP = dis.opmap["NOP"]


class Stop(KeyboardInterrupt):
    """The interrupt raised by the tracer."""


def interrupted_at(step: int, action: Callable[[], None]) -> bool:
    """Run ``action``, raising `Stop` at the ``step``-th bytecode (a NOP aside) run in the
    writer module;
    True when it was interrupted, False when it finished first."""
    count = 0

    def local(frame: FrameType, event: str, arg: Any) -> Any:
        nonlocal count
        if event == "opcode" and frame.f_code.co_code[frame.f_lasti] != NOP:
            count += 1
            if count == step:
                raise Stop
        return local

    def calls(frame: FrameType, event: str, arg: Any) -> Any:
        if frame.f_code.co_filename != WRITER:
            return None
        frame.f_trace_opcodes = True
        return local

    sys.settrace(calls)
    try:
        action()
    except Stop:
        return True
    finally:
        sys.settrace(None)
    return False


def leftovers(folder: Path, expected: set[str]) -> list[str]:
    return sorted(set(os.listdir(folder)) - expected)


def every_moment(folder: Path, target: Path, action: Callable[[], None]) -> int:
    """Interrupt ``action`` at each of its bytecodes until one run finishes; after each,
    ``target`` holds the old bytes or the new ones and nothing else is in ``folder``."""
    step = 0
    while True:
        step += 1
        target.write_bytes(OLD)
        done = not interrupted_at(step, action)
        assert target.read_bytes() in (OLD, NEW), step
        assert leftovers(folder, {target.name}) == [], step
        if done:
            assert target.read_bytes() == NEW
            return step


@pytest.mark.skipif(not writer.AT_DIRS, reason="the dir_fd writer (POSIX)")
def test_a_fix_interrupted_at_any_bytecode_leaves_no_temporary_file(tmp_path: Path) -> None:
    target = tmp_path / "config.json"
    roots = writer.linted_roots([str(tmp_path)])

    def fix() -> None:
        snap = read_snapshot(str(target))
        writer.write_atomic(str(target), NEW, snap, roots)

    steps = every_moment(tmp_path, target, fix)
    assert steps > 100  # the tracer reached the writer's code, not only its first lines


@pytest.mark.skipif(not writer.AT_DIRS, reason="the dir_fd writer (POSIX)")
def test_an_output_interrupted_at_any_bytecode_leaves_no_temporary_file(tmp_path: Path) -> None:
    target = tmp_path / "report.json"
    steps = every_moment(tmp_path, target, lambda: writer.write_output(str(target), NEW))
    assert steps > 50


@pytest.mark.skipif(not writer.AT_DIRS, reason="the dir_fd writer (POSIX)")
def test_a_cache_entry_interrupted_at_any_bytecode_leaves_no_temporary_file(
    tmp_path: Path,
) -> None:
    target = tmp_path / "entry"

    def write() -> None:
        fd = writer.open_dir(str(tmp_path))
        try:
            writer.replace_in(fd, "entry", NEW)
        finally:
            os.close(fd)

    assert every_moment(tmp_path, target, write) > 20
