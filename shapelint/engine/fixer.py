"""Apply fixes: edits to spans of the original text, spliced from the end, then verified.

Only the characters of each edited value change; everything else in the file — comments,
key order, quoting, indentation, line endings, encoding and BOM — is left byte for byte as it
was. A fixed text is trusted only after it has been parsed again, its configs extracted again
and the rules run again (`fix_document`): every edited key must hold its new value, no rule
that was fixed may still fire on it, and no finding may appear that was not there before.
A fix that fails any of these is not applied and is reported with the reason.

`fix_paths` does this for the files of a lint run, reading each file afresh, and writes the
results with `shapelint.engine.writer.write_atomic` (or only computes them for ``--diff``).
"""

from __future__ import annotations

import difflib
import itertools
import math
import os
import re
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, replace

from shapelint.core.model import Edit, Finding, Fix
from shapelint.core.source import Document, Mapping, Node, Scalar, encode
from shapelint.core.source import Sequence as SeqNode
from shapelint.core.text import shown_path
from shapelint.engine.options import LintOptions
from shapelint.engine.pipeline import READ_PROBLEM, lint_document, lint_parsed
from shapelint.engine.results import FileResult, LintResult
from shapelint.engine.tree import parse_in_tree

# Passes of fix → re-lint → fix; a fix can make another one possible (a conflicting fix of
# the same value waits for the next pass), but a file that keeps changing is a bug.
MAX_PASSES = 3


class OverlappingEditsError(ValueError):
    """Two edits of one file touch the same characters."""


_UNDERSCORED = re.compile(r"^[+-]?\d{1,3}(_\d{3})+$")
_HEX = re.compile(r"^0[xX][0-9a-fA-F_]+$")
_INTEGRAL_FLOAT = re.compile(r"^[+-]?\d+\.0*$")


def render(old_text: str, new: object) -> str:
    """The text for ``new`` written in the style of ``old_text``.

    Quotes are kept (``"50257"`` → ``"50304"``), digit grouping with underscores is kept
    (``50_257`` → ``50_304``), hexadecimal stays hexadecimal, an integral float keeps its
    point (``50257.0`` → ``50304.0``, so a JSON float stays a float), and anything else is
    the plain literal (an expression such as ``4096 * 32`` becomes its value).
    """
    quoted = len(old_text) >= 2 and old_text[0] == old_text[-1] and old_text[0] in "\"'"
    if isinstance(new, bool) or not isinstance(new, int):
        return f"{old_text[0]}{new}{old_text[0]}" if quoted and isinstance(new, str) else str(new)
    if quoted:
        return f"{old_text[0]}{new}{old_text[0]}"
    stripped = old_text.strip()
    if _UNDERSCORED.match(stripped):
        return f"{new:_d}"
    if _HEX.match(stripped) and new >= 0:
        return f"{stripped[:2]}{new:x}" if stripped[2:].islower() else f"{stripped[:2]}{new:X}"
    if _INTEGRAL_FLOAT.match(stripped):
        return f"{new}.0"
    return str(new)


def edit_text(text: str, edit: Edit) -> str:
    """The replacement text of one edit against the file's text."""
    if edit.text is not None:
        return edit.text
    return render(text[edit.span.start : edit.span.end], edit.new)


@dataclass(frozen=True)
class Placed:
    """An edit and where its new text lies in the edited text (``start``/``end`` offsets)."""

    edit: Edit
    start: int
    end: int


