"""Command line: parse arguments, dispatch to the command's module, return the exit code.

Each command is one module of `shapelint.cli` with ``add_parser(sub)`` and
``run(args, out, err) -> int``; this module imports only the one a run needs.

Exit codes, as ruff: 0 nothing reported, 1 findings, 2 usage, settings or internal error.
Nothing a user types or any file contains produces a traceback: errors are one line.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, TextIO

from shapelint import __version__
from shapelint.cli.common import BUG_URL, UsageError
from shapelint.core import interrupt as _interrupt

# Imports live in the functions that use them: ``--version`` answers before argparse, the
# config types or any rule is imported (start-up), and a command imports only its own.
if TYPE_CHECKING:
    import argparse

# The commands in the order help lists them, each with the module that registers and runs it.
COMMAND_MODULES = {
    "check": "check",
    "rules": "rules",
    "rule": "rule",
    "engines": "engines",
    "gpus": "gpus",
    "explain": "explain",
    "suggest": "suggest",
    "server": "server",
    "gemm": "gemm",
}
COMMANDS = tuple(COMMAND_MODULES)


def _command(name: str) -> Any:
    import importlib

    return importlib.import_module(f"shapelint.cli.{COMMAND_MODULES[name]}")


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The argument parser for every subcommand, or only for ``command`` (a run needs only its
    own: ``suggest``'s flags import its module, which ``check`` never uses)."""
    import argparse

    parser = argparse.ArgumentParser(
        prog="shapelint",
        description="Lint transformer model configs for GPU-unfriendly shapes.",
    )
    parser.add_argument("--version", action="version", version=f"shapelint {__version__}")
    sub = parser.add_subparsers(dest="command")
    for name in COMMANDS:
        if command is None or command == name:
            _command(name).add_parser(sub)
    return parser


def main(
    argv: Sequence[str] | None = None, out: TextIO | None = None, err: TextIO | None = None
) -> int:
    """Entry point of the ``shapelint`` console script; returns the exit code."""
    try:
        # As the console script, Ctrl-C exited at once while importing (``_interrupt``);
        # from here on it is a KeyboardInterrupt, caught around the whole command.
        _interrupt.restore()
        code = _main(argv, out, err)
    except KeyboardInterrupt:
        (err or sys.stderr).write("shapelint: interrupted\n")
        code = 130
    if argv is None:
        # The console script, its report written: flush it, then ignore Ctrl-C on the way out.
        # A Python-level handler cannot cover the whole way: interpreter finalization puts
        # every handler it installed back to the system default (it keeps SIG_IGN), and a
        # SIGINT in that last moment killed the process silently (-2) after a complete report.
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        except KeyboardInterrupt:
            with contextlib.suppress(OSError, ValueError):
                sys.stderr.write("shapelint: interrupted\n")
            code = 130
        except BrokenPipeError:  # the reader left: nothing more to flush at exit
            with contextlib.suppress(OSError):
                os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        except (OSError, ValueError):  # a closed stream: the exit code stands
            pass
        with contextlib.suppress(ValueError):  # not the main thread
            signal.signal(signal.SIGINT, signal.SIG_IGN)
    return code


def _main(argv: Sequence[str] | None, out: TextIO | None, err: TextIO | None) -> int:
    out = out or sys.stdout
    err = err or sys.stderr
    if out is sys.stdout and hasattr(out, "reconfigure"):
        # A value read from a file can hold what the terminal cannot encode (a JSON string
        # "\ud800" is a lone surrogate): escaped, as stderr escapes it, not an internal error.
        with contextlib.suppress(AttributeError, ValueError):
            out.reconfigure(errors="backslashreplace")
    args_list = list(sys.argv[1:] if argv is None else argv)
    if not args_list or (
        args_list[0] not in COMMANDS and args_list[0] not in ("-h", "--help", "--version")
    ):
        args_list.insert(0, "check")
    if args_list == ["--version"]:  # as argparse's version action prints it, without argparse
        sys.stdout.write(f"shapelint {__version__}\n")
        return 0
    # Help lists every command; a run builds only the parser of its own.
    parser = build_parser(None if args_list[0] not in COMMANDS else args_list[0])
    try:
        args = parser.parse_args(args_list)
    except SystemExit as exc:  # argparse printed the usage error
        return 2 if exc.code else 0
    from shapelint.core import sandbox

    try:
        # One parsing worker for the whole command (lint, fix, re-lint), forked on first need.
        with sandbox.session():
            return int(_command(args.command or "check").run(args, out, err))
    except UsageError as exc:
        err.write(f"shapelint: error: {exc}\n")
        return 2
    except KeyboardInterrupt:
        err.write("shapelint: interrupted\n")
        return 130
    except BrokenPipeError:  # `shapelint … | head`: the reader left; stop quietly
        with contextlib.suppress(OSError):
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1
    except Exception as exc:  # a bug: one line, not a traceback
        err.write(
            f"shapelint: internal error: {type(exc).__name__}: {exc} "
            f"(please report this at {BUG_URL})\n"
        )
        return 2
