"""Class inheritance, read statically: a class's fields include those of its base classes.

A config class rarely states every value itself: ``@dataclass class Qwen3ModelProvider8B(
Qwen3ModelProvider)`` states its widths and inherits ``kv_channels = 128`` and the vocab from
its base, which inherits more from ``GPTModelProvider``. The reader follows each base class
without importing anything:

- a class defined earlier in the same module;
- a name imported from a module of the same package tree: relative imports (``from .qwen
  import Qwen3Config``, ``from ..gpt_provider import GPTModelProvider``) from the importing
  file's directory, and absolute imports whose first component names a directory above the
  importing file (``from megatron.bridge.models.gpt_provider import GPTModelProvider`` read in
  ``…/megatron/bridge/models/qwen/``), as ``module.py`` or ``module/__init__.py``; a package
  ``__init__`` that re-exports the name is followed to where the class is written;
- ``import pkg.module as m`` / ``class X(m.Base)`` likewise.

Fields are dataclass fields and class attributes; Python's rules decide which value wins: the
class's own, then its bases in order (the first base before the second). ``__init__`` keyword
defaults come from the class's own ``__init__`` or, when it has none, from the first base that
has one. Inherited values keep their spans, so a value written in another file points at that
file (``Span.path``): it is read, and never fixed from this file.

A base that cannot be read — not found, outside the package tree, built by a call, a star
import, a file that does not parse — is *open*: the candidate lists it in
``Candidate.open_bases`` and every dim not stated in what was read is unknown (the dialects
derive nothing for it). A few bases are known to add no model-shape values and are not read:
``object``, ``abc.ABC``, ``typing`` forms (``Generic[T]``, ``Protocol``, ``NamedTuple``,
``TypedDict``), ``enum.Enum``, and the framework roots whose defaults a dialect models
itself, as the dialects register them (`shapelint.readers.hooks`: transformers'
``PretrainedConfig``, Megatron-core's ``TransformerConfig``). At most `MAX_MODULES` other
files of at most `MAX_BYTES` each are read per file linted; past that, bases are open.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from shapelint.core import sandbox
from shapelint.core.limits import check_python
from shapelint.core.source import Entry, decode
from shapelint.readers import hooks
from shapelint.readers.python.objects import Steps

if TYPE_CHECKING:
    from collections.abc import Callable

    import libcst as cst

# Other modules read while linting one file, and the largest one read.
MAX_MODULES = 64
MAX_BYTES = 1_000_000
# Imports followed through re-exporting modules before a base is called open.
MAX_HOPS = 16

# Bases that hold no model-shape values, by their last name (any module); the dialects
# register the framework roots whose defaults they model themselves (`hooks.ReaderHooks`).
_NEUTRAL_NAMES = frozenset(
    {
        "object",
        "ABC",
        "Generic",
        "Protocol",
        "NamedTuple",
        "TypedDict",
        "Enum",
        "IntEnum",
        "StrEnum",
    }
)


@dataclass(frozen=True)
class ClassFields:
    """A class's fields as Python sees them: its own and inherited, the last value of each key.

    ``init`` is the ``__init__`` keyword defaults in effect (None: no ``__init__`` read);
    ``open_bases`` names the bases (anywhere up the chain) that could not be read.
    """

    fields: tuple[Entry, ...]
    init: tuple[Entry, ...] | None
    open_bases: tuple[str, ...] = ()
    # The fields a positional call fills, in order (a dataclass's or NamedTuple's fields, or
    # the ``__init__`` parameters); None when the class takes no positional fields.
    positional: tuple[str, ...] | None = None
    # The class's methods and those it inherits (``cls.preset()``, properties of instances).
    methods: tuple[Function, ...] = ()


@dataclass(frozen=True, eq=False)
class Function:
    """A function or method written in a module, with the reader of that module (which
    follows its body: `shapelint.readers.python.flow`)."""

    node: cst.FunctionDef
    host: object

    @property
    def name(self) -> str:
        """The function's name as written."""
        return self.node.name.value