def splice(text: str, edits: Iterable[Edit]) -> tuple[str, list[Placed]]:
    """Splice all edits into ``text`` in one pass from the end; return the text and placements.

    Identical edits (the same span and new value, e.g. one value reported by two configs that
    share it) are applied once; different edits of overlapping spans raise
    `OverlappingEditsError`.
    """
    unique: dict[tuple[int, int], Edit] = {}
    for e in edits:
        if not 0 <= e.span.start <= e.span.end <= len(text):
            raise OverlappingEditsError(f"edit of {e.key} lies outside the file")
        key = (e.span.start, e.span.end)
        prior = unique.get(key)
        if prior is not None and (prior.new != e.new or prior.text != e.text):
            raise OverlappingEditsError(f"two different edits of {e.key} at line {e.span.line}")
        unique[key] = e
    ordered = sorted(unique.values(), key=lambda e: e.span.start, reverse=True)
    for later, earlier in itertools.pairwise(ordered):
        if earlier.span.end > later.span.start:
            raise OverlappingEditsError(
                f"edits of {earlier.key} and {later.key} overlap at line {later.span.line}"
            )
    out = text
    replacements: list[tuple[Edit, str]] = []
    for e in ordered:
        new = edit_text(text, e)
        replacements.append((e, new))
        out = out[: e.span.start] + new + out[e.span.end :]
    placed: list[Placed] = []
    shift = 0
    for e, new in reversed(replacements):  # from the start: offsets move by earlier edits
        start = e.span.start + shift
        placed.append(Placed(e, start, start + len(new)))
        shift += len(new) - (e.span.end - e.span.start)
    return out, placed


def apply_edits(text: str, edits: Iterable[Edit]) -> str:
    """Splice all edits into ``text`` from the end backwards; refuse overlapping edits."""
    return splice(text, edits)[0]


@dataclass(frozen=True)
class FailedFix:
    """A fix that was not applied, and why."""

    finding: Finding
    reason: str


@dataclass
class DocumentFix:
    """The outcome of fixing one document: the new text, what was applied, what failed."""

    doc: Document
    text: str
    applied: list[Finding] = field(default_factory=list)
    failed: list[FailedFix] = field(default_factory=list)
    passes: int = 0
    # The verified document of ``text`` (``doc`` when nothing changed): the re-lint after a
    # write reads it instead of parsing the written bytes again.
    final: Document | None = None

    @property
    def changed(self) -> bool:
        """True when the fixed text differs from the original."""
        return self.text != self.doc.text


def allowed(fix: Fix | None, unsafe: bool) -> bool:
    """Whether ``fix`` is applied under ``--fix`` (safe only) or ``--unsafe-fixes``."""
    return fix is not None and bool(fix.edits) and (unsafe or fix.applicability == "safe")


Ident = tuple[str, str, str]


def ident(finding: Finding) -> Ident:
    """What identifies a finding across a fix: its rule, config and key (not its position)."""
    return (finding.code, finding.config, finding.key)


def _overlaps(a: Edit, b: Edit) -> bool:
    return a.span.start < b.span.end and b.span.start < a.span.end


def _same_edit(a: Edit, b: Edit) -> bool:
    return (a.span.start, a.span.end, a.new, a.text) == (b.span.start, b.span.end, b.new, b.text)


def choose(findings: Iterable[Finding], unsafe: bool, rejected: set[Ident]) -> list[Finding]:
    """The findings whose fixes go into one pass, first by rule code then position.

    A fix with an edit overlapping an already chosen, different edit waits for the next pass
    (after re-linting, that finding may be gone or its fix recomputed).
    """
    wanted = [f for f in findings if allowed(f.fix, unsafe) and ident(f) not in rejected]
    wanted.sort(key=lambda f: (f.code, f.span.start, f.key))
    chosen: list[Finding] = []
    taken: list[Edit] = []
    for f in wanted:
        assert f.fix is not None
        edits = f.fix.edits
        if any(_overlaps(e, t) and not _same_edit(e, t) for e in edits for t in taken):
            continue
        chosen.append(f)
        taken.extend(edits)
    return chosen


def _scalars(doc: Document) -> dict[int, Scalar]:
    """Every scalar reachable from the document's candidates, by start offset."""
    out: dict[int, Scalar] = {}
    seen: set[int] = set()
    stack: list[Node] = [c.root for c in doc.candidates]
    while stack:
        node = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        if isinstance(node, Scalar):
            if node.span.path == doc.path:  # not a value inherited from another file
                out.setdefault(node.span.start, node)
        elif isinstance(node, Mapping):
            stack.extend(e.value for e in node.entries)
        elif isinstance(node, SeqNode):
            stack.extend(node.items)
    return out


def _holds(value: object, old: object, new: object) -> bool:
    """True when a re-parsed ``value`` is ``new`` in the same kind as ``old`` (number/string)."""
    if isinstance(old, str) != isinstance(value, str) or isinstance(value, bool):
        return False
    if isinstance(value, str):
        return value == str(new)
    return value == new


