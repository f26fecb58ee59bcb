"""Data flow in function bodies: a config as the statements of a function build it.

A person reading ``def transformer_big(): hparams = transformer_base(); hparams.hidden_size =
1024; return hparams`` knows the config it returns: ``transformer_base``'s, with the width
changed. `FlowReader` follows a function body the same way, statement by statement, never
running anything:

- names hold constants (`evaluate.fold`) or config objects (`objects.Obj`): a dict literal, a
  keyword call (``Model.Config(dim=…)``), an empty container (``ml_collections.ConfigDict()``,
  ``dict()``), an instance of a class of the package (its fields filled from the call's
  positional arguments in field order, then its keywords, then the class defaults, and its
  one-line properties computed: ``Size(12, 768, 12, 64)``), or what a function of the package
  returns when called (same module or imported from a sibling, its body followed with the
  arguments bound: ``hparams = common_hparams.basic_params1()``); a call of a callee not read
  whose arguments are ``**`` of known dicts is a keyword call of their entries
  (``Config(**presets[name])``);
- statements change them: ``cfg.key = v``, ``cfg["key"] = v``, ``cfg.update(…)``,
  ``setattr(cfg, "key", v)``, a call of a package function that takes the object
  (``base_lm_architecture(args)``), and the idioms the dialects register
  (`shapelint.readers.hooks.PythonIdioms`: ``hparams.add_hparam("k", v)``, fairseq's
  ``safe_getattr``, merges such as ``update_config_dict(config, updates)``);
  ``getattr(obj, "key", default)`` and ``obj.get("key", default)`` give the value the object
  holds, the default when the object is known to lack it, else unknown; ``obj.pop("key")``
  takes a key out, ``obj.setdefault("key", v)`` sets one the object is known to lack;
- ``if`` runs the branch its condition selects when the condition is known; otherwise each
  branch may run, so every key either one sets is unknown afterwards; a ``for`` over a known
  collection (``override.items()`` of an empty ``**override``) runs once per item, any other
  loop may run, like an unknown branch;
- a call the reader cannot follow that receives an object (``helper(cfg)``, ``cfg.freeze()``)
  may have changed anything in it: the object becomes opaque and is no config.

What a function builds is a config (`Reader` makes it a candidate named by the function;
a test function, ``test*`` as pytest collects them, builds nothing): the
object it returns when it states at least one value (a returned table whose every value is
a config object, ``table["7b"] = dict(…)``, is one config per entry, named ``fn["7b"]``);
the parameter an *architecture function*
fills (a decorated function that assigns attributes of its parameter, fairseq's
``@register_model_architecture`` functions, read as applied to an empty namespace: ``args.k =
getattr(args, "k", 1024)`` gives 1024); and, for a function that selects on a parameter
(``{"7b": dict(…), …}[name]``, a dict literal bound to a local and indexed by the parameter,
``if size == "7b": … elif size == "13b": …``), one
config per value it tests, named ``fn["7b"]``. A function named ``main`` (or one the
``if __name__ == "__main__":`` block calls) is read like module-level code: the configs it
writes are configs, and so is an object it binds and then fills in (``config =
ConfigDict(); config.emb_dim = 512``), as it is when code the reader cannot follow receives
it (``train(config)``) or at the end (`emit_built`). Module-level statements fill objects
the same way (`Reader.module_flow`); a module-level block that is not followed (``if``,
``for``) leaves the objects it names unknown.

Everything is bounded: calls nest at most `MAX_CALL_DEPTH` deep, a function never re-enters
itself, loops unroll at most `MAX_UNROLL` items, a function forks at most `MAX_FORKS` ways,
and all following of code for one linted file shares one budget of statements
(`objects.Steps`); past a bound, values are unknown.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from shapelint.core.source import Mapping, Node, Scalar, Sequence
from shapelint.readers.python.evaluate import Folded, fold, string_value
from shapelint.readers.python.flow_calls import MAX_CALL_DEPTH, _own_objects
from shapelint.readers.python.flow_statements import StatementFlow
from shapelint.readers.python.flow_values import Frame
from shapelint.readers.python.inherit import ClassFields, Function
from shapelint.readers.python.objects import Obj
from shapelint.readers.python.scope import suite_blocks
from shapelint.readers.python.values import is_config_like, quote_key

if TYPE_CHECKING:
    import libcst as cst

# The most values one function is read for when it selects on a parameter.
MAX_FORKS = 64


class FlowReader(StatementFlow):
    """Follows function bodies (see the module docstring); `Reader` builds on it."""

    def read_methods(
        self,
        methods: list[cst.FunctionDef],
        outer: dict[str, Folded],
        scope: str,
        fields: ClassFields,
    ) -> None:
        """Read a class's methods with ``cls`` meaning the class (``return cls(**config)``)."""
        outer_class, outer_name = self.current_class, self.current_class_name
        self.current_class, self.current_class_name = fields, scope
        try:
            super().read_methods(methods, outer, scope, fields)
        finally:
            self.current_class, self.current_class_name = outer_class, outer_name

    # ---- calls in values (`values.ValueReader.node`) ---------------------------------------

    def call_node(self, call: cst.Call, env: dict[str, Folded], depth: int) -> Node | None:
        """A positional call of a package class (its fields in order, the class defaults) or a
        call of a package function that builds a config (``arch_args=arch_args_1b()``)."""
        if depth > MAX_CALL_DEPTH or self.resolver.steps.left <= 0:
            return None
        frame = Frame(dict(env))
        target = self.callable(call.func, frame)
        value: Node | Obj | None = None
        if isinstance(target, ClassFields) and self.positional_call(call, target):
            value = self.instance(call, target, frame)
        elif isinstance(target, Function):
            value = self.invoke(target, call, frame)
        if isinstance(value, Obj):
            return None if value.opaque else value.mapping()
        if (isinstance(value, Scalar) and value.known) or isinstance(value, Sequence):
            return value
        return None

    def spread_node(
        self, expr: cst.BaseExpression, env: dict[str, Folded], depth: int
    ) -> Mapping | None:
        """``**arch_args_1b()``, ``**base``: the object it spreads, when it is known."""
        if depth > MAX_CALL_DEPTH or self.resolver.steps.left <= 0:
            return None
        value = self.value(expr, Frame(dict(env)), top=True)
        if isinstance(value, Obj) and not value.opaque:
            return value.mapping()
        return value if isinstance(value, Mapping) else None

    def config_like(self, expr: cst.BaseExpression) -> bool:
        """Also a positional call of a package class whose fields are known in order."""
        import libcst as cst

        if is_config_like(expr):
            return True
        if not isinstance(expr, cst.Call) or not any(
            a.keyword is None and not a.star for a in expr.args
        ):
            return False
        target = self.callable(expr.func, Frame({}))
        return isinstance(target, ClassFields) and self.positional_call(expr, target)

    def positional_call(self, call: cst.Call, fields: ClassFields) -> bool:
        """Whether a call's positional arguments fit the class's fields in order."""
        count = sum(1 for a in call.args if a.keyword is None)
        starred = any(a.star for a in call.args)
        return fields.positional is not None and not starred and count <= len(fields.positional)

    # ---- module pre-pass -------------------------------------------------------------------

    def prepare(self, body: Iterable[cst.BaseStatement]) -> None:
        """Note the module's functions (a builder may call one defined below it) and the
        functions its ``if __name__ == "__main__":`` block calls."""
        import libcst as cst

        for stmt in body:
            if isinstance(stmt, cst.FunctionDef):
                self.functions[stmt.name.value] = Function(stmt, self)
            elif isinstance(stmt, cst.If) and _is_main_guard(stmt.test):
                for block in suite_blocks(stmt.body):
                    for inner in block:
                        if isinstance(inner, cst.SimpleStatementLine):
                            for small in inner.body:
                                call = getattr(small, "value", None)
                                if isinstance(call, cst.Call) and isinstance(call.func, cst.Name):
                                    self.entry_points.add(call.func.value)

    # ---- a function as written -------------------------------------------------------------

    def read_function(self, fn: cst.FunctionDef, outer: dict[str, Folded], scope: str) -> None:
        """Follow a function as written: its returned configs, its architecture parameter,
        one reading per value of a parameter it selects on."""
        import libcst as cst

        if fn.name.value.startswith("test"):
            return  # a test (pytest collects ``test*``): code, whatever it returns
        env = _own_objects(outer)
        params = fn.params
        names = [p.name.value for p in (*params.posonly_params, *params.params)]
        for param in (*params.posonly_params, *params.params, *params.kwonly_params):
            env.pop(param.name.value, None)
        if isinstance(params.star_arg, cst.Param):
            env[params.star_arg.name.value] = Folded((), True, False)
        if isinstance(params.star_kwarg, cst.Param):
            empty = Obj(self.span(params.star_kwarg.name), complete=True)
            env[params.star_kwarg.name.value] = Folded(empty, False, True)
        arch = self.architecture_parameter(fn, names)
        main = (
            self.current_class is None
            and scope == fn.name.value
            and fn.name.value in self.entry_points
        )
        forks = self.selector(fn, set(names) | {p.name.value for p in params.kwonly_params})
        readings: list[tuple[str, dict[str, Folded]]] = []
        if forks is not None:
            name, values = forks
            for value in values:
                forked = dict(env)
                forked[name] = Folded(value, True, False)
                readings.append((f"{scope}[{quote_key(str(value))}]", forked))
        else:
            readings.append((scope, env))
        for label, reading_env in readings:
            if arch is not None:
                obj = Obj(self.span(arch), complete=True)
                reading_env[arch.value] = Folded(obj, False, True)
            frame = Frame(reading_env, scope=label, collect=True, main=main)
            for block in suite_blocks(fn.body):
                self.run(block, frame)
            self.emit_built(frame.built)
            if arch is not None:
                held = frame.env.get(arch.value)
                if held is not None and isinstance(held.value, Obj):
                    self.add_object(held.value, label, builder=True)

    def architecture_parameter(self, fn: cst.FunctionDef, names: list[str]) -> cst.Name | None:
        """The parameter of a decorated function that the body fills by attribute assignment
        (``args.decoder_layers = getattr(args, "decoder_layers", 12)``)."""
        import libcst as cst

        if not fn.decorators or not names or self.current_class is not None:
            return None
        first = (*fn.params.posonly_params, *fn.params.params)[0]
        wanted = first.name.value
        found = False

        class Visitor(cst.CSTVisitor):
            def visit_AssignTarget(self, node: cst.AssignTarget) -> None:
                nonlocal found
                target = node.target
                if (
                    isinstance(target, cst.Attribute)
                    and isinstance(target.value, cst.Name)
                    and target.value.value == wanted
                ):
                    found = True

            def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
                return node is fn

        fn.visit(Visitor())
        return first.name if found else None

    def selector(
        self, fn: cst.FunctionDef, params: set[str]
    ) -> tuple[str, tuple[str | int, ...]] | None:
        """The parameter the body selects on and the values it tests: a dict literal indexed
        by it (``{"7b": …, "13b": …}[name]``) or ``if p == "7b": … elif p == "13b": …``."""
        import libcst as cst

        tested: dict[str, list[str | int]] = {}
        # Dict literals the body binds to a local (``table = {"7b": …}``), by name.
        tables: dict[str, cst.Dict] = {}

        def note(name: str, value: object) -> None:
            if isinstance(value, str | int) and not isinstance(value, bool):
                values = tested.setdefault(name, [])
                if value not in values:
                    values.append(value)

        class Visitor(cst.CSTVisitor):
            def visit_Assign(self, node: cst.Assign) -> None:
                if (
                    len(node.targets) == 1
                    and isinstance(node.targets[0].target, cst.Name)
                    and isinstance(node.value, cst.Dict)
                ):
                    tables[node.targets[0].target.value] = node.value

            def visit_Subscript(self, node: cst.Subscript) -> None:
                table = node.value
                if isinstance(table, cst.Name) and table.value in tables:
                    table = tables[table.value]
                if (
                    isinstance(table, cst.Dict)
                    and len(node.slice) == 1
                    and isinstance(node.slice[0].slice, cst.Index)
                    and isinstance(node.slice[0].slice.value, cst.Name)
                    and node.slice[0].slice.value.value in params
                ):
                    name = node.slice[0].slice.value.value
                    for element in table.elements:
                        if isinstance(element, cst.DictElement):
                            note(name, string_value(element.key))

            def visit_If(self, node: cst.If) -> None:
                test = node.test
                if (
                    isinstance(test, cst.Comparison)
                    and len(test.comparisons) == 1
                    and isinstance(test.comparisons[0].operator, cst.Equal)
                ):
                    left, right = test.left, test.comparisons[0].comparator
                    if isinstance(right, cst.Name):
                        left, right = right, left
                    if isinstance(left, cst.Name) and left.value in params:
                        folded = fold(right, {}, 0)
                        if folded.known:
                            note(left.value, folded.value)

            def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
                return node is fn

            def visit_ClassDef(self, node: cst.ClassDef) -> bool:
                return False

        fn.visit(Visitor())
        for name, values in tested.items():
            if 1 < len(values) <= MAX_FORKS:
                return name, tuple(values)
        return None


# ---- helpers ------------------------------------------------------------------------------


def _is_main_guard(test: cst.BaseExpression) -> bool:
    """``__name__ == "__main__"``."""
    import libcst as cst

    if not isinstance(test, cst.Comparison) or len(test.comparisons) != 1:
        return False
    left, right = test.left, test.comparisons[0].comparator
    names = {
        getattr(left, "value", None),
        string_value(right),
        string_value(left),
        getattr(right, "value", None),
    }
    return "__name__" in names and "__main__" in names
