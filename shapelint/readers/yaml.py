"""YAML reader with exact positions, built on PyYAML's safe composer.

PyYAML's pure-Python composer gives a node graph whose marks carry 0-based line, column and
``index``, the character offset into the text it was given (the decoded text, BOM already
stripped; a CRLF pair counts as two characters), so spans come straight from ``index``. Nothing
is ever constructed except scalars with the YAML 1.1 core tags that ``yaml.safe_load`` accepts
(str, int, float, bool, null, timestamp, binary); they are built with PyYAML's own safe
constructors, so values equal ``safe_load``'s (``1_000`` is 1000, ``on`` is True, ``1e5`` is a
string). Any other tag keeps its value as unknown text; a tag in YAML's global namespace
(``!!python/object``, ``!!python/name``: what ``yaml.load`` would construct Python objects
from) is also an SL006 problem at the tag. A local tag (``!include``, ``!ref``: Levanter's and
other tools' own loaders) is no problem of the file's: its value is simply not known here.

Positions: a scalar's span covers the value as written — quotes included, anchor (``&a``) and
tag (``!!int``) excluded, a block scalar from its ``|``/``>`` indicator to the end of its last
content line. A value reached through an alias (``*a``, or a merge key ``<<: *base``) is the
anchored node itself, with its span, marked ``shared``; so is the anchored node wherever an
alias refers to it, because editing it changes every key that shares it.

Aliases are expanded lazily: each anchored subtree is converted once and reused, and the
number of nodes an expansion stands for is counted; past `MAX_ALIAS_NODES` the document gets
SL007 and no candidates ("billion laughs"). Recursive aliases get SL007 as well.

Where PyYAML has libyaml, libyaml scans and parses (`_CLoader`) and the same Python composer
and converter build the tree, in a quarter of the CPU time over the corpus; libyaml's marks
count characters as PyYAML's do. Any text libyaml refuses is read again by the pure-Python
loader, so errors keep PyYAML's wording and positions; ``tests/formats/test_yaml_libyaml.py``
checks that both paths give equal documents for every YAML file in the repository and corpus.

Comments are the text PyYAML's scanner skips between tokens, so a ``#`` inside a quoted or
plain scalar is never mistaken for one; ``# shapelint: ignore[...]`` comments fill
``Document.suppressions``.
"""

from __future__ import annotations

import re
from typing import Any, cast

import yaml
from yaml.events import AliasEvent
from yaml.nodes import MappingNode, ScalarNode, SequenceNode

# MAX_ALIAS_NODES: the nodes an alias expansion may stand for before the file is reported
# instead of expanded; MAX_DEPTH: the nesting beyond which a document is too deep (PyYAML
# itself recurses). Settings, baselines and GPU files share them (`shapelint.core.limits`).
from shapelint.core.limits import MAX_ALIAS_NODES, MAX_DEPTH
from shapelint.core.source import (
    Candidate,
    Document,
    Entry,
    LineIndex,
    Mapping,
    Node,
    Problem,
    Scalar,
    Sequence,
    Span,
    merge_suppressions,
    parse_suppression,
)

_CORE = "tag:yaml.org,2002:"
SAFE_SCALAR_TAGS = frozenset(
    _CORE + name for name in ("str", "int", "float", "bool", "null", "timestamp", "binary")
)
SAFE_COLLECTION_TAGS = frozenset(_CORE + name for name in ("map", "seq", "omap", "pairs", "set"))
_MERGE = _CORE + "merge"
_SPACE = " \t\r\n\ufeff"
# Text with characters PyYAML's reader refuses, a byte-order mark or a line break other than
# LF/CR goes to PyYAML's own reader: its errors and its offsets (libyaml skips a BOM).
_PYTHON_ONLY = re.compile(yaml.reader.Reader.NON_PRINTABLE.pattern + "|[\ufeff\x85\u2028\u2029]")
# Characters that end a tag or anchor property.
_PROPERTY_END = " \t\r\n,[]{}"


class _Alias(yaml.Node):
    """An alias occurrence in the composed graph, pointing at the anchored node."""

    def __init__(self, target: yaml.Node, start: yaml.Mark, end: yaml.Mark) -> None:
        super().__init__(target.tag, target.value, start, end)
        self.target = target


