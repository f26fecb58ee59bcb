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
from collections.abc import Mapping as AbcMapping
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from shapelint.core.source import Mapping, Node, Scalar, Sequence, Span
from shapelint.readers import hooks
from shapelint.readers.python.classes import ClassReader
from shapelint.readers.python.evaluate import NO_VALUE, Folded, binary, fold, member, string_value
from shapelint.readers.python.inherit import ClassFields, Function, ModuleResolver, base_name
from shapelint.readers.python.objects import Obj, unknown
from shapelint.readers.python.scope import bound_names, suite_blocks, target_names
from shapelint.readers.python.values import MAX_ITEMS, is_config_like, mark_shared, quote_key

if TYPE_CHECKING:
    import libcst as cst
    from libcst.metadata import CodeRange

# How deep calls of package functions nest while one is followed.
MAX_CALL_DEPTH = 12
# The most items a loop over a known collection is unrolled for.
MAX_UNROLL = 64
# The most values one function is read for when it selects on a parameter.
MAX_FORKS = 64

# Calls that make an empty config object, by last name (a dict, a namespace, a config
# library's container); the dialects add their frameworks' (`hooks.PythonIdioms.containers`).
CONTAINERS = frozenset(
    {"dict", "OrderedDict", "SimpleNamespace", "Namespace", "ConfigDict", "EasyDict", "AttrDict"}
)
# Calls that read an object without changing it, by last name, and modules whose functions
# only log: an object passed to them stays what it was.
_READERS = frozenset(
    {
        "print",
        "len",
        "isinstance",
        "issubclass",
        "str",
        "repr",
        "type",
        "id",
        "hash",
        "bool",
        "sorted",
        "list",
        "tuple",
        "set",
        "format",
        "hasattr",
        "getattr",
        "vars",
        "dir",
        "iter",
        "enumerate",
        "zip",
        "any",
        "all",
    }
)
_LOGGING = frozenset({"logging", "logger", "log", "warnings", "LOGGER", "LOG", "_LOGGER"})
# Methods of a config object that read it (``cfg.get``, ``cfg.items()``) or copy it.
_READ_METHODS = frozenset({"get", "items", "keys", "values", "copy", "to_dict", "lock"})
_COPIES = frozenset({"copy", "deepcopy"})


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