@dataclass(frozen=True)
class Imported:
    """A name bound by an import: ``from <level dots><module> import <name>`` (``name`` None
    for ``import module`` / ``import module as m``)."""

    module: str
    level: int
    name: str | None


Binding = ClassFields | Imported | Function


def overlay(below: tuple[Entry, ...], above: tuple[Entry, ...]) -> tuple[Entry, ...]:
    """``below`` with ``above`` written over it: one entry per key, ``above``'s winning."""
    keys = {e.key for e in above}
    return tuple(e for e in below if e.key not in keys) + above


def inherit(own: ClassFields, bases: list[ClassFields]) -> ClassFields:
    """Combine a class's own fields with its bases' (listed as written, first base first)."""
    fields: tuple[Entry, ...] = ()
    for base in reversed(bases):
        fields = overlay(fields, base.fields)
    fields = overlay(fields, own.fields)
    init = own.init
    if init is None:
        init = next((b.init for b in bases if b.init is not None), None)
    open_bases = [*own.open_bases]
    for base in bases:
        open_bases.extend(b for b in base.open_bases if b not in open_bases)
    methods: dict[str, Function] = {}
    for base in reversed(bases):
        methods.update((m.name, m) for m in base.methods)
    methods.update((m.name, m) for m in own.methods)
    positional = own.positional
    if positional is None:
        positional = next((b.positional for b in bases if b.positional is not None), None)
    return ClassFields(fields, init, tuple(open_bases), positional, tuple(methods.values()))


def import_bindings(small: cst.BaseSmallStatement) -> dict[str, Imported]:
    """The names an import statement binds, and where each comes from."""
    import libcst as cst

    out: dict[str, Imported] = {}
    if isinstance(small, cst.Import):
        for alias in small.names:
            full = alias.evaluated_name
            if alias.evaluated_alias is not None:
                out[alias.evaluated_alias] = Imported(full, 0, None)
            else:
                head = full.split(".")[0]
                out[head] = Imported(head, 0, None)
    elif isinstance(small, cst.ImportFrom) and not isinstance(small.names, cst.ImportStar):
        module = _dotted(small.module) if small.module is not None else ""
        if module is None:
            return out
        level = len(small.relative)
        for alias in small.names:
            name = alias.evaluated_name
            out[alias.evaluated_alias or name] = Imported(module, level, name)
    return out


def base_name(expr: cst.BaseExpression) -> str | None:
    """The dotted name a base class is written as (``Base``, ``m.Base``; ``Generic[T]`` is
    ``Generic``), or None for anything else (a call, a keyword like ``metaclass=``)."""
    import libcst as cst

    if isinstance(expr, cst.Subscript):
        expr = expr.value
    return _dotted(expr)


def _dotted(expr: cst.BaseExpression) -> str | None:
    import libcst as cst

    if isinstance(expr, cst.Name):
        return expr.value
    if isinstance(expr, cst.Attribute):
        head = _dotted(expr.value)
        return f"{head}.{expr.attr.value}" if head is not None else None
    return None


def neutral(full_name: str) -> bool:
    """Whether a base (by its full dotted name) is known to add no model-shape values."""
    last = full_name.rsplit(".", 1)[-1]
    return (
        full_name in hooks.NEUTRAL_BASE_PATHS
        or last in _NEUTRAL_NAMES
        or last in hooks.NEUTRAL_BASES
    )


