"""Scopes: which names a statement binds, and the statement blocks nested in another.

The reader keeps one environment of constants per scope (module, class body, function body);
these helpers say which names a statement may rebind (so they stop being constants) and
where the nested statement lists are.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import libcst as cst


def join_scope(scope: str, name: str) -> str:
    return f"{scope}.{name}" if scope else name


def suite_blocks(suite: cst.BaseSuite) -> list[Iterable[cst.BaseStatement]]:
    """The statements of an indented block or of a one-line suite (``if x: a = 1``)."""
    import libcst as cst

    if isinstance(suite, cst.IndentedBlock):
        return [suite.body]
    if isinstance(suite, cst.SimpleStatementSuite):
        return [[cst.SimpleStatementLine(body=suite.body)]]
    return []


def nested_blocks(stmt: cst.BaseStatement) -> list[Iterable[cst.BaseStatement]]:
    """The statement lists nested in a compound statement (if/for/while/with/try/match)."""
    import libcst as cst

    found: list[Iterable[cst.BaseStatement]] = []

    def add(suite: cst.BaseSuite) -> None:
        found.extend(suite_blocks(suite))

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


def target_names(target: cst.BaseExpression) -> list[str]:
    """Names an assignment target binds (``a``, ``a, b``, ``[a, *b]``)."""
    import libcst as cst

    if isinstance(target, cst.Name):
        return [target.value]
    if isinstance(target, cst.Tuple | cst.List):
        names: list[str] = []
        for element in target.elements:
            names.extend(target_names(element.value))
        return names
    return []


def bound_names(node: cst.CSTNode) -> set[str]:
    """Every name a statement (and the statements inside it) may bind."""
    import libcst as cst

    names: set[str] = set()

    class Visitor(cst.CSTVisitor):
        def visit_AssignTarget(self, node: cst.AssignTarget) -> None:
            names.update(target_names(node.target))

        def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
            names.update(target_names(node.target))

        def visit_AugAssign(self, node: cst.AugAssign) -> None:
            names.update(target_names(node.target))

        def visit_For(self, node: cst.For) -> None:
            names.update(target_names(node.target))

        def visit_NamedExpr(self, node: cst.NamedExpr) -> None:
            names.update(target_names(node.target))

        def visit_AsName(self, node: cst.AsName) -> None:
            if isinstance(node.name, cst.BaseExpression):
                names.update(target_names(node.name))

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


def referenced_names(node: cst.CSTNode) -> set[str]:
    """Every identifier in a node (attribute names included: an over-approximation)."""
    import libcst as cst

    names: set[str] = set()

    class Visitor(cst.CSTVisitor):
        def visit_Name(self, node: cst.Name) -> None:
            names.add(node.value)

    node.visit(Visitor())
    return names
