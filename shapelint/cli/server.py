"""``shapelint server``: a minimal language server over stdio (needs ``shapelint[lsp]``).

On open, change and save of a JSON, YAML, TOML or Python file it lints the editor's text (not
the file on disk) under the settings that apply to the file's path, and publishes each
finding as a diagnostic; each fix is offered as a quick-fix code action that replaces exactly
the values the fix changes. The lint is the same as ``shapelint check`` (settings, severity,
suppressions, baseline); nothing is written to disk.
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TextIO

from shapelint import __version__

if TYPE_CHECKING:
    import argparse

    from lsprotocol import types

    from shapelint.core.model import Finding
    from shapelint.engine.options import LintOptions


class MissingExtraError(Exception):
    """pygls is not installed: the one-line message says how to install it."""


SEVERITY = {"error": 1, "warning": 2, "info": 3}  # LSP DiagnosticSeverity


def utf16_column(line_text: str, column: int) -> int:
    """The 0-based UTF-16 offset (LSP's default position encoding) of the 1-based character
    ``column`` of ``line_text``."""
    return len(line_text[: column - 1].encode("utf-16-le")) // 2


def _position(lines: list[str], line: int, column: int) -> types.Position:
    from lsprotocol import types

    text = lines[line - 1] if 0 < line <= len(lines) else ""
    return types.Position(line=line - 1, character=utf16_column(text, column))


def _range(lines: list[str], span: Any) -> types.Range:
    from lsprotocol import types

    return types.Range(
        start=_position(lines, span.line, span.column),
        end=_position(lines, span.end_line, span.end_column),
    )


def lint_text(path: str, text: str, options: LintOptions) -> list[Finding]:
    """The findings of ``text`` as if it were the file at ``path`` (empty for other kinds):
    the pipeline ``check`` runs, on the editor's text instead of the file's bytes."""
    from shapelint.engine.discover import SourceFile, kind_of
    from shapelint.engine.pipeline import lint_source

    kind = kind_of(path)
    if kind is None:
        return []
    result = lint_source(SourceFile(path, kind, explicit=True), options, data=text.encode("utf-8"))
    return sorted(result.findings, key=lambda f: (f.span.line, f.span.column, f.code))


def diagnostics(text: str, findings: list[Finding]) -> list[types.Diagnostic]:
    """One LSP diagnostic per finding, with the estimate in the message."""
    from lsprotocol import types

    from shapelint.report.text import message_with_estimate

    lines = text.split("\n")
    return [
        types.Diagnostic(
            range=_range(lines, f.span),
            message=message_with_estimate(f),
            severity=types.DiagnosticSeverity(SEVERITY[f.severity]),
            code=f.code,
            source="shapelint",
        )
        for f in findings
    ]


def code_actions(uri: str, text: str, findings: list[Finding]) -> list[types.CodeAction]:
    """A quick fix per finding that has one (unsafe fixes say so in the title)."""
    from lsprotocol import types

    from shapelint.engine.fixer import edit_text

    lines = text.split("\n")
    out = []
    for f in findings:
        if f.fix is None:
            continue
        edits = [
            types.TextEdit(range=_range(lines, e.span), new_text=edit_text(text, e))
            for e in f.fix.edits
        ]
        unsafe = " (unsafe)" if f.fix.applicability == "unsafe" else ""
        out.append(
            types.CodeAction(
                title=f"{f.code}: {f.fix.description}{unsafe}",
                kind=types.CodeActionKind.QuickFix,
                diagnostics=diagnostics(text, [f]),
                edit=types.WorkspaceEdit(changes={uri: edits}),
                is_preferred=f.fix.applicability == "safe",
            )
        )
    return out


def _path(uri: str) -> str:
    from pygls.uris import to_fs_path

    return to_fs_path(uri) or uri


def _opened(ls: Any, uri: str) -> Any:
    """The document the client opened at ``uri``, or None. pygls' ``get_text_document``
    reads a document that was never opened from disk, which blocks on a FIFO and has no size
    limit: the server lints only the text the client sent."""
    from urllib.parse import unquote

    return ls.workspace.text_documents.get(unquote(uri))


# The largest message the server reads (a document's full text travels in one): a larger one
# is skipped, never allocated.
MAX_MESSAGE_BYTES = 64 * 2**20
# A header a message starts with; raw CR LF never occurs inside a JSON body (JSON escapes it
# in strings and has no bare words), so finding one inside a body means the body was shorter
# than its Content-Length said: the stream is resynchronised at the header.
_HEADER = re.compile(rb"Content-Length: *([0-9]+)\r\n", re.IGNORECASE)
_CHUNK = 65536


class FramedInput:
    """The server's standard input, message by message, as pygls reads it (``readline`` for
    headers, ``read`` for a body), with every message checked before pygls sees it: a body
    larger than `MAX_MESSAGE_BYTES` is skipped as it streams past (never allocated), a body
    shorter than its ``Content-Length`` is dropped at the next header, and garbage between
    messages is skipped; each is one line on standard error. pygls trusts the header: a
    ``Content-Length`` of 10**15 ended the server with MemoryError, and one larger than the
    body desynchronised it for good."""

    def __init__(self, stream: Any, log: TextIO, limit: int = MAX_MESSAGE_BYTES) -> None:
        self._stream = stream
        self._log = log
        self._limit = limit
        self._buffer = bytearray()  # read from the stream, not yet framed
        self._frame = bytearray()  # one checked message, as pygls will read it
        self._eof = False

    def _fill(self) -> bool:
        """Read what the stream has (at least one byte); False at the end of the stream."""
        if self._eof:
            return False
        read = getattr(self._stream, "read1", self._stream.read)
        chunk = read(_CHUNK)
        if not chunk:
            self._eof = True
            return False
        self._buffer += chunk
        return True

    def _say(self, text: str) -> None:
        self._log.write(f"shapelint server: {text}\n")
        self._log.flush()

    def _next(self) -> bytes | None:
        """The next well-formed message body, or None at the end of the stream."""
        while True:
            header = _HEADER.search(self._buffer)
            while header is None or self._buffer.find(b"\r\n\r\n", header.start()) < 0:
                if header is None and len(self._buffer) > _CHUNK:
                    del self._buffer[: len(self._buffer) - 64]  # garbage: keep a tail
                if not self._fill():
                    return None
                header = _HEADER.search(self._buffer)
            if header.start() > 0 and self._buffer[: header.start()].strip():
                self._say(f"skipped {header.start()} bytes that were not a message")
            digits = header.group(1)
            # A length past 20 digits is never read whole: any such body is too large.
            length = int(digits) if len(digits) <= 20 else 10**21
            shown = f"{length} bytes" if len(digits) <= 20 else f"{len(digits)} digits"
            del self._buffer[: self._buffer.find(b"\r\n\r\n", header.start()) + 4]
            body = self._body(length, shown)
            if body is not None:
                return body

    def _body(self, length: int, shown: str) -> bytes | None:
        """The body of ``length`` bytes at the start of the buffer; None when it was skipped
        (too large, or cut short by the next header: the buffer then starts at that header)."""
        kept = length <= self._limit
        seen = 0  # bytes of a skipped body already dropped
        searched = 0
        while True:
            end = min(len(self._buffer), length - seen)
            cut = _HEADER.search(self._buffer, max(0, searched - 40))
            if cut is not None and cut.start() < end:
                del self._buffer[: cut.start()]
                self._say(f"a message ended before its Content-Length ({shown}): dropped")
                return None
            if end == length - seen:
                body = bytes(self._buffer[:end])
                del self._buffer[:end]
                if kept:
                    return body
                self._say(f"a message of {shown} (more than {self._limit} bytes): skipped")
                return None
            if not kept and len(self._buffer) > _CHUNK:
                drop = len(self._buffer) - 64
                del self._buffer[:drop]
                seen += drop
            searched = len(self._buffer)
            if not self._fill():
                return None

    def readline(self) -> bytes:
        """One header line of the next checked message (b"" at the end of the stream)."""
        if not self._frame:
            body = self._next()
            if body is None:
                return b""
            self._frame = bytearray(b"Content-Length: %d\r\n\r\n" % len(body) + body)
        end = self._frame.find(b"\n") + 1 or len(self._frame)
        line = bytes(self._frame[:end])
        del self._frame[:end]
        return line

    def read(self, n: int) -> bytes:
        """``n`` bytes of the current message's body."""
        out = bytes(self._frame[:n])
        del self._frame[:n]
        return out