@dataclass
class ModuleResolver:
    """Finds and reads the modules base classes are imported from (parsed, never imported).

    One resolver serves a file and every module read for it: each module is read once
    (``cache``), a module being read is not re-entered (an import cycle leaves the base open),
    and at most `MAX_MODULES` are read.
    """

    # Reads a module's text (path, text, this resolver) into its module-level bindings: the
    # Python reader's `Reader`, given by it (this module does not import it: a cycle).
    parse: Callable[[str, str, ModuleResolver], dict[str, Binding]]
    cache: dict[str, dict[str, Binding] | None] = field(default_factory=dict)
    reading: set[str] = field(default_factory=set)
    # The work following code may cost for the file linted and every module read for it.
    steps: Steps = field(default_factory=Steps)

    def resolve(
        self, importer: str, bindings: dict[str, Binding], name: str, hops: int = 0
    ) -> ClassFields | Function | str | None:
        """The class or function ``name`` (dotted; ``Class.method`` too) means in a module
        with ``bindings``: its fields or its function, the string ``"neutral"`` for a base
        that adds nothing, or None when it cannot be read."""
        head, _, rest = name.partition(".")
        binding = bindings.get(head)
        if binding is None:
            return "neutral" if neutral(name) else None
        if isinstance(binding, ClassFields):
            if not rest:
                return binding
            return next((m for m in binding.methods if m.name == rest), None)
        if isinstance(binding, Function):
            return binding if not rest else None
        if hops > MAX_HOPS:
            return None
        if binding.name is not None and rest and "." not in rest:
            # ``from a import Config`` + ``Config.preset``: a method of the imported class.
            found = self.resolve(importer, {head: binding}, head, hops + 1)
            if isinstance(found, ClassFields):
                return next((m for m in found.methods if m.name == rest), None)
        if binding.name is None or rest:
            # ``import a.b as m`` + ``m.Base``, ``import a`` + ``a.b.Base``, or
            # ``from a import b`` + ``b.Base`` (``b`` a module of package ``a``).
            parts = rest.split(".") if rest else []
            if not parts:
                return None
            module = binding.module
            if binding.name is not None:
                module = f"{module}.{binding.name}" if module else binding.name
            target = Imported(".".join([module, *parts[:-1]]), binding.level, parts[-1])
        else:
            target = binding
        assert target.name is not None
        full = f"{target.module}.{target.name}" if not target.level else target.name
        if neutral(full):
            return "neutral"
        path = module_file(importer, target.module, target.level)
        if path is None:
            return None
        other = self.read(path)
        if other is None:
            return None
        return self.resolve(path, other, target.name, hops + 1)

    def read(self, path: str) -> dict[str, Binding] | None:
        """The module-level bindings of the module in ``path``, or None when it cannot be read."""
        key = os.path.normcase(os.path.abspath(path))
        if key in self.cache:
            return self.cache[key]
        if key in self.reading or len(self.cache) >= MAX_MODULES:
            return None
        self.reading.add(key)
        try:
            found = self._read(path)
        finally:
            self.reading.discard(key)
        self.cache[key] = found
        return found

    def _read(self, path: str) -> dict[str, Binding] | None:
        if sandbox.refused(path):
            return None  # the parser died on it while this file was read: an open base
        try:
            if os.path.getsize(path) > MAX_BYTES:
                return None
            with open(path, "rb") as handle:
                text = decode(handle.read())[0]
            if check_python(text) is not None:
                return None  # over the size/nesting budget: libcst may hang or crash on it
            # Noted, so that a worker that dies in here costs this base, not the file.
            with sandbox.reading(path):
                return self.parse(path, text, self)
        except (OSError, UnicodeDecodeError, RecursionError, MemoryError):
            return None
        except Exception:  # libcst's ParserSyntaxError and CSTValidationError: not readable
            return None


def module_file(importer: str, module: str, level: int) -> str | None:
    """The file a module name means for ``importer``, when it is in the same package tree."""
    directory = os.path.dirname(os.path.abspath(importer))
    parts = [p for p in module.split(".") if p]
    if level:
        for _ in range(level - 1):
            directory = os.path.dirname(directory)
        found = _module_at(directory, parts)
    else:
        if not parts:
            return None
        found = None
        ancestor = directory
        while True:
            if os.path.basename(ancestor) == parts[0]:
                found = _module_at(os.path.dirname(ancestor), parts)
                if found is not None:
                    break
            parent = os.path.dirname(ancestor)
            if parent == ancestor:
                break
            ancestor = parent
    if found is None:
        return None
    return found if os.path.isabs(importer) else os.path.relpath(found)


def _module_at(root: str, parts: list[str]) -> str | None:
    base = os.path.join(root, *parts)
    if parts and os.path.isfile(base + ".py"):
        return base + ".py"
    init = os.path.join(base, "__init__.py")
    return init if os.path.isfile(init) else None
