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
guessed. Values built by loops (LitGPT's ``for c in llama_2: copy = deepcopy(c); …``) and by
comprehensions are not expanded: each written entry is one config.

Syntax errors become an ``SL000`` problem (located with Python's own parser, as users see it
from ``python -c``); duplicate dict keys and repeated keyword arguments become ``SL001``.
``# shapelint: ignore[…]`` comments (libcst comment nodes, so a ``#`` inside a string is not
one) fill ``Document.suppressions``.
"""

from __future__ import annotations

import ast
import math
import re
import warnings
from collections.abc import Iterable
from collections.abc import Mapping as AbcMapping
from dataclasses import dataclass
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
)

if TYPE_CHECKING:
    import libcst as cst
    from libcst.metadata import CodeRange

_SUPPRESS = re.compile(r"shapelint:\s*ignore\b(?:\[([^\]]*)\])?")
_NORMALIZED = re.compile(r"[\x0b\x0c]|\r(?!\n)")
_LIBCST_AT = re.compile(r"error at (\d+):(\d+)")
# Nesting deeper than this is reported as unknown rather than walked (recursion guard).
_MAX_DEPTH = 60
# Folded integers larger than this (in bits) are not computed: ``10 ** 10 ** 10`` is unknown.
_MAX_BITS = 512
# Call keywords that make a call a field wrapper holding a default, not a config.
_WRAPPER_KEYWORDS = ("default",)
_MAX_STRING = 10_000
_NO_VALUE = object()


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
        if any(isinstance(e.value, Scalar) and e.value.known for e in module_entries):
            root = Mapping(tuple(module_entries), self.index.span(self.path, 0, len(self.text)))
            self.candidates.insert(0, Candidate(name="", root=root, kind="module"))

    def _collect_suppressions(self) -> None:
        import libcst as cst

        for node, rng in self.positions.items():
            if type(node) is not cst.Comment:
                continue
            match = _SUPPRESS.search(node.value)
            if match is None:
                continue
            line = self.index.position(self.offset(rng.start.line, rng.start.column))[0]
            codes = frozenset(
                c.strip().upper() for c in (match.group(1) or "").split(",") if c.strip()
            )
            previous = self.suppressions.get(line)
            if previous is not None:
                codes = frozenset() if not previous or not codes else previous | codes
            self.suppressions[line] = codes

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

        for stmt in body:
            if isinstance(stmt, cst.SimpleStatementLine):
                for small in stmt.body:
                    self.small_statement(small, env, scope, module_entries)
            elif isinstance(stmt, cst.ClassDef):
                env.pop(stmt.name.value, None)
                self.class_def(stmt, env, _join(scope, stmt.name.value))
            elif isinstance(stmt, cst.FunctionDef):
                env.pop(stmt.name.value, None)
                self.function_def(stmt, env, _join(scope, stmt.name.value))
            else:
                # if / for / while / with / try / match: whatever they bind is not a constant.
                for name in _bound_names(stmt):
                    env.pop(name, None)
                for block in _blocks(stmt):
                    self.scan_block(block, dict(env), scope)

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
                self.add(Candidate(name=self.unique(label), root=node, kind=kind))
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