def build_server(options_for: Callable[[str], LintOptions | None]) -> Any:
    """The pygls server; ``options_for(path)`` gives a file's options (None: excluded)."""
    try:
        from lsprotocol import types
        from pygls.lsp.server import LanguageServer
    except ImportError:
        from shapelint.core.extras import install_hint

        raise MissingExtraError(
            f"shapelint server needs pygls (the lsp extra): {install_hint('lsp')}"
        ) from None

    server = LanguageServer("shapelint", __version__, types.TextDocumentSyncKind.Full)
    latest: dict[str, list[Finding]] = {}

    def refresh(ls: LanguageServer, uri: str) -> None:
        document = _opened(ls, uri)
        if document is None:  # never opened: its text is the client's, not read from disk
            return
        path = _path(uri)
        try:
            options = options_for(path)
        except Exception as exc:  # a settings error: say it once, publish nothing
            ls.window_show_message(
                types.ShowMessageParams(type=types.MessageType.Error, message=f"shapelint: {exc}")
            )
            options = None
        found = lint_text(path, document.source, options) if options is not None else []
        latest[uri] = found
        ls.text_document_publish_diagnostics(
            types.PublishDiagnosticsParams(
                uri=uri, version=document.version, diagnostics=diagnostics(document.source, found)
            )
        )

    @server.feature(types.TEXT_DOCUMENT_DID_OPEN)
    def did_open(ls: LanguageServer, params: types.DidOpenTextDocumentParams) -> None:
        refresh(ls, params.text_document.uri)

    @server.feature(types.TEXT_DOCUMENT_DID_CHANGE)
    def did_change(ls: LanguageServer, params: types.DidChangeTextDocumentParams) -> None:
        refresh(ls, params.text_document.uri)

    @server.feature(types.TEXT_DOCUMENT_DID_SAVE)
    def did_save(ls: LanguageServer, params: types.DidSaveTextDocumentParams) -> None:
        refresh(ls, params.text_document.uri)

    @server.feature(types.TEXT_DOCUMENT_DID_CLOSE)
    def did_close(ls: LanguageServer, params: types.DidCloseTextDocumentParams) -> None:
        latest.pop(params.text_document.uri, None)
        ls.text_document_publish_diagnostics(
            types.PublishDiagnosticsParams(uri=params.text_document.uri, diagnostics=[])
        )

    @server.feature(
        types.TEXT_DOCUMENT_CODE_ACTION,
        types.CodeActionOptions(code_action_kinds=[types.CodeActionKind.QuickFix]),
    )
    def code_action(ls: LanguageServer, params: types.CodeActionParams) -> list[types.CodeAction]:
        uri = params.text_document.uri
        document = _opened(ls, uri)
        if document is None:  # a FIFO or /dev/zero named by a URI is never opened here
            return []
        wanted = params.range
        hits = [
            f
            for f in latest.get(uri, [])
            if f.span.line - 1 <= wanted.end.line and f.span.end_line - 1 >= wanted.start.line
        ]
        return code_actions(uri, document.source, hits)

    return server


