"""Calls in the data flow (`flow`): containers, copies, merges, getters and the methods of
config objects, instances of the package's classes, and calls of its functions followed with
their arguments bound (bounded by `MAX_CALL_DEPTH`).

`CallFlow` builds on `flow_values.ValueFlow`; `flow_statements.StatementFlow` builds on it.
"""

from __future__ import annotations

from collections.abc import Iterable
from collections.abc import Mapping as AbcMapping
from typing import TYPE_CHECKING

from shapelint.core.source import Mapping, Node, Scalar, Sequence
from shapelint.readers import hooks
from shapelint.readers.python.evaluate import Folded, fold, string_value
from shapelint.readers.python.flow_values import Frame, ValueFlow, _first_line, _forget_all, _spread
from shapelint.readers.python.inherit import ClassFields, Function, ModuleResolver, base_name
from shapelint.readers.python.objects import Obj, unknown
from shapelint.readers.python.scope import suite_blocks
from shapelint.readers.python.values import is_config_like, mark_shared

if TYPE_CHECKING:
    import libcst as cst
    from libcst.metadata import CodeRange

# How deep calls of package functions nest while one is followed.
MAX_CALL_DEPTH = 12


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


class CallFlow(ValueFlow):
    """Evaluates calls (the module docstring of `flow`)."""

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

    # ---- what `flow_statements.StatementFlow` provides -------------------------------------

    def run(self, body: Iterable[cst.BaseStatement], frame: Frame) -> None:
        """Follow statements (`flow_statements.StatementFlow.run`)."""
        raise NotImplementedError

    # ---- calls in values ---------------------------------------------------------------------

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
        if not isinstance(host, CallFlow):
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
        self, fn: cst.FunctionDef, call: cst.Call, caller: CallFlow, frame: Frame
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
        if not isinstance(host, CallFlow) or not _decorated(fn, "property"):
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


# ---- helpers ------------------------------------------------------------------------------


def _own_objects(env: AbcMapping[str, Folded]) -> dict[str, Folded]:
    """``env`` with copies of the objects it holds: code read for what it builds (a function
    as written, a call of it from there) must not change the module's own objects."""
    return {
        k: Folded(v.value.copy(), False, True) if isinstance(v.value, Obj) else v
        for k, v in env.items()
    }


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