def _problems(doc: Document) -> Counter[str]:
    return Counter(p.code for p in doc.problems)


def unfiltered(options: LintOptions) -> LintOptions:
    """``options`` without the slowdown threshold: every finding the selected rules make."""
    return replace(options, min_slowdown=-math.inf)


def baseline(doc: Document, options: LintOptions) -> set[Ident]:
    """What a fix of ``doc`` is compared with: every finding, shown or below the threshold."""
    return {ident(f) for f in lint_document(doc, unfiltered(options))[1]}


def verify(
    doc: Document,
    before: set[Ident],
    fixes: Sequence[Finding],
    options: LintOptions,
) -> tuple[Document, list[Finding]] | str:
    """Apply ``fixes`` to ``doc`` and check the result; the new document and findings, or why not.

    The fixed text must encode in the file's encoding and parse with no new parse problems;
    every edited value must read back as its new value (same kind: a number stays a number);
    no fixed finding may remain and no finding may appear that ``before`` (`baseline`) did
    not have. Both checks ignore the slowdown threshold, so a finding that was hidden below
    it and is pushed over it by the fix counts as one that was there, and a fixed finding
    that merely dropped below it counts as one that still fires.
    """
    edits = [e for f in fixes if f.fix is not None for e in f.fix.edits]
    for edit in edits:
        if edit.span.path != doc.path:
            return f"{edit.key} is written in {edit.span.path}, not in this file"
    try:
        text, placed = splice(doc.text, edits)
    except OverlappingEditsError as exc:
        return str(exc)
    try:
        data = encode(text, doc.encoding, doc.bom)
    except UnicodeEncodeError:
        return f"the fixed text cannot be written as {doc.encoding}"
    new_doc = parse_in_tree(doc.path, data, doc.format)
    if not new_doc.ok:
        problem = next(p for p in new_doc.problems if p.code == READ_PROBLEM)
        return f"the fixed file would not parse ({problem.message})"
    added = _problems(new_doc) - _problems(doc)
    if added:
        return f"the fixed file would have a new {min(added)} problem"
    scalars = _scalars(new_doc)
    for p in placed:
        node = scalars.get(p.start)
        if node is None or node.span.end != p.end:
            return f"{p.edit.key} is no longer a single value after the fix"
        if not node.known or not _holds(node.value, p.edit.old, p.edit.new):
            return f"{p.edit.key} reads {node.value!r} after the fix, not {p.edit.new!r}"
    _, everything = lint_document(new_doc, unfiltered(options))
    for f in everything:
        if ident(f) not in before:
            return f"the fix would introduce {f.code} at {f.key or 'the file'}: {f.message}"
    fixed = {ident(f) for f in fixes}
    for f in everything:
        if ident(f) in fixed:
            return f"{f.code} still fires after the fix: {f.message}"
    _, shown = lint_document(new_doc, options)
    return new_doc, shown


def fix_document(
    doc: Document,
    options: LintOptions,
    *,
    unsafe: bool = False,
    max_passes: int = MAX_PASSES,
    findings: Sequence[Finding] | None = None,
) -> DocumentFix:
    """Fix ``doc`` until no allowed fix remains (at most ``max_passes`` passes).

    Each pass applies every chosen fix in one splice and verifies the whole; when that fails,
    the pass falls back to adding fixes one at a time so that only the fixes that fail
    verification are rejected (and reported), not their neighbours. A file that did not
    parse is never fixed. ``findings`` are ``doc``'s findings under ``options`` when the
    caller has them already.
    """
    result = DocumentFix(doc, doc.text, final=doc)
    if not doc.ok:
        return result
    current = list(findings) if findings is not None else lint_document(doc, options)[1]
    current_doc = doc
    rejected: set[Ident] = set()
    for _ in range(max_passes):
        chosen = choose(current, unsafe, rejected)
        if not chosen:
            break
        result.passes += 1
        before = baseline(current_doc, options)
        whole = verify(current_doc, before, chosen, options)
        accepted = list(chosen)
        outcome = None if isinstance(whole, str) else whole
        if outcome is None:
            accepted, outcome = _one_by_one(current_doc, before, chosen, options, result)
            rejected.update(ident(f.finding) for f in result.failed)
        if outcome is None:
            continue
        current_doc, current = outcome
        result.applied.extend(accepted)
    result.text = current_doc.text
    result.final = current_doc
    return result


