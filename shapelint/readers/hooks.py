"""What the dialects teach the readers, registered here.

The readers know syntax: a shell script's words, variables, branches and ``--flag value``
pairs; a Python module's statements, classes and constants. What a framework means by them —
which flags make a launch script a model's config and which of their values are dummies, which
module-level loops build configs, which base classes add no model-shape values — is a
dialect's knowledge. Each dialect module declares the hooks it needs (``READER_HOOKS``, a
`ReaderHooks`), and `shapelint.dialects` registers them all with `register` when it is
imported, which the engine does before it reads a file.

This module imports nothing from the dialects, and nothing a JSON run does not need (libcst
and the Python reader only for type checking). With no hooks registered a reader reads syntax
only: a launch script then holds no config, a Python module's loops build none, and every
base class outside the package tree is open.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from shapelint.core.source import Candidate, Entry, Node, Span

if TYPE_CHECKING:
    import libcst as cst

    from shapelint.readers.python.evaluate import Folded


@dataclass(frozen=True)
class ShellFlags:
    """How one framework's launch scripts pass a model's shape as ``--flag value`` pairs.

    ``shape_flags``: a script that passes one of them holds a config (one per model size when
    it picks their values by a variable it is given); ``programs``: a regular expression for
    the programs that read the flags, group 1 the file name (the candidate's ``callee``;
    compiled when a script is read, not at start-up); ``finish``: the entries as the
    framework reads them, given the script's text (dummy sizes made unknown).
    """

    shape_flags: frozenset[str]
    programs: str
    finish: Callable[[str, list[Entry]], list[Entry]]


class PythonHost(Protocol):
    """What the Python reader offers a `ModuleHook`: spans, source text, tree nodes and
    unique candidate names."""

    text: str

    def span(self, node: cst.CSTNode) -> Span:
        """The span of ``node`` in the text."""
        ...

    def source(self, node: cst.CSTNode) -> str:
        """The text of ``node`` as written."""
        ...

    def node(self, expr: cst.BaseExpression, env: dict[str, Folded], depth: int) -> Node:
        """The tree node of a value."""
        ...

    def unique(self, name: str) -> str:
        """``name``, numbered when it was used before."""
        ...


class ModuleHook(Protocol):
    """Follows one Python module's module-level statements, in order, to build configs the
    reader's own rules do not (LitGPT's name-variant loops)."""

    def config(self, expr: cst.BaseExpression, candidate: Candidate, label: str) -> None:
        """A config the reader found written at module level, and the label it named it by."""
        ...

    def before(self, stmt: cst.BaseStatement, env: dict[str, Folded]) -> None:
        """A module-level compound statement, before the reader reads its blocks; ``env``: the
        module's constants there."""
        ...

    def after(self, stmt: cst.BaseSmallStatement | cst.BaseStatement) -> None:
        """A module-level statement, after the reader read it (each small statement of a
        line on its own)."""
        ...

    def ordered(self, candidates: list[Candidate]) -> list[Candidate]:
        """The module's candidates in their final order, with what the hook built."""
        ...


ModuleHookFactory = Callable[[PythonHost, "cst.Module"], ModuleHook]


@dataclass(frozen=True)
class PythonIdioms:
    """How one framework's helpers change a config object, by the helper's last name, for the
    Python reader's data flow (`shapelint.readers.python.flow`), which reads them as Python's
    own: ``getters`` as ``getattr(obj, "key", default)`` (fairseq's ``safe_getattr``),
    ``has`` as ``hasattr(obj, "key")``, ``setters`` as methods ``obj.m("key", value)`` that
    set a key (tensor2tensor's ``hparams.add_hparam``), ``merges`` as functions ``m(base,
    updates)`` that return ``base`` with the keys of ``updates`` written over it, and
    ``containers`` as calls that make an empty config object."""

    getters: frozenset[str] = frozenset()
    has: frozenset[str] = frozenset()
    setters: frozenset[str] = frozenset()
    merges: frozenset[str] = frozenset()
    containers: frozenset[str] = frozenset()


@dataclass(frozen=True)
class ReaderHooks:
    """What one dialect registers: shell flag semantics, Python module hooks and idioms, and
    the base classes (by last name, or by full dotted name) known to add no model-shape values
    because the dialect models their defaults itself."""

    shell: tuple[ShellFlags, ...] = ()
    python_modules: tuple[ModuleHookFactory, ...] = ()
    python_idioms: PythonIdioms = PythonIdioms()
    neutral_bases: frozenset[str] = frozenset()
    neutral_base_paths: frozenset[str] = frozenset()


_REGISTERED: list[ReaderHooks] = []
SHELL: list[ShellFlags] = []
PYTHON_MODULES: list[ModuleHookFactory] = []
NEUTRAL_BASES: set[str] = set()
NEUTRAL_BASE_PATHS: set[str] = set()
GETTERS: set[str] = set()
HAS: set[str] = set()
SETTERS: set[str] = set()
MERGES: set[str] = set()
CONTAINERS: set[str] = set()


def register(hooks: ReaderHooks) -> None:
    """Add one dialect's hooks (a second registration of the same hooks changes nothing)."""
    if any(known is hooks for known in _REGISTERED):
        return
    _REGISTERED.append(hooks)
    SHELL.extend(hooks.shell)
    PYTHON_MODULES.extend(hooks.python_modules)
    NEUTRAL_BASES.update(hooks.neutral_bases)
    NEUTRAL_BASE_PATHS.update(hooks.neutral_base_paths)
    idioms = hooks.python_idioms
    GETTERS.update(idioms.getters)
    HAS.update(idioms.has)
    SETTERS.update(idioms.setters)
    MERGES.update(idioms.merges)
    CONTAINERS.update(idioms.containers)
