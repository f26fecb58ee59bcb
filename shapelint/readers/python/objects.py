"""Config objects that code builds: what a name holds after ``cfg = base(); cfg.dim = 4096``.

The static evaluator (`evaluate.fold`) knows constants. A config is often not one expression
but an object that statements fill in: ``config = ml_collections.ConfigDict()`` followed by
``config.emb_dim = 512``, ``hparams = transformer_base()`` followed by ``hparams.hidden_size =
1024``, a dict built and then indexed. `Obj` is such an object as the reader follows it
(`flow`): its keys in the order they were set, each with the span of the key as written and
its value (a tree node with its own span, or another `Obj`).

An object may not be fully known: ``complete`` says every key it holds is listed (a dict
literal, an empty ``ConfigDict()``, a dataclass read in the package), so a key it lacks is
absent and ``getattr(obj, "k", default)`` is the default; ``opaque`` says code the reader cannot
follow received it and may have changed any of its values, so nothing in it is known.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from shapelint.core.source import Entry, Mapping, Node, Scalar, Span


@dataclass(eq=False)
class Obj:
    """A config object built by statements, as the reader follows them.

    ``kind`` is the candidate kind it becomes (``"call"`` when a call made it, ``"dict"`` for
    a dict or a namespace), ``callee`` what made it as written (``ml_collections.ConfigDict``,
    ``hparam.HParams``; empty for a dict literal); ``open_bases`` the base classes of the class
    that made it that could not be read.
    """

    span: Span
    kind: str = "dict"
    callee: str = ""
    complete: bool = False
    opaque: bool = False
    open_bases: tuple[str, ...] = ()
    values: dict[str, Node | Obj] = field(default_factory=dict)
    key_spans: dict[str, Span] = field(default_factory=dict)
    # The object as it was when code the reader cannot follow first received it (``train(
    # config)`` at the end of ``main()``): the config that code was given.
    handed: Obj | None = None
    # What an instance made by a call without arguments held (the class defaults only): while
    # it still holds exactly that, it is the class's own config, not another one.
    pristine: tuple[object, ...] | None = None

    def set(self, key: str, key_span: Span, value: Node | Obj) -> None:
        """Set ``key`` (a key set again keeps its first place, as a dict does)."""
        self.values[key] = value
        self.key_spans[key] = key_span

    def get(self, key: str) -> Node | Obj | None:
        """The value of ``key``, or None when the object does not hold it."""
        return self.values.get(key)

    def forget(self, key: str, span: Span, expression: str) -> None:
        """``key`` may have been set by code that may not run: its value is not known."""
        self.set(key, self.key_spans.get(key, span), unknown(span, expression))

    def hand_over(self) -> None:
        """Code the reader cannot follow receives the object: keep what it held then, and
        know nothing of it afterwards."""
        if not self.opaque and self.handed is None:
            self.handed = self.copy()
        self.opaque = True

    def signature(self, depth: int = 0) -> tuple[object, ...]:
        """What the object holds, by the identity of its values: equal while no statement
        has set a key in it (or in an object it holds)."""
        parts: list[object] = [self.opaque]
        for key, value in self.values.items():
            if isinstance(value, Obj) and depth < MAX_NESTING:
                parts.append((key, value.signature(depth + 1)))
            else:
                parts.append((key, id(value)))
        return tuple(parts)

    def copy(self) -> Obj:
        """A copy (nested objects copied too), as ``copy.deepcopy`` or a fresh call makes."""
        values = {k: v.copy() if isinstance(v, Obj) else v for k, v in self.values.items()}
        return replace(self, values=values, key_spans=dict(self.key_spans))

    def mapping(self, depth: int = 0) -> Mapping:
        """The object as a tree node (nested objects as mappings)."""
        entries = []
        for key, value in self.values.items():
            if isinstance(value, Obj):
                node: Node = (
                    value.mapping(depth + 1) if depth < MAX_NESTING else unknown(value.span, "")
                )
            else:
                node = value
            entries.append(Entry(key, self.key_spans[key], node))
        return Mapping(tuple(entries), self.span)


# Objects nested deeper than this are not written out (a cycle, ``cfg.self = cfg``).
MAX_NESTING = 16


def unknown(span: Span, expression: str) -> Scalar:
    """A value that cannot be known statically, written as ``expression`` at ``span``."""
    return Scalar(None, span, expression=expression, known=False)


@dataclass
class Steps:
    """The work one linted file may spend following code (shared by every module read for
    it): statements run, and calls in progress (a call of one in progress is recursion)."""

    left: int = 200_000
    calling: set[int] = field(default_factory=set)

    def spend(self, n: int = 1) -> bool:
        """Take ``n`` steps; False once the budget is spent."""
        self.left -= n
        return self.left >= 0
