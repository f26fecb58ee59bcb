"""A small `ast` evaluator for the benchmark's independent reading of Python configs.

It evaluates literals, names bound earlier and arithmetic — what a person reading a config
module works out in their head — and gives up (:class:`Unknown`) on anything else. Class
attributes are evaluated as Python does: each class body once, in order, its bare names
resolved in the body so far and then in the module (never in the bases); an attribute of a
class is then looked up along its C3 order, bases resolved through the package's imports.
"""

from __future__ import annotations

import ast
import math
import operator
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


class Unknown(Exception):
    """A value the reading cannot determine statically."""


UNKNOWN: Any = object()  # a name bound to a value the reading cannot determine

_BINOPS: dict[type[ast.operator], Callable[[Any, Any], Any]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
    ast.Pow: operator.pow,
}
_CALLS: dict[str, Callable[..., Any]] = {
    "int": int,
    "float": float,
    "min": min,
    "max": max,
    "round": round,
    "len": len,
    "abs": abs,
    "tuple": tuple,
    "list": list,
    "dict": dict,
}
_MATH = {"ceil": math.ceil, "floor": math.floor, "sqrt": math.sqrt}

Lookup = Callable[[str], Any]


def no_names(name: str) -> Any:
    """A lookup that knows no name."""
    raise Unknown(name)


def evaluate(node: ast.AST | None, lookup: Lookup = no_names) -> Any:
    """The value of ``node``; ``lookup`` resolves bare names. Raises :class:`Unknown`."""
    if node is None:
        raise Unknown("nothing")
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.Name):
        value = lookup(node.id)
        if value is UNKNOWN:
            raise Unknown(node.id)
        return value
    if isinstance(node, ast.BinOp) and type(node.op) in _BINOPS:
        left, right = evaluate(node.left, lookup), evaluate(node.right, lookup)
        try:
            return _BINOPS[type(node.op)](left, right)
        except (TypeError, ZeroDivisionError, ValueError, OverflowError) as exc:
            raise Unknown(str(exc)) from None
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        value = evaluate(node.operand, lookup)
        if not isinstance(value, (int, float)):
            raise Unknown("-")
        return -value
    if isinstance(node, (ast.Tuple, ast.List)):
        return [evaluate(e, lookup) for e in node.elts]
    if isinstance(node, ast.Dict):
        out = {}
        for k, v in zip(node.keys, node.values, strict=True):
            if k is None:
                raise Unknown("**")
            out[evaluate(k, lookup)] = evaluate(v, lookup)
        return out
    if isinstance(node, ast.Subscript):
        base = evaluate(node.value, lookup)
        index = evaluate(node.slice, lookup)
        try:
            return base[index]
        except (KeyError, IndexError, TypeError):
            raise Unknown("subscript") from None
    if isinstance(node, ast.Call) and not node.keywords:
        fn = node.func
        name = fn.id if isinstance(fn, ast.Name) else None
        if (
            isinstance(fn, ast.Attribute)
            and isinstance(fn.value, ast.Name)
            and fn.value.id == "math"
            and fn.attr in _MATH
        ):
            args = [evaluate(a, lookup) for a in node.args]
            return _MATH[fn.attr](*args)
        if name in _CALLS:
            args = [evaluate(a, lookup) for a in node.args]
            try:
                return _CALLS[name](*args)
            except (TypeError, ValueError):
                raise Unknown(name) from None
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "dict":
        if node.args:
            raise Unknown("dict(...)")
        return {k.arg: evaluate(k.value, lookup) for k in node.keywords if k.arg}
    raise Unknown(type(node).__name__)


def try_eval(node: ast.AST | None, lookup: Lookup = no_names) -> Any:
    """:func:`evaluate`, or ``None`` when unknown."""
    try:
        return evaluate(node, lookup)
    except Unknown:
        return None


def as_int(value: Any) -> int | None:
    """An integer value (an integral float too), else ``None``."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return None


def chain(*scopes: Mapping[str, Any]) -> Lookup:
    """A lookup through ``scopes`` in order."""

    def lookup(name: str) -> Any:
        for scope in scopes:
            if name in scope:
                return scope[name]
        raise Unknown(name)

    return lookup


def module_constants(tree: ast.Module) -> dict[str, Any]:
    """Module-level ``NAME = expr`` bindings, in order; undeterminable ones are UNKNOWN."""
    env: dict[str, Any] = {}
    for stmt in tree.body:
        targets: list[ast.expr] = []
        value: ast.expr | None = None
        if isinstance(stmt, ast.Assign):
            targets, value = stmt.targets, stmt.value
        elif isinstance(stmt, ast.AnnAssign) and stmt.value is not None:
            targets, value = [stmt.target], stmt.value
        for t in targets:
            if isinstance(t, ast.Name):
                try:
                    env[t.id] = evaluate(value, chain(env))
                except Unknown:
                    env[t.id] = UNKNOWN
    return env


def keywords(call: ast.Call, lookup: Lookup = no_names) -> dict[str, Any]:
    """A call's keyword arguments, each evaluated or UNKNOWN (``**`` ones are skipped)."""
    out: dict[str, Any] = {}
    for kw in call.keywords:
        if kw.arg is None:
            continue
        try:
            out[kw.arg] = evaluate(kw.value, lookup)
        except Unknown:
            out[kw.arg] = UNKNOWN
    return out


