"""Values in the data flow (`flow`): what an expression evaluates to while a function body
is followed (a constant, a config object, a sequence), and what a condition or a loop's
collection is known to be.

`Frame` is one function body being followed; `ValueFlow` is the lowest layer of
`flow.FlowReader` (above it: `flow_calls.CallFlow`, `flow_statements.StatementFlow`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from shapelint.core.source import Node, Scalar, Sequence, Span
from shapelint.readers.python.classes import ClassReader
from shapelint.readers.python.evaluate import Folded, fold, member, string_value
from shapelint.readers.python.objects import Obj, unknown
from shapelint.readers.python.values import MAX_ITEMS

if TYPE_CHECKING:
    import libcst as cst


@dataclass
class Frame:
    """One function body being followed.

    ``collect``: the function as written (its returns become candidates) rather than a call
    whose value is wanted; ``maybe``: inside a block that may not run; ``result``: what it
    returned; ``done``: a return or raise ended it on every path; ``unsure``: it may have
    returned or raised in a block that may not run, so its value is not known.
    """

    env: dict[str, Folded]
    scope: str = ""
    collect: bool = False
    depth: int = 0
    maybe: bool = False
    result: Node | Obj | None = None
    done: bool = False
    unsure: bool = False
    main: bool = False
    returned_objects: list[Obj] = field(default_factory=list)
    built: list[Built] = field(default_factory=list)


@dataclass
class Built:
    """An object that code written as a script (``main()``, module level) binds to a name
    and then fills in: ``label`` the name, ``signature`` what it held when bound
    (`objects.Obj.signature`), ``builder`` whether it came from a builder (its values are
    then the builder's too)."""

    label: str
    obj: Obj
    signature: tuple[object, ...]
    builder: bool


class ValueFlow(ClassReader):
    """Evaluates expressions and conditions in a `Frame` (the module docstring of `flow`)."""

    # ---- what `flow_calls.CallFlow` provides -------------------------------------------------

    def call_value(self, call: cst.Call, frame: Frame, top: bool = False) -> Node | Obj:
        """What a call gives (`flow_calls.CallFlow.call_value`)."""
        raise NotImplementedError

    # ---- values ----------------------------------------------------------------------------

    def value(self, expr: cst.BaseExpression, frame: Frame, top: bool = False) -> Node | Obj:
        """What ``expr`` evaluates to: a config object, or a tree node (unknown when it cannot
        be known statically). ``top``: the value is bound or returned (a call there may be a
        builder of another module worth reading)."""
        import libcst as cst

        if isinstance(expr, cst.Name):
            bound = frame.env.get(expr.value)
            if bound is not None and isinstance(bound.value, Obj | Sequence):
                return bound.value
        elif isinstance(expr, cst.Attribute | cst.Subscript):
            held = member(expr, frame.env)
            if isinstance(held, Obj):
                return held
            if isinstance(expr, cst.Subscript) and isinstance(expr.value, cst.Dict):
                return self.dict_index(expr, frame)
            if isinstance(expr, cst.Subscript):
                sliced = self.sliced(expr, frame)
                if sliced is not None:
                    return sliced
        elif isinstance(expr, cst.BinaryOperation) and isinstance(
            expr.operator, cst.Multiply | cst.Add
        ):
            combined = self.sequence_operation(expr, frame)
            if combined is not None:
                return combined
        elif isinstance(expr, cst.Dict):
            return self.dict_object(expr, frame)
        elif isinstance(expr, cst.Call):
            return self.call_value(expr, frame, top)
        return self.node(expr, frame.env, 0)

    def sequence_operation(self, expr: cst.BinaryOperation, frame: Frame) -> Sequence | None:
        """``pattern * n`` and ``a + b`` on sequences the code holds."""
        import libcst as cst

        left = self.value(expr.left, frame)
        right = self.value(expr.right, frame)
        return _combine(left, right, isinstance(expr.operator, cst.Add), self.span(expr))

    def sliced(self, expr: cst.Subscript, frame: Frame) -> Sequence | None:
        """``pattern[: n % size]`` of a sequence the code holds, with known bounds."""
        import libcst as cst

        if len(expr.slice) != 1 or not isinstance(expr.slice[0].slice, cst.Slice):
            return None
        held = self.value(expr.value, frame)
        part = expr.slice[0].slice
        if not isinstance(held, Sequence) or part.step is not None:
            return None
        bounds: list[int | None] = []
        for bound in (part.lower, part.upper):
            if bound is None:
                bounds.append(None)
                continue
            folded = fold(bound, frame.env, 0)
            if not folded.known or not isinstance(folded.value, int):
                return None
            bounds.append(folded.value)
        return Sequence(held.items[bounds[0] : bounds[1]], self.span(expr))

    def held(self, expr: cst.BaseExpression, frame: Frame) -> Obj | None:
        """The object ``expr`` names (``cfg``, ``cfg.model``), or None."""
        found = member(expr, frame.env)
        return found if isinstance(found, Obj) else None

    def key_of(self, subscript: cst.Subscript, frame: Frame) -> str | None:
        import libcst as cst

        if len(subscript.slice) != 1 or not isinstance(subscript.slice[0].slice, cst.Index):
            return None
        folded = fold(subscript.slice[0].slice.value, frame.env, 0)
        return folded.value if folded.known and isinstance(folded.value, str) else None

    def dict_index(self, expr: cst.Subscript, frame: Frame) -> Node | Obj:
        """``{"7b": …, "13b": …}[name]`` with ``name`` known: that entry."""
        import libcst as cst

        key = self.key_of(expr, frame)
        assert isinstance(expr.value, cst.Dict)
        if key is not None:
            for element in reversed(expr.value.elements):
                if isinstance(element, cst.DictElement) and string_value(element.key) == key:
                    return self.value(element.value, frame)
        return unknown(self.span(expr), _first_line(self.source(expr)))

    def dict_object(self, literal: cst.Dict, frame: Frame) -> Obj:
        """A dict literal as an object (``**other`` spread in place)."""
        import libcst as cst

        obj = Obj(self.span(literal), kind="dict", complete=True)
        for element in literal.elements:
            if isinstance(element, cst.DictElement):
                key = string_value(element.key)
                if key is None:
                    obj.complete = False
                    continue
                obj.set(key, self.span(element.key), self.value(element.value, frame))
            else:
                spread = self.value(element.value, frame)
                if isinstance(spread, Obj) and not spread.opaque:
                    _spread(obj, spread)
                else:
                    _forget_all(obj, self.span(element), self.source(element))
        return obj

    # ---- conditions and loops ------------------------------------------------------------

    def truth(self, test: cst.BaseExpression, frame: Frame) -> bool | None:
        """Whether a condition holds, when that is known statically."""
        import libcst as cst

        if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
            inner = self.truth(test.expression, frame)
            return None if inner is None else not inner
        if isinstance(test, cst.BooleanOperation):
            left = self.truth(test.left, frame)
            right = self.truth(test.right, frame)
            if isinstance(test.operator, cst.And):
                if left is False or right is False:
                    return False
                return True if left and right else None
            if left is True or right is True:
                return True
            return False if left is False and right is False else None
        if isinstance(test, cst.Comparison) and len(test.comparisons) == 1:
            return self.compare(test, frame)
        value = self.value(test, frame)
        if isinstance(value, Obj):
            return None
        if isinstance(value, Scalar) and value.known:
            return bool(value.value)
        return None

    def compare(self, test: cst.Comparison, frame: Frame) -> bool | None:
        import libcst as cst

        target = test.comparisons[0]
        op = target.operator
        left = self.value(test.left, frame)
        right_expr = target.comparator
        if isinstance(op, cst.In | cst.NotIn):
            members = self.members(right_expr, frame)
            if members is None or not isinstance(left, Scalar) or not left.known:
                return None
            found = left.value in members
            return found if isinstance(op, cst.In) else not found
        right = self.value(right_expr, frame)
        if not (
            isinstance(left, Scalar) and left.known and isinstance(right, Scalar) and right.known
        ):
            return None
        a, b = left.value, right.value
        try:
            if isinstance(op, cst.Equal):
                return bool(a == b)
            if isinstance(op, cst.NotEqual):
                return bool(a != b)
            if isinstance(op, cst.Is):
                return a is b if a is None or b is None or isinstance(a, bool) else None
            if isinstance(op, cst.IsNot):
                return a is not b if a is None or b is None or isinstance(a, bool) else None
            if isinstance(op, cst.LessThan):
                return bool(a < b)  # type: ignore[operator]
            if isinstance(op, cst.LessThanEqual):
                return bool(a <= b)  # type: ignore[operator]
            if isinstance(op, cst.GreaterThan):
                return bool(a > b)  # type: ignore[operator]
            if isinstance(op, cst.GreaterThanEqual):
                return bool(a >= b)  # type: ignore[operator]
        except TypeError:
            return None
        return None

    def members(self, expr: cst.BaseExpression, frame: Frame) -> list[object] | None:
        """The members of a known collection (``in`` tests): a literal of constants, or the
        keys of an object known completely."""
        import libcst as cst

        if isinstance(expr, cst.List | cst.Tuple | cst.Set):
            out: list[object] = []
            for element in expr.elements:
                folded = fold(element.value, frame.env, 0)
                if not folded.known or not isinstance(element, cst.Element):
                    return None
                out.append(folded.value)
            return out
        held = self.held(expr, frame)
        if held is not None and held.complete and not held.opaque:
            return list(held.values)
        folded = fold(expr, frame.env, 0)
        if folded.known and isinstance(folded.value, tuple):
            return list(folded.value)
        return None

    def iteration(
        self, expr: cst.BaseExpression, frame: Frame
    ) -> list[Node | Obj | tuple[Node | Obj, ...]] | None:
        """The items a ``for`` loop goes over, when they are known."""
        import libcst as cst

        if isinstance(expr, cst.Call) and isinstance(expr.func, cst.Attribute) and not expr.args:
            owner = self.held(expr.func.value, frame)
            method = expr.func.attr.value
            if owner is None or owner.opaque or not owner.complete:
                return None
            keys: list[Node | Obj] = [Scalar(k, owner.key_spans[k]) for k in owner.values]
            values = list(owner.values.values())
            if method == "items":
                return [(k, v) for k, v in zip(keys, values, strict=True)]
            if method == "keys":
                return list(keys)
            if method == "values":
                return list(values)
            return None
        held = self.held(expr, frame)
        if held is not None:
            if held.opaque or not held.complete:
                return None
            return [Scalar(k, held.key_spans[k]) for k in held.values]
        if isinstance(expr, cst.List | cst.Tuple):
            items: list[Node | Obj | tuple[Node | Obj, ...]] = []
            for element in expr.elements:
                if not isinstance(element, cst.Element):
                    return None
                items.append(self.value(element.value, frame))
            return items
        folded = fold(expr, frame.env, 0)
        if folded.known and isinstance(folded.value, tuple):
            span = self.span(expr)
            return [Scalar(v, span, expression=self.source(expr)) for v in folded.value]
        return None


# ---- helpers ------------------------------------------------------------------------------


def _combine(left: Node | Obj, right: Node | Obj, add: bool, span: Span) -> Sequence | None:
    """``a + b`` of two sequences, ``seq * n`` / ``n * seq`` of a sequence and a known count
    (at most `values.MAX_ITEMS` items); None for anything else."""
    if add:
        if (
            isinstance(left, Sequence)
            and isinstance(right, Sequence)
            and len(left.items) + len(right.items) <= MAX_ITEMS
        ):
            return Sequence(left.items + right.items, span)
        return None
    if isinstance(right, Sequence):
        left, right = right, left
    if not isinstance(left, Sequence) or not isinstance(right, Scalar) or not right.known:
        return None
    count = right.value
    if not isinstance(count, int) or isinstance(count, bool):
        return None
    if count * len(left.items) > MAX_ITEMS:
        return None
    return Sequence(left.items * max(count, 0), span)


def _first_line(text: str) -> str:
    line = text.strip().split("\n", 1)[0]
    return line if len(line) <= 80 else line[:77] + "..."


def _spread(into: Obj, source: Obj) -> None:
    """``{**source}`` / ``update(source)``: its keys written over ``into``'s."""
    for key, value in source.values.items():
        into.set(key, source.key_spans[key], value.copy() if isinstance(value, Obj) else value)
    if not source.complete:
        into.complete = False


def _forget_all(obj: Obj, span: object, expression: str) -> None:
    """An unknown ``**spread``: any key may have been written over."""
    from shapelint.core.source import Span

    assert isinstance(span, Span)
    for key in list(obj.values):
        obj.forget(key, span, expression)
    obj.complete = False