class FlowReader(ClassReader):
    """Follows function bodies (see the module docstring); `Reader` builds on it."""

    def __init__(
        self,
        path: str,
        text: str,
        module: cst.Module,
        positions: AbcMapping[cst.CSTNode, CodeRange],
        resolver: ModuleResolver,
    ) -> None:
        super().__init__(path, text, module, positions, resolver)
        # The module's constants as the module-level statements leave them (a function's
        # globals), its functions by name, and the functions the ``__main__`` block calls.
        self.globals: dict[str, Folded] = {}
        self.functions: dict[str, Function] = {}
        self.entry_points: set[str] = {"main"}
        # The class whose methods are being read (``cls`` in a classmethod).
        self.current_class: ClassFields | None = None
        self.current_class_name = ""
        self.memo: dict[int, Node | Obj | None] = {}
        # True while the module's own statements run: the functions they call then change
        # the module's objects (elsewhere a function works on copies of them).
        self.flowing_module = False

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

    def call_value(self, call: cst.Call, frame: Frame, top: bool = False) -> Node | Obj:
        """What a call gives: a container, a copy, a merge, a getter, an instance of a package
        class, what a package function returns, or a keyword call's arguments."""
        import libcst as cst

        func = call.func
        name = base_name(func) or ""
        last = name.rsplit(".", 1)[-1]
        positional = [a for a in call.args if a.keyword is None and not a.star]
        simple = all(a.keyword is not None or not a.star for a in call.args)
        if last in ("len", "tuple", "list") and name == last and len(call.args) == 1 and simple:
            held = self.value(call.args[0].value, frame)
            if isinstance(held, Sequence):
                if last == "len":
                    return Scalar(len(held.items), self.span(call), expression=self.source(call))
                return held
        # Methods of an object the code built.
        if isinstance(func, cst.Attribute):
            owner = self.held(func.value, frame)
            if owner is not None:
                return self.method(owner, func.attr.value, call, frame)
        if (last == "getattr" or last in hooks.GETTERS) and len(positional) in (2, 3) and simple:
            return self.getter(call, positional, frame)
        if (last == "hasattr" or last in hooks.HAS) and len(positional) == 2 and simple:
            return self.has(call, positional, frame)
        if last == "setattr" and len(positional) == 3 and simple:
            owner = self.held(positional[0].value, frame)
            key = string_value(positional[1].value)
            if owner is not None and key is not None:
                owner.set(
                    key, self.span(positional[1].value), self.value(positional[2].value, frame)
                )
                return unknown(self.span(call), "None")
        if last in _COPIES and len(positional) == 1 and len(call.args) == 1:
            source = self.value(positional[0].value, frame)
            if isinstance(source, Obj):
                return source.copy()
        if last in hooks.MERGES and len(positional) == 2 and len(call.args) == 2:
            base = self.value(positional[0].value, frame)
            updates = self.value(positional[1].value, frame)
            if isinstance(base, Obj) and isinstance(updates, Obj):
                merged = base.copy()
                if updates.opaque:
                    merged.opaque = True
                _spread(merged, updates)
                return merged
        if (last in CONTAINERS or last in hooks.CONTAINERS) and not positional and simple:
            return self.container(call, frame)
        if (last in CONTAINERS or last in hooks.CONTAINERS) and len(positional) == 1 and simple:
            # ``dict(base, k=v)``, ``ConfigDict({"size": (16, 16)})``: a copy of a known object.
            source = self.value(positional[0].value, frame)
            if isinstance(source, Obj):
                obj = source.copy()
                obj.kind = "dict" if last == "dict" else "call"
                obj.callee = "" if last == "dict" else self.source(func)
                self.keywords_into(obj, call, frame)
                return obj
        # Reading another module costs a parse: only for calls that receive an object, and
        # for calls whose value is bound or returned and may be a config (no arguments, a
        # class by its name); this module's own functions and classes cost nothing to find.
        local = isinstance(func, cst.Name) and (
            func.value in self.functions or isinstance(self.bindings.get(func.value), ClassFields)
        )
        wanted = ((top or local) and (not call.args or last[:1].isupper())) or any(
            self.held(a.value, frame) is not None for a in call.args
        )
        target = self.callable(func, frame) if wanted else None
        if isinstance(target, ClassFields):
            return self.instance(call, target, frame)
        if isinstance(target, Function) and not is_config_like(call):
            return self.invoke(target, call, frame)
        if is_config_like(call):
            obj = Obj(self.span(call), kind="call", callee=self.source(func))
            self.keywords_into(obj, call, frame)
            return obj
        if target is None and call.args and all(a.star == "**" for a in call.args):
            # ``Config(**table[name])`` of a known dict: a keyword call of its entries.
            obj = Obj(self.span(call), kind="call", callee=self.source(func))
            if self.keywords_into(obj, call, frame):
                return obj
        if not call.args and target is None and isinstance(func, cst.Name | cst.Attribute):
            # ``cfg = ModelCfg()`` of a class not read: an object its statements fill in.
            return Obj(self.span(call), kind="call", callee=self.source(func))
        self.taint(call, frame)
        return self.node(call, frame.env, 0)

    def container(self, call: cst.Call, frame: Frame) -> Obj:
        """``dict(k=v)``, ``ConfigDict()``: an object holding exactly what the call states."""
        kind = "dict" if base_name(call.func) == "dict" else "call"
        obj = Obj(
            self.span(call),
            kind=kind,
            callee="" if kind == "dict" else self.source(call.func),
            complete=True,
        )
        self.keywords_into(obj, call, frame)
        for arg in call.args:
            if arg.star == "**" and not isinstance(self.value(arg.value, frame), Obj):
                obj.complete = False
        return obj

    def keywords_into(self, obj: Obj, call: cst.Call, frame: Frame) -> bool:
        """Set the call's keywords (and ``**`` spreads) on ``obj``; False when a spread is
        not known (any key may then have been given)."""
        known = True
        for arg in call.args:
            if arg.keyword is not None:
                obj.set(arg.keyword.value, self.span(arg.keyword), self.value(arg.value, frame))
            elif arg.star == "**":
                spread = self.value(arg.value, frame)
                if isinstance(spread, Obj) and not spread.opaque and spread.complete:
                    _spread(obj, spread)
                else:
                    _forget_all(obj, self.span(arg), self.source(arg))
                    obj.complete = False
                    known = False
        return known

    def method(self, owner: Obj, method: str, call: cst.Call, frame: Frame) -> Node | Obj:
        """A method called on an object the code built."""
        positional = [a for a in call.args if a.keyword is None and not a.star]
        if method in hooks.SETTERS and len(positional) == 2 and len(call.args) == 2:
            key = string_value(positional[0].value)
            if key is not None:
                owner.set(
                    key, self.span(positional[0].value), self.value(positional[1].value, frame)
                )
                return unknown(self.span(call), "None")
        if method == "update":
            for arg in call.args:
                if arg.keyword is None and not arg.star:
                    spread = self.value(arg.value, frame)
                    if isinstance(spread, Obj) and not spread.opaque:
                        _spread(owner, spread)
                    else:
                        owner.opaque = True
                elif arg.star:
                    owner.opaque = True
            self.keywords_into(owner, call, frame)
            return unknown(self.span(call), "None")
        if method == "get" and len(positional) in (1, 2) and len(call.args) == len(positional):
            key = string_value(positional[0].value)
            if key is not None and not owner.opaque:
                held = owner.get(key)
                if held is not None:
                    return held
                if owner.complete:
                    if len(positional) == 2:
                        return self.value(positional[1].value, frame)
                    return Scalar(None, self.span(call))
            return unknown(self.span(call), _first_line(self.source(call)))
        if method == "copy" and not call.args:
            return owner.copy()
        if method in ("pop", "setdefault") and positional and len(call.args) == len(positional):
            popped = self.pop(owner, method, positional, call, frame)
            if popped is not None:
                return popped
        if method not in _READ_METHODS:
            owner.hand_over()  # ``cfg.freeze()``, ``cfg.set_defaults(…)``: not known
        self.taint(call, frame)
        return unknown(self.span(call), _first_line(self.source(call)))

    def pop(
        self, owner: Obj, method: str, positional: list[cst.Arg], call: cst.Call, frame: Frame
    ) -> Node | Obj | None:
        """``d.pop("k"[, default])`` takes the key out; ``d.setdefault("k", v)`` sets it when
        the object is known to lack it. None when not known (the caller gives up on ``d``)."""
        key = string_value(positional[0].value)
        if key is None or owner.opaque or len(positional) > 2:
            return None
        held = owner.get(key)
        if method == "pop":
            if held is not None:
                del owner.values[key], owner.key_spans[key]
                return held
            if owner.complete and len(positional) == 2:
                return self.value(positional[1].value, frame)
            return None
        if held is not None:
            return held
        if not owner.complete or len(positional) != 2:
            return None
        value = self.value(positional[1].value, frame)
        owner.set(key, self.span(positional[0].value), value)
        return value

    def getter(self, call: cst.Call, positional: list[cst.Arg], frame: Frame) -> Node | Obj:
        """``getattr(obj, "key", default)``: the object's value, else (an object known to
        lack the key) the default, else unknown."""
        owner = self.held(positional[0].value, frame)
        key = string_value(positional[1].value)
        if owner is not None and key is not None and not owner.opaque:
            held = owner.get(key)
            if held is not None:
                return held
            if owner.complete and len(positional) == 3:
                return self.value(positional[2].value, frame)
        return unknown(self.span(call), _first_line(self.source(call)))

    def has(self, call: cst.Call, positional: list[cst.Arg], frame: Frame) -> Node:
        owner = self.held(positional[0].value, frame)
        key = string_value(positional[1].value)
        if owner is not None and key is not None and not owner.opaque:
            if owner.get(key) is not None:
                return Scalar(True, self.span(call), expression=self.source(call))
            if owner.complete:
                return Scalar(False, self.span(call), expression=self.source(call))
        return unknown(self.span(call), _first_line(self.source(call)))

    def taint(self, call: cst.Call, frame: Frame) -> None:
        """A call the reader does not follow: the objects it receives may have changed."""
        name = base_name(call.func) or ""
        head, last = name.split(".", 1)[0], name.rsplit(".", 1)[-1]
        if last in _READERS or head in _LOGGING:
            return
        for arg in call.args:
            held = self.held(arg.value, frame)
            if held is not None:
                held.hand_over()

    # ---- calls of the package's functions and classes ----------------------------------------

    def callable(self, func: cst.BaseExpression, frame: Frame) -> ClassFields | Function | None:
        """The package class or function a call's callee names, read statically."""
        import libcst as cst

        name = base_name(func)
        if name is None:
            return None
        head, _, rest = name.partition(".")
        if head in frame.env:
            return None  # a local shadows it
        if head == "cls" and self.current_class is not None:
            if not rest:
                return self.current_class
            return next((m for m in self.current_class.methods if m.name == rest), None)
        if not rest and head in self.functions and head not in self.bindings:
            return self.functions[head]
        if isinstance(func, cst.Name) and head in self.functions:
            return self.functions[head]
        found = self.resolver.resolve(self.path, self.bindings, name)
        return found if isinstance(found, ClassFields | Function) else None

    def invoke(self, target: Function, call: cst.Call, frame: Frame) -> Node | Obj:
        """Follow a package function's body with the call's arguments bound; its value."""
        host = target.host
        if not isinstance(host, FlowReader):
            return unknown(self.span(call), _first_line(self.source(call)))
        fn = target.node
        steps = self.resolver.steps
        cached = not call.args and id(fn) in host.memo
        if frame.depth >= MAX_CALL_DEPTH or id(fn) in steps.calling or steps.left <= 0:
            self.taint_all(call, frame)
            return unknown(self.span(call), _first_line(self.source(call)))
        if cached:
            result = host.memo[id(fn)]
        else:
            env = host.bind_arguments(fn, call, self, frame)
            if env is None:
                self.taint_all(call, frame)
                return unknown(self.span(call), _first_line(self.source(call)))
            child = Frame(env, depth=frame.depth + 1)
            steps.calling.add(id(fn))
            outer_class = host.current_class
            try:
                for block in suite_blocks(fn.body):
                    host.run(block, child)
            finally:
                steps.calling.discard(id(fn))
                host.current_class = outer_class
            result = child.result if child.done and not child.unsure else None
            if not call.args:
                host.memo[id(fn)] = result.copy() if isinstance(result, Obj) else result
        if isinstance(result, Obj):
            return result.copy() if cached else result
        if isinstance(result, Scalar | Mapping | Sequence):
            return result
        return unknown(self.span(call), _first_line(self.source(call)))

    def taint_all(self, call: cst.Call, frame: Frame) -> None:
        for arg in call.args:
            held = self.held(arg.value, frame)
            if held is not None:
                held.hand_over()

    def bind_arguments(
        self, fn: cst.FunctionDef, call: cst.Call, caller: FlowReader, frame: Frame
    ) -> dict[str, Folded] | None:
        """The callee's environment: its module's constants and its parameters bound to the
        call's arguments (defaults where the call leaves them out; unknown otherwise). None
        when the call cannot be matched (``*args`` of unknown length)."""
        import libcst as cst

        env = dict(self.globals) if self.flowing_module else _own_objects(self.globals)
        params = fn.params
        ordered = [*params.posonly_params, *params.params]
        if _decorated(fn, "classmethod") or (ordered and ordered[0].name.value in ("self", "cls")):
            ordered = ordered[1:]
        values: dict[str, Node | Obj] = {}
        index = 0
        extra: list[Node | Obj] = []
        for arg in call.args:
            if arg.star == "*":
                return None
            if arg.star == "**":
                spread = caller.value(arg.value, frame)
                if not isinstance(spread, Obj) or spread.opaque or not spread.complete:
                    return None
                values.update(spread.values)
                continue
            value = caller.value(arg.value, frame)
            if arg.keyword is not None:
                values[arg.keyword.value] = value
            elif index < len(ordered):
                values[ordered[index].name.value] = value
                index += 1
            else:
                extra.append(value)
        if extra and not isinstance(params.star_arg, cst.Param):
            return None
        names = {p.name.value for p in (*ordered, *params.kwonly_params)}
        kwargs = Obj(self.span(fn.name), complete=True)
        for key, value in list(values.items()):
            if key not in names:
                if not isinstance(params.star_kwarg, cst.Param):
                    return None
                kwargs.set(key, self.span(fn.name), value)
                del values[key]
        for param in (*ordered, *params.kwonly_params):
            name = param.name.value
            env.pop(name, None)
            if name in values:
                value = values[name]
            elif param.default is not None:
                value = self.value(param.default, Frame(dict(self.globals)))
            else:
                continue
            if isinstance(value, Obj | Sequence):
                env[name] = Folded(value, False, True)
            elif isinstance(value, Scalar) and value.known:
                env[name] = Folded(value.value, True, True)
        if isinstance(params.star_arg, cst.Param):
            name = params.star_arg.name.value
            if all(isinstance(v, Scalar) and v.known for v in extra):
                env[name] = Folded(
                    tuple(v.value for v in extra if isinstance(v, Scalar)), True, True
                )
            else:
                env.pop(name, None)
        if isinstance(params.star_kwarg, cst.Param):
            env[params.star_kwarg.name.value] = Folded(kwargs, False, True)
        for name in ("self", "cls"):
            if name in env and not isinstance(env[name].value, Obj):
                env.pop(name, None)
        return env

    def instance(self, call: cst.Call, fields: ClassFields, frame: Frame) -> Obj:
        """An instance of a package class: positional arguments in field order, keywords, and
        the class defaults for the fields the call leaves out; then its properties."""
        callee = self.source(call.func)
        if callee == "cls" and fields is self.current_class:
            callee = self.current_class_name  # ``return cls(**config)`` in a classmethod
        obj = Obj(
            self.span(call),
            kind="call",
            callee=callee,
            complete=not fields.open_bases,
            open_bases=fields.open_bases,
        )
        order = fields.positional or ()
        index = 0
        for arg in call.args:
            if arg.keyword is not None or arg.star:
                continue
            if index >= len(order):
                obj.opaque = True  # more positional arguments than fields we know
                return obj
            obj.set(order[index], self.span(arg.value), self.value(arg.value, frame))
            index += 1
        if not self.keywords_into(obj, call, frame):
            obj.opaque = True  # ``cls(**conf_dict)`` of a dict not known: any field given
            return obj
        for entry in (*fields.fields, *(fields.init or ())):
            if entry.key not in obj.values and not entry.key.startswith("_"):
                obj.set(entry.key, entry.key_span, mark_shared(entry.value))
        for method in fields.methods:
            self.property_into(obj, method, frame)
        if not call.args:
            obj.pristine = obj.signature()
        return obj

    def property_into(self, obj: Obj, method: Function, frame: Frame) -> None:
        """A property whose body is one ``return`` of the instance's fields (``ffn_size =
        4 * self.emb_size``): its value on this instance, as a key of the object."""
        import libcst as cst

        host = method.host
        fn = method.node
        if not isinstance(host, FlowReader) or not _decorated(fn, "property"):
            return
        if method.name in obj.values:
            return
        body = [s for b in suite_blocks(fn.body) for s in b]
        body = [s for s in body if not _docstring(s)]
        if len(body) != 1 or not isinstance(body[0], cst.SimpleStatementLine):
            return
        returned = body[0].body[0] if len(body[0].body) == 1 else None
        if not isinstance(returned, cst.Return) or returned.value is None:
            return
        params = [*fn.params.posonly_params, *fn.params.params]
        if len(params) != 1:
            return
        env = dict(host.globals)
        env[params[0].name.value] = Folded(obj, False, True)
        folded = fold(returned.value, env, 0)
        if folded.known and not isinstance(folded.value, bool):
            span = host.span(returned.value)
            value = Scalar(folded.value, span, shared=True, expression=host.source(returned.value))
            obj.set(method.name, host.span(fn.name), value)

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