class _KeepAliases(yaml.composer.Composer):
    """PyYAML's composer, keeping each alias occurrence as an `_Alias` node."""

    def compose_node(self, parent: yaml.Node | None, index: int) -> yaml.Node | None:
        events = cast(Any, self)  # the event API comes from the parser this is mixed with
        if events.check_event(AliasEvent):
            event: AliasEvent = events.peek_event()
            target = self.anchors.get(cast(str, event.anchor))
            if target is not None:
                events.get_event()
                marks = cast(tuple[yaml.Mark, yaml.Mark], (event.start_mark, event.end_mark))
                return _Alias(target, *marks)
        return super().compose_node(parent, index)


class _Loader(_KeepAliases, yaml.SafeLoader):
    """PyYAML's safe loader, keeping alias occurrences and the text ranges it skips."""

    def __init__(self, text: str) -> None:
        super().__init__(text)
        self.text = text
        # (start, end) of skipped whitespace/comment runs that contain a '#'.
        self.comment_runs: list[tuple[int, int]] = []

    def scan_to_next_token(self) -> None:
        start = self.index
        super().scan_to_next_token()
        if self.text.find("#", start, self.index) != -1:
            self.comment_runs.append((start, self.index))


try:
    from yaml._yaml import CParser
except ImportError:  # PyYAML built without libyaml
    _CLoader: type | None = None
else:

    class _CLoader(_KeepAliases, CParser, yaml.constructor.SafeConstructor, yaml.resolver.Resolver):  # type: ignore[no-redef]
        """The same composition over libyaml's events: the scanning and parsing, nearly all of
        the time, run in C. libyaml's marks count characters, as PyYAML's do. Comments are the
        gaps between libyaml's tokens (a second C pass, only for text that mentions
        ``shapelint``: the rest has no suppression comment to find)."""

        def __init__(self, text: str) -> None:
            CParser.__init__(self, text)
            _KeepAliases.__init__(self)
            yaml.constructor.SafeConstructor.__init__(self)
            yaml.resolver.Resolver.__init__(self)
            self.text = text
            self.comment_runs: list[tuple[int, int]] = []
            if "shapelint" in text:
                self.comment_runs = _token_gaps(text)


def _token_gaps(text: str) -> list[tuple[int, int]]:
    """(start, end) of the text between libyaml's tokens that holds a '#'."""
    scanner = CParser(text)
    runs: list[tuple[int, int]] = []
    end = 0
    try:
        while scanner.check_token():
            token = scanner.get_token()
            if token is None:
                break
            start = token.start_mark.index
            if start > end and text.find("#", end, start) != -1:
                runs.append((end, start))
            end = max(end, token.end_mark.index)
    finally:
        scanner.dispose()
    return runs


class _Stop(Exception):
    """Abandon the document with one problem."""

    def __init__(self, problem: Problem) -> None:
        super().__init__(problem.message)
        self.problem = problem


