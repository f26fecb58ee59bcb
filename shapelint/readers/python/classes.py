"""Class bodies: a class's fields, its ``__init__`` defaults, and what it inherits.

`ClassReader` turns a class body into a candidate (``kind="class"``, or ``"init"`` when an
``__init__`` with keyword defaults is in effect) holding its own fields and those inherited
through `inherit` (bases in the same file or the package tree, never imported). `Reader`
builds on it for the statements around the classes.
"""

from __future__ import annotations

from collections.abc import Mapping as AbcMapping
from dataclasses import replace
from typing import TYPE_CHECKING

from shapelint.core.source import Candidate, Entry, Mapping
from shapelint.readers.python.evaluate import Folded, fold
from shapelint.readers.python.inherit import (
    Binding,
    ClassFields,
    Function,
    ModuleResolver,
    base_name,
    inherit,
)
from shapelint.readers.python.scope import join_scope, target_names
from shapelint.readers.python.values import ValueReader

if TYPE_CHECKING:
    import libcst as cst
    from libcst.metadata import CodeRange


class ClassReader(ValueReader):
    """Reads class bodies into candidates; keeps the module's class and import bindings."""

    def __init__(
        self,
        path: str,
        text: str,
        module: cst.Module,
        positions: AbcMapping[cst.CSTNode, CodeRange],
        resolver: ModuleResolver,
    ) -> None:
        super().__init__(path, text, module, positions)
        # Module-level names that may be base classes: classes read here and imports.
        self.resolver = resolver
        self.bindings: dict[str, Binding] = {}
        self.candidates: list[Candidate] = []
        self.names: dict[str, int] = {}

    def function_def(self, fn: cst.FunctionDef, outer: dict[str, Folded], scope: str) -> None:
        """Read a method's body (`Reader` reads function bodies)."""
        raise NotImplementedError

    def read_methods(
        self,
        methods: list[cst.FunctionDef],
        outer: dict[str, Folded],
        scope: str,
        fields: ClassFields,
    ) -> None:
        """Read the bodies of a class's methods (``fields``: the class as read so far).

        The methods of a pytest test class (``Test*``, pytest's default ``python_classes``)
        build toy models for the test, not configs: they are not read, as functions named
        ``test*`` are not."""
        if scope.rsplit(".", 1)[-1].startswith("Test"):
            return
        for method in methods:
            self.function_def(method, outer, join_scope(scope, method.name.value))

    def bind(self, target: cst.BaseExpression, folded: Folded, env: dict[str, Folded]) -> None:
        import libcst as cst

        if isinstance(target, cst.Name):
            if folded.known:
                env[target.value] = folded
            else:
                env.pop(target.value, None)
        else:
            for name in target_names(target):
                env.pop(name, None)

    def class_def(self, cls: cst.ClassDef, outer: dict[str, Folded], scope: str) -> ClassFields:
        """One candidate for a class body (plus ``__init__`` keyword defaults), with what it
        inherits; returns the class's fields for classes that derive from it."""
        import libcst as cst

        env = dict(outer)
        entries: list[Entry] = []
        init_entries: list[Entry] | None = None
        init: cst.FunctionDef | None = None
        methods: list[cst.FunctionDef] = []
        annotated: list[str] = []
        statements = cls.body.body
        for stmt in statements:
            if isinstance(stmt, cst.SimpleStatementLine):
                for small in stmt.body:
                    self.class_field(small, env, entries, annotated)
            elif isinstance(stmt, cst.FunctionDef):
                methods.append(stmt)
                if stmt.name.value == "__init__":
                    init_entries = self.init_defaults(stmt, env)
                    init = stmt
            elif isinstance(stmt, cst.ClassDef):
                self.class_def(stmt, env, join_scope(scope, stmt.name.value))
        own = ClassFields(
            tuple(entries),
            tuple(init_entries) if init_entries is not None else None,
            methods=tuple(Function(m, self) for m in methods),
        )
        fields = self.inherited(cls, own)
        fields = replace(fields, positional=positional_fields(cls, init, annotated, fields))
        self.read_methods(methods, outer, scope, fields)
        all_entries = fields.fields + (fields.init or ())
        if all_entries:
            kind = "init" if fields.init else "class"
            root = Mapping(all_entries, self.span(cls))
            name = self.unique(scope)
            self.add(Candidate(name=name, root=root, kind=kind, open_bases=fields.open_bases))
        return fields

    def inherited(self, cls: cst.ClassDef, own: ClassFields) -> ClassFields:
        """``own`` combined with the fields of the class's bases (see `inherit`)."""
        bases: list[ClassFields] = []
        open_bases: list[str] = []
        for arg in cls.bases:
            if arg.keyword is not None:
                continue  # metaclass=…, total=False
            name = base_name(arg.value) if not arg.star else None
            found = self.resolver.resolve(self.path, self.bindings, name) if name else None
            if isinstance(found, ClassFields):
                bases.append(found)
            elif found != "neutral":  # not found, or not a class
                open_bases.append(name or self.source(arg.value))
        return inherit(replace(own, open_bases=tuple(open_bases)), bases)

    def class_field(
        self,
        small: cst.BaseSmallStatement,
        env: dict[str, Folded],
        entries: list[Entry],
        annotated: list[str],
    ) -> None:
        import libcst as cst

        target: cst.BaseExpression | None = None
        value: cst.BaseExpression | None = None
        if (
            isinstance(small, cst.AnnAssign)
            and isinstance(small.target, cst.Name)
            and not _class_var(small.annotation.annotation)
        ):
            annotated.append(small.target.value)
        if isinstance(small, cst.AnnAssign) and small.value is not None:
            target, value = small.target, small.value
        elif isinstance(small, cst.Assign) and len(small.targets) == 1:
            target, value = small.targets[0].target, small.value
        if target is None or value is None:
            return
        self.bind(target, fold(value, env, 0), env)
        if isinstance(target, cst.Name) and not target.value.startswith("__"):
            entries.append(Entry(target.value, self.span(target), self.node(value, env, 0)))

    def init_defaults(self, init: cst.FunctionDef, env: dict[str, Folded]) -> list[Entry]:
        entries: list[Entry] = []
        params = init.params
        for param in (*params.posonly_params, *params.params, *params.kwonly_params):
            if param.default is None:
                continue
            node = self.node(param.default, env, 0)
            entries.append(Entry(param.name.value, self.span(param.name), node))
        return entries

    def unique(self, name: str) -> str:
        count = self.names.get(name, 0) + 1
        self.names[name] = count
        return name if count == 1 else f"{name} #{count}"

    def add(self, candidate: Candidate) -> None:
        self.candidates.append(candidate)


