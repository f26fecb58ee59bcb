"""The shapes near a config that `shapelint.perf.search` ranks: the search space and its pruning.

`build_space` takes the dims the config states (a derived dim follows the ones it comes from)
and the values each may take near its written value (`shapelint.perf.search`, step 1);
`enumerate_shapes` yields the shapes that pass the arithmetic constraints and the parameter
budget, solving the FFN width from the budget (step 2). `to_config` and `changes_of` turn a
shape back into a config and the edits a user makes.

The parameter count (`param_count`) is the model's weight matrices: embedding and output layer
(counted untied), per layer Q, K, V, O, the MLP (or every expert and the router) and two norms.
The same formula counts the original and each candidate, so the delta is what the shape changes.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, replace

from shapelint.core.limits import MAX_DIM, beyond_max_dim
from shapelint.core.model import Dim, Fix, ModelConfig, Target, Value

# What --keep accepts: a dim name, or kv_ratio (heads / KV heads).
KEEPABLE = (
    "hidden",
    "heads",
    "kv_heads",
    "kv_ratio",
    "head_dim",
    "ffn",
    "vocab",
    "layers",
    "micro_batch",
    "tp",
)


# The head dims attention kernels run best at: multiples of 64 (SL102; Anthony et al. 2024
# recommend h/a a multiple of 64) that flash-attention has tuned, benchmarked kernels for
# (FlashAttention-2, Dao 2023, reports its speed at head dims 64 and 128 only). The config's
# own head dim is always searched too.
BEST_HEAD_DIMS = (64, 128)


# Hidden and FFN widths are searched in steps of this many elements (per tensor-parallel rank),
# the 128-byte alignment of bf16 that SL103 and SL104 ask for.
STEP = 64


# How far from the written value a dim may move (a fraction), before the parameter budget
# prunes further; at least this, or three times the parameter tolerance.
MIN_WINDOW = 0.08


# The most values one dim takes in a search, and the most shapes it visits: far more than any
# real config needs (hidden 16384 at --tolerance 0.1 is 154 values), so that a dim of 2**63
# (issue 26, failure 10) ends the search in seconds with an answer instead of never.
MAX_VALUES = 1024


MAX_VISITED = 2_000_000


@dataclass(frozen=True)
class Shape:
    """The searched dims of one candidate. ``vocab`` is the vocab the GEMMs see (padded)."""

    hidden: int
    heads: int
    kv_heads: int
    head_dim: int
    ffn: int
    layers: int
    vocab: int | None
    micro_batch: int
    tp: int
    padded: bool = False  # the vocab is padded by SL101's fix

    def dims(self) -> dict[str, int | None]:
        """The dims by their JSON names."""
        return {
            "hidden": self.hidden,
            "heads": self.heads,
            "kv_heads": self.kv_heads,
            "head_dim": self.head_dim,
            "ffn": self.ffn,
            "layers": self.layers,
            "vocab": self.vocab,
            "micro_batch": self.micro_batch,
            "tp": self.tp,
        }


@dataclass(frozen=True)
class SuggestOptions:
    """How far and how to search: ``tolerance`` is a fraction (0.02 for 2%)."""

    tolerance: float = 0.02
    keep: frozenset[str] = frozenset()
    top: int = 5
    pareto: bool = False


@dataclass(frozen=True)
class Change:
    """One dim a candidate changes: its name, the key a user edits, old and new values.

    ``key`` is empty for a derived dim that follows others (head dim = hidden / heads).
    """

    dim: str
    key: str
    old: object
    new: object


class SuggestError(ValueError):
    """The config has no shape to search (hidden, heads or layers unknown)."""


def param_count(shape: Shape, *, gated: bool, experts: int = 0, moe_ffn: int | None = None) -> int:
    """Weights of the model: embeddings and output (untied), attention, MLP or experts, norms."""
    h, a, g, d = shape.hidden, shape.heads, shape.kv_heads, shape.head_dim
    attention = h * a * d * 2 + h * g * d * 2
    mats = 3 if gated else 2
    if experts > 1:
        mlp = experts * mats * h * (moe_ffn or shape.ffn) + h * experts
    else:
        mlp = mats * h * shape.ffn
    per_layer = attention + mlp + 2 * h
    vocab = shape.vocab or 0
    return shape.layers * per_layer + 2 * vocab * h + h


def _written(value: Value | None) -> bool:
    return value is not None and not value.derived and value.known and value.as_int is not None


def _follows_hidden(value: Value | None) -> bool:
    """A derived dim computed from the hidden size alone (FFN = 4·h, Llama's multiple_of)."""
    return value is not None and value.derived and value.known and bool(value.derived_from)


def _near(center: int, window: float, step: int, lo: int = 1) -> list[int]:
    """Multiples of ``step`` within ``center`` × (1 ± window), and ``center`` itself; at most
    the `MAX_VALUES` multiples nearest to ``center``."""
    first = max(lo, math.ceil(center * (1 - window) / step))
    last = int(center * (1 + window)) // step
    return _around(center, first, last, step)


def _around(
    center: int, first: int, last: int, step: int, *, with_center: bool = True
) -> list[int]:
    """The multiples ``k·step`` for ``first ≤ k ≤ last`` (and ``center``), keeping the
    `MAX_VALUES` nearest to ``center`` when there are more (a dim of 2**63 must not make a
    list of 10**17 values)."""
    if last - first + 1 > MAX_VALUES:
        middle = center // step
        first = max(first, middle - MAX_VALUES // 2)
        last = min(last, first + MAX_VALUES - 1)
    out = {k * step for k in range(first, last + 1)}
    if with_center:
        out.add(center)
    return sorted(x for x in out if x > 0)


def _divisors(n: int) -> list[int]:
    """The divisors of ``n``: trial division up to `MAX_VALUES`², with each cofactor."""
    found: set[int] = set()
    for k in range(1, min(math.isqrt(n), MAX_VALUES * MAX_VALUES) + 1):
        if n % k == 0:
            found.update((k, n // k))
    return sorted(found)


@dataclass
class Space:
    """What may vary, and the values each dim may take (pruned by arithmetic)."""

    original: Shape
    hidden: list[int]
    layers: list[int]
    parallel: list[tuple[int, int]]  # (micro_batch, tp)
    vocabs: list[tuple[int | None, bool]]
    ffn_written: bool
    ffn_of_hidden: Callable[[int], int | None] | None
    head_dim_written: bool
    kv_written: bool
    mha: bool
    held: dict[str, str]
    keep: frozenset[str]
    window: float

    def heads_for(self, h: int, t: int) -> list[tuple[int, int]]:
        """(heads, head dim) pairs for hidden ``h`` at tensor parallel ``t``."""
        o = self.original
        if "heads" in self.keep or "heads" in self.held:
            dims = [o.head_dim] if self.head_dim_written else []
            if not self.head_dim_written:
                dims = [h // o.heads] if h % o.heads == 0 else []
            return [(o.heads, d) for d in dims if "head_dim" not in self.keep or d == o.head_dim]
        wanted = (o.head_dim,) if "head_dim" in self.keep else (*BEST_HEAD_DIMS, o.head_dim)
        out = []
        for d in sorted(set(wanted)):
            if h % d == 0 and (h // d) % t == 0:
                out.append((h // d, d))
        return out

    def kv_for(self, a: int, t: int) -> list[int]:
        """KV head counts for ``a`` heads at tensor parallel ``t``."""
        o = self.original
        if self.mha:  # MHA stays MHA: one KV head per head
            out = [a]
        elif not self.kv_written:
            out = [o.kv_heads] if a % o.kv_heads == 0 else []
        else:
            lo, hi = max(1, o.kv_heads // 2), o.kv_heads * 2
            out = [g for g in _divisors(a) if lo <= g <= hi or g == o.kv_heads]
            out = [g for g in out if (g % t == 0 if g >= t else t % g == 0)]
        if "kv_heads" in self.keep:
            out = [g for g in out if g == o.kv_heads]
        if "kv_ratio" in self.keep:
            out = [g for g in out if a * o.kv_heads == o.heads * g]
        return out


def build_space(
    config: ModelConfig,
    target: Target,
    options: SuggestOptions,
    *,
    ffn_of_hidden: Callable[[int], int | None] | None = None,
    vocab_fix: Fix | None = None,
    runtime_fixed: Sequence[str] = (),
) -> Space:
    """The search space around ``config``; ``runtime_fixed`` names micro_batch/tp that a CLI
    flag chose (a flag is the user's decision, not searched)."""
    for value in config.dims.values():
        # A dim past 2³¹ is SL002 and never searched around (2**63 made a list of 10**17).
        huge = beyond_max_dim(value.value) if value.known and not value.derived else None
        if huge is not None:
            raise SuggestError(
                f"{value.key} must be a positive integer of at most 2³¹ ({MAX_DIM}), "
                f"got {huge} (SL002)"
            )
    h, a, layers = config.int(Dim.HIDDEN), config.int(Dim.HEADS), config.int(Dim.LAYERS)
    if h is None or a is None or layers is None:
        raise SuggestError("the config does not state hidden size, heads and layers")
    head_value = config.get(Dim.HEAD_DIM)
    d = config.int(Dim.HEAD_DIM) or (h // a if h % a == 0 else 0)
    if d <= 0:
        raise SuggestError(f"hidden ({h}) is not divisible by heads ({a}) and no head dim is set")
    kv_value = config.get(Dim.KV_HEADS)
    g = config.int(Dim.KV_HEADS) or a
    f = config.int(Dim.FFN) or 4 * h
    vocab = config.vocab_value.as_int if config.vocab_value is not None else None
    original = Shape(h, a, g, d, f, layers, vocab, target.micro_batch, target.tp)
    keep = options.keep
    held: dict[str, str] = {}
    window = max(MIN_WINDOW, 3 * options.tolerance)

    for dim, name in ((Dim.HIDDEN, "hidden"), (Dim.HEADS, "heads"), (Dim.LAYERS, "layers")):
        if not _written(config.get(dim)):
            held[name] = "not written as a number in the file"
    head_dim_written = _written(head_value)
    if head_dim_written and h != a * d:
        held["heads"] = f"head dim {d} × heads {a} ≠ hidden {h}: kept as written"
        held["head_dim"] = held["heads"]
    ffn_value = config.get(Dim.FFN)
    ffn_written = _written(ffn_value)
    follows = None
    if not ffn_written:
        if _follows_hidden(ffn_value) and ffn_of_hidden is not None:
            follows = ffn_of_hidden
            held["ffn"] = "derived from the hidden size: follows it"
        else:
            held["ffn"] = "not written as a number in the file"
            if "hidden" not in held and ffn_value is not None:
                held["hidden"] = "the FFN width derives from it in a way shapelint cannot redo"
    experts = config.int(Dim.EXPERTS) or 0
    if experts > 1:
        held["ffn"] = "a mixture of experts: expert widths are kept"
        ffn_written = False
    kv_written = _written(kv_value)
    mha = not kv_written or g == a
    if mha:
        held.setdefault("kv_heads", "multi-head attention, one KV head per head")

    hidden = [h]
    if "hidden" not in keep and "hidden" not in held:
        hidden = _near(h, window, STEP)
    layer_values = [layers]
    if "layers" not in keep and "layers" not in held:
        span = max(1, math.ceil(layers * window))
        layer_values = _around(layers, max(1, layers - span), layers + span, 1)

    b, t = target.micro_batch, target.tp
    parallel = [(b, t)]
    carried = _written(config.get(Dim.MICRO_BATCH)) and _written(config.get(Dim.TP))
    if not carried:
        held["micro_batch"] = held["tp"] = "not both written in the file"
    elif runtime_fixed:
        held["micro_batch"] = held["tp"] = "chosen on the command line"
    elif not keep & {"micro_batch", "tp"}:
        parallel.append((2 * b, 2 * t))
        if b % 2 == 0 and t % 2 == 0:
            parallel.append((b // 2, t // 2))

    vocabs: list[tuple[int | None, bool]] = [(vocab, False)]
    if "vocab" not in keep and vocab_fix is not None:
        padded = dict(vocab_fix.dims)
        new_vocab = padded.get(Dim.PADDED_VOCAB, padded.get(Dim.VOCAB))
        if isinstance(new_vocab, int) and new_vocab != vocab:
            vocabs.append((new_vocab, True))
    return Space(
        original=original,
        hidden=hidden,
        layers=layer_values,
        parallel=parallel,
        vocabs=vocabs,
        ffn_written=ffn_written and "ffn" not in keep,
        ffn_of_hidden=follows,
        head_dim_written=head_dim_written,
        kv_written=kv_written,
        mha=mha,
        held=held,
        keep=keep,
        window=window,
    )


def enumerate_shapes(
    space: Space, *, gated: bool, experts: int, moe_ffn: int | None, tolerance: float
) -> Iterator[tuple[Shape, int]]:
    """Every shape of ``space`` that passes the arithmetic constraints and the parameter
    budget, with its parameter count. The FFN width is solved from the budget rather than
    enumerated: for each other choice, only the widths that fit are produced."""
    o = space.original
    counts = {"gated": gated, "experts": experts, "moe_ffn": moe_ffn}
    budget = param_count(o, **counts)  # type: ignore[arg-type]
    lo, hi = budget * (1 - tolerance), budget * (1 + tolerance)
    mats = 3 if gated else 2
    ffn_cache: dict[int, int | None] = {}
    visited = 0
    for b, t in space.parallel:
        for h in space.hidden:
            if h != o.hidden and (h % t or (h // t) % STEP):
                continue
            if space.ffn_of_hidden is not None:
                if h not in ffn_cache:
                    ffn_cache[h] = o.ffn if h == o.hidden else space.ffn_of_hidden(h)
                fixed_ffn = ffn_cache[h]
                if fixed_ffn is None:
                    continue
            else:
                fixed_ffn = o.ffn if h == o.hidden else None
            for a, d in space.heads_for(h, t):
                for g in space.kv_for(a, t):
                    for vocab, padded in space.vocabs:
                        for layers in space.layers:
                            visited += 1
                            if visited > MAX_VISITED:
                                raise SuggestError(
                                    f"more than {MAX_VISITED} shapes around this config; "
                                    "narrow the search with --keep"
                                )
                            base = Shape(h, a, g, d, 0, layers, vocab, b, t, padded)
                            if space.ffn_written:
                                widths = _ffn_widths(base, o, space, lo, hi, mats, t)
                            else:
                                ffn = fixed_ffn if fixed_ffn is not None else o.ffn
                                if h != o.hidden and space.ffn_of_hidden is None:
                                    continue  # FFN cannot follow a new hidden size
                                widths = [ffn]
                            for f in widths:
                                shape = replace(base, ffn=f)
                                n = param_count(shape, **counts)  # type: ignore[arg-type]
                                if lo <= n <= hi:
                                    yield shape, n


def _ffn_widths(
    base: Shape, o: Shape, space: Space, lo: float, hi: float, mats: int, t: int
) -> list[int]:
    """FFN widths (multiples of 64·t near the written one, and the written one) whose
    parameter count falls in [lo, hi] with the rest of ``base``."""
    rest = param_count(replace(base, ffn=0), gated=mats == 3)
    per_unit = mats * base.hidden * base.layers
    f_lo = max(1.0, (lo - rest) / per_unit)
    f_hi = (hi - rest) / per_unit
    near_lo, near_hi = o.ffn * (1 - 2 * space.window), o.ffn * (1 + 2 * space.window)
    step = STEP * t
    out = [o.ffn] if f_lo <= o.ffn <= f_hi and o.ffn % t == 0 else []
    first = math.ceil(max(f_lo, near_lo) / step)
    last = int(min(f_hi, near_hi)) // step
    out.extend(_around(o.ffn, first, last, step, with_center=False))
    return sorted(set(out))


def to_config(config: ModelConfig, shape: Shape, original: Shape) -> ModelConfig:
    """``config`` with the dims of ``shape`` (derived dims follow their sources)."""
    changes: dict[Dim, object] = {}
    pairs = (
        (Dim.HIDDEN, shape.hidden, original.hidden),
        (Dim.HEADS, shape.heads, original.heads),
        (Dim.KV_HEADS, shape.kv_heads, original.kv_heads),
        (Dim.HEAD_DIM, shape.head_dim, original.head_dim),
        (Dim.FFN, shape.ffn, original.ffn),
        (Dim.LAYERS, shape.layers, original.layers),
        (Dim.MICRO_BATCH, shape.micro_batch, original.micro_batch),
        (Dim.TP, shape.tp, original.tp),
    )
    for dim, new, old in pairs:
        if new != old or (config.get(dim) is not None and config.int(dim) != new):
            if dim in (Dim.MICRO_BATCH, Dim.TP) and config.get(dim) is None:
                continue
            changes[dim] = new
    if shape.vocab != original.vocab and shape.vocab is not None:
        dim = Dim.PADDED_VOCAB if config.get(Dim.PADDED_VOCAB) is not None else Dim.VOCAB
        if config.get(Dim.VOCAB_MULTIPLE) is not None:
            dim = Dim.PADDED_VOCAB
        changes[dim] = shape.vocab
    return config.with_dims(changes) if changes else config


def changes_of(config: ModelConfig, shape: Shape, original: Shape) -> tuple[Change, ...]:
    """What a user sees change: each dim with the key that holds it (empty when derived)."""
    out: list[Change] = []
    pairs = (
        ("hidden", Dim.HIDDEN, shape.hidden, original.hidden),
        ("heads", Dim.HEADS, shape.heads, original.heads),
        ("kv_heads", Dim.KV_HEADS, shape.kv_heads, original.kv_heads),
        ("head_dim", Dim.HEAD_DIM, shape.head_dim, original.head_dim),
        ("ffn", Dim.FFN, shape.ffn, original.ffn),
        ("layers", Dim.LAYERS, shape.layers, original.layers),
        ("vocab", Dim.VOCAB, shape.vocab, original.vocab),
        ("micro_batch", Dim.MICRO_BATCH, shape.micro_batch, original.micro_batch),
        ("tp", Dim.TP, shape.tp, original.tp),
    )
    for name, dim, new, old in pairs:
        if new == old:
            continue
        value = config.get(dim)
        key = value.key if value is not None and not value.derived else ""
        out.append(Change(name, key, old, new))
    return tuple(out)