class _Converter:
    """Turns one composed document into the `source` tree."""

    def __init__(self, loader: _Loader, path: str, index: LineIndex, referenced: set[int]):
        self.loader = loader
        self.text = loader.text
        self.path = path
        self.index = index
        self.referenced = referenced
        self.problems: list[Problem] = []
        self.reported: set[tuple[str, int]] = set()
        # Anchored nodes already converted (by id of the YAML node) and their expanded size.
        self.memo: dict[int, tuple[Node, int]] = {}
        self.in_progress: set[int] = set()
        self.expanded = 0

    def span(self, start: int, end: int) -> Span:
        return self.index.span(self.path, start, end)

    def report(self, problem: Problem) -> None:
        mark = (problem.code, problem.span.start)
        if mark not in self.reported:
            self.reported.add(mark)
            self.problems.append(problem)

    def value_start(self, node: yaml.Node) -> tuple[int, int | None]:
        """Offset where the node's own text starts (after anchor and tag), and the tag's."""
        text, pos, end = self.text, node.start_mark.index, node.end_mark.index
        tag_at: int | None = None
        while pos < end:
            ch = text[pos]
            if ch in _SPACE:
                pos += 1
            elif ch == "#":
                eol = text.find("\n", pos, end)
                pos = end if eol == -1 else eol
            elif ch in "&!":
                if ch == "!":
                    tag_at = pos
                while pos < end and text[pos] not in _PROPERTY_END:
                    pos += 1
            else:
                break
        return pos, tag_at

    def node_span(self, node: yaml.Node) -> tuple[Span, int | None]:
        start, tag_at = self.value_start(node)
        end = max(start, node.end_mark.index)
        if not isinstance(node, ScalarNode) or node.style in ("|", ">"):
            while end > start and self.text[end - 1] in _SPACE:
                end -= 1
        return self.span(start, end), tag_at

    def unsafe_tag(self, node: yaml.Node, tag_at: int | None, key: str) -> None:
        if not node.tag.startswith(_CORE):
            return  # a local tag (``!include``): the application's own, constructs nothing here
        at = tag_at if tag_at is not None else node.start_mark.index
        end = at
        while end < len(self.text) and self.text[end] not in _PROPERTY_END:
            end += 1
        self.report(
            Problem(
                "SL006",
                f"unsafe or unknown YAML tag {node.tag!r}: the value is reported, not constructed",
                self.span(at, end),
                key,
            )
        )

    def convert(self, node: yaml.Node, key: str, shared: bool, depth: int) -> tuple[Node, int]:
        """Convert ``node``; returns the tree node and the number of nodes it stands for."""
        if depth > MAX_DEPTH:
            raise _Stop(self.problem_at("SL000", "invalid YAML: nesting too deep", node))
        if isinstance(node, _Alias):
            return self.alias(node, key, depth)
        ident = id(node)
        if ident in self.memo:
            return self.memo[ident]
        if ident in self.referenced:
            shared = True
            self.in_progress.add(ident)
        if isinstance(node, ScalarNode):
            result: tuple[Node, int] = (self.scalar(node, key, shared), 1)
        elif isinstance(node, SequenceNode):
            result = self.sequence(node, key, shared, depth)
        else:
            result = self.mapping(cast(MappingNode, node), key, shared, depth)
        if ident in self.referenced:
            self.in_progress.discard(ident)
            self.memo[ident] = result
        return result

    def alias(self, node: _Alias, key: str, depth: int) -> tuple[Node, int]:
        ident = id(node.target)
        if ident in self.in_progress:
            raise _Stop(self.problem_at("SL007", "recursive YAML alias: not expanded", node, key))
        converted = self.memo.get(ident)
        if converted is None:  # defined later than used: PyYAML rejects that, so not reached
            converted = self.convert(node.target, key, True, depth)
        self.expanded += converted[1]
        if self.expanded > MAX_ALIAS_NODES:
            message = (
                f"YAML aliases expand to more than {MAX_ALIAS_NODES} nodes: "
                "the file is reported, not expanded"
            )
            raise _Stop(self.problem_at("SL007", message, node, key))
        return converted

    def problem_at(self, code: str, message: str, node: yaml.Node, key: str = "") -> Problem:
        start = node.start_mark.index
        return Problem(code, message, self.span(start, max(start, node.end_mark.index)), key)

    def scalar(self, node: ScalarNode, key: str, shared: bool) -> Scalar:
        span, tag_at = self.node_span(node)
        if node.tag not in SAFE_SCALAR_TAGS:
            self.unsafe_tag(node, tag_at, key)
            return Scalar(node.value, span, shared=shared, known=False)
        try:
            value: object = self.loader.yaml_constructors[node.tag](self.loader, node)
        except Exception as exc:  # a bad explicitly tagged value (!!int abc): safe_load fails too
            message = f"invalid YAML value for tag {node.tag!r}: {exc}"
            raise _Stop(Problem("SL000", message, span, key)) from None
        return Scalar(value, span, shared=shared)

    def sequence(
        self, node: SequenceNode, key: str, shared: bool, depth: int
    ) -> tuple[Sequence, int]:
        span, tag_at = self.node_span(node)
        if node.tag not in SAFE_COLLECTION_TAGS:
            self.unsafe_tag(node, tag_at, key)
        items: list[Node] = []
        size = 1
        for i, child in enumerate(node.value):
            item, n = self.convert(child, f"{key}[{i}]", shared, depth + 1)
            items.append(item)
            size += n
        return Sequence(tuple(items), span, shared=shared), size

    def key_of(self, node: yaml.Node, parent: str) -> tuple[str, Span]:
        target = node.target if isinstance(node, _Alias) else node
        if not isinstance(target, ScalarNode):
            message = "invalid YAML: a mapping key must be a scalar"
            raise _Stop(self.problem_at("SL000", message, node, parent))
        span, tag_at = self.node_span(target)
        if target.tag not in SAFE_SCALAR_TAGS and target.tag != _MERGE:
            self.unsafe_tag(target, tag_at, parent)
        return str(target.value), span

    def mapping(self, node: MappingNode, key: str, shared: bool, depth: int) -> tuple[Mapping, int]:
        span, tag_at = self.node_span(node)
        if node.tag not in SAFE_COLLECTION_TAGS:
            self.unsafe_tag(node, tag_at, key)
        entries: list[Entry] = []
        merged: list[Mapping] = []
        seen: dict[str, Span] = {}
        size = 1
        for key_node, value_node in node.value:
            if key_node.tag == _MERGE:
                sources, n = self.merge_sources(value_node, key, shared, depth)
                merged.extend(sources)
                size += n
                continue
            name, key_span = self.key_of(key_node, key)
            child_key = f"{key}.{name}" if key else name
            value, n = self.convert(value_node, child_key, shared, depth + 1)
            size += n
            first = seen.get(name)
            if first is not None:
                message = (
                    f"duplicate key '{child_key}' (first at line {first.line}); "
                    "YAML readers keep only the last value"
                )
                self.report(Problem("SL001", message, key_span, child_key))
            seen[name] = key_span
            entries.append(Entry(name, key_span, value))
        if merged:
            entries = _merge(merged, entries)
        return Mapping(tuple(entries), span, shared=shared), size

    def merge_sources(
        self, node: yaml.Node, key: str, shared: bool, depth: int
    ) -> tuple[list[Mapping], int]:
        """The mappings a merge key (``<<``) names, highest precedence first."""
        target = node.target if isinstance(node, _Alias) else node
        if isinstance(target, SequenceNode) and not isinstance(node, _Alias):
            sources: list[Mapping] = []
            size = 0
            for child in target.value:
                found, n = self.merge_sources(child, key, shared, depth + 1)
                sources.extend(found)
                size += n
            return sources, size
        converted, n = self.convert(node, key, shared, depth + 1)
        if not isinstance(converted, Mapping):
            message = "invalid YAML: a merge key ('<<') must name a mapping or a list of mappings"
            raise _Stop(self.problem_at("SL000", message, node, key))
        return [converted], n