def _one_by_one(
    doc: Document,
    before: set[Ident],
    chosen: Sequence[Finding],
    options: LintOptions,
    result: DocumentFix,
) -> tuple[list[Finding], tuple[Document, list[Finding]] | None]:
    """Add fixes one at a time, keeping those that verify; record the others as failed."""
    accepted: list[Finding] = []
    outcome: tuple[Document, list[Finding]] | None = None
    for f in chosen:
        attempt = verify(doc, before, [*accepted, f], options)
        if isinstance(attempt, str):
            result.failed.append(FailedFix(f, attempt))
        else:
            accepted.append(f)
            outcome = attempt
    return accepted, outcome


@dataclass
class FileFix:
    """The fix of one file on disk: what was read, the fixed text, and what happened."""

    result: FileResult
    fix: DocumentFix
    data: bytes
    mtime_ns: int
    size: int
    error: str = ""  # why a changed file was not written (empty when written or unchanged)
    written: bool = False

    @property
    def path(self) -> str:
        """The file's path as the user named it."""
        return self.result.source.path

    def new_bytes(self) -> bytes:
        """The fixed file's bytes: the same encoding and BOM as read."""
        doc = self.fix.doc
        return encode_like(self.fix.text, self.data, doc.encoding, doc.bom)

    def diff(self) -> str:
        """A unified diff of the fix that ``git apply`` and ``patch -p1`` apply from the
        current directory: ``--- a/path`` / ``+++ b/path`` for a file under it, else the path
        as given (``patch -p0``)."""
        old_label, new_label = diff_labels(self.path)
        return unified_diff(old_label, self.fix.doc.text, self.fix.text, new_path=new_label)


def diff_labels(path: str) -> tuple[str, str]:
    """The ``---`` and ``+++`` names of ``path`` in a diff (see `FileFix.diff`)."""
    try:
        rel = os.path.relpath(os.path.abspath(path))
    except ValueError:  # pragma: no cover - Windows: another drive than the cwd
        return path, path
    if rel.startswith(os.pardir) or os.path.isabs(rel):
        return shown_path(path), shown_path(path)
    posix = shown_path(rel.replace(os.sep, "/"))
    return f"a/{posix}", f"b/{posix}"


def encode_like(text: str, original: bytes, encoding: str, bom: bool) -> bytes:
    """``text`` encoded as ``original`` was, keeping a UTF-16 file's byte order."""
    if encoding == "utf-16":
        order = "utf-16-be" if original.startswith(b"\xfe\xff") else "utf-16-le"
        mark = original[:2] if original[:2] in (b"\xfe\xff", b"\xff\xfe") else b""
        return mark + text.encode(order)
    return encode(text, encoding, bom)


def _lines(text: str) -> list[str]:
    # Lines end at "\n" only (a CRLF line keeps its "\r"); str.splitlines would also break
    # at form feeds and Unicode separators, which are not line ends in a diff.
    return re.findall(r"[^\n]*\n|[^\n]+$", text)


def unified_diff(path: str, old: str, new: str, *, new_path: str | None = None) -> str:
    """A unified diff of two texts of ``path`` (empty when equal), as git and ruff print it;
    ``new_path`` names the ``+++`` side when it differs (``b/…``)."""
    if old == new:
        return ""
    lines = difflib.unified_diff(
        _lines(old),
        _lines(new),
        fromfile=path,
        tofile=new_path or path,
    )
    out: list[str] = []
    for line in lines:
        if line.endswith("\n"):
            out.append(line)
        else:
            out.append(line + "\n\\ No newline at end of file\n")
    return "".join(out)


