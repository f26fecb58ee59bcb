"""Candidate extraction: which statements of a module hold configs, and what they are named.

`Reader` walks a module's statements in order, keeping constants per scope (`evaluate.fold`),
and turns each config-like class body, call, dict literal and the module namespace into a
`Candidate` (see the package docstring for the kinds and names). The module hooks the
dialects register (`shapelint.readers.hooks.ModuleHook`: LitGPT's name-variant loops) see
every module-level statement and config.
"""

from __future__ import annotations

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
from shapelint.readers.python.classes import ClassReader
from shapelint.readers.python.evaluate import (
    MAX_DEPTH,
    Folded,
    LocalCall,
    fold,
    string_value,
)
from shapelint.readers.python.inherit import (
    Binding,
    ModuleResolver,
    import_bindings,
)
from shapelint.readers.python.scope import (
    bound_names,
    join_scope,
    nested_blocks,
    suite_blocks,
)
from shapelint.readers.python.values import (
    is_collection,
    is_config_like,
    mark_shared,
    quote_key,
    states_values,
)

if TYPE_CHECKING:
    import libcst as cst
    from libcst.metadata import CodeRange


class Reader(ClassReader):
    """Walks one parsed module and collects candidates, problems and suppressions."""

    def __init__(
        self,
        path: str,
        text: str,
        module: cst.Module,
        positions: AbcMapping[cst.CSTNode, CodeRange],
        resolver: ModuleResolver | None = None,
    ) -> None:
        super().__init__(path, text, module, positions, resolver or ModuleResolver(read_bindings))
        self.suppressions: dict[int, frozenset[str]] = {}
        self.counters: dict[str, int] = {}
        # What the dialects registered to follow module-level statements (LitGPT's loops).
        self.hooks = [make(self, module) for make in hooks.PYTHON_MODULES]
        # The return annotation of the function being read (``KimiK25Model.Config``), if any.
        self.returns: str | None = None

    # ---- driver ----------------------------------------------------------------------------

    def read(self) -> None:
        self._collect_suppressions()
        env: dict[str, Folded] = {}
        module_entries: list[Entry] = []
        self.scan_block(self.module.body, env, scope="", module_entries=module_entries)
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
        in_function: bool = False,
    ) -> None:
        """Walk statements in order, binding constants in ``env`` and collecting configs (in a
        function body, only the values it returns: see `small_statement`)."""
        import libcst as cst

        module = module_entries is not None
        for stmt in body:
            if isinstance(stmt, cst.SimpleStatementLine):
                for small in stmt.body:
                    self.small_statement(small, env, scope, module_entries, in_function)
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
                self.function_def(stmt, env, join_scope(scope, stmt.name.value))
            else:
                # if / for / while / with / try / match: whatever they bind is not a constant.
                for name in bound_names(stmt):
                    env.pop(name, None)
                for block in nested_blocks(stmt):
                    self.scan_block(block, dict(env), scope, in_function=in_function)
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
        in_function: bool = False,
    ) -> None:
        """Bind constants and collect configs. In a function body a dict or call is code, not
        a config, except the value the function returns: ``def llama3_8b(): return llama3(
        vocab_size=128_256, …)`` builds a model, named by the function."""
        import libcst as cst

        if in_function:
            if isinstance(small, cst.Return) and small.value is not None:
                returned, local_env = small.value, env
                bound = env.get(small.value.value) if isinstance(small.value, cst.Name) else None
                if (
                    bound is not None
                    and isinstance(bound.value, LocalCall)
                    and self.source(bound.value.call.func) == self.returns
                ):
                    # ``config = KimiK25Model.Config(…); return config`` in a function
                    # annotated ``-> KimiK25Model.Config``: that call is what it builds.
                    returned, local_env = bound.value.call, dict(bound.value.env)
                self.collect(returned, local_env, scope, scope, builder=True)
            elif isinstance(small, cst.Assign | cst.AnnAssign) and small.value is not None:
                targets = (
                    [t.target for t in small.targets]
                    if isinstance(small, cst.Assign)
                    else [small.target]
                )
                folded = fold(small.value, env, 0)
                before = dict(env)
                for target in targets:
                    self.bind(target, folded, env)
                if (
                    len(targets) == 1
                    and isinstance(targets[0], cst.Name)
                    and isinstance(small.value, cst.Call)
                    and is_config_like(small.value)
                ):
                    # ``layers = _build_layers(n_layers=…)``: a local the returned call may name.
                    local = LocalCall(small.value, before)
                    env[targets[0].value] = Folded(local, False, True)
            elif isinstance(small, cst.AugAssign) and isinstance(small.target, cst.Name):
                env.pop(small.target.value, None)
            elif isinstance(small, cst.Import | cst.ImportFrom):
                for name in bound_names(small):
                    env.pop(name, None)
            return
        if isinstance(small, cst.Assign):
            names = [t.target for t in small.targets]
            self.collect(small.value, env, scope, self.source(names[-1]))
            folded = fold(small.value, env, 0)
            for target in names:
                self.bind(target, folded, env)
                if module_entries is not None and isinstance(target, cst.Name):
                    self.module_entry(target, small.value, env, module_entries)
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
                if not is_config_like(arg.value) and not isinstance(
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
        import libcst as cst

        env = dict(outer)
        params = fn.params
        for param in (*params.posonly_params, *params.params, *params.kwonly_params):
            env.pop(param.name.value, None)
        for star in (params.star_arg, params.star_kwarg):
            if isinstance(star, cst.Param):
                env.pop(star.name.value, None)
        outer_returns = self.returns
        self.returns = self.source(fn.returns.annotation) if fn.returns is not None else None
        for block in suite_blocks(fn.body):
            self.scan_block(block, env, scope, in_function=True)
        self.returns = outer_returns

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
        if is_config_like(expr):
            if isinstance(expr, cst.Dict) and is_collection(expr):
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
                entry_name = node.get("name")
                if (
                    isinstance(entry_name, Scalar)
                    and entry_name.known
                    and isinstance(entry_name.value, str)
                    and entry_name.value
                ):
                    label = f"{label} {entry_name.value}"
                if scope and base is None:
                    label = f"{label} (in {scope})"
                if builder:
                    node = mark_shared(node)
                    assert isinstance(node, Mapping)
                candidate = Candidate(
                    name=self.unique(label),
                    root=node,
                    kind=kind,
                    callee=self.callee(expr) if kind == "call" else "",
                )
                self.add(candidate)
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

    def callee(self, expr: cst.BaseExpression) -> str:
        import libcst as cst

        if isinstance(expr, cst.Call):
            return self.source(expr.func)
        return "{…}"


def read_bindings(path: str, text: str, resolver: ModuleResolver) -> dict[str, Binding]:
    """The module-level bindings (classes read, imports) of the module ``text`` at ``path``,
    for a class defined elsewhere that derives from one of its classes; raises on bad input."""
    import libcst as cst
    from libcst.metadata import MetadataWrapper, PositionProvider

    module = cst.parse_module(text)
    positions = MetadataWrapper(module, unsafe_skip_copy=True).resolve(PositionProvider)
    reader = Reader(path, text, module, positions, resolver)
    reader.read()
    return reader.bindings
