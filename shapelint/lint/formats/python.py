"""Python config reader: libcst, static only — the file is parsed, never imported or run.

A Python file can hold many configs. The reader turns each of these into a `Candidate`:

- ``kind="class"``: the body of a class (dataclass fields ``vocab_size: int = 50304``, class
  attributes ``model_type = "llama"``), e.g. transformers 5.x ``@strict`` config classes. A
  field written through a validating wrapper — ``positive_int_field(default=1024)``,
  ``interval(min=0.0, max=1.0)(default=0.02)``, ``field(default=…)`` — holds its ``default=``.
- ``kind="init"``: the same, for a class whose ``__init__`` takes keyword defaults
  (transformers 4.x: ``def __init__(self, vocab_size=32000, …)``); the class attributes come
  first, the ``__init__`` defaults after them. Named by the class.
- ``kind="call"`` / ``kind="dict"``: a call with keyword arguments only (``GPTConfig(n_layer=12,
  …)``, ``dict(name=…, n_embd=…)``) or a dict literal with string keys. Collections of them are
  unpacked: list items are named ``configs[3]``, dict values ``llama3_configs["8B"]``,
  ``x.append(…)`` arguments ``x.append[0]``, and a string ``name=`` entry is added to the name
  (``llama_2[0] Llama-2-7b{}-hf``). A call or dict assigned to a name is named by the target
  (``config``, ``self.vision_config``); one that is not is named by its callee. Inside a
  function the scope follows in parentheses (``config (in main)``). Nested calls and dicts in
  keyword values become nested mappings (``hf_config=dict(…)``, ``text_config={…}``).
- ``kind="module"``: the module-level assignments of a training script (nanoGPT's
  ``config/*.py``: ``batch_size = 12``), one candidate named ``""``.

Values are constant-folded where that is exact: literals (``50_304``), arithmetic on them
(``4096 * 32``, ``8 * 1024 // 3``, ``-1``, ``2 ** 12``) and names bound earlier in the same scope
(module, class body or function body) to such values. A folded value keeps its source text in
``Scalar.expression``. Anything else — other calls, attribute access, names that are not such
constants, comprehensions — is a `Scalar` with ``known=False`` and value ``None``: unknown, never
guessed. Comprehensions are not expanded.

LitGPT's name-variant loops are expanded (`_Reader.expand_loop`): a module-level ``for`` (at most
two deep) over a list of written ``dict(…)``/``{…}`` configs and/or a tuple of string literals
(``for kind, hf in (("", "-x"), …)`` too), whose body is exactly ``copy = deepcopy(c)`` (or
``c.copy()`` / ``dict(c)``), assignments ``copy["name"] = …`` (required), ``copy["a"]["b"] = …``,
then ``configs.append(copy)``. Each iteration is a candidate named by its template's label and
the evaluated name (``llama_2[0] Llama-2-7b-chat-hf``); its entries are the template's (same
spans, so a fix edits the template once) with the assignments applied. A string built from the
template, the loop variables and literals (``c["name"].format(kind)``, ``f"{c['name']}-it"``,
``c["name"] + "-x"``) keeps the template entry's span; a literal (``copy["block_size"] = 4096``)
has the assignment's span and is ``shared`` (editing it changes every config the loop builds).
A template whose name has a ``{}`` placeholder is replaced by its variants; other templates are
kept (LitGPT adds them too). A loop with anything else — a condition, another statement, a
value that cannot be evaluated, a list changed in ways not followed — is not expanded at all.
The lists are followed through ``x = [...]``, ``x.append(dict(…))`` and ``x.extend(y)``; any
other use of a name in a module-level statement stops following it.

Syntax errors become an ``SL000`` problem (located with Python's own parser, as users see it
from ``python -c``); duplicate dict keys and repeated keyword arguments become ``SL001``.
``# shapelint: ignore[…]`` comments (libcst comment nodes, so a ``#`` inside a string is not
one) fill ``Document.suppressions``.
"""

from __future__ import annotations

