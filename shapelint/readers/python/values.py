"""Positions and values: libcst nodes to the format-neutral tree (`Mapping`, `Scalar`, …).

`ValueReader` maps a libcst node to its exact `Span` in the decoded text and turns an
expression into a tree node: keyword calls and string-keyed dicts become `Mapping`s, lists
and tuples `Sequence`s, everything else a `Scalar` folded by `evaluate.fold` (unknown when it
cannot be folded). A field written through a validating wrapper —
``positive_int_field(default=1024)``, ``field(default=…)`` — holds its ``default=``.
Duplicate dict keys and repeated keyword arguments become ``SL001`` problems.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from collections.abc import Mapping as AbcMapping
from dataclasses import replace
from typing import TYPE_CHECKING

from shapelint.core.source import Entry, LineIndex, Mapping, Node, Problem, Scalar, Sequence, Span
from shapelint.readers.python.evaluate import (
    MAX_DEPTH,
    UNKNOWN,
    Folded,
    fold,
    string_value,
)
from shapelint.readers.python.objects import Obj

if TYPE_CHECKING:
    import libcst as cst
    from libcst.metadata import CodeRange

_NORMALIZED = re.compile(r"[\x0b\x0c]|\r(?!\n)")
# The most items a repeated literal (``(a, b) * 13``) is expanded to.
MAX_ITEMS = 10_000
# Call keywords that make a call a field wrapper holding a default, not a config.
_WRAPPER_KEYWORDS = ("default",)


class ValueReader:
    """Spans of libcst nodes in one text, and the tree nodes of the values they hold."""

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
        self.line_starts = line_starts(text)
        # libcst round-trips source exactly except for a few normalizations (form feeds, lone
        # carriage returns); only then are positions checked against the text.
        self.exact = not _NORMALIZED.search(text) or module.code == text
        self.problems: list[Problem] = []
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

    # ---- values ----------------------------------------------------------------------------

    def node(self, expr: cst.BaseExpression, env: dict[str, Folded], depth: int) -> Node:
        """The tree node for a value: Mapping for keyword calls and dicts, else Scalar/Sequence."""
        import libcst as cst

        if depth > MAX_DEPTH:
            return self.scalar(expr, UNKNOWN)
        if isinstance(expr, cst.Call):
            default = wrapped_default(expr)
            if default is not None:
                return self.node(default, env, depth + 1)
            if is_factory_field(expr):
                factory = factory_lambda_body(expr)
                if factory is not None:
                    return self.node(factory, env, depth + 1)
                return self.scalar(expr, UNKNOWN)
            if is_config_like(expr):
                return self.mapping_of_call(expr, env, depth)
            found = self.call_node(expr, env, depth)
            return found if found is not None else self.scalar(expr, fold(expr, env, 0))
        if isinstance(expr, cst.Dict):
            if is_config_like(expr) or not expr.elements:
                return self.mapping_of_dict(expr, env, depth)
            return self.scalar(expr, UNKNOWN)
        if isinstance(expr, cst.Name):
            bound = env.get(expr.value)
            if bound is not None and isinstance(bound.value, Obj) and not bound.value.opaque:
                # ``layers = build_layers(n_layers=…)`` then ``Model.Config(layers=layers)``:
                # the object the name holds, as the function built it.
                return bound.value.mapping()
        if isinstance(expr, cst.List | cst.Tuple | cst.Set):
            items: list[Node] = []
            for element in expr.elements:
                if isinstance(element, cst.Element):
                    items.append(self.node(element.value, env, depth + 1))
                else:
                    items.append(self.scalar(element.value, UNKNOWN))
            return Sequence(tuple(items), self.span(expr))
        if isinstance(expr, cst.BinaryOperation) and isinstance(expr.operator, cst.Multiply):
            repeated = self.repeated(expr, env, depth)
            if repeated is not None:
                return repeated
        return self.scalar(expr, fold(expr, env, 0))

    def repeated(
        self, expr: cst.BinaryOperation, env: dict[str, Folded], depth: int
    ) -> Sequence | None:
        """``(LOCAL, GLOBAL) * 13``: the literal's items, repeated (at most `MAX_ITEMS`)."""
        import libcst as cst

        literal, times = expr.left, expr.right
        if not isinstance(literal, cst.List | cst.Tuple):
            literal, times = times, literal
        if not isinstance(literal, cst.List | cst.Tuple):
            return None
        count = fold(times, env, 0)
        if not (isinstance(count.value, int) and not isinstance(count.value, bool)):
            return None
        if not count.known or count.value * len(literal.elements) > MAX_ITEMS:
            return None
        inner = self.node(literal, env, depth + 1)
        assert isinstance(inner, Sequence)
        return Sequence(inner.items * max(count.value, 0), self.span(expr))

    def call_node(self, call: cst.Call, env: dict[str, Folded], depth: int) -> Node | None:
        """The value of a call that is not a keyword config (``Size(12, 768, 12, 64)``,
        ``arch_args_1b()``) when the reader can follow it; None here (`flow.FlowReader`)."""
        return None

    def config_like(self, expr: cst.BaseExpression) -> bool:
        """Whether ``expr`` is written as a config: `is_config_like`, and for `flow.FlowReader`
        also a positional call of a class of the package."""
        return is_config_like(expr)

    def scalar(self, expr: cst.BaseExpression, folded: Folded) -> Scalar:
        span = self.span(expr)
        if folded.known and not folded.computed:
            return Scalar(folded.value, span)
        expression = self.text[span.start : span.end]
        if folded.known:
            return Scalar(folded.value, span, expression=expression)
        return Scalar(None, span, expression=expression, known=False)

    def mapping_of_call(self, call: cst.Call, env: dict[str, Folded], depth: int) -> Mapping:
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

    def mapping_of_dict(self, literal: cst.Dict, env: dict[str, Folded], depth: int) -> Mapping:
        import libcst as cst

        entries: list[Entry] = []
        seen: dict[str, Span] = {}
        for element in literal.elements:
            if not isinstance(element, cst.DictElement):
                spread = self.spread_node(element.value, env, depth + 1)
                if spread is not None:  # ``{**arch_args_1b(), …}``: its entries, in place
                    entries = [e for e in entries if spread.get(e.key) is None]
                    entries.extend(spread.entries)
                continue
            key = string_value(element.key)
            if key is None:
                continue
            key_span = self.span(element.key)
            self.check_duplicate(key, key_span, seen, "dict key")
            entries.append(Entry(key, key_span, self.node(element.value, env, depth + 1)))
        return Mapping(tuple(entries), self.span(literal))

    def spread_node(
        self, expr: cst.BaseExpression, env: dict[str, Folded], depth: int
    ) -> Mapping | None:
        """The mapping a ``**expr`` spread in a dict literal holds, when the reader can
        follow it; None here (`flow.FlowReader`)."""
        return None

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


