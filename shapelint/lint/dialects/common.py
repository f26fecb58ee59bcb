"""Building blocks shared by the dialects: key look-up, derived values, config assembly.

A dialect is a table of key names per `Dim` plus the framework's own formulas. Key look-up
treats ``-`` and ``_`` as the same character (GPT-NeoX writes ``hidden-size`` and
``hidden_size`` interchangeably), and a dotted name (``attn_config.kv_n_heads``) walks into
nested mappings.
"""

from __future__ import annotations

from collections.abc import Iterable
from collections.abc import Mapping as AbcMapping
from dataclasses import dataclass, field

from shapelint.lint.model import Dim, ModelConfig, Value
from shapelint.lint.source import Candidate, Mapping, Node, Scalar

KeyAliases = AbcMapping[Dim, tuple[str, ...]]


def normalize_key(key: str) -> str:
    """The form keys are compared in: dashes and underscores alike, case kept."""
    return key.replace("-", "_")


def child(mapping: Mapping, name: str) -> tuple[str, Node] | None:
    """The last entry whose key equals ``name`` up to dash/underscore, as (key, node)."""
    wanted = normalize_key(name)
    found: tuple[str, Node] | None = None
    for entry in mapping.entries:
        if normalize_key(entry.key) == wanted:
            found = (entry.key, entry.value)
    return found


def resolve(mapping: Mapping, dotted: str, prefix: str) -> tuple[str, Node] | None:
    """Follow a dotted name from ``mapping``; return (full key path, node) or None."""
    node: Node = mapping
    path = prefix
    for part in dotted.split("."):
        if not isinstance(node, Mapping):
            return None
        hit = child(node, part)
        if hit is None:
            return None
        key, node = hit
        path = f"{path}.{key}" if path else key
    return path, node


def scalar_value(node: Node, key: str) -> Value | None:
    """Wrap a scalar node as a `Value`; None for mappings and lists."""
    if not isinstance(node, Scalar):
        return None
    return Value(
        node.value,
        key,
        node.span,
        shared=node.shared,
        expression=node.expression,
        known=node.known,
    )


def find(mapping: Mapping, names: Iterable[str], prefix: str = "") -> Value | None:
    """The first of ``names`` present in ``mapping`` with a scalar value."""
    for name in names:
        hit = resolve(mapping, name, prefix)
        if hit is not None:
            value = scalar_value(hit[1], hit[0])
            if value is not None:
                return value
    return None


def derived(value: object, sources: tuple[Value, ...], formula: str, key: str = "") -> Value:
    """A value computed from others; it points at the first source."""
    first = sources[0]
    return Value(value, key or first.key, first.span, derived_from=sources, formula=formula)


def round_up(n: int, multiple: int) -> int:
    """The smallest multiple of ``multiple`` that is >= n."""
    return -(-n // multiple) * multiple


@dataclass
class Builder:
    """Collects one config's dims, then adds the derivations every dialect shares."""

    candidate: Candidate
    path: str
    dialect: str
    extra_keys: KeyAliases = field(default_factory=dict)
    dims: dict[Dim, Value] = field(default_factory=dict)
    gated_mlp: bool | None = None
    pretrained: bool = False
    shape_from_elsewhere: bool = False
    seq_is_max_context: bool = False

    @property
    def root(self) -> Mapping:
        return self.candidate.root

    def lookup(self, *names: str) -> Value | None:
        """Find the first of ``names`` under the candidate's root."""
        return find(self.root, names, self.candidate.key_prefix)

    def take(self, dim: Dim, *names: str) -> Value | None:
        """Set ``dim`` from the first of the user's keys or ``names`` present, if unset."""
        if dim in self.dims:
            return self.dims[dim]
        value = self.lookup(*self.extra_keys.get(dim, ()), *names)
        if value is not None and value.value is not None:
            self.dims[dim] = value
            return value
        return None

    def set(self, dim: Dim, value: Value | None) -> None:
        """Set ``dim`` unless it is already set or ``value`` is None."""
        if value is not None and dim not in self.dims:
            self.dims[dim] = value

    def int(self, dim: Dim) -> int | None:
        """The dim as a known positive int, or None."""
        v = self.dims.get(dim)
        n = v.as_int if v is not None else None
        return n if n is not None and n > 0 else None

    def apply_user_keys(self) -> None:
        """Take every dim a user mapped with ``[tool.shapelint.keys]`` (they win)."""
        for dim, names in self.extra_keys.items():
            if dim not in self.dims:
                value = self.lookup(*names)
                if value is not None and value.value is not None:
                    self.dims[dim] = value

    def build(self) -> ModelConfig:
        """Add the shared derivations (head dim, KV heads) and return the config."""
        self.apply_user_keys()
        hidden, heads = self.dims.get(Dim.HIDDEN), self.dims.get(Dim.HEADS)
        h, a = self.int(Dim.HIDDEN), self.int(Dim.HEADS)
        if Dim.HEAD_DIM not in self.dims and hidden and heads and h and a and h % a == 0:
            self.dims[Dim.HEAD_DIM] = derived(h // a, (hidden, heads), "hidden / heads")
        if Dim.KV_HEADS not in self.dims and heads is not None and a:
            self.dims[Dim.KV_HEADS] = derived(a, (heads,), "= heads (no KV heads stated)")
        return ModelConfig(
            name=self.candidate.name,
            path=self.path,
            dialect=self.dialect,
            dims=dict(self.dims),
            gated_mlp=self.gated_mlp,
            pretrained=self.pretrained,
            shape_from_elsewhere=self.shape_from_elsewhere,
            seq_is_max_context=self.seq_is_max_context,
        )


def looks_like_model(dims: AbcMapping[Dim, Value]) -> bool:
    """True when the dims describe a transformer: a width and at least heads or layers."""
    return Dim.HIDDEN in dims and (Dim.HEADS in dims or Dim.LAYERS in dims)