def serve(options_for: Callable[[str], LintOptions | None]) -> int:
    """Run the server on stdin/stdout until the client exits it."""
    server = build_server(options_for)
    os.environ.setdefault("NO_COLOR", "1")
    server.start_io(stdin=FramedInput(sys.stdin.buffer, sys.stderr))
    return 0


def add_parser(sub: Any) -> None:
    """Register ``server`` on the subparsers ``sub``."""
    server = sub.add_parser("server", help="language server over stdio (needs shapelint[lsp])")
    server.add_argument("--config", metavar="FILE", help="settings file for every document")


def run(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    """``shapelint server``: the language server, each document linted as ``check`` would."""
    import argparse

    from shapelint.cli import check as check_command
    from shapelint.cli.common import UsageError

    parser = argparse.ArgumentParser(prog="shapelint")
    check_command.add_parser(parser.add_subparsers(dest="command"))
    check = parser.parse_args(["check", *(["--config", args.config] if args.config else [])])
    file_options = check_command.FileOptions(check)
    try:
        return serve(file_options)
    except MissingExtraError as exc:
        raise UsageError(str(exc)) from None


__all__ = [
    "FramedInput",
    "MissingExtraError",
    "add_parser",
    "build_server",
    "code_actions",
    "diagnostics",
    "lint_text",
    "run",
    "serve",
]
