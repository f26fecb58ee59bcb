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


class ArgumentsError(Exception):
    """argparse refused the command line: ``prog`` (``shapelint check``) and its message."""

    def __init__(self, prog: str, message: str) -> None:
        super().__init__(message)
        self.prog = prog
        self.message = message


def _parser_class() -> type[argparse.ArgumentParser]:
    """An ArgumentParser whose errors are raised (`ArgumentsError`), not printed after the
    whole usage: `_main` says them in one line. Subparsers take the same class."""
    import argparse
    from typing import NoReturn

    class Parser(argparse.ArgumentParser):
        def error(self, message: str) -> NoReturn:
            raise ArgumentsError(self.prog, message)

    return Parser


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The argument parser for every subcommand, or only for ``command`` (a run needs only its
    own: ``suggest``'s flags import its module, which ``check`` never uses)."""
    parser = _parser_class()(
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
        if argv is None:
            # The last net under every report's own escaping: text that is not valid UTF-8
            # is written escaped, never an UnicodeEncodeError that loses the report.
            for stream in (sys.stdout, sys.stderr):
                with contextlib.suppress(AttributeError, ValueError):
                    stream.reconfigure(errors="backslashreplace")  # type: ignore[union-attr]
        with _interrupt.terminate_as_interrupt():
            code = _main(argv, out, err)
    except KeyboardInterrupt as exc:
        code = _interrupted(exc, err or sys.stderr)
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


def _interrupted(exc: KeyboardInterrupt, err: TextIO) -> int:
    """One line for Ctrl-C (130), SIGTERM or SIGHUP (128 + the signal); the exit code."""
    if isinstance(exc, _interrupt.Terminated):
        err.write(exc.message + "\n")
        return exc.exit_code
    err.write("shapelint: interrupted\n")
    return 130


def _close(word: str, choices: Sequence[str]) -> str | None:
    """The choice ``word`` most likely misspells, or None."""
    import difflib  # only on the way to an error

    found = difflib.get_close_matches(word, choices, n=1, cutoff=0.6)
    return found[0] if found else None


def _misspelled_command(word: str) -> str | None:
    """The command a first argument that is neither a command nor an existing path misspells
    (``chek`` → ``check``); None for anything that may be a path (``chek.json``, ``a/b``)."""
    if not word.isalpha() or os.path.lexists(word):
        return None
    return _close(word, COMMANDS)


def _options_of(parser: argparse.ArgumentParser, command: str) -> list[str]:
    """Every option string of ``command``'s parser (``--fix``, ``-q`` …)."""
    import argparse

    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction) and command in action.choices:
            sub: argparse.ArgumentParser = action.choices[command]
            return [o for a in sub._actions for o in a.option_strings]
    return []


def _unrecognized(parser: argparse.ArgumentParser, command: str, extra: list[str]) -> str:
    """One line for arguments no option of ``command`` takes, with the closest option."""
    flag = next((a for a in extra if a.startswith("-")), extra[0]).split("=", 1)[0]
    close = _close(flag, _options_of(parser, command)) if flag.startswith("-") else None
    hint = f"; did you mean {close}?" if close else ""
    noun = "argument" if len(extra) == 1 else "arguments"
    return f"unrecognized {noun}: {' '.join(extra)}{hint}"


def _main(argv: Sequence[str] | None, out: TextIO | None, err: TextIO | None) -> int:
    out = out or sys.stdout
    err = err or sys.stderr
    args_list = list(sys.argv[1:] if argv is None else argv)
    if args_list and args_list[0] not in COMMANDS:
        meant = _misspelled_command(args_list[0])
        if meant is not None:
            err.write(
                f"shapelint: error: unknown command {args_list[0]!r}; did you mean {meant!r}? "
                f"(and no file or directory is named {args_list[0]})\n"
            )
            return 2
    if not args_list or (
        args_list[0] not in COMMANDS and args_list[0] not in ("-h", "--help", "--version")
    ):
        args_list.insert(0, "check")
    if args_list == ["--version"]:  # as argparse's version action prints it, without argparse
        sys.stdout.write(f"shapelint {__version__}\n")
        return 0
    # Help lists every command; a run builds only the parser of its own.
    command = args_list[0] if args_list[0] in COMMANDS else None
    parser = build_parser(command)
    try:
        args, extra = parser.parse_known_args(args_list)
        if extra:
            raise ArgumentsError(
                f"shapelint {args.command}", _unrecognized(parser, args.command, extra)
            )
    except SystemExit as exc:  # --help or --version printed
        return 2 if exc.code else 0
    except ArgumentsError as exc:  # one line, not the usage before it
        err.write(f"{exc.prog}: error: {exc.message} (see '{exc.prog} --help')\n")
        return 2
    try:
        return int(_command(args.command or "check").run(args, out, err))
    except UsageError as exc:
        err.write(f"shapelint: error: {exc}\n")
        return 2
    except KeyboardInterrupt as exc:
        return _interrupted(exc, err)
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