def _merge(sources: list[Mapping], own: list[Entry]) -> list[Entry]:
    """Entries after merge keys, as PyYAML's flatten_mapping orders precedence.

    Explicit keys win over merged ones, and an earlier merge source wins over a later one.
    """
    chosen: dict[str, Entry] = {}
    for source in sources:
        last = {entry.key: entry for entry in source.entries}
        for name, entry in last.items():
            chosen.setdefault(name, entry)
    explicit = {entry.key for entry in own}
    return [e for name, e in chosen.items() if name not in explicit] + own


def _alias_targets(root: yaml.Node) -> set[int]:
    """Ids of every node some alias in the document refers to."""
    targets: set[int] = set()
    seen: set[int] = set()
    stack = [root]
    while stack:
        node = stack.pop()
        if isinstance(node, _Alias):
            targets.add(id(node.target))
            continue
        if id(node) in seen:
            continue
        seen.add(id(node))
        if isinstance(node, SequenceNode):
            stack.extend(node.value)
        elif isinstance(node, MappingNode):
            for k, v in node.value:
                stack.extend((k, v))
    return targets


def _error_offset(exc: Exception, text: str) -> int:
    mark: yaml.Mark | None = None
    if isinstance(exc, yaml.MarkedYAMLError):
        mark = exc.problem_mark or exc.context_mark
    if mark is not None:
        return min(max(mark.index, 0), len(text))
    position = getattr(exc, "position", None)  # ReaderError: a character index
    if isinstance(position, int):
        return min(max(position, 0), len(text))
    return 0