_AUGMENTED = {
    "AddAssign": "Add",
    "SubtractAssign": "Subtract",
    "MultiplyAssign": "Multiply",
    "DivideAssign": "Divide",
    "FloorDivideAssign": "FloorDivide",
    "ModuloAssign": "Modulo",
    "PowerAssign": "Power",
}


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


def _own_objects(env: AbcMapping[str, Folded]) -> dict[str, Folded]:
    """``env`` with copies of the objects it holds: code read for what it builds (a function
    as written, a call of it from there) must not change the module's own objects."""
    return {
        k: Folded(v.value.copy(), False, True) if isinstance(v.value, Obj) else v
        for k, v in env.items()
    }


def _constants(env: dict[str, Folded]) -> dict[str, Folded]:
    """``env`` without its objects: in ``main()``, a config a call receives by name
    (``runner=ModelRunner(model=grok_1_model)``) is the one written above, not a second."""
    return {k: v for k, v in env.items() if not isinstance(v.value, Obj)}


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


def _merge_maybe(original: Obj, copy: Obj, span: object, expression: str) -> None:
    """After a block that may not have run: what it changed in ``copy`` is unknown in
    ``original``."""
    from shapelint.core.source import Span

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


def _decorated(fn: cst.FunctionDef, name: str) -> bool:
    import libcst as cst

    for decorator in fn.decorators:
        expr = decorator.decorator
        if isinstance(expr, cst.Call):
            expr = expr.func
        found = base_name(expr)
        if found is not None and found.rsplit(".", 1)[-1] == name:
            return True
    return False


def _docstring(stmt: cst.BaseStatement) -> bool:
    import libcst as cst

    return (
        isinstance(stmt, cst.SimpleStatementLine)
        and len(stmt.body) == 1
        and isinstance(stmt.body[0], cst.Expr)
        and isinstance(stmt.body[0].value, cst.SimpleString | cst.ConcatenatedString)
    )


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