# Decorators that make a class's annotated fields its positional parameters, by last name.
_DATACLASS_DECORATORS = frozenset({"dataclass", "define", "frozen", "mutable"})


def _class_var(annotation: cst.BaseExpression) -> bool:
    """``ClassVar[int]``: a class attribute, not a field of instances."""
    import libcst as cst

    if isinstance(annotation, cst.Subscript):
        annotation = annotation.value
    name = base_name(annotation)
    return name is not None and name.rsplit(".", 1)[-1] == "ClassVar"


def positional_fields(
    cls: cst.ClassDef, init: cst.FunctionDef | None, annotated: list[str], fields: ClassFields
) -> tuple[str, ...] | None:
    """The fields a positional call of ``cls`` fills, in order: its own ``__init__``'s
    parameters, else (a dataclass, a NamedTuple) the inherited fields then its own annotated
    ones, else what it inherits (``fields``: the class read with its bases)."""
    import libcst as cst

    if init is not None:
        params = [*init.params.posonly_params, *init.params.params]
        return tuple(p.name.value for p in params[1:])
    decorators = []
    for decorator in cls.decorators:
        expr = decorator.decorator
        if isinstance(expr, cst.Call):
            if any(
                a.keyword is not None
                and a.keyword.value == "kw_only"
                and isinstance(a.value, cst.Name)
                and a.value.value == "True"
                for a in expr.args
            ):
                return None  # @dataclass(kw_only=True): no positional fields
            expr = expr.func
        name = base_name(expr)
        if name is not None:
            decorators.append(name.rsplit(".", 1)[-1])
    bases = [base_name(a.value) for a in cls.bases if a.keyword is None]
    named_tuple = any(b is not None and b.rsplit(".", 1)[-1] == "NamedTuple" for b in bases)
    if named_tuple or any(d in _DATACLASS_DECORATORS for d in decorators):
        inherited = fields.positional or ()
        return inherited + tuple(n for n in annotated if n not in inherited)
    return fields.positional