def call_name(node: ast.AST) -> str:
    """The dotted name a call calls (``a.b.C(...)`` → ``a.b.C``), else ``""``."""
    if isinstance(node, ast.Call):
        node = node.func
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
        return ".".join(reversed(parts))
    return ""


def parse(path: Path) -> ast.Module:
    """Parse a Python file (an unparsable one is an empty module)."""
    try:
        return ast.parse(path.read_text(encoding="utf-8", errors="replace"))
    except (SyntaxError, ValueError):
        return ast.Module(body=[], type_ignores=[])


@dataclass
class ClassInfo:
    """A class of the package: where it is, its bases and its evaluated body."""

    module: str
    name: str
    path: Path
    line: int
    node: ast.ClassDef
    bases: list[str] = field(default_factory=list)  # qualified "module:Class", or "?name"
    attrs: dict[str, Any] = field(default_factory=dict)
    lines: dict[str, int] = field(default_factory=dict)

    @property
    def qual(self) -> str:
        """``module:Class``."""
        return f"{self.module}:{self.name}"


class ClassWorld:
    """The classes of a package tree, read with `ast` (never imported).

    ``root`` is the directory the dotted module names are relative to (``paxml/tasks/x.py``
    under ``root`` is module ``paxml.tasks.x``).
    """

    def __init__(self, root: Path, files: list[Path]) -> None:
        self.root = root
        self.classes: dict[str, ClassInfo] = {}
        self.functions: dict[str, ast.FunctionDef] = {}
        self.modules: dict[str, tuple[Path, ast.Module, dict[str, Any]]] = {}
        self.imports: dict[str, dict[str, str]] = {}
        for path in files:
            parts = path.relative_to(root).with_suffix("").parts
            mod = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
            tree = parse(path)
            self.modules[mod] = (path, tree, module_constants(tree))
        for mod, (path, tree, consts) in self.modules.items():
            imports = self.imports[mod] = self._imports(mod, tree)
            for stmt in tree.body:
                if isinstance(stmt, ast.FunctionDef):
                    self.functions[f"{mod}:{stmt.name}"] = stmt
                if isinstance(stmt, ast.ClassDef):
                    info = ClassInfo(mod, stmt.name, path, stmt.lineno, stmt)
                    info.bases = [self._resolve(mod, imports, b) for b in stmt.bases]
                    self._body(info, consts)
                    self.classes[info.qual] = info

    def _imports(self, mod: str, tree: ast.Module) -> dict[str, str]:
        """Local name → qualified module (``m``) or class (``m:C``)."""
        out: dict[str, str] = {}
        for stmt in tree.body:
            if isinstance(stmt, ast.ImportFrom):
                base = stmt.module or ""
                if stmt.level:
                    parent = mod.split(".")[: -stmt.level]
                    base = ".".join([*parent, *([base] if base else [])])
                for alias in stmt.names:
                    local = alias.asname or alias.name
                    sub = f"{base}.{alias.name}" if base else alias.name
                    out[local] = sub if sub in self.modules else f"{base}:{alias.name}"
            elif isinstance(stmt, ast.Import):
                for alias in stmt.names:
                    out[alias.asname or alias.name.split(".")[0]] = (
                        alias.name if alias.asname else alias.name.split(".")[0]
                    )
        return out

    def _resolve(self, mod: str, imports: dict[str, str], node: ast.expr) -> str:
        dotted = call_name(node) if not isinstance(node, ast.Call) else ""
        if not dotted:
            return "?"
        head, _, rest = dotted.partition(".")
        if not rest:
            return imports.get(head, f"{mod}:{head}")
        target = imports.get(head, head)
        if ":" in target:
            return "?" + dotted
        full = f"{target}.{rest}"
        modname, _, cls = full.rpartition(".")
        return f"{modname}:{cls}"

    def _body(self, info: ClassInfo, consts: dict[str, Any]) -> None:
        for stmt in info.node.body:
            targets: list[ast.expr] = []
            value: ast.expr | None = None
            if isinstance(stmt, ast.Assign):
                targets, value = stmt.targets, stmt.value
            elif isinstance(stmt, ast.AnnAssign) and stmt.value is not None:
                targets, value = [stmt.target], stmt.value
            for t in targets:
                if isinstance(t, ast.Name):
                    try:
                        info.attrs[t.id] = evaluate(value, chain(info.attrs, consts))
                    except Unknown:
                        info.attrs[t.id] = UNKNOWN
                    info.lines[t.id] = stmt.lineno

    def resolve(self, mod: str, node: ast.expr) -> str:
        """The qualified ``module:name`` a (dotted) name in ``mod`` refers to, else ``"?"``."""
        return self._resolve(mod, self.imports.get(mod, {}), node)

    def mro(self, qual: str) -> list[ClassInfo]:
        """C3 order of the classes known to the world (unknown bases are left out)."""

        def linear(q: str, seen: tuple[str, ...]) -> list[str]:
            info = self.classes.get(q)
            if info is None or q in seen:
                return []
            seqs = [linear(b, (*seen, q)) for b in info.bases if b in self.classes]
            seqs = [s for s in seqs if s] + [[b for b in info.bases if b in self.classes]]
            out = [q]
            while any(seqs):
                for s in seqs:
                    if not s:
                        continue
                    head = s[0]
                    if not any(head in t[1:] for t in seqs):
                        break
                else:  # inconsistent order: fall back to depth-first
                    head = next(s[0] for s in seqs if s)
                out.append(head)
                seqs = [[x for x in s if x != head] for s in seqs]
            return out

        return [self.classes[q] for q in linear(qual, ())]

    def attr(self, qual: str, name: str) -> Any:
        """An attribute along the C3 order: its value, UNKNOWN, or KeyError when undefined."""
        for info in self.mro(qual):
            if name in info.attrs:
                return info.attrs[name]
        raise KeyError(name)

    def where(self, qual: str, name: str) -> ClassInfo | None:
        """The class that defines ``name`` for ``qual``."""
        for info in self.mro(qual):
            if name in info.attrs:
                return info
        return None

    def subclasses_of(self, quals: set[str]) -> Iterator[ClassInfo]:
        """Every class whose C3 order reaches one of ``quals``."""
        for info in self.classes.values():
            if {c.qual for c in self.mro(info.qual)} & quals:
                yield info


