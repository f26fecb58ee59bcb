"""Statements in the data flow (`flow`): assignments, changes of config objects, ``if``
and ``for`` blocks (unrolled at most `MAX_UNROLL` items), calls made for their effect and
``return``.

`StatementFlow` builds on `flow_calls.CallFlow`; `flow.FlowReader` builds on it.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace
from typing import TYPE_CHECKING

from shapelint.core.source import Node, Scalar, Sequence, Span
from shapelint.readers.python.evaluate import NO_VALUE, Folded, binary
from shapelint.readers.python.flow_calls import CallFlow
from shapelint.readers.python.flow_values import Built, Frame, _combine, _first_line
from shapelint.readers.python.objects import Obj, unknown
from shapelint.readers.python.scope import bound_names, suite_blocks, target_names
from shapelint.readers.python.values import is_config_like

if TYPE_CHECKING:
    import libcst as cst

# The most items a loop over a known collection is unrolled for.
MAX_UNROLL = 64


class StatementFlow(CallFlow):
    """Follows the statements of a function body (the module docstring of `flow`)."""

    # ---- what `Reader` provides ------------------------------------------------------------

    def collect(
        self,
        expr: cst.BaseExpression,
        env: dict[str, Folded],
        scope: str,
        base: str | None,
        depth: int = 0,
        builder: bool = False,
    ) -> None:
        """Find config-like calls and dicts in ``expr`` (`Reader.collect`)."""
        raise NotImplementedError

    def add_object(self, obj: Obj, label: str, builder: bool) -> None:
        """Make a candidate of a config object a function builds (`Reader.add_object`)."""
        raise NotImplementedError

    def nested_def(
        self, stmt: cst.BaseCompoundStatement, env: dict[str, Folded], scope: str
    ) -> None:
        """A class or function defined inside a function body (`Reader` reads it)."""
        raise NotImplementedError

    # ---- statements ------------------------------------------------------------------------

    def run(self, body: Iterable[cst.BaseStatement], frame: Frame) -> None:
        """Follow statements in order until the function returns or the budget is spent."""
        import libcst as cst

        for stmt in body:
            if frame.done:
                return
            if not self.resolver.steps.spend():
                frame.unsure = True
                self.give_up(frame)
                return
            if isinstance(stmt, cst.SimpleStatementLine):
                for small in stmt.body:
                    self.simple(small, frame)
                    if frame.done:
                        return
            else:
                self.compound(stmt, frame)

    def track(self, small: cst.Assign, value: Node | Obj, built: list[Built]) -> None:
        """``config = ml_collections.ConfigDict()`` / ``cfg = base()`` in code written as a
        script: an object its later statements may fill in (`emit_built`). A config-like call
        is a config as written already (`Reader.collect`)."""
        import libcst as cst

        if (
            len(small.targets) != 1
            or not isinstance(small.targets[0].target, cst.Name)
            or not isinstance(small.value, cst.Call)
            or self.config_like(small.value)
            or not isinstance(value, Obj)
            or value.opaque
        ):
            return
        label = small.targets[0].target.value
        built.append(Built(label, value, value.signature(), builder=bool(value.values)))

    def emit_built(self, built: list[Built]) -> None:
        """The objects a script filled in, as they were when code the reader cannot follow
        received them (``train(config)``) or at the end: each a config, unless no statement
        changed it after it was bound (a builder's config as it is is the builder's)."""
        seen: set[int] = set()
        for item in built:
            obj = item.obj.handed if item.obj.opaque else item.obj
            if obj is None or id(item.obj) in seen or obj.signature() == item.signature:
                continue
            seen.add(id(item.obj))
            self.add_object(obj, item.label, item.builder)

    def give_up(self, frame: Frame) -> None:
        """The budget is spent: nothing the frame holds is known any longer."""
        for held in frame.env.values():
            if isinstance(held.value, Obj):
                held.value.opaque = True
        frame.done = True

    def simple(self, small: cst.BaseSmallStatement, frame: Frame) -> None:
        import libcst as cst

        if isinstance(small, cst.Assign):
            value = self.value(small.value, frame, top=True)
            for target in small.targets:
                self.assign(target.target, value, small.value, frame)
            if frame.main and not frame.maybe:
                self.track(small, value, frame.built)
            if frame.main and len(small.targets) == 1:
                self.collect(
                    small.value,
                    _constants(frame.env),
                    frame.scope,
                    self.source(small.targets[0].target),
                )
        elif isinstance(small, cst.AnnAssign):
            if small.value is not None:
                value = self.value(small.value, frame, top=True)
                self.assign(small.target, value, small.value, frame)
        elif isinstance(small, cst.AugAssign):
            self.augmented(small, frame)
        elif isinstance(small, cst.Expr):
            if isinstance(small.value, cst.Call):
                self.call_statement(small.value, frame)
            if frame.main:
                self.collect(small.value, _constants(frame.env), frame.scope, None)
        elif isinstance(small, cst.Return):
            self.on_return(small.value, frame)
        elif isinstance(small, cst.Raise):
            if frame.maybe:
                frame.unsure = True
            else:
                frame.result = None
                frame.done = True
        elif isinstance(small, cst.Import | cst.ImportFrom):
            for name in bound_names(small):
                frame.env.pop(name, None)
        elif isinstance(small, cst.Del):
            for name in target_names(small.target):
                frame.env.pop(name, None)

    def compound(self, stmt: cst.BaseStatement, frame: Frame) -> None:
        import libcst as cst

        if isinstance(stmt, cst.If):
            self.branch(stmt, frame)
        elif isinstance(stmt, cst.For):
            self.loop(stmt, frame)
        elif isinstance(stmt, cst.With):
            for item in stmt.items:
                if item.asname is not None:
                    for name in target_names(item.asname.name):
                        frame.env.pop(name, None)
            for block in suite_blocks(stmt.body):
                self.run(block, frame)
        elif isinstance(stmt, cst.Try | cst.TryStar):
            for block in suite_blocks(stmt.body):
                self.run(block, frame)
            self.maybe(
                [b for h in stmt.handlers for b in suite_blocks(h.body)],
                frame,
                stmt,
            )
            for extra in (stmt.orelse, stmt.finalbody):
                if extra is not None and not frame.done:
                    for block in suite_blocks(extra.body):
                        self.run(block, frame)
        elif isinstance(stmt, cst.FunctionDef | cst.ClassDef):
            frame.env.pop(stmt.name.value, None)
            if frame.collect and not frame.maybe:
                self.nested_def(stmt, frame.env, frame.scope)
        elif isinstance(stmt, cst.While):
            self.maybe(suite_blocks(stmt.body), frame, stmt)
            if stmt.orelse is not None:
                self.maybe(suite_blocks(stmt.orelse.body), frame, stmt)
        elif isinstance(stmt, cst.Match):
            self.maybe([b for case in stmt.cases for b in suite_blocks(case.body)], frame, stmt)

    def branch(self, stmt: cst.If, frame: Frame) -> None:
        import libcst as cst

        truth = self.truth(stmt.test, frame)
        if truth is True:
            for block in suite_blocks(stmt.body):
                self.run(block, frame)
            return
        orelse = stmt.orelse
        if truth is False:
            if isinstance(orelse, cst.If):
                self.branch(orelse, frame)
            elif isinstance(orelse, cst.Else):
                for block in suite_blocks(orelse.body):
                    self.run(block, frame)
            return
        # Not known: each branch may run.
        arms: list[list[cst.BaseStatement]] = [list(b) for b in suite_blocks(stmt.body)]
        while orelse is not None:
            if isinstance(orelse, cst.If):
                arms.extend(list(b) for b in suite_blocks(orelse.body))
                orelse = orelse.orelse
            else:
                arms.extend(list(b) for b in suite_blocks(orelse.body))
                orelse = None
        self.maybe(arms, frame, stmt)

    def loop(self, stmt: cst.For, frame: Frame) -> None:
        items = self.iteration(stmt.iter, frame)
        if items is not None and len(items) <= MAX_UNROLL and not _jumps(stmt.body):
            for item in items:
                if frame.done:
                    return
                self.bind_loop_target(stmt.target, item, frame)
                for block in suite_blocks(stmt.body):
                    self.run(block, frame)
            if stmt.orelse is not None and not frame.done:
                for block in suite_blocks(stmt.orelse.body):
                    self.run(block, frame)
            return
        for name in target_names(stmt.target):
            frame.env.pop(name, None)
        self.maybe(suite_blocks(stmt.body), frame, stmt)
        if stmt.orelse is not None:
            self.maybe(suite_blocks(stmt.orelse.body), frame, stmt)

    def maybe(
        self, blocks: Iterable[Iterable[cst.BaseStatement]], frame: Frame, stmt: cst.CSTNode
    ) -> None:
        """Blocks that may or may not run: each is followed on a copy of the state; whatever
        one changes is unknown afterwards (names rebound, keys set, objects made opaque)."""
        blocks = list(blocks)
        if not blocks:
            return
        expression = _first_line(self.source(stmt))
        span = self.span(stmt)
        for block in blocks:
            copies: dict[int, Obj] = {}
            env: dict[str, Folded] = {}
            for name, held in frame.env.items():
                if isinstance(held.value, Obj):
                    original = held.value
                    copy = copies.setdefault(id(original), original.copy())
                    env[name] = Folded(copy, False, True)
                else:
                    env[name] = held
            child = replace(frame, env=env, maybe=True, done=False, returned_objects=[])
            self.run(block, child)
            frame.unsure = frame.unsure or child.unsure or child.done
            originals = {
                id(h.value): h.value for h in frame.env.values() if isinstance(h.value, Obj)
            }
            for key, copy in copies.items():
                _merge_maybe(originals[key], copy, span, expression)
            for name in list(frame.env):
                after = child.env.get(name)
                before = frame.env[name]
                if isinstance(before.value, Obj):
                    if after is None or after.value is not copies.get(id(before.value)):
                        frame.env.pop(name, None)
                elif after is not before:
                    frame.env.pop(name, None)

    def bind_loop_target(
        self, target: cst.BaseExpression, item: Node | Obj | tuple[Node | Obj, ...], frame: Frame
    ) -> None:
        import libcst as cst

        if isinstance(item, tuple):
            if isinstance(target, cst.Tuple | cst.List) and len(target.elements) == len(item):
                for element, part in zip(target.elements, item, strict=True):
                    self.bind_value(element.value, part, frame)
                return
            for name in target_names(target):
                frame.env.pop(name, None)
            return
        self.bind_value(target, item, frame)

    def bind_value(self, target: cst.BaseExpression, value: Node | Obj, frame: Frame) -> None:
        import libcst as cst

        if not isinstance(target, cst.Name):
            for name in target_names(target):
                frame.env.pop(name, None)
            return
        if isinstance(value, Obj | Sequence):
            frame.env[target.value] = Folded(value, False, True)
        elif isinstance(value, Scalar) and value.known:
            frame.env[target.value] = Folded(value.value, True, True)
        else:
            frame.env.pop(target.value, None)

    def assign(
        self,
        target: cst.BaseExpression,
        value: Node | Obj,
        expr: cst.BaseExpression,
        frame: Frame,
    ) -> None:
        """``target = value``: a name, an attribute or key of an object, or an unpacking."""
        import libcst as cst

        if isinstance(target, cst.Name):
            self.bind_value(target, value, frame)
            return
        if isinstance(target, cst.Attribute):
            owner = self.held(target.value, frame)
            if owner is not None:
                owner.set(target.attr.value, self.span(target.attr), value)
            return
        if isinstance(target, cst.Subscript):
            owner = self.held(target.value, frame)
            if owner is None:
                return
            key = self.key_of(target, frame)
            if key is None:
                owner.opaque = True  # some key, not known which
            else:
                owner.set(key, self.span(target.slice[0]), value)
            return
        for name in target_names(target):
            frame.env.pop(name, None)

    def augmented(self, small: cst.AugAssign, frame: Frame) -> None:
        import libcst as cst

        current = self.value(small.target, frame)
        right = self.value(small.value, frame)
        op = _AUGMENTED.get(type(small.operator).__name__)
        if op in ("Add", "Multiply"):
            combined = _combine(current, right, op == "Add", self.span(small))
            if combined is not None:
                self.assign(small.target, combined, small.value, frame)
                return
        result: Node | Obj
        if (
            op is not None
            and isinstance(current, Scalar)
            and current.known
            and isinstance(right, Scalar)
            and right.known
        ):
            folded = binary(getattr(cst, op)(), current.value, right.value)
            expression = _first_line(self.source(small))
            span = self.span(small.value)
            result = (
                unknown(span, expression)
                if folded is NO_VALUE
                else Scalar(folded, span, expression=expression)
            )
        else:
            result = unknown(self.span(small.value), _first_line(self.source(small)))
        self.assign(small.target, result, small.value, frame)

    def call_statement(self, call: cst.Call, frame: Frame) -> None:
        """A call whose value is dropped: it may change the objects it is given."""
        self.value(call, frame)

    def on_return(self, expr: cst.BaseExpression | None, frame: Frame) -> None:
        if frame.collect:
            if expr is not None:
                self.collect_return(expr, frame)
            if not frame.maybe:
                frame.done = True
            return
        if frame.maybe or frame.unsure:
            frame.unsure = True
            if not frame.maybe:
                frame.done = True
            return
        frame.result = self.value(expr, frame, top=True) if expr is not None else None
        frame.done = True

    def collect_return(self, expr: cst.BaseExpression, frame: Frame) -> None:
        """In a function as written, a returned config is a candidate named by the function:
        a config-like expression as `Reader.collect` reads it, or an object the body built."""
        import libcst as cst

        if is_config_like(expr) or isinstance(expr, cst.List | cst.Tuple | cst.Set):
            self.collect(expr, frame.env, frame.scope, frame.scope, builder=True)
            return
        value = self.value(expr, frame, top=True)
        if isinstance(value, Obj):
            if any(value is seen for seen in frame.returned_objects):
                return
            frame.returned_objects.append(value)
            self.add_object(value, frame.scope, builder=True)
        elif isinstance(expr, cst.Dict | cst.Call):
            self.collect(expr, frame.env, frame.scope, frame.scope, builder=True)


# ---- helpers ------------------------------------------------------------------------------

_AUGMENTED = {
    "AddAssign": "Add",
    "SubtractAssign": "Subtract",
    "MultiplyAssign": "Multiply",
    "DivideAssign": "Divide",
    "FloorDivideAssign": "FloorDivide",
    "ModuloAssign": "Modulo",
    "PowerAssign": "Power",
}


def _constants(env: dict[str, Folded]) -> dict[str, Folded]:
    """``env`` without its objects: in ``main()``, a config a call receives by name
    (``runner=ModelRunner(model=grok_1_model)``) is the one written above, not a second."""
    return {k: v for k, v in env.items() if not isinstance(v.value, Obj)}


def _merge_maybe(original: Obj, copy: Obj, span: object, expression: str) -> None:
    """After a block that may not have run: what it changed in ``copy`` is unknown in
    ``original``."""

    assert isinstance(span, Span)
    if copy.opaque:
        original.opaque = True
    for key in [k for k in original.values if k not in copy.values]:
        original.forget(key, span, expression)  # ``d.pop("k")`` in the block
    for key, value in copy.values.items():
        before = original.values.get(key)
        if before is value:
            continue
        if isinstance(before, Obj) and isinstance(value, Obj):
            _merge_maybe(before, value, span, expression)
            continue
        original.forget(key, span, expression)


def _jumps(suite: cst.BaseSuite) -> bool:
    """Whether a loop body holds ``break``/``continue``/``return`` (not unrolled then)."""
    import libcst as cst

    found = False

    class Visitor(cst.CSTVisitor):
        def visit_Break(self, node: cst.Break) -> None:
            nonlocal found
            found = True

        def visit_Continue(self, node: cst.Continue) -> None:
            nonlocal found
            found = True

        def visit_Return(self, node: cst.Return) -> None:
            nonlocal found
            found = True

        def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
            return False

    suite.visit(Visitor())
    return found