@dataclass
class FixRun:
    """Everything ``--fix`` / ``--diff`` did over one lint run."""

    files: list[FileFix] = field(default_factory=list)
    result: LintResult = field(default_factory=LintResult)

    @property
    def changed(self) -> list[FileFix]:
        """Files whose fixed text differs from what was read."""
        return [f for f in self.files if f.fix.changed]

    @property
    def applied(self) -> list[tuple[FileFix, Finding]]:
        """Each applied finding with its file (written files only when writing)."""
        return [(f, a) for f in self.files if f.fix.changed and not f.error for a in f.fix.applied]

    @property
    def fixed(self) -> int:
        """How many findings were fixed (or, for --diff, would be)."""
        return len(self.applied)

    def messages(self) -> list[str]:
        """One line per failed fix and per file that could not be written."""
        out: list[str] = []
        for f in self.files:
            for failed in f.fix.failed:
                fd = failed.finding
                out.append(
                    f"{shown_path(f.path)}:{fd.span.line}:{fd.span.column}: {fd.code} "
                    "fix not applied: "
                    f"{failed.reason}"
                )
            if f.error:
                out.append(f"{shown_path(f.path)}: not written: {f.error}")
        return out


def fix_paths(
    result: LintResult,
    paths: Sequence[str],
    options: LintOptions | Callable[[str], LintOptions],
    *,
    unsafe: bool = False,
    write: bool = True,
    relint: bool = True,
) -> FixRun:
    """Fix every file of ``result`` that has an allowed fix; write them unless ``write`` is False.

    ``options`` is one `LintOptions` for every file, or a function giving a file's own (its
    settings), so that a fix is verified under the rules the file was linted with. Each file
    is read again (its bytes, size and modification time kept) and fixed from that reading; a
    write goes through `write_atomic`, which refuses a file changed on disk since, a
    read-only file, and a symlink whose target lies outside ``paths``. With ``relint``, the
    written files are linted again and ``FixRun.result`` holds what remains.
    """
    from shapelint.engine.reading import read_snapshot
    from shapelint.engine.writer import WriteRefused, linted_roots, write_atomic

    def options_for(path: str) -> LintOptions:
        return options if isinstance(options, LintOptions) else options(path)

    run = FixRun(result=result)
    roots = linted_roots(paths)
    relinted: dict[str, FileResult] = {}
    errors = list(result.errors)
    for file_result in result.files:
        if not any(allowed(f.fix, unsafe) for f in file_result.findings):
            continue
        source = file_result.source
        file_options = options_for(source.path)
        try:
            snap = read_snapshot(source.path, file_options.budget)
        except OSError as exc:
            unread = DocumentFix(file_result.doc, file_result.doc.text)
            run.files.append(
                FileFix(file_result, unread, b"", 0, 0, error=f"cannot read: {exc.strerror}")
            )
            continue
        linted = file_result.doc
        changed_on_disk: Document | None = None
        if file_result.complete and (
            encode_like(linted.text, snap.data, linted.encoding, linted.bom) == snap.data
        ):
            # Unchanged since it was linted: the same bytes parse to the same document.
            fixed = fix_document(linted, file_options, unsafe=unsafe, findings=file_result.findings)
        else:
            changed_on_disk = parse_in_tree(
                source.path, snap.data, source.kind, file_options.budget
            )
            fixed = fix_document(changed_on_disk, file_options, unsafe=unsafe)
        file_fix = FileFix(file_result, fixed, snap.data, snap.mtime_ns, snap.size)
        run.files.append(file_fix)
        if not fixed.changed or not write:
            if changed_on_disk is not None and relint and write:
                # Changed since it was linted (another process fixed it first): report what
                # the file holds now, not what it held.
                relinted[source.path] = lint_parsed(source, changed_on_disk, file_options)
            continue
        try:
            write_atomic(source.path, file_fix.new_bytes(), snap, roots)
            file_fix.written = True
        except WriteRefused as exc:
            file_fix.error = str(exc)
            continue
        if not relint:
            continue
        # What was written is the verified document's text: lint that document, not the file.
        final = fixed.final or parse_in_tree(source.path, file_fix.new_bytes(), source.kind)
        relinted[source.path] = lint_parsed(source, final, file_options)
    if relinted or len(errors) > len(result.errors):
        files = [relinted.get(r.source.path, r) for r in result.files]
        run.result = LintResult(files=files, errors=errors, skipped=result.skipped)
    return run