class Builder:
    """Runs builder functions that fill one config object by attribute assignment.

    ``cfg = base()`` (a builder of the package, run first), ``cfg = Ctor(k=v, ...)`` (the
    keywords), ``cfg.k = e``, ``cfg.add_hparam("k", e)`` / ``cfg.set_hparam("k", e)``,
    ``cfg.update(k=v)`` / ``cfg.update({...})``, ``helper(cfg)`` (a function of the package
    that modifies its first parameter) and ``return cfg``. A key set under ``if``, ``for``,
    ``with`` or ``try`` becomes UNKNOWN, and so does every key after a call that passes the
    object to a function outside the package. ``cfg.k`` inside an expression is the value so
    far.
    """

    def __init__(self, world: ClassWorld, constructors: frozenset[str] = frozenset()) -> None:
        self.world = world
        self.constructors = constructors  # dotted names whose keywords start the object

    def build(self, qual: str, depth: int = 0) -> dict[str, Any] | None:
        """The object ``qual`` (``module:function``) returns, or None when not a builder."""
        fn = self.world.functions.get(qual)
        if fn is None or depth > 12:
            return None
        mod = qual.split(":")[0]
        state: dict[str, Any] = {}
        var = self._run(mod, fn.body, None, state, depth, conditional=False)
        return state if var else None

    def modify(self, qual: str, state: dict[str, Any], depth: int) -> bool:
        """Run helper ``qual`` on ``state`` (its first parameter); False when not found."""
        fn = self.world.functions.get(qual)
        if fn is None or depth > 12 or not fn.args.args:
            return False
        mod = qual.split(":")[0]
        self._run(mod, fn.body, fn.args.args[0].arg, state, depth, conditional=False)
        return True

    def _lookup(self, mod: str, var: str | None, state: dict[str, Any]) -> Lookup:
        consts = self.world.modules[mod][2] if mod in self.world.modules else {}
        return chain(consts)

    def _expr(self, node: ast.expr, mod: str, var: str | None, state: dict[str, Any]) -> Any:
        if var is not None:
            node = _Substitute(var, state).visit(_copy(node))
        return evaluate(node, self._lookup(mod, var, state))

    def _set(
        self,
        key: str,
        node: ast.expr,
        mod: str,
        var: str | None,
        state: dict[str, Any],
        conditional: bool,
    ) -> None:
        if conditional:
            state[key] = UNKNOWN
            return
        try:
            state[key] = self._expr(node, mod, var, state)
        except Unknown:
            state[key] = UNKNOWN

    def _start(self, mod: str, value: ast.expr, state: dict[str, Any], depth: int) -> bool:
        if not isinstance(value, ast.Call):
            return False
        qual = self.world.resolve(mod, value.func)
        if qual in self.world.functions:
            built = self.build(qual, depth + 1)
            if built is None:
                return False
            state.clear()
            state.update(built)
            return True
        if call_name(value) in self.constructors or call_name(value).split(".")[-1] in {
            c.split(".")[-1] for c in self.constructors
        }:
            state.clear()
            state.update(keywords(value, chain(self.world.modules.get(mod, (0, 0, {}))[2])))
            for arg in value.args:  # ConfigDict({...}) / HParams(**{...})
                if isinstance(arg, ast.Dict):
                    d = try_eval(arg)
                    if isinstance(d, dict):
                        state.update(d)
            return True
        return False

    def _run(
        self,
        mod: str,
        body: list[ast.stmt],
        var: str | None,
        state: dict[str, Any],
        depth: int,
        conditional: bool,
    ) -> str | None:
        for stmt in body:
            if isinstance(stmt, (ast.If, ast.For, ast.While, ast.With, ast.Try)):
                blocks = [getattr(stmt, a, []) for a in ("body", "orelse", "finalbody")]
                blocks += [h.body for h in getattr(stmt, "handlers", [])]
                for block in blocks:
                    var = self._run(mod, block, var, state, depth, True) or var
                continue
            if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1:
                target = stmt.targets[0]
                if isinstance(target, ast.Name) and var is None and not conditional:
                    if self._start(mod, stmt.value, state, depth):
                        var = target.id
                    continue
                if (
                    isinstance(target, ast.Attribute)
                    and isinstance(target.value, ast.Name)
                    and target.value.id == var
                ):
                    self._set(target.attr, stmt.value, mod, var, state, conditional)
                    continue
                if (
                    isinstance(target, ast.Subscript)
                    and isinstance(target.value, ast.Name)
                    and target.value.id == var
                    and isinstance(target.slice, ast.Constant)
                ):
                    self._set(str(target.slice.value), stmt.value, mod, var, state, conditional)
                    continue
            if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call) and var:
                self._call(mod, stmt.value, var, state, depth, conditional)
                continue
            if isinstance(stmt, ast.Return):
                if var and isinstance(stmt.value, ast.Name) and stmt.value.id == var:
                    return var
                if (
                    isinstance(stmt.value, ast.Call)
                    and var is None
                    and not conditional
                    and self._start(mod, stmt.value, state, depth)
                ):
                    return "<return>"
                return None if not conditional else var
        return var

    def _call(
        self,
        mod: str,
        call: ast.Call,
        var: str,
        state: dict[str, Any],
        depth: int,
        conditional: bool,
    ) -> None:
        fn = call.func
        if isinstance(fn, ast.Attribute) and isinstance(fn.value, ast.Name) and fn.value.id == var:
            if fn.attr in {"add_hparam", "set_hparam"} and len(call.args) == 2:
                key = try_eval(call.args[0])
                if isinstance(key, str):
                    self._set(key, call.args[1], mod, var, state, conditional)
            elif fn.attr == "update":
                for kw in call.keywords:
                    if kw.arg:
                        self._set(kw.arg, kw.value, mod, var, state, conditional)
                for arg in call.args:
                    if isinstance(arg, ast.Dict):
                        for k, v in zip(arg.keys, arg.values, strict=True):
                            if isinstance(k, ast.Constant) and isinstance(k.value, str):
                                self._set(k.value, v, mod, var, state, conditional)
            return
        passes = any(isinstance(a, ast.Name) and a.id == var for a in call.args)
        if not passes:
            return
        qual = self.world.resolve(mod, fn)
        if conditional or not self.modify(qual, state, depth + 1):
            for key in list(state):
                state[key] = UNKNOWN
            state["<opaque>"] = call_name(call)


def _copy(node: ast.expr) -> ast.expr:
    return ast.parse(ast.unparse(node), mode="eval").body


class _Substitute(ast.NodeTransformer):
    """Replaces ``var.k`` (and ``var["k"]``) by the value set so far."""

    def __init__(self, var: str, state: dict[str, Any]) -> None:
        self.var, self.state = var, state

    def visit_Attribute(self, node: ast.Attribute) -> ast.AST:
        if isinstance(node.value, ast.Name) and node.value.id == self.var:
            if node.attr in self.state and self.state[node.attr] is not UNKNOWN:
                return ast.Constant(self.state[node.attr])
            raise Unknown(node.attr)
        return self.generic_visit(node)

    def visit_Subscript(self, node: ast.Subscript) -> ast.AST:
        if (
            isinstance(node.value, ast.Name)
            and node.value.id == self.var
            and isinstance(node.slice, ast.Constant)
        ):
            key = str(node.slice.value)
            if key in self.state and self.state[key] is not UNKNOWN:
                return ast.Constant(self.state[key])
            raise Unknown(key)
        return self.generic_visit(node)
