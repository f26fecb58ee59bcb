"""The values one iteration of a LitGPT name-variant loop sets (`LoopValues`), and the key
paths of the configs it copies (``copy["a"]["b"]``).

Split from `shapelint.dialects.litgpt_loops`, which recognises the loops (`VariantLoops`) and
describes them; like it, only a Python file imports this module.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from shapelint.core.source import Entry, Mapping, Node, Scalar, Sequence, Span
from shapelint.readers.hooks import PythonHost
from shapelint.readers.python.evaluate import (
    MAX_DEPTH,
    MAX_STRING,
    Folded,
    format_fields,
    fstring_text,
    joined,
    string_value,
)
from shapelint.readers.python.scope import referenced_names

if TYPE_CHECKING:
    from collections.abc import Mapping as AbcMapping

    import libcst as cst


@dataclass(frozen=True)
class Assignment:
    """``copy["a"]["b"] = value`` in a variant loop: the key path, its last key, the value."""

    path: tuple[str, ...]
    key: cst.BaseExpression
    value: cst.BaseExpression


@dataclass(frozen=True)
class LoopScope:
    """What a string expression in a variant loop may read in one iteration."""

    strings: AbcMapping[str, str]
    template_var: str
    template: Mapping
    copy_var: str
    copy: Mapping
    env: AbcMapping[str, Folded]


class LoopValues:
    """The values the assignments of one variant-loop iteration set."""

    def __init__(self, host: PythonHost) -> None:
        self.host = host

    def value(self, assignment: Assignment, scope: LoopScope, shared: bool) -> Node | None:
        """The node an assignment of a variant loop sets: a string built from the template and
        the loop variables (at the template entry's span), or a literal (at its own span)."""
        expr = assignment.value
        loop_names = {*scope.strings, scope.template_var, scope.copy_var}
        if referenced_names(expr) & loop_names:
            value = self.string(expr, scope, 0)
            if value is None:
                return None
            # The template's entry is where the value is written (a finding on it is one
            # finding for every variant); its text is kept as the expression it came from.
            old = _lookup(scope.template, assignment.path)
            span = old.span if isinstance(old, Scalar) else self.host.span(expr)
            return Scalar(value, span, expression=self.host.text[span.start : span.end])
        node = self.host.node(expr, dict(scope.env), 0)
        if not _all_known(node):
            return None
        return _mark_shared(node) if shared else node

    def string(self, expr: cst.BaseExpression, scope: LoopScope, depth: int) -> str | None:
        """A string a variant loop computes, or None when it is not certain."""
        import libcst as cst

        if depth > MAX_DEPTH:
            return None
        if isinstance(expr, cst.SimpleString):
            return string_value(expr)
        if isinstance(expr, cst.ConcatenatedString):
            left = self.string(expr.left, scope, depth + 1)
            right = self.string(expr.right, scope, depth + 1)
            return joined(left, right)
        if isinstance(expr, cst.FormattedString):
            return self.fstring(expr, scope, depth)
        if isinstance(expr, cst.Name):
            if expr.value in scope.strings:
                return scope.strings[expr.value]
            bound = scope.env.get(expr.value)
            return bound.value if bound is not None and isinstance(bound.value, str) else None
        if isinstance(expr, cst.Subscript):
            for var, root in ((scope.template_var, scope.template), (scope.copy_var, scope.copy)):
                path = subscript_path(expr, var)
                if path is not None:
                    found = _lookup(root, path[0])
                    if isinstance(found, Scalar) and found.known and isinstance(found.value, str):
                        return found.value
                    return None
            return None
        if isinstance(expr, cst.BinaryOperation) and isinstance(expr.operator, cst.Add):
            left = self.string(expr.left, scope, depth + 1)
            right = self.string(expr.right, scope, depth + 1)
            return joined(left, right)
        if (
            isinstance(expr, cst.Call)
            and isinstance(expr.func, cst.Attribute)
            and expr.func.attr.value == "format"
        ):
            template = self.string(expr.func.value, scope, depth + 1)
            if template is None:
                return None
            positional: list[str] = []
            keywords: dict[str, str] = {}
            for arg in expr.args:
                if arg.star:
                    return None
                value = self.string(arg.value, scope, depth + 1)
                if value is None:
                    return None
                if arg.keyword is None:
                    positional.append(value)
                else:
                    keywords[arg.keyword.value] = value
            return format_fields(template, positional, keywords)
        return None

    def fstring(self, expr: cst.FormattedString, scope: LoopScope, depth: int) -> str | None:
        """An f-string whose fields are plain string expressions (no ``!r``, ``:spec``, ``=``)."""
        import libcst as cst

        prefix = expr.prefix.lower().replace("f", "")
        out: list[str] = []
        for part in expr.parts:
            if isinstance(part, cst.FormattedStringText):
                text = fstring_text(part.value, prefix, expr.end)
            elif (
                isinstance(part, cst.FormattedStringExpression)
                and part.conversion is None
                and part.format_spec is None
                and part.equal is None
            ):
                text = self.string(part.expression, scope, depth + 1)
            else:
                return None
            if text is None:
                return None
            out.append(text)
        result = "".join(out)
        return result if len(result) <= MAX_STRING else None


def subscript_path(
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
        key = string_value(index.value)
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


def set_path(root: Mapping, path: tuple[str, ...], value: Node, key_span: Span) -> Mapping | None:
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
        changed = set_path(child, path[1:], value, key_span)
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
