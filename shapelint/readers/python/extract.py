"""Candidate extraction: which statements of a module hold configs, and what they are named.

`Reader` walks a module's statements in order, keeping constants per scope (`evaluate.fold`),
and turns each config-like class body, call, dict literal and the module namespace into a
`Candidate` (see the package docstring for the kinds and names). The module hooks the
dialects register (`shapelint.readers.hooks.ModuleHook`: LitGPT's name-variant loops) see
every module-level statement and config.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from collections.abc import Mapping as AbcMapping
from typing import TYPE_CHECKING

from shapelint.core.source import (
    Candidate,
    Entry,
    Mapping,
    Scalar,
    merge_suppressions,
    parse_suppression,
)
from shapelint.readers import hooks
from shapelint.readers.python.evaluate import (
    MAX_DEPTH,
    Folded,
    fold,
    string_value,
)
from shapelint.readers.python.flow import FlowReader
from shapelint.readers.python.flow_values import Frame
from shapelint.readers.python.inherit import (
    Binding,
    Function,
    ModuleResolver,
    import_bindings,
)
from shapelint.readers.python.objects import Obj
from shapelint.readers.python.scope import (
    bound_names,
    join_scope,
    nested_blocks,
)
from shapelint.readers.python.values import (
    is_collection,
    mark_shared,
    quote_key,
    states_values,
)

if TYPE_CHECKING:
    import libcst as cst
    from libcst.metadata import CodeRange


class Reader(FlowReader):
    """Walks one parsed module and collects candidates, problems and suppressions.

    ``bindings_only``: the module is read for what another module imports from it (its
    classes, functions and constants), not linted: function bodies are not read.
    """

    def __init__(
        self,
        path: str,
        text: str,
        module: cst.Module,
        positions: AbcMapping[cst.CSTNode, CodeRange],
        resolver: ModuleResolver | None = None,
        bindings_only: bool = False,
    ) -> None:
        super().__init__(path, text, module, positions, resolver or ModuleResolver(read_bindings))
        self.suppressions: dict[int, frozenset[str]] = {}
        self.counters: dict[str, int] = {}
        self.bindings_only = bindings_only
        # What the dialects registered to follow module-level statements (LitGPT's loops).
        self.hooks = [] if bindings_only else [make(self, module) for make in hooks.PYTHON_MODULES]
        # Module-level statements as a script (`module_flow`).
        self.module_frame = Frame({}, main=True)

    # ---- driver ----------------------------------------------------------------------------

    def read(self) -> None:
        self._collect_suppressions()
        env: dict[str, Folded] = {}
        # A function's globals are the module's constants when it is called: the same dict.
        self.globals = env
        self.module_frame = Frame(env, main=True)
        self.prepare(self.module.body)
        module_entries: list[Entry] = []
        self.scan_block(self.module.body, env, scope="", module_entries=module_entries)
        self.emit_built(self.module_frame.built)
        for hook in self.hooks:
            self.candidates = hook.ordered(self.candidates)
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
        env: dict[str, Folded],
        scope: str,
        module_entries: list[Entry] | None = None,
    ) -> None:
        """Walk module-level statements in order (and the blocks nested in them), binding
        constants in ``env`` and collecting configs; function bodies are `FlowReader`'s."""
        import libcst as cst

        module = module_entries is not None
        for stmt in body:
            if isinstance(stmt, cst.SimpleStatementLine):
                for small in stmt.body:
                    self.small_statement(small, env, scope, module_entries)
                    if module:
                        self.rebind(small)
                        for hook in self.hooks:
                            hook.after(small)
                continue
            if module:
                for hook in self.hooks:
                    hook.before(stmt, env)
                for name in bound_names(stmt):
                    self.bindings.pop(name, None)
            if isinstance(stmt, cst.ClassDef):
                env.pop(stmt.name.value, None)
                fields = self.class_def(stmt, env, join_scope(scope, stmt.name.value))
                if module:
                    self.bindings[stmt.name.value] = fields
            elif isinstance(stmt, cst.FunctionDef):
                env.pop(stmt.name.value, None)
                if module:
                    self.bindings[stmt.name.value] = Function(stmt, self)
                self.function_def(stmt, env, join_scope(scope, stmt.name.value))
            else:
                if module:
                    self.module_block(stmt)
                # if / for / while / with / try / match: whatever they bind is not a constant.
                for name in bound_names(stmt):
                    env.pop(name, None)
                for block in nested_blocks(stmt):
                    self.scan_block(block, dict(env), scope)
            if module:
                for hook in self.hooks:
                    hook.after(stmt)

    def rebind(self, small: cst.BaseSmallStatement) -> None:
        """Update the module-level bindings for one simple statement."""
        import libcst as cst

        for name in bound_names(small):
            self.bindings.pop(name, None)
        if isinstance(small, cst.Import | cst.ImportFrom):
            self.bindings.update(import_bindings(small))

    def small_statement(
        self,
        small: cst.BaseSmallStatement,
        env: dict[str, Folded],
        scope: str,
        module_entries: list[Entry] | None,
    ) -> None:
        """Bind constants and collect configs of a module-level statement."""
        import libcst as cst

        if isinstance(small, cst.Assign):
            names = [t.target for t in small.targets]
            self.collect(small.value, env, scope, self.source(names[-1]))
            folded = fold(small.value, env, 0)
            for target in names:
                self.bind(target, folded, env)
                if module_entries is not None and isinstance(target, cst.Name):
                    self.module_entry(target, small.value, env, module_entries)
            if (
                len(names) == 1
                and isinstance(names[0], cst.Name)
                and isinstance(small.value, cst.List | cst.Tuple)
            ):
                # ``PATTERN = (LOCAL, LOCAL, GLOBAL)``: a sequence a function of the module may
                # be given (`FlowReader`); no constant (folding ignores it).
                held = self.node(small.value, env, 0)
                env[names[0].value] = Folded(held, False, True)
        elif isinstance(small, cst.AnnAssign):
            if small.value is None:
                return
            self.collect(small.value, env, scope, self.source(small.target))
            self.bind(small.target, fold(small.value, env, 0), env)
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
            for name in bound_names(small):
                env.pop(name, None)
        if module_entries is not None and not self.bindings_only:
            self.module_flow(small, env)

    # ---- module-level objects --------------------------------------------------------------

    def module_flow(self, small: cst.BaseSmallStatement, env: dict[str, Folded]) -> None:
        """Module-level code read as a script (`flow`): ``config = ConfigDict()`` and then
        ``config.emb_dim = 512`` fill one object, a config (`FlowReader.emit_built`)."""
        import libcst as cst

        frame = self.module_frame
        self.flowing_module = True
        try:
            if (
                isinstance(small, cst.Assign)
                and len(small.targets) == 1
                and isinstance(small.targets[0].target, cst.Name)
                and isinstance(small.value, cst.Call)
                and not self.config_like(small.value)
                and not any(a.keyword is None and not a.star for a in small.value.args)
            ):
                # ``config = ml_collections.ConfigDict()``, ``cfg = base()``.
                value = self.value(small.value, frame, top=True)
                if isinstance(value, Obj) and not value.opaque:
                    env[small.targets[0].target.value] = Folded(value, False, True)
                    self.track(small, value, frame.built)
                    return
            objects = {item.label for item in frame.built}
            if not objects or not _mentions(small, objects | set(self.functions)):
                return
            # ``config.emb_dim = 512``, ``model = Model(config)``, ``setup()``.
            if isinstance(small, cst.Assign | cst.AnnAssign) and small.value is not None:
                value = self.value(small.value, frame, top=True)
                targets = (
                    [t.target for t in small.targets]
                    if isinstance(small, cst.Assign)
                    else [small.target]
                )
                for target in targets:
                    if not isinstance(target, cst.Name):
                        self.assign(target, value, small.value, frame)
            elif isinstance(small, cst.AugAssign) and not isinstance(small.target, cst.Name):
                self.augmented(small, frame)
            elif isinstance(small, cst.Expr) and isinstance(small.value, cst.Call):
                self.call_statement(small.value, frame)
        finally:
            self.flowing_module = False

    def module_block(self, stmt: cst.BaseStatement) -> None:
        """A module-level ``if``/``for``/``with``/``try`` is not followed: an object it names,
        or (when it names a function of the module) any object, is no longer known."""
        built = self.module_frame.built
        if built and _mentions(stmt, set(self.functions)):
            named = built  # a function of the module may change any of them
        else:
            named = [item for item in built if _mentions(stmt, {item.label})]
        for item in named:
            item.obj.opaque = True

    def module_entry(
        self,
        target: cst.Name,
        value: cst.BaseExpression,
        env: dict[str, Folded],
        entries: list[Entry],
    ) -> None:
        name = target.value
        if name.startswith("__") and name.endswith("__"):
            return
        node = self.node(value, env, 0)
        if not isinstance(node, Mapping):
            entries.append(Entry(name, self.span(target), node))

    def expression_statement(
        self, value: cst.BaseExpression, env: dict[str, Folded], scope: str
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
                if not self.config_like(arg.value) and not isinstance(
                    arg.value, cst.List | cst.Tuple
                ):
                    continue  # configs.append(copy): built by code, not written here
                key = f"{owner}.{method}"
                number = self.counters.get(key, 0)
                self.counters[key] = number + 1
                self.collect(arg.value, env, scope, f"{key}[{number}]")
            return
        self.collect(value, env, scope, None)

    def function_def(self, fn: cst.FunctionDef, outer: dict[str, Folded], scope: str) -> None:
        """A function's body: what it builds (`FlowReader.read_function`)."""
        if not self.bindings_only:
            self.read_function(fn, outer, scope)

    def nested_def(
        self, stmt: cst.BaseCompoundStatement, env: dict[str, Folded], scope: str
    ) -> None:
        """A class or function defined inside a function body."""
        import libcst as cst

        if isinstance(stmt, cst.ClassDef):
            self.class_def(stmt, env, join_scope(scope, stmt.name.value))
        elif isinstance(stmt, cst.FunctionDef):
            self.function_def(stmt, env, join_scope(scope, stmt.name.value))

    # ---- candidates ------------------------------------------------------------------------

    def collect(
        self,
        expr: cst.BaseExpression,
        env: dict[str, Folded],
        scope: str,
        base: str | None,
        depth: int = 0,
        builder: bool = False,
    ) -> None:
        """Find config-like calls and dicts in ``expr``; ``base`` names the place it sits.

        ``builder``: ``expr`` is what a function returns. Its configs must state at least one
        value (a call made only of the function's parameters is a factory, not a config), and
        its values are marked shared: every model the function builds has them, so a fix
        there is unsafe.
        """
        import libcst as cst

        if depth > MAX_DEPTH:
            return
        if self.config_like(expr):
            if isinstance(expr, cst.Dict) and is_collection(expr, self.config_like):
                for element in expr.elements:
                    if isinstance(element, cst.DictElement) and isinstance(
                        element.key, cst.SimpleString | cst.ConcatenatedString
                    ):
                        key = string_value(element.key)
                        label = f"{base or '{…}'}[{quote_key(key)}]"
                        self.collect(element.value, env, scope, label, depth + 1, builder)
                return
            node = self.node(expr, env, 0)
            if builder and not states_values(node):
                return
            if isinstance(node, Mapping):
                kind = "call" if isinstance(expr, cst.Call) else "dict"
                label = base if base is not None else self.callee(expr)
                if scope and base is None:
                    label = f"{label} (in {scope})"
                candidate = self.make_candidate(
                    node, label, kind, self.callee(expr) if kind == "call" else "", builder
                )
                written_as = base if base is not None else self.callee(expr)
                for hook in self.hooks if not scope else ():  # module level only
                    hook.config(expr, candidate, written_as)
            return
        if isinstance(expr, cst.List | cst.Tuple | cst.Set):
            for i, item in enumerate(expr.elements):
                if isinstance(item, cst.Element):
                    item_label = f"{base}[{i}]" if base is not None else None
                    self.collect(item.value, env, scope, item_label, depth + 1, builder)
            return
        if isinstance(expr, cst.Call):
            for arg in expr.args:
                self.collect(arg.value, env, scope, None, depth + 1, builder)
            if isinstance(expr.func, cst.Call):
                self.collect(expr.func, env, scope, None, depth + 1, builder)
            elif isinstance(expr.func, cst.Attribute) and isinstance(expr.func.value, cst.Call):
                # ``model = GPT(vocab_size=50304, num_layers=12, …).cuda()``: a method called on
                # the call's result (moved, cast) leaves the call's keywords what they were.
                self.collect(expr.func.value, env, scope, base, depth + 1, builder)
        elif isinstance(expr, cst.Dict):
            for element in expr.elements:
                if isinstance(element, cst.DictElement):
                    self.collect(element.value, env, scope, None, depth + 1, builder)

    def make_candidate(
        self,
        node: Mapping,
        label: str,
        kind: str,
        callee: str,
        builder: bool,
        open_bases: tuple[str, ...] = (),
    ) -> Candidate:
        """Add the candidate of a config mapping; a string ``name`` entry joins its label."""
        entry_name = node.get("name")
        if (
            isinstance(entry_name, Scalar)
            and entry_name.known
            and isinstance(entry_name.value, str)
            and entry_name.value
        ):
            label = f"{label} {entry_name.value}"
        elif entry_name is None:
            member = _enum_member_id(node)
            if member:
                label = f"{label} {member}"
        if builder:
            marked = mark_shared(node)
            assert isinstance(marked, Mapping)
            node = marked
        candidate = Candidate(
            name=self.unique(label), root=node, kind=kind, callee=callee, open_bases=open_bases
        )
        self.add(candidate)
        return candidate

    def add_object(self, obj: Obj, label: str, builder: bool) -> None:
        """A config object a function builds (returns, or fills as its architecture
        parameter), when it is known and states a value."""
        if obj.opaque or (obj.pristine is not None and obj.signature() == obj.pristine):
            return  # ``return TrainConfig()``: the class's defaults, its own candidate
        entries = list(obj.values.items())
        if (
            obj.kind == "dict"
            and entries
            and all(isinstance(v, Obj) and not v.opaque for _, v in entries)
        ):
            # A table of configs by name (``table["7b"] = dict(…)``; ``return table``): one
            # config per entry, as a dict literal of configs is read (`collect`).
            for key, value in entries:
                assert isinstance(value, Obj)
                self.add_object(value, f"{label}[{quote_key(key)}]", builder)
            return
        node = obj.mapping()
        if not states_values(node):
            return
        self.make_candidate(node, label, obj.kind, obj.callee, builder, obj.open_bases)

    def callee(self, expr: cst.BaseExpression) -> str:
        import libcst as cst

        if isinstance(expr, cst.Call):
            return self.source(expr.func)
        return "{…}"


def _mentions(node: cst.CSTNode, names: set[str]) -> bool:
    """Whether ``node`` uses one of ``names`` as a name."""
    import libcst as cst

    found = False

    class Visitor(cst.CSTVisitor):
        def visit_Name(self, name: cst.Name) -> None:
            nonlocal found
            found = found or name.value in names

    node.visit(Visitor())
    return found


_ENUM_MEMBER = re.compile(r"[A-Za-z_][\w]*\.([A-Za-z_]\w*)")


def _enum_member_id(node: Mapping) -> str:
    """The member an ``…_id`` key names as ``Enum.member`` (llama-models' ``Model(
    core_model_id=CoreModelId.llama2_7b, …)``): what the config is called; else ``""``."""
    for entry in node.entries:
        value = entry.value
        if (
            (entry.key == "id" or entry.key.endswith("_id"))
            and isinstance(value, Scalar)
            and not value.known
            and value.expression is not None
        ):
            found = _ENUM_MEMBER.fullmatch(value.expression)
            if found:
                return found.group(1)
    return ""


def read_bindings(path: str, text: str, resolver: ModuleResolver) -> dict[str, Binding]:
    """The module-level bindings (classes read, imports) of the module ``text`` at ``path``,
    for a class defined elsewhere that derives from one of its classes; raises on bad input."""
    import libcst as cst
    from libcst.metadata import MetadataWrapper, PositionProvider

    module = cst.parse_module(text)
    positions = MetadataWrapper(module, unsafe_skip_copy=True).resolve(PositionProvider)
    reader = Reader(path, text, module, positions, resolver, bindings_only=True)
    reader.read()
    return reader.bindings