import ast
import math
import re
import string
import warnings
from collections.abc import Iterable
from collections.abc import Mapping as AbcMapping
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from shapelint.lint.source import (
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

if TYPE_CHECKING:
    import libcst as cst
    from libcst.metadata import CodeRange

_NORMALIZED = re.compile(r"[\x0b\x0c]|\r(?!\n)")
_LIBCST_AT = re.compile(r"error at (\d+):(\d+)")
_WORD = re.compile(r"[^\W\d]\w*")
# Nesting deeper than this is reported as unknown rather than walked (recursion guard).
_MAX_DEPTH = 60
# Folded integers larger than this (in bits) are not computed: ``10 ** 10 ** 10`` is unknown.
_MAX_BITS = 512
# Call keywords that make a call a field wrapper holding a default, not a config.
_WRAPPER_KEYWORDS = ("default",)
_MAX_STRING = 10_000
_NO_VALUE = object()
# A loop that would build more configs than this is not expanded.
_MAX_VARIANTS = 1024


def parse_python(path: str, text: str) -> Document:
    """Parse Python source into a `Document` of config candidates; never raises on bad input."""
    doc = Document(path=path, text=text, format="python")
    import libcst as cst
    from libcst.metadata import MetadataWrapper, PositionProvider

    try:
        module = cst.parse_module(text)
    except Exception as exc:  # ParserSyntaxError, CSTValidationError, RecursionError …
        doc.problems.append(_syntax_problem(path, text, exc))
        return doc
    try:
        positions = MetadataWrapper(module, unsafe_skip_copy=True).resolve(PositionProvider)
        reader = _Reader(path, text, module, positions)
        reader.read()
    except RecursionError:
        span = LineIndex(text).span(path, 0, 0)
        doc.problems.append(Problem("SL000", "Python file too deeply nested to analyse", span))
        return doc
    doc.candidates.extend(reader.candidates)
    doc.problems.extend(reader.problems)
    doc.suppressions.update(reader.suppressions)
    return doc


def _syntax_problem(path: str, text: str, exc: Exception) -> Problem:
    """An SL000 problem at the position Python itself reports for the error."""
    index = LineIndex(text)
    line, column, message = 1, 1, str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # SyntaxWarning (invalid escapes) is not ours to show
            ast.parse(text)
    except SyntaxError as err:
        message = err.msg
        line = err.lineno or 1
        column = err.offset or 1
    except Exception:  # ValueError (NUL bytes), MemoryError, RecursionError: keep libcst's
        pass
    else:
        raw_line = getattr(exc, "raw_line", None)
        if isinstance(raw_line, int):
            line = raw_line
        match = _LIBCST_AT.search(str(exc))
        if match:
            line, column = int(match.group(1)), int(match.group(2))
    if "\x00" in text and message.startswith("source code string cannot contain null bytes"):
        line, column = index.position(text.index("\x00"))
    lines = text.split("\n")
    line = min(max(line, 1), len(lines))
    column = min(max(column, 1), len(lines[line - 1]) + 1)
    offset = index.offset(line, column)
    return Problem("SL000", f"invalid Python: {message}", index.span(path, offset, offset))


@dataclass(frozen=True)
class _Folded:
    """A statically evaluated expression: its value, or ``known=False``."""

    value: object
    known: bool
    computed: bool


_UNKNOWN = _Folded(None, False, False)


@dataclass(frozen=True)
class _Template:
    """A module-level ``dict(…)``/``{…}`` config a loop may copy, with the label it was named by
    (``llama_2[0]``, without the ``name`` entry)."""

    candidate: Candidate
    label: str


@dataclass(frozen=True)
class _Assignment:
    """``copy["a"]["b"] = value`` in a variant loop: the key path, its last key, the value."""

    path: tuple[str, ...]
    key: cst.BaseExpression
    value: cst.BaseExpression


@dataclass(frozen=True)
class _Loop:
    """A recognized variant loop: what it iterates and what each iteration assigns.

    ``levels`` is one item per ``for``, outermost first: None for the loop over the templates,
    else the loop variables and the rows of string literals they take.
    """

    templates: tuple[_Template, ...]
    template_var: str
    copy_var: str
    levels: tuple[tuple[tuple[str, ...], tuple[tuple[str, ...], ...]] | None, ...]
    assignments: tuple[_Assignment, ...]
    bound: frozenset[str]
    read: frozenset[str]


@dataclass(frozen=True)
class _LoopScope:
    """What a string expression in a variant loop may read in one iteration."""

    strings: AbcMapping[str, str]
    template_var: str
    template: Mapping
    copy_var: str
    copy: Mapping
    env: AbcMapping[str, _Folded]


class _Reader:
    """Walks one parsed module and collects candidates, problems and suppressions."""

    def __init__(
        self,
        path: str,
        text: str,
        module: cst.Module,
        positions: AbcMapping[cst.CSTNode, CodeRange],
    ) -> None:
        self.path = path
        self.text = text
        self.module = module
        self.positions = positions
        self.index = LineIndex(text)
        self.line_starts = _line_starts(text)
        # libcst round-trips source exactly except for a few normalizations (form feeds, lone
        # carriage returns); only then are positions checked against the text.
        self.exact = not _NORMALIZED.search(text) or module.code == text
        self.candidates: list[Candidate] = []
        self.problems: list[Problem] = []
        self.suppressions: dict[int, frozenset[str]] = {}
        self.names: dict[str, int] = {}
        self.counters: dict[str, int] = {}
        self.reported: set[int] = set()
        # Variant loops: module-level dict configs by their expression node, the lists and
        # names of them followed so far, the variants built from each template (by id of its
        # candidate) and the templates they replace.
        self.templates: dict[cst.CSTNode, _Template] = {}
        self.lists: dict[str, list[_Template]] = {}
        self.singles: dict[str, _Template] = {}
        self.variants: dict[int, list[Candidate]] = {}
        self.expanded: set[int] = set()
        self.deepcopy_names, self.copy_modules = _copy_imports(module)

    # ---- positions -------------------------------------------------------------------------

    def offset(self, line: int, column: int) -> int:
        starts = self.line_starts
        if line - 1 >= len(starts):
            return len(self.text)
        return min(starts[line - 1] + column, len(self.text))

    def span(self, node: cst.CSTNode) -> Span:
        rng = self.positions.get(node)
        if rng is None:
            return self.index.span(self.path, 0, 0)
        start = self.offset(rng.start.line, rng.start.column)
        end = max(start, self.offset(rng.end.line, rng.end.column))
        if not self.exact:
            start, end = self._realign(node, start, end)
        return self.index.span(self.path, start, end)

    def _realign(self, node: cst.CSTNode, start: int, end: int) -> tuple[int, int]:
        """libcst normalized something (form feeds): find the node's text on its line."""
        code = self.module.code_for_node(node)
        if self.text[start:end] == code:
            return start, end
        line_start = self.text.rfind("\n", 0, start) + 1
        found = self.text.find(code, line_start)
        if found >= 0:
            return found, found + len(code)
        return start, end

    def source(self, node: cst.CSTNode) -> str:
        span = self.span(node)
        return self.text[span.start : span.end]

    # ---- driver ----------------------------------------------------------------------------

    def read(self) -> None:
        self._collect_suppressions()
        env: dict[str, _Folded] = {}
        module_entries: list[Entry] = []
        self.scan_block(self.module.body, env, scope="", module_entries=module_entries)
        if self.variants:
            ordered: list[Candidate] = []
            for candidate in self.candidates:
                if id(candidate) not in self.expanded:
                    ordered.append(candidate)
                ordered.extend(self.variants.get(id(candidate), ()))
            self.candidates = ordered
        if any(isinstance(e.value, Scalar) and e.value.known for e in module_entries):
            root = Mapping(tuple(module_entries), self.index.span(self.path, 0, len(self.text)))
            self.candidates.insert(0, Candidate(name="", root=root, kind="module"))

    def _collect_suppressions(self) -> None:
        import libcst as cst

        for node, rng in self.positions.items():
            if type(node) is not cst.Comment:
                continue
            codes = parse_suppression(node.value)
            if codes is None:
                continue
            line = self.index.position(self.offset(rng.start.line, rng.start.column))[0]
            self.suppressions[line] = merge_suppressions(self.suppressions.get(line), codes)

    # ---- statements ------------------------------------------------------------------------

    def scan_block(
        self,
        body: Iterable[cst.BaseStatement],
        env: dict[str, _Folded],
        scope: str,
        module_entries: list[Entry] | None = None,
    ) -> None:
        """Walk statements in order, binding constants in ``env`` and collecting configs."""
        import libcst as cst

        module = module_entries is not None
        for stmt in body:
            read: frozenset[str] = frozenset()
            if isinstance(stmt, cst.SimpleStatementLine):
                for small in stmt.body:
                    self.small_statement(small, env, scope, module_entries)
                    if module:
                        self.follow(small, self.follow_small(small))
                continue
            if isinstance(stmt, cst.ClassDef):
                env.pop(stmt.name.value, None)
                self.class_def(stmt, env, _join(scope, stmt.name.value))
            elif isinstance(stmt, cst.FunctionDef):
                env.pop(stmt.name.value, None)
                self.function_def(stmt, env, _join(scope, stmt.name.value))
            else:
                if module and isinstance(stmt, cst.For):
                    read = self.expand_loop(stmt, env)
                # if / for / while / with / try / match: whatever they bind is not a constant.
                for name in _bound_names(stmt):
                    env.pop(name, None)
                for block in _blocks(stmt):
                    self.scan_block(block, dict(env), scope)
            if module:
                self.follow(stmt, read)

    def small_statement(
        self,
        small: cst.BaseSmallStatement,
        env: dict[str, _Folded],
        scope: str,
        module_entries: list[Entry] | None,
    ) -> None:
        import libcst as cst

        if isinstance(small, cst.Assign):
            names = [t.target for t in small.targets]
            self.collect(small.value, env, scope, self.source(names[-1]))
            folded = self.fold(small.value, env, 0)
            for target in names:
                self.bind(target, folded, env)
                if module_entries is not None and isinstance(target, cst.Name):
                    self.module_entry(target, small.value, env, module_entries)
        elif isinstance(small, cst.AnnAssign):
            if small.value is None:
                return
            self.collect(small.value, env, scope, self.source(small.target))
            self.bind(small.target, self.fold(small.value, env, 0), env)
            if module_entries is not None and isinstance(small.target, cst.Name):
                self.module_entry(small.target, small.value, env, module_entries)
        elif isinstance(small, cst.AugAssign):
            self.collect(small.value, env, scope, None)
            if isinstance(small.target, cst.Name):
                env.pop(small.target.value, None)
        elif isinstance(small, cst.Expr):
            self.expression_statement(small.value, env, scope)
        elif isinstance(small, cst.Return) and small.value is not None:
            self.collect(small.value, env, scope, None)
        elif isinstance(small, cst.Import | cst.ImportFrom):
            for name in _bound_names(small):
                env.pop(name, None)

    def bind(self, target: cst.BaseExpression, folded: _Folded, env: dict[str, _Folded]) -> None:
        import libcst as cst

        if isinstance(target, cst.Name):
            if folded.known:
                env[target.value] = folded
            else:
                env.pop(target.value, None)
        else:
            for name in _target_names(target):
                env.pop(name, None)

    def module_entry(
        self,
        target: cst.Name,
        value: cst.BaseExpression,
        env: dict[str, _Folded],
        entries: list[Entry],
    ) -> None:
        name = target.value
        if name.startswith("__") and name.endswith("__"):
            return
        node = self.node(value, env, 0)
        if not isinstance(node, Mapping):
            entries.append(Entry(name, self.span(target), node))

    def expression_statement(
        self, value: cst.BaseExpression, env: dict[str, _Folded], scope: str
    ) -> None:
        """``configs.append(dict(…))`` / ``configs.extend([…])``; other calls are searched."""
        import libcst as cst

        if (
            isinstance(value, cst.Call)
            and isinstance(value.func, cst.Attribute)
            and value.func.attr.value in ("append", "extend", "insert")
        ):
            owner = self.source(value.func.value)
            method = value.func.attr.value
            args = [a for a in value.args if a.keyword is None and not a.star]
            if method == "insert":
                args = args[1:]
            for arg in args:
                if not _is_config_like(arg.value) and not isinstance(
                    arg.value, cst.List | cst.Tuple
                ):
                    continue  # configs.append(copy): built by code, not written here
                key = f"{owner}.{method}"
                number = self.counters.get(key, 0)
                self.counters[key] = number + 1
                self.collect(arg.value, env, scope, f"{key}[{number}]")
            return
        self.collect(value, env, scope, None)

    def class_def(self, cls: cst.ClassDef, outer: dict[str, _Folded], scope: str) -> None:
        """One candidate for a class body (plus ``__init__`` keyword defaults)."""
        import libcst as cst

        env = dict(outer)
        entries: list[Entry] = []
        init_entries: list[Entry] = []
        methods: list[cst.FunctionDef] = []
        statements = cls.body.body
        for stmt in statements:
            if isinstance(stmt, cst.SimpleStatementLine):
                for small in stmt.body:
                    self.class_field(small, env, entries)
            elif isinstance(stmt, cst.FunctionDef):
                methods.append(stmt)
                if stmt.name.value == "__init__":
                    init_entries = self.init_defaults(stmt, env)
            elif isinstance(stmt, cst.ClassDef):
                self.class_def(stmt, env, _join(scope, stmt.name.value))
        for method in methods:
            self.function_def(method, outer, _join(scope, method.name.value))
        all_entries = entries + init_entries
        if all_entries:
            kind = "init" if init_entries else "class"
            root = Mapping(tuple(all_entries), self.span(cls))
            self.add(Candidate(name=self.unique(scope), root=root, kind=kind))

    def class_field(
        self, small: cst.BaseSmallStatement, env: dict[str, _Folded], entries: list[Entry]
    ) -> None:
        import libcst as cst

        target: cst.BaseExpression | None = None
        value: cst.BaseExpression | None = None
        if isinstance(small, cst.AnnAssign) and small.value is not None:
            target, value = small.target, small.value
        elif isinstance(small, cst.Assign) and len(small.targets) == 1:
            target, value = small.targets[0].target, small.value
        if target is None or value is None:
            return
        self.bind(target, self.fold(value, env, 0), env)
        if isinstance(target, cst.Name) and not target.value.startswith("__"):
            entries.append(Entry(target.value, self.span(target), self.node(value, env, 0)))

    def init_defaults(self, init: cst.FunctionDef, env: dict[str, _Folded]) -> list[Entry]:
        entries: list[Entry] = []
        params = init.params
        for param in (*params.posonly_params, *params.params, *params.kwonly_params):
            if param.default is None:
                continue
            node = self.node(param.default, env, 0)
            entries.append(Entry(param.name.value, self.span(param.name), node))
        return entries

    def function_def(self, fn: cst.FunctionDef, outer: dict[str, _Folded], scope: str) -> None:
        import libcst as cst

        env = dict(outer)
        params = fn.params
        for param in (*params.posonly_params, *params.params, *params.kwonly_params):
            env.pop(param.name.value, None)
        for star in (params.star_arg, params.star_kwarg):
            if isinstance(star, cst.Param):
                env.pop(star.name.value, None)
        for block in _suite(fn.body):
            self.scan_block(block, env, scope)

    # ---- candidates ------------------------------------------------------------------------

    def collect(
        self,
        expr: cst.BaseExpression,
        env: dict[str, _Folded],
        scope: str,
        base: str | None,
        depth: int = 0,
    ) -> None:
        """Find config-like calls and dicts in ``expr``; ``base`` names the place it sits."""
        import libcst as cst

        if depth > _MAX_DEPTH:
            return
        if _is_config_like(expr):
            if isinstance(expr, cst.Dict) and _is_collection(expr):
                for element in expr.elements:
                    if isinstance(element, cst.DictElement) and isinstance(
                        element.key, cst.SimpleString | cst.ConcatenatedString
                    ):
                        key = _string_value(element.key)
                        label = f"{base or '{…}'}[{_quote(key)}]"
                        self.collect(element.value, env, scope, label, depth + 1)
                return
            node = self.node(expr, env, 0)
            if isinstance(node, Mapping):
                kind = "call" if isinstance(expr, cst.Call) else "dict"
                label = base if base is not None else self.callee(expr)
                entry_name = node.get("name")
                if (
                    isinstance(entry_name, Scalar)
                    and entry_name.known
                    and isinstance(entry_name.value, str)
                    and entry_name.value
                ):
                    label = f"{label} {entry_name.value}"
                if scope:
                    label = f"{label} (in {scope})"
                candidate = Candidate(name=self.unique(label), root=node, kind=kind)
                self.add(candidate)
                if not scope and _is_dict_expression(expr):
                    template_label = base if base is not None else self.callee(expr)
                    self.templates[expr] = _Template(candidate, template_label)
            return
        if isinstance(expr, cst.List | cst.Tuple | cst.Set):
            for i, item in enumerate(expr.elements):
                if isinstance(item, cst.Element):
                    item_label = f"{base}[{i}]" if base is not None else None
                    self.collect(item.value, env, scope, item_label, depth + 1)
            return
        if isinstance(expr, cst.Call):
            for arg in expr.args:
                self.collect(arg.value, env, scope, None, depth + 1)
            if isinstance(expr.func, cst.Call):
                self.collect(expr.func, env, scope, None, depth + 1)
        elif isinstance(expr, cst.Dict):
            for element in expr.elements:
                if isinstance(element, cst.DictElement):
                    self.collect(element.value, env, scope, None, depth + 1)

    def callee(self, expr: cst.BaseExpression) -> str:
        import libcst as cst

        if isinstance(expr, cst.Call):
            return self.source(expr.func)
        return "{…}"

    def unique(self, name: str) -> str:
        count = self.names.get(name, 0) + 1
        self.names[name] = count
        return name if count == 1 else f"{name} #{count}"

    def add(self, candidate: Candidate) -> None:
        self.candidates.append(candidate)

    # ---- variant loops ---------------------------------------------------------------------

    def follow(self, node: cst.CSTNode, handled: frozenset[str]) -> None:
        """Stop following the lists and configs a module-level statement may change: every name
        it mentions, except those it was understood to read or set (``handled``)."""
        if not self.lists and not self.singles:
            return
        # Words of the source text: a superset of the names (strings and comments add some).
        for name in set(_WORD.findall(self.source(node))):
            if name not in handled:
                self.lists.pop(name, None)
                self.singles.pop(name, None)

    def follow_small(self, small: cst.BaseSmallStatement) -> frozenset[str]:
        """Follow ``x = [dict(…), …]``, ``x = dict(…)``, ``x.append(dict(…))``, ``x.extend(y)``
        and ``x.extend([…])``; return the names the statement is understood to read or set."""
        import libcst as cst

        target: cst.BaseExpression | None = None
        value: cst.BaseExpression | None = None
        if isinstance(small, cst.Assign) and len(small.targets) == 1:
            target, value = small.targets[0].target, small.value
        elif isinstance(small, cst.AnnAssign):
            target, value = small.target, small.value
        if isinstance(target, cst.Name) and value is not None:
            name = target.value
            self.lists.pop(name, None)
            self.singles.pop(name, None)
            if isinstance(value, cst.List | cst.Tuple):
                items = self.template_items(value)
                if items is not None:
                    self.lists[name] = items[0]
                    return frozenset({name, *items[1]})
            elif value in self.templates:
                self.singles[name] = self.templates[value]
                return frozenset({name})
            return frozenset()
        if not (
            isinstance(small, cst.Expr)
            and isinstance(small.value, cst.Call)
            and isinstance(small.value.func, cst.Attribute)
            and isinstance(small.value.func.value, cst.Name)
            and small.value.func.attr.value in ("append", "extend")
            and len(small.value.args) == 1
            and small.value.args[0].keyword is None
            and not small.value.args[0].star
        ):
            return frozenset()
        owner = small.value.func.value.value
        method = small.value.func.attr.value
        arg = small.value.args[0].value
        followed = self.lists.get(owner)
        if method == "append":
            if followed is not None and arg in self.templates:
                followed.append(self.templates[arg])
                return frozenset({owner})
            return frozenset()
        if isinstance(arg, cst.Name) and arg.value in self.lists:
            # ``configs.extend(pythia)`` reads pythia (whether or not configs is followed).
            if followed is not None:
                followed.extend(self.lists[arg.value])
            return frozenset({owner, arg.value} if followed is not None else {arg.value})
        if followed is not None and isinstance(arg, cst.List | cst.Tuple):
            items = self.template_items(arg)
            if items is not None:
                followed.extend(items[0])
                return frozenset({owner, *items[1]})
        return frozenset()

    def template_items(
        self, literal: cst.List | cst.Tuple
    ) -> tuple[list[_Template], set[str]] | None:
        """The templates a list literal holds (``*other`` splices a followed list) and the
        lists it splices; None when an item is anything else."""
        import libcst as cst

        items: list[_Template] = []
        spliced: set[str] = set()
        for element in literal.elements:
            if isinstance(element, cst.Element) and element.value in self.templates:
                items.append(self.templates[element.value])
            elif (
                isinstance(element, cst.StarredElement)
                and isinstance(element.value, cst.Name)
                and element.value.value in self.lists
            ):
                items.extend(self.lists[element.value.value])
                spliced.add(element.value.value)
            else:
                return None
        return items, spliced

    def expand_loop(self, loop: cst.For, env: dict[str, _Folded]) -> frozenset[str]:
        """Add one candidate per iteration of a variant loop (see the module docstring) and
        return the followed names it reads; a loop not understood adds nothing."""
        plan = self.loop_plan(loop)
        if plan is None:
            return frozenset()
        # Without a loop over templates the loop copies one named config (``falcon180b``).
        start = None if None in plan.levels else plan.templates[0]
        iterations: list[tuple[_Template | None, dict[str, str]]] = [(start, {})]
        for level in plan.levels:
            if len(iterations) * len(plan.templates if level is None else level[1]) > _MAX_VARIANTS:
                return frozenset()
            if level is None:
                iterations = [(t, b) for _, b in iterations for t in plan.templates]
            else:
                names, rows = level
                iterations = [
                    (t, {**b, **dict(zip(names, row, strict=True))})
                    for t, b in iterations
                    for row in rows
                ]
        outside = {k: v for k, v in env.items() if k not in plan.bound}
        shared = len(iterations) > 1
        built: list[tuple[_Template, Mapping, str]] = []
        for template, strings in iterations:
            assert template is not None
            root = template.candidate.root
            scope = _LoopScope(strings, plan.template_var, root, plan.copy_var, root, outside)
            for assignment in plan.assignments:
                value = self.loop_value(assignment, replace(scope, copy=root), shared)
                if value is None:
                    return frozenset()
                changed = _set_path(root, assignment.path, value, self.span(assignment.key))
                if changed is None:
                    return frozenset()
                root = changed
            named = root.get("name")
            if not (isinstance(named, Scalar) and named.known and isinstance(named.value, str)):
                return frozenset()
            built.append((template, root, named.value))
        for template, root, name in built:
            original = template.candidate
            variant = Candidate(
                name=self.unique(f"{template.label} {name}" if name else template.label),
                root=root,
                key_prefix=original.key_prefix,
                kind=original.kind,
            )
            self.variants.setdefault(id(original), []).append(variant)
            template_name = original.root.get("name")
            if isinstance(template_name, Scalar) and _has_placeholder(template_name.value):
                self.expanded.add(id(original))
        return plan.read

    def loop_plan(self, loop: cst.For) -> _Loop | None:
        """The shape of a variant loop, or None when the loop is anything else."""
        import libcst as cst

        loops = [loop]
        body = _simple_body(loop.body)
        if body is None:
            inner = _suite(loop.body)
            statements = list(inner[0]) if inner else []
            if len(statements) != 1 or not isinstance(statements[0], cst.For):
                return None
            loops.append(statements[0])
            body = _simple_body(statements[0].body)
            if body is None:
                return None
        levels: list[tuple[tuple[str, ...], tuple[tuple[str, ...], ...]] | None] = []
        bound: list[str] = []
        template_var: str | None = None
        templates: tuple[_Template, ...] = ()
        read: set[str] = set()
        for level in loops:
            if level.asynchronous is not None or level.orelse is not None:
                return None
            target, iterable = level.target, level.iter
            if (
                isinstance(target, cst.Name)
                and isinstance(iterable, cst.Name)
                and iterable.value in self.lists
            ):
                if template_var is not None:
                    return None
                template_var = target.value
                templates = tuple(self.lists[iterable.value])
                read.add(iterable.value)
                levels.append(None)
                bound.append(template_var)
                continue
            names = _loop_targets(target)
            rows = _string_rows(
                iterable, len(names) if isinstance(target, cst.Tuple | cst.List) else 0
            )
            if not names or rows is None:
                return None
            levels.append((names, rows))
            bound.extend(names)
        if len(body) < 3:
            return None
        copied = self.copy_statement(body[0])
        appended = _appended(body[-1])
        if copied is None or appended is None:
            return None
        copy_var, source, copier = copied
        if template_var is None:
            single = self.singles.get(source)
            if single is None:
                return None
            template_var, templates = source, (single,)
            read.add(source)
        elif source != template_var:
            return None
        assignments: list[_Assignment] = []
        for small in body[1:-1]:
            if not isinstance(small, cst.Assign) or len(small.targets) != 1:
                return None
            path = _subscript_path(small.targets[0].target, copy_var)
            if path is None or (copier is None and len(path[0]) > 1):
                return None  # a shallow copy shares its nested dicts with the template
            assignments.append(_Assignment(path[0], path[1], small.value))
        # Every name the loop binds or reads must be distinct, and the loop must not rebind the
        # ``deepcopy`` it calls or the list it appends to.
        names_used = [*bound, copy_var] + ([] if template_var in bound else [template_var])
        if (
            not templates
            or len(set(names_used)) != len(names_used)
            or appended[1] != copy_var
            or appended[0] in names_used
            or appended[0] in read  # appending to the list it walks never ends
            or copier in names_used
            or not any(a.path == ("name",) for a in assignments)
        ):
            return None
        return _Loop(
            templates=templates,
            template_var=template_var,
            copy_var=copy_var,
            levels=tuple(levels),
            assignments=tuple(assignments),
            bound=frozenset({*names_used, template_var}),
            # A name the loop rebinds (``for xs in xs``) is no longer the list afterwards.
            read=frozenset(read) - {*bound, copy_var},
        )

    def copy_statement(self, small: cst.BaseSmallStatement) -> tuple[str, str, str | None] | None:
        """``copy = deepcopy(c)`` / ``copy.deepcopy(c)`` (deep), ``c.copy()`` / ``dict(c)``
        (shallow): (the copy's name, the copied name, the name of the deep copier or None)."""
        import libcst as cst

        if not (
            isinstance(small, cst.Assign)
            and len(small.targets) == 1
            and isinstance(small.targets[0].target, cst.Name)
            and isinstance(small.value, cst.Call)
        ):
            return None
        copy_var = small.targets[0].target.value
        call = small.value
        func = call.func
        args = call.args
        if isinstance(func, cst.Attribute) and func.attr.value == "copy" and not args:
            if isinstance(func.value, cst.Name):
                return copy_var, func.value.value, None
            return None
        if len(args) != 1 or args[0].keyword is not None or args[0].star:
            return None
        source = args[0].value
        if not isinstance(source, cst.Name):
            return None
        if isinstance(func, cst.Name) and func.value == "dict":
            return copy_var, source.value, None
        if isinstance(func, cst.Name) and func.value in self.deepcopy_names:
            return copy_var, source.value, func.value
        if (
            isinstance(func, cst.Attribute)
            and func.attr.value == "deepcopy"
            and isinstance(func.value, cst.Name)
            and func.value.value in self.copy_modules
        ):
            return copy_var, source.value, func.value.value
        return None

    def loop_value(self, assignment: _Assignment, scope: _LoopScope, shared: bool) -> Node | None:
        """The node an assignment of a variant loop sets: a string built from the template and
        the loop variables (at the template entry's span), or a literal (at its own span)."""
        expr = assignment.value
        loop_names = {*scope.strings, scope.template_var, scope.copy_var}
        if _referenced_names(expr) & loop_names:
            value = self.loop_string(expr, scope, 0)
            if value is None:
                return None
            # The template's entry is where the value is written (a finding on it is one
            # finding for every variant); its text is kept as the expression it came from.
            old = _lookup(scope.template, assignment.path)
            span = old.span if isinstance(old, Scalar) else self.span(expr)
            return Scalar(value, span, expression=self.text[span.start : span.end])
        node = self.node(expr, dict(scope.env), 0)
        if not _all_known(node):
            return None
        return _mark_shared(node) if shared else node

    def loop_string(self, expr: cst.BaseExpression, scope: _LoopScope, depth: int) -> str | None:
        """A string a variant loop computes, or None when it is not certain."""
        import libcst as cst

        if depth > _MAX_DEPTH:
            return None
        if isinstance(expr, cst.SimpleString):
            return _string_value(expr)
        if isinstance(expr, cst.ConcatenatedString):
            left = self.loop_string(expr.left, scope, depth + 1)
            right = self.loop_string(expr.right, scope, depth + 1)
            return _joined(left, right)
        if isinstance(expr, cst.FormattedString):
            return self.loop_fstring(expr, scope, depth)
        if isinstance(expr, cst.Name):
            if expr.value in scope.strings:
                return scope.strings[expr.value]
            bound = scope.env.get(expr.value)
            return bound.value if bound is not None and isinstance(bound.value, str) else None
        if isinstance(expr, cst.Subscript):
            for var, root in ((scope.template_var, scope.template), (scope.copy_var, scope.copy)):
                path = _subscript_path(expr, var)
                if path is not None:
                    found = _lookup(root, path[0])
                    if isinstance(found, Scalar) and found.known and isinstance(found.value, str):
                        return found.value
                    return None
            return None
        if isinstance(expr, cst.BinaryOperation) and isinstance(expr.operator, cst.Add):
            left = self.loop_string(expr.left, scope, depth + 1)
            right = self.loop_string(expr.right, scope, depth + 1)
            return _joined(left, right)
        if (
            isinstance(expr, cst.Call)
            and isinstance(expr.func, cst.Attribute)
            and expr.func.attr.value == "format"
        ):
            template = self.loop_string(expr.func.value, scope, depth + 1)
            if template is None:
                return None
            positional: list[str] = []
            keywords: dict[str, str] = {}
            for arg in expr.args:
                if arg.star:
                    return None
                value = self.loop_string(arg.value, scope, depth + 1)
                if value is None:
                    return None
                if arg.keyword is None:
                    positional.append(value)
                else:
                    keywords[arg.keyword.value] = value
            return _format(template, positional, keywords)
        return None

    def loop_fstring(self, expr: cst.FormattedString, scope: _LoopScope, depth: int) -> str | None:
        """An f-string whose fields are plain string expressions (no ``!r``, ``:spec``, ``=``)."""
        import libcst as cst

        prefix = expr.prefix.lower().replace("f", "")
        out: list[str] = []
        for part in expr.parts:
            if isinstance(part, cst.FormattedStringText):
                text = _fstring_text(part.value, prefix, expr.end)
            elif (
                isinstance(part, cst.FormattedStringExpression)
                and part.conversion is None
                and part.format_spec is None
                and part.equal is None
            ):
                text = self.loop_string(part.expression, scope, depth + 1)
            else:
                return None
            if text is None:
                return None
            out.append(text)
        result = "".join(out)
        return result if len(result) <= _MAX_STRING else None

    # ---- values ----------------------------------------------------------------------------

    def node(self, expr: cst.BaseExpression, env: dict[str, _Folded], depth: int) -> Node:
        """The tree node for a value: Mapping for keyword calls and dicts, else Scalar/Sequence."""
        import libcst as cst

        if depth > _MAX_DEPTH:
            return self.scalar(expr, _UNKNOWN)
        if isinstance(expr, cst.Call):
            default = _wrapped_default(expr)
            if default is not None:
                return self.node(default, env, depth + 1)
            if _is_factory_field(expr):
                factory = _factory_lambda_body(expr)
                if factory is not None:
                    return self.node(factory, env, depth + 1)
                return self.scalar(expr, _UNKNOWN)
            if _is_config_like(expr):
                return self.mapping_of_call(expr, env, depth)
            return self.scalar(expr, _UNKNOWN)
        if isinstance(expr, cst.Dict):
            if _is_config_like(expr) or not expr.elements:
                return self.mapping_of_dict(expr, env, depth)
            return self.scalar(expr, _UNKNOWN)
        if isinstance(expr, cst.List | cst.Tuple | cst.Set):
            items: list[Node] = []
            for element in expr.elements:
                if isinstance(element, cst.Element):
                    items.append(self.node(element.value, env, depth + 1))
                else:
                    items.append(self.scalar(element.value, _UNKNOWN))
            return Sequence(tuple(items), self.span(expr))
        return self.scalar(expr, self.fold(expr, env, 0))

    def scalar(self, expr: cst.BaseExpression, folded: _Folded) -> Scalar:
        span = self.span(expr)
        if folded.known and not folded.computed:
            return Scalar(folded.value, span)
        expression = self.text[span.start : span.end]
        if folded.known:
            return Scalar(folded.value, span, expression=expression)
        return Scalar(None, span, expression=expression, known=False)

    def mapping_of_call(self, call: cst.Call, env: dict[str, _Folded], depth: int) -> Mapping:
        entries: list[Entry] = []
        seen: dict[str, Span] = {}
        for arg in call.args:
            if arg.keyword is None:
                continue
            key = arg.keyword.value
            key_span = self.span(arg.keyword)
            self.check_duplicate(key, key_span, seen, "keyword argument")
            entries.append(Entry(key, key_span, self.node(arg.value, env, depth + 1)))
        return Mapping(tuple(entries), self.span(call))

    def mapping_of_dict(self, literal: cst.Dict, env: dict[str, _Folded], depth: int) -> Mapping:
        import libcst as cst

        entries: list[Entry] = []
        seen: dict[str, Span] = {}
        for element in literal.elements:
            if not isinstance(element, cst.DictElement):
                continue
            key = _string_value(element.key)
            if key is None:
                continue
            key_span = self.span(element.key)
            self.check_duplicate(key, key_span, seen, "dict key")
            entries.append(Entry(key, key_span, self.node(element.value, env, depth + 1)))
        return Mapping(tuple(entries), self.span(literal))

    def check_duplicate(self, key: str, span: Span, seen: dict[str, Span], what: str) -> None:
        first = seen.get(key)
        if first is not None and span.start not in self.reported:
            # A value can be read twice (as a module entry and as a candidate): report once.
            self.reported.add(span.start)
            self.problems.append(
                Problem(
                    "SL001",
                    f"duplicate {what} '{key}' (first at line {first.line}); "
                    "Python keeps only the last value"
                    if what == "dict key"
                    else f"repeated {what} '{key}' (first at line {first.line}); "
                    "Python rejects this call",
                    span,
                    key,
                )
            )
        elif first is None:
            seen[key] = span

    def fold(self, expr: cst.BaseExpression, env: dict[str, _Folded], depth: int) -> _Folded:
        """Evaluate a constant expression exactly, or return unknown."""
        import libcst as cst

        if depth > _MAX_DEPTH:
            return _UNKNOWN
        if isinstance(expr, cst.Integer | cst.Float):
            try:
                return _Folded(expr.evaluated_value, True, False)
            except Exception:
                return _UNKNOWN
        if isinstance(expr, cst.SimpleString | cst.ConcatenatedString):
            value = _string_value(expr)
            return _Folded(value, True, False) if value is not None else _UNKNOWN
        if isinstance(expr, cst.Name):
            constant = {"True": True, "False": False, "None": None}
            if expr.value in constant:
                return _Folded(constant[expr.value], True, False)
            bound = env.get(expr.value)
            return _Folded(bound.value, True, True) if bound is not None else _UNKNOWN
        if isinstance(expr, cst.UnaryOperation):
            inner = self.fold(expr.expression, env, depth + 1)
            if not inner.known or not _is_number(inner.value):
                return _UNKNOWN
            result = _unary(expr.operator, inner.value)
            if result is _NO_VALUE:
                return _UNKNOWN
            literal = isinstance(expr.operator, cst.Minus | cst.Plus) and not inner.computed
            return _Folded(result, True, not literal)
        if isinstance(expr, cst.BinaryOperation):
            left = self.fold(expr.left, env, depth + 1)
            if not left.known:
                return _UNKNOWN
            right = self.fold(expr.right, env, depth + 1)
            if not right.known:
                return _UNKNOWN
            result = _binary(expr.operator, left.value, right.value)
            return _UNKNOWN if result is _NO_VALUE else _Folded(result, True, True)
        return _UNKNOWN


# ---- helpers (pure functions of libcst nodes) ---------------------------------------------


def _join(scope: str, name: str) -> str:
    return f"{scope}.{name}" if scope else name


def _quote(key: str | None) -> str:
    return '"' + (key or "").replace("\\", "\\\\").replace('"', '\\"') + '"'


def _line_starts(text: str) -> list[int]:
    """Offsets where lines start, splitting as Python does (\\r\\n, \\r or \\n)."""
    starts = [0]
    i, n = 0, len(text)
    while i < n:
        ch = text[i]
        if ch == "\r":
            if i + 1 < n and text[i + 1] == "\n":
                i += 1
            starts.append(i + 1)
        elif ch == "\n":
            starts.append(i + 1)
        i += 1
    return starts


def _string_value(expr: cst.BaseExpression | None) -> str | None:
    import libcst as cst

    if isinstance(expr, cst.SimpleString | cst.ConcatenatedString):
        try:
            value = expr.evaluated_value
        except Exception:
            return None
        return value if isinstance(value, str) else None
    return None


def _wrapped_default(call: cst.Call) -> cst.BaseExpression | None:
    """The ``default=`` of a field wrapper (``positive_int_field(default=1024)``), if any."""
    import libcst as cst

    func = call.func
    if isinstance(func, cst.Name) and func.value == "dict":
        return None
    for arg in call.args:
        if arg.keyword is not None and arg.keyword.value in _WRAPPER_KEYWORDS:
            return arg.value
    return None


def _is_factory_field(call: cst.Call) -> bool:
    """``field(default_factory=…)``: a dataclass default built at run time."""
    return any(a.keyword is not None and a.keyword.value == "default_factory" for a in call.args)


def _factory_lambda_body(call: cst.Call) -> cst.BaseExpression | None:
    """The body of ``default_factory=lambda: {…}``, which is the default as written."""
    import libcst as cst

    for arg in call.args:
        if (
            arg.keyword is not None
            and arg.keyword.value == "default_factory"
            and isinstance(arg.value, cst.Lambda)
            and not arg.value.params.params
        ):
            return arg.value.body
    return None


def _is_config_like(expr: cst.BaseExpression) -> bool:
    """A call with keyword arguments only, or a dict literal whose keys are all strings."""
    import libcst as cst

    if isinstance(expr, cst.Call):
        if _wrapped_default(expr) is not None or _is_factory_field(expr):
            return False
        has_keyword = False
        for arg in expr.args:
            if arg.keyword is not None:
                has_keyword = True
            elif arg.star != "**":
                return False
        if isinstance(expr.func, cst.Attribute) and expr.func.attr.value in (
            "append",
            "extend",
            "insert",
            "update",
            "format",  # "{n}-{k}".format(n=…, k=…) builds a string
        ):
            return False
        return has_keyword
    if isinstance(expr, cst.Dict):
        keyed = False
        for element in expr.elements:
            if isinstance(element, cst.DictElement):
                if _string_value(element.key) is None:
                    return False
                keyed = True
        return keyed
    return False


def _is_collection(literal: cst.Dict) -> bool:
    """A dict whose every value is itself a config (``{"8B": ModelArgs(…), …}``)."""
    import libcst as cst

    values = [e.value for e in literal.elements if isinstance(e, cst.DictElement)]
    return bool(values) and all(
        _is_config_like(v) and not (isinstance(v, cst.Dict) and _is_collection(v)) for v in values
    )


def _suite(suite: cst.BaseSuite) -> list[Iterable[cst.BaseStatement]]:
    """The statements of an indented block or of a one-line suite (``if x: a = 1``)."""
    import libcst as cst

    if isinstance(suite, cst.IndentedBlock):
        return [suite.body]
    if isinstance(suite, cst.SimpleStatementSuite):
        return [[cst.SimpleStatementLine(body=suite.body)]]
    return []


def _blocks(stmt: cst.BaseStatement) -> list[Iterable[cst.BaseStatement]]:
    """The statement lists nested in a compound statement (if/for/while/with/try/match)."""
    import libcst as cst

    found: list[Iterable[cst.BaseStatement]] = []

    def add(suite: cst.BaseSuite) -> None:
        found.extend(_suite(suite))

    if isinstance(stmt, cst.If):
        add(stmt.body)
        orelse: object = stmt.orelse
        while orelse is not None:
            if isinstance(orelse, cst.If):
                add(orelse.body)
                orelse = orelse.orelse
            elif isinstance(orelse, cst.Else):
                add(orelse.body)
                orelse = None
            else:
                orelse = None
    elif isinstance(stmt, cst.For | cst.While):
        add(stmt.body)
        if stmt.orelse is not None:
            add(stmt.orelse.body)
    elif isinstance(stmt, cst.With):
        add(stmt.body)
    elif isinstance(stmt, cst.Try | cst.TryStar):
        add(stmt.body)
        for handler in stmt.handlers:
            add(handler.body)
        if stmt.orelse is not None:
            add(stmt.orelse.body)
        if stmt.finalbody is not None:
            add(stmt.finalbody.body)
    elif isinstance(stmt, cst.Match):
        for case in stmt.cases:
            add(case.body)
    return found


def _target_names(target: cst.BaseExpression) -> list[str]:
    """Names an assignment target binds (``a``, ``a, b``, ``[a, *b]``)."""
    import libcst as cst

    if isinstance(target, cst.Name):
        return [target.value]
    if isinstance(target, cst.Tuple | cst.List):
        names: list[str] = []
        for element in target.elements:
            names.extend(_target_names(element.value))
        return names
    return []


def _bound_names(node: cst.CSTNode) -> set[str]:
    """Every name a statement (and the statements inside it) may bind."""
    import libcst as cst

    names: set[str] = set()

    class Visitor(cst.CSTVisitor):
        def visit_AssignTarget(self, node: cst.AssignTarget) -> None:
            names.update(_target_names(node.target))

        def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
            names.update(_target_names(node.target))

        def visit_AugAssign(self, node: cst.AugAssign) -> None:
            names.update(_target_names(node.target))

        def visit_For(self, node: cst.For) -> None:
            names.update(_target_names(node.target))

        def visit_NamedExpr(self, node: cst.NamedExpr) -> None:
            names.update(_target_names(node.target))

        def visit_AsName(self, node: cst.AsName) -> None:
            if isinstance(node.name, cst.BaseExpression):
                names.update(_target_names(node.name))

        def visit_ImportAlias(self, node: cst.ImportAlias) -> None:
            if node.asname is None:
                evaluated = node.evaluated_name
                names.add(evaluated.split(".")[0])

        def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
            names.add(node.name.value)
            return False

        def visit_ClassDef(self, node: cst.ClassDef) -> bool:
            names.add(node.name.value)
            return False

    node.visit(Visitor())
    return names


def _is_number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _unary(op: cst.BaseUnaryOp, value: object) -> object:
    import libcst as cst

    if not isinstance(value, int | float):
        return _NO_VALUE
    if isinstance(op, cst.Minus):
        return -value
    if isinstance(op, cst.Plus):
        return +value
    if isinstance(op, cst.BitInvert) and isinstance(value, int):
        return ~value
    return _NO_VALUE


def _binary(op: cst.BaseBinaryOp, left: object, right: object) -> object:
    """``left op right`` for numbers (and ``+`` on strings), bounded so it cannot blow up."""
    import libcst as cst

    if isinstance(left, str) and isinstance(right, str):
        if isinstance(op, cst.Add) and len(left) + len(right) <= _MAX_STRING:
            return left + right
        return _NO_VALUE
    if not (_is_number(left) and _is_number(right)):
        return _NO_VALUE
    assert isinstance(left, int | float) and isinstance(right, int | float)
    try:
        if isinstance(op, cst.Power):
            big = isinstance(left, int) and isinstance(right, int) and right > 0
            if big and right * max(abs(int(left)), 2).bit_length() > _MAX_BITS:
                return _NO_VALUE
            result: object = left**right
        elif isinstance(op, cst.Add):
            result = left + right
        elif isinstance(op, cst.Subtract):
            result = left - right
        elif isinstance(op, cst.Multiply):
            result = left * right
        elif isinstance(op, cst.Divide):
            result = left / right
        elif isinstance(op, cst.FloorDivide):
            result = left // right
        elif isinstance(op, cst.Modulo):
            result = left % right
        elif isinstance(op, cst.LeftShift | cst.RightShift | cst.BitAnd | cst.BitOr | cst.BitXor):
            if not (isinstance(left, int) and isinstance(right, int)):
                return _NO_VALUE
            if isinstance(op, cst.LeftShift):
                if right < 0 or right > _MAX_BITS:
                    return _NO_VALUE
                result = left << right
            elif isinstance(op, cst.RightShift):
                result = left >> right if right >= 0 else _NO_VALUE
            elif isinstance(op, cst.BitAnd):
                result = left & right
            elif isinstance(op, cst.BitOr):
                result = left | right
            else:
                result = left ^ right
        else:
            return _NO_VALUE
    except (ArithmeticError, ValueError):
        return _NO_VALUE
    if isinstance(result, int) and result.bit_length() > _MAX_BITS:
        return _NO_VALUE
    if isinstance(result, complex) or (isinstance(result, float) and not math.isfinite(result)):
        return _NO_VALUE
    return result


# ---- variant loops (pure helpers) ---------------------------------------------------------


def _copy_imports(module: cst.Module) -> tuple[frozenset[str], frozenset[str]]:
    """Names a module binds at top level to ``copy.deepcopy`` and to the ``copy`` module."""
    import libcst as cst

    deepcopy: set[str] = set()
    modules: set[str] = set()
    for stmt in module.body:
        if not isinstance(stmt, cst.SimpleStatementLine):
            continue
        for small in stmt.body:
            if isinstance(small, cst.ImportFrom) and not small.relative:
                if (
                    isinstance(small.module, cst.Name)
                    and small.module.value == "copy"
                    and not isinstance(small.names, cst.ImportStar)
                ):
                    for alias in small.names:
                        if alias.evaluated_name == "deepcopy":
                            deepcopy.add(alias.evaluated_alias or "deepcopy")
            elif isinstance(small, cst.Import):
                for alias in small.names:
                    if alias.evaluated_name == "copy":
                        modules.add(alias.evaluated_alias or "copy")
    return frozenset(deepcopy), frozenset(modules)


def _is_dict_expression(expr: cst.BaseExpression) -> bool:
    """``dict(…)`` or ``{…}``: a config a loop can copy and index with ``copy["name"]``."""
    import libcst as cst

    if isinstance(expr, cst.Dict):
        return True
    return (
        isinstance(expr, cst.Call) and isinstance(expr.func, cst.Name) and expr.func.value == "dict"
    )


def _simple_body(suite: cst.BaseSuite) -> list[cst.BaseSmallStatement] | None:
    """The small statements of a block made only of simple statement lines, else None."""
    import libcst as cst

    if isinstance(suite, cst.SimpleStatementSuite):
        return list(suite.body)
    if not isinstance(suite, cst.IndentedBlock):
        return None
    smalls: list[cst.BaseSmallStatement] = []
    for stmt in suite.body:
        if not isinstance(stmt, cst.SimpleStatementLine):
            return None
        smalls.extend(stmt.body)
    return smalls


def _loop_targets(target: cst.BaseAssignTargetExpression) -> tuple[str, ...]:
    """``kind`` or ``kind, postfix`` (plain names only); empty for anything else."""
    import libcst as cst

    if isinstance(target, cst.Name):
        return (target.value,)
    if isinstance(target, cst.Tuple | cst.List):
        names: list[str] = []
        for element in target.elements:
            if not (isinstance(element, cst.Element) and isinstance(element.value, cst.Name)):
                return ()
            names.append(element.value.value)
        return tuple(names)
    return ()


def _string_rows(iterable: cst.BaseExpression, arity: int) -> tuple[tuple[str, ...], ...] | None:
    """The rows a tuple/list literal of strings gives a loop: ``("", "-chat")`` for one name
    (``arity`` 0), ``(("", "-x"), ("-chat", "-y"))`` for ``arity`` names; None otherwise."""
    import libcst as cst

    if not isinstance(iterable, cst.Tuple | cst.List) or not iterable.elements:
        return None
    rows: list[tuple[str, ...]] = []
    for element in iterable.elements:
        if not isinstance(element, cst.Element):
            return None
        if arity == 0:
            items: list[cst.BaseExpression] = [element.value]
        elif isinstance(element.value, cst.Tuple | cst.List):
            items = []
            for item in element.value.elements:
                if not isinstance(item, cst.Element):
                    return None
                items.append(item.value)
            if len(items) != arity:
                return None
        else:
            return None
        row = tuple(_string_value(item) for item in items)
        if any(value is None for value in row):
            return None
        rows.append(tuple(value for value in row if value is not None))
    return tuple(rows)


def _appended(small: cst.BaseSmallStatement) -> tuple[str, str] | None:
    """``configs.append(copy)``: (the list's name, the appended name)."""
    import libcst as cst

    if not (isinstance(small, cst.Expr) and isinstance(small.value, cst.Call)):
        return None
    call = small.value
    if not (
        isinstance(call.func, cst.Attribute)
        and isinstance(call.func.value, cst.Name)
        and call.func.attr.value == "append"
        and len(call.args) == 1
        and call.args[0].keyword is None
        and not call.args[0].star
        and isinstance(call.args[0].value, cst.Name)
    ):
        return None
    return call.func.value.value, call.args[0].value.value


def _subscript_path(
    expr: cst.BaseExpression, var: str
) -> tuple[tuple[str, ...], cst.BaseExpression] | None:
    """``var["a"]["b"]``: the key path ``("a", "b")`` and the last key's node."""
    import libcst as cst

    keys: list[str] = []
    last: cst.BaseExpression | None = None
    node = expr
    while isinstance(node, cst.Subscript):
        if len(node.slice) != 1:
            return None
        index = node.slice[0].slice
        if not isinstance(index, cst.Index) or index.star is not None:
            return None
        key = _string_value(index.value)
        if key is None:
            return None
        keys.append(key)
        if last is None:
            last = index.value
        node = node.value
    if not isinstance(node, cst.Name) or node.value != var or last is None:
        return None
    return tuple(reversed(keys)), last


def _lookup(root: Mapping, path: tuple[str, ...]) -> Node | None:
    node: Node | None = root
    for key in path:
        if not isinstance(node, Mapping):
            return None
        node = node.get(key)
    return node


def _set_path(root: Mapping, path: tuple[str, ...], value: Node, key_span: Span) -> Mapping | None:
    """``root`` with ``root[path] = value`` (the last entry of a repeated key is Python's); None
    where Python would raise (a missing or non-dict parent)."""
    key = path[0]
    index = next(
        (i for i in range(len(root.entries) - 1, -1, -1) if root.entries[i].key == key), None
    )
    entries = list(root.entries)
    if len(path) == 1:
        if index is None:
            entries.append(Entry(key, key_span, value))
        else:
            entries[index] = Entry(key, entries[index].key_span, value)
    else:
        if index is None:
            return None
        child = entries[index].value
        if not isinstance(child, Mapping):
            return None
        changed = _set_path(child, path[1:], value, key_span)
        if changed is None:
            return None
        entries[index] = Entry(key, entries[index].key_span, changed)
    return Mapping(tuple(entries), root.span, root.shared)


def _all_known(node: Node) -> bool:
    if isinstance(node, Scalar):
        return node.known
    if isinstance(node, Mapping):
        return all(_all_known(e.value) for e in node.entries)
    return all(_all_known(item) for item in node.items)


def _mark_shared(node: Node) -> Node:
    """The node with every value marked shared (editing it changes every config that has it)."""
    if isinstance(node, Scalar):
        return replace(node, shared=True)
    if isinstance(node, Mapping):
        entries = tuple(Entry(e.key, e.key_span, _mark_shared(e.value)) for e in node.entries)
        return Mapping(entries, node.span, shared=True)
    return Sequence(tuple(_mark_shared(item) for item in node.items), node.span, shared=True)


def _referenced_names(node: cst.CSTNode) -> set[str]:
    """Every identifier in a node (attribute names included: an over-approximation)."""
    import libcst as cst

    names: set[str] = set()

    class Visitor(cst.CSTVisitor):
        def visit_Name(self, node: cst.Name) -> None:
            names.add(node.value)

    node.visit(Visitor())
    return names


def _joined(left: str | None, right: str | None) -> str | None:
    if left is None or right is None or len(left) + len(right) > _MAX_STRING:
        return None
    return left + right


_FIELD = re.compile(r"(?:\d+|[A-Za-z_]\w*)?")


def _format(template: str, positional: list[str], keywords: dict[str, str]) -> str | None:
    """``template.format(*positional, **keywords)`` for plain fields (``{}``, ``{0}``,
    ``{kind}``); None for conversions, format specs, attribute/index fields or errors."""
    try:
        parsed = list(string.Formatter().parse(template))
    except ValueError:
        return None
    out: list[str] = []
    size = 0
    automatic: int | None = None
    manual = False
    for literal, field, spec, conversion in parsed:
        out.append(literal)
        size += len(literal)
        if field is None:
            continue
        if spec or conversion is not None or not _FIELD.fullmatch(field):
            return None
        if field == "":
            automatic = 0 if automatic is None else automatic + 1
            field = str(automatic)
        else:
            manual = manual or field.isdigit()
        if automatic is not None and manual:
            return None  # Python refuses to mix automatic and manual numbering
        if field.isdigit():
            if int(field) >= len(positional):
                return None
            value = positional[int(field)]
        elif field in keywords:
            value = keywords[field]
        else:
            return None
        out.append(value)
        size += len(value)
        if size > _MAX_STRING:
            return None
    return "".join(out)


def _fstring_text(raw: str, prefix: str, quote: str) -> str | None:
    """The value of an f-string's literal text (``{{`` is ``{``, escapes as in a string)."""
    text = raw.replace("{{", "{").replace("}}", "}")
    if "\\" not in text or "r" in prefix:
        return text
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # SyntaxWarning (invalid escapes) is not ours to show
            value = ast.literal_eval(f"{prefix}{quote}{text}{quote}")
    except Exception:  # SyntaxError, ValueError, MemoryError …: not certain, so not a string
        return None
    return value if isinstance(value, str) else None


def _has_placeholder(value: object) -> bool:
    """A ``str.format`` field in a name (``"Llama-2-7b{}-hf"``): a template, not a config."""
    if not isinstance(value, str):
        return False
    try:
        return any(field is not None for _, field, _, _ in string.Formatter().parse(value))
    except ValueError:
        return False