def _error_message(exc: Exception) -> str:
    if isinstance(exc, yaml.MarkedYAMLError):
        parts = [p for p in (exc.context, exc.problem) if p]
        return "; ".join(parts) or "syntax error"
    if isinstance(exc, yaml.reader.ReaderError):
        return f"special characters are not allowed (U+{exc.character:04X})"
    return str(exc) or type(exc).__name__


def _suppressions(loader: _Loader, index: LineIndex) -> dict[int, frozenset[str]]:
    found: dict[int, frozenset[str]] = {}
    text = loader.text
    for start, end in loader.comment_runs:
        pos = text.find("#", start, end)
        while pos != -1:
            eol = pos
            while eol < end and text[eol] not in "\r\n":
                eol += 1
            codes = parse_suppression(text[pos:eol])
            if codes is not None:
                line = index.position(pos)[0]
                found[line] = merge_suppressions(found.get(line), codes)
            pos = text.find("#", eol, end)
    return found


def _syntax_problem(exc: Exception, path: str, text: str, index: LineIndex) -> Problem:
    if isinstance(exc, RecursionError):
        return Problem("SL000", "invalid YAML: nesting too deep", index.span(path, 0, 0))
    offset = _error_offset(exc, text)
    return Problem(
        "SL000", f"invalid YAML: {_error_message(exc)}", index.span(path, offset, offset)
    )


def parse_yaml(path: str, text: str) -> Document:
    """Parse YAML text into a `Document`; never raises on bad input.

    Syntax errors become SL000 (at PyYAML's problem mark), duplicate keys SL001, unsafe or
    unknown tags SL006, alias expansion past the limit SL007. Each document of the stream
    whose root is a mapping is a candidate, named ``doc[N]`` when the stream holds several.
    """
    if _CLoader is not None and not _PYTHON_ONLY.search(text):
        try:
            return _parse_with(_CLoader, path, text)
        except yaml.YAMLError:
            pass  # PyYAML's own reader says what is wrong, with its marks and wording
    return _parse_with(_Loader, path, text)


def _parse_with(loader_class: type[_Loader], path: str, text: str) -> Document:
    """`parse_yaml` with one loader; with the libyaml loader a syntax error is raised."""
    strict = loader_class is not _Loader
    doc = Document(path=path, text=text, format="yaml")
    index = LineIndex(text)
    try:
        loader = loader_class(text)  # rejects non-printable characters up front
    except yaml.YAMLError as exc:
        doc.problems.append(_syntax_problem(exc, path, text, index))
        return doc
    roots: list[yaml.Node] = []
    try:
        while loader.check_node():
            node = loader.get_node()
            if node is not None:
                roots.append(node)
    except (yaml.YAMLError, RecursionError) as exc:
        if strict and isinstance(exc, yaml.YAMLError):
            raise
        doc.problems.append(_syntax_problem(exc, path, text, index))
        doc.suppressions = _suppressions(loader, index)
        return doc
    finally:
        loader.dispose()
    doc.suppressions = _suppressions(loader, index)
    candidates: list[Candidate] = []
    problems: list[Problem] = []
    for number, root in enumerate(roots):
        converter = _Converter(loader, path, index, _alias_targets(root))
        try:
            tree, _ = converter.convert(root, "", False, 0)
        except _Stop as stop:
            doc.problems.extend(converter.problems)
            doc.problems.append(stop.problem)
            return doc
        except RecursionError:
            span = index.span(path, 0, 0)
            doc.problems.append(Problem("SL000", "invalid YAML: nesting too deep", span))
            return doc
        problems.extend(converter.problems)
        if isinstance(tree, Mapping):
            name = f"doc[{number}]" if len(roots) > 1 else ""
            candidates.append(Candidate(name=name, root=tree))
    doc.problems.extend(problems)
    doc.candidates = candidates
    return doc