# ---- helpers (pure functions of libcst nodes) ---------------------------------------------


def quote_key(key: str | None) -> str:
    return '"' + (key or "").replace("\\", "\\\\").replace('"', '\\"') + '"'


def line_starts(text: str) -> list[int]:
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


def wrapped_default(call: cst.Call) -> cst.BaseExpression | None:
    """The ``default=`` of a field wrapper (``positive_int_field(default=1024)``), if any."""
    import libcst as cst

    func = call.func
    if isinstance(func, cst.Name) and func.value == "dict":
        return None
    for arg in call.args:
        if arg.keyword is not None and arg.keyword.value in _WRAPPER_KEYWORDS:
            return arg.value
    return None


def is_factory_field(call: cst.Call) -> bool:
    """``field(default_factory=…)``: a dataclass default built at run time."""
    return any(a.keyword is not None and a.keyword.value == "default_factory" for a in call.args)


def factory_lambda_body(call: cst.Call) -> cst.BaseExpression | None:
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


def is_config_like(expr: cst.BaseExpression) -> bool:
    """A call with keyword arguments only, or a dict literal whose keys are all strings."""
    import libcst as cst

    if isinstance(expr, cst.Call):
        if wrapped_default(expr) is not None or is_factory_field(expr):
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
                if string_value(element.key) is None:
                    return False
                keyed = True
        return keyed
    return False


def is_collection(
    literal: cst.Dict, like: Callable[[cst.BaseExpression], bool] = is_config_like
) -> bool:
    """A dict whose every value is itself a config (``{"8B": ModelArgs(…), …}``); ``like``
    says what a config is written as."""
    import libcst as cst

    values = [e.value for e in literal.elements if isinstance(e, cst.DictElement)]
    return bool(values) and all(
        like(v) and not (isinstance(v, cst.Dict) and is_collection(v, like)) for v in values
    )


def is_dict_expression(expr: cst.BaseExpression) -> bool:
    """``dict(…)`` or ``{…}``: a config a loop can copy and index with ``copy["name"]``."""
    import libcst as cst

    if isinstance(expr, cst.Dict):
        return True
    return (
        isinstance(expr, cst.Call) and isinstance(expr.func, cst.Name) and expr.func.value == "dict"
    )


def states_values(node: Node) -> bool:
    """True when ``node`` holds at least one value known statically (not ``None``)."""
    if isinstance(node, Scalar):
        return node.known and node.value is not None
    if isinstance(node, Mapping):
        return any(states_values(e.value) for e in node.entries)
    return any(states_values(item) for item in node.items)


def mark_shared(node: Node) -> Node:
    """The node with every value marked shared (editing it changes every config that has it,
    so a fix there is unsafe)."""
    if isinstance(node, Scalar):
        return replace(node, shared=True)
    if isinstance(node, Mapping):
        entries = tuple(Entry(e.key, e.key_span, mark_shared(e.value)) for e in node.entries)
        return Mapping(entries, node.span, shared=True)
    return Sequence(tuple(mark_shared(item) for item in node.items), node.span, shared=True)
