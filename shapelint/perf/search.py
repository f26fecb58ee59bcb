"""Search the shapes near a config for the one the performance model predicts runs fastest.

Anthony et al. 2024 co-design a model's whole shape for a parameter budget (GPT-3 2.7B with
20 heads of 128 instead of 32 heads of 80). `suggest` does that search around a config:

1. **Enumerate** the dims the config states (a derived dim follows the ones it comes from):
   hidden as multiples of 64·t near h; heads so that the head dim is one the attention kernels
   run best (a multiple of 64 that flash-attention compiles) or the config's own; KV heads
   dividing the heads (the GQA ratio kept with ``kv_ratio``; an MHA config stays MHA); layers
   near L; the FFN width as multiples of 64·t solved directly from the parameter budget
   (SwiGLU counts three matrices); the vocab as written or padded by SL101's own fix; and, when
   the config states both, micro-batch and tensor parallelism together so that b/t (the
   activations per GPU) stays as written.
2. **Prune by constraints** before any estimate: the parameter count within the tolerance, and
   the divisibility rules (hidden by heads, heads by KV heads, split dims by t) in arithmetic.
3. **Rank** by the performance model's step time (`shapelint.perf.estimate.step_time`) per
   token per GPU, as the mean of the per-GPU time ratios (each GPU weighs the same),
   scaled by the parameter count (time per token per parameter), so that a candidate cannot
   win by being smaller within the tolerance; the ranked number is shown as
   `Candidate.speedup_per_parameter_pct`; GEMM timings are cached across candidates,
   since most share most GEMMs. Candidates that differ only in the dims that balance the
   parameter count (FFN width, layers) are shown once, the best of them.
4. **Validate** in rank order until enough are found: every SL0xx rule and every selected
   SL3xx rule must pass, and no SL1xx finding may appear whose code the original did not have.

The parameter count is the model's weight matrices: embedding and output layer (counted
untied), per layer Q, K, V, O, the MLP (or every expert and the router) and two norms. The
same formula counts the original and each candidate, so the delta is what the shape changes.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field, replace

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


@dataclass(frozen=True)
class Candidate:
    """One shape with its parameter count and per-target step times.

    ``step_time_s`` holds, per target, the model's step time scaled to the original's tokens
    per GPU (equal to the raw step time unless micro-batch and tp change), so times compare
    per token; ``ratio`` is the mean over targets of candidate time / original time, and
    ``score`` that ratio per parameter (ratio × original params / candidate params), the
    ranking key.
    """

    shape: Shape
    params: int
    step_time_s: tuple[float, ...]
    ratio: float
    score: float
    changes: tuple[Change, ...] = ()
    config: ModelConfig | None = None

    @property
    def speedup_per_parameter_pct(self) -> float:
        """The ranking key as a speedup: the original's time per token per parameter over
        this candidate's, minus one, in percent (time ratios averaged over the targets)."""
        return (1.0 / self.score - 1.0) * 100.0

    @property
    def checkpoint_compatible(self) -> bool:
        """True when the change leaves every weight's shape and meaning as it was (only the
        micro-batch and the tensor-parallel split change)."""
        return all(c.dim in ("micro_batch", "tp") for c in self.changes)


@dataclass
class Suggestions:
    """The outcome of a search: the original, the valid candidates best first, and counts."""

    config: ModelConfig
    targets: tuple[Target, ...]
    original: Candidate
    candidates: list[Candidate]
    enumerated: int = 0
    evaluated: int = 0
    rejected: int = 0
    elapsed_s: float = 0.0
    tolerance: float = 0.0
    gemm_hits: int = 0
    gemm_misses: int = 0
    held: dict[str, str] = field(default_factory=dict)  # dim → why it was not searched
    # The original's refusals on the first target ("SLxxx: message"): an SL0xx finding or an
    # engine's refusal. When there are any, candidates need not be faster than the original.
    refusals: tuple[str, ...] = ()
    # Tensor-parallel sizes at which the target accepts the original shape unchanged.
    accepted_tp: tuple[int, ...] = ()
    # True when ``candidates`` is the Pareto front by parameter count, not a ranking.
    pareto: bool = False

    def speedup_pct(self, cand: Candidate, i: int) -> float:
        """(original / candidate − 1) × 100 on target ``i``."""
        return (self.original.step_time_s[i] / cand.step_time_s[i] - 1.0) * 100.0


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
    """Multiples of ``step`` within ``center`` × (1 ± window), and ``center`` itself."""
    start = max(lo, math.ceil(center * (1 - window) / step)) * step
    out = set(range(start, int(center * (1 + window)) + 1, step))
    out.add(center)
    return sorted(x for x in out if x > 0)


def _divisors(n: int) -> list[int]:
    return [k for k in range(1, n + 1) if n % k == 0]


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
        layer_values = list(range(max(1, layers - span), layers + span + 1))

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
    first = math.ceil(max(f_lo, near_lo) / step) * step
    out.extend(range(first, int(min(f_hi, near_hi)) + 1, step))
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


class GemmCache:
    """Memoizes the model's per-GEMM functions across candidates while a search runs.

    `shapelint.perf.estimate.step_time` computes each GEMM through `op_time` (and, where the
    model has it, scales it to the sustained rate with `sustained`); candidates share most of
    their GEMMs (the same hidden size, FFN width or head dim), so each distinct call is made
    once. Those functions are pure; the cache is installed only inside `active`, and a name
    the model does not have is left alone (the cache then saves less, never changes a time).
    """

    # Functions of shapelint.perf.estimate that are memoized, if present.
    NAMES = ("op_time", "sustained")

    def __init__(self) -> None:
        self.hits = 0
        self.misses = 0

    @contextmanager
    def active(self) -> Iterator[None]:
        """Route the model's per-GEMM functions through the cache for the block."""
        from shapelint.perf import estimate

        originals = {n: getattr(estimate, n) for n in self.NAMES if hasattr(estimate, n)}
        for name, function in originals.items():
            setattr(estimate, name, self._memoized(function))
        try:
            yield
        finally:
            for name, function in originals.items():
                setattr(estimate, name, function)

    def _memoized(self, function: Callable[..., object]) -> Callable[..., object]:
        # Arguments are keyed by value when hashable (a Gemm, a float) and by identity when
        # not (a GPU holds mappings); the memo keeps every argument alive beside its result,
        # so an identity is never reused by another object while the cache lives.
        memo: dict[tuple[object, ...], tuple[tuple[object, ...], object]] = {}

        def cached(*args: object, **kwargs: object) -> object:
            if len(args) == 2 and not kwargs:  # op_time(gemm, gpu), sustained(time, fraction)
                key: tuple[object, ...] = (_key(args[0]), _key(args[1]))
            else:
                key = (
                    tuple(_key(a) for a in args),
                    tuple(sorted((k, _key(v)) for k, v in kwargs.items())),
                )
            hit = memo.get(key)
            if hit is not None:
                self.hits += 1
                return hit[1]
            self.misses += 1
            result = function(*args, **kwargs)
            memo[key] = ((*args, *kwargs.values()), result)
            return result

        return cached


# Types whose instances hash quickly and by value; anything else is keyed by identity (a
# GemmTime would hash by value too, but hashing its 21 fields costs more than the call).
_BY_VALUE = (int, float, str, bool, type(None))


def _key(x: object) -> object:
    kind = type(x)
    if kind in _BY_VALUE or kind.__name__ == "Gemm":
        return x
    return ("id", id(x))


Progress = Callable[[int, int], None]
Validator = Callable[[ModelConfig, Target], bool]


def search(
    config: ModelConfig,
    targets: Sequence[Target],
    options: SuggestOptions,
    *,
    valid: Validator,
    ffn_of_hidden: Callable[[int], int | None] | None = None,
    vocab_fix: Fix | None = None,
    runtime_fixed: Sequence[str] = (),
    progress: Progress | None = None,
    refusals: Sequence[str] = (),
) -> Suggestions:
    """Enumerate, prune, rank and validate the shapes near ``config`` on ``targets``.

    ``valid(candidate_config, target)`` is the rule check (SL0xx, SL1xx, SL3xx) of one
    candidate on the first target; it runs in rank order until ``options.top`` candidates
    pass (all of them with ``options.pareto``). Only candidates the model predicts faster than
    the original (mean ratio below 1) are kept, unless the original is refused (``refusals``:
    it does not run, so the fastest shapes the target accepts are the answer).
    """
    from shapelint.perf.estimate import step_time, tokens_per_gpu

    started = time.perf_counter()
    primary = targets[0]
    space = build_space(
        config,
        primary,
        options,
        ffn_of_hidden=ffn_of_hidden,
        vocab_fix=vocab_fix,
        runtime_fixed=runtime_fixed,
    )
    gated = config.gated_mlp is True
    experts = config.int(Dim.EXPERTS) or 0
    moe_ffn = config.int(Dim.MOE_FFN)
    o = space.original
    counts = {"gated": gated, "experts": experts, "moe_ffn": moe_ffn}
    shapes = [
        (s, n)
        for s, n in enumerate_shapes(
            space, gated=gated, experts=experts, moe_ffn=moe_ffn, tolerance=options.tolerance
        )
        if s != o
    ]

    def targets_of(shape: Shape) -> list[Target]:
        return [replace(t, micro_batch=shape.micro_batch, tp=shape.tp) for t in targets]

    cache = GemmCache()
    with cache.active():
        base_times = tuple(step_time(config, t).total_s for t in targets)
        if any(x <= 0 for x in base_times):
            raise SuggestError("the performance model has no estimate for this config")
        original = Candidate(o, param_count(o, **counts), base_times, 1.0, 1.0, (), config)  # type: ignore[arg-type]
        scored: list[Candidate] = []
        for i, (shape, n) in enumerate(shapes):
            if progress is not None and i % 64 == 0:
                progress(i, len(shapes))
            cand_config = to_config(config, shape, o)
            times = []
            for t0, t1 in zip(targets, targets_of(shape), strict=True):
                raw = step_time(cand_config, t1).total_s
                times.append(raw * tokens_per_gpu(t0) / tokens_per_gpu(t1))
            ratio = sum(x / y for x, y in zip(times, base_times, strict=True)) / len(times)
            score = ratio * original.params / n
            if refusals or (ratio < 1.0 and score < 1.0):
                scored.append(Candidate(shape, n, tuple(times), ratio, score, (), cand_config))
        if progress is not None:
            progress(len(shapes), len(shapes))

    def rank(c: Candidate) -> tuple[float, int, int]:
        return c.score, _distance(c.shape, o), abs(c.params - original.params)

    scored.sort(key=rank)
    if not options.pareto:
        # Ranked again by the members shown, so the order is the order of the number shown
        # (a group's simplest member may score up to TIE below the group's best).
        scored = sorted(_simplest_per_group(scored, o), key=rank)
    chosen: list[Candidate] = []
    rejected = 0
    for cand in scored:
        if not options.pareto and len(chosen) >= options.top:
            break
        assert cand.config is not None
        if not valid(cand.config, targets_of(cand.shape)[0]):
            rejected += 1
            continue
        chosen.append(replace(cand, changes=changes_of(config, cand.shape, o)))
    if options.pareto:
        chosen = pareto_front(chosen)[: options.top] if options.top else pareto_front(chosen)
    return Suggestions(
        config=config,
        targets=tuple(targets),
        original=original,
        candidates=chosen,
        enumerated=len(shapes),
        evaluated=len(shapes),
        rejected=rejected,
        elapsed_s=time.perf_counter() - started,
        tolerance=options.tolerance,
        gemm_hits=cache.hits,
        gemm_misses=cache.misses,
        held=space.held,
        refusals=tuple(refusals),
        pareto=options.pareto,
    )


# Scores closer than this (a fraction) are a tie, and the smaller change wins: the GEMM model's
# median error against XLA's measured sm_90 table is 4.3% per GEMM (benchmarks/README.md), so
# a 1% difference between two whole shapes is not one it can vouch for.
TIE = 0.01


def _simplest_per_group(scored: Sequence[Candidate], o: Shape) -> list[Candidate]:
    """One candidate per group (`_group`): among those scoring within `TIE` of the group's
    best, the one changing the fewest dims; in order of the group's best score."""
    best: dict[tuple[object, ...], list[Candidate]] = {}
    for cand in scored:  # sorted by score: the first of a group is its best
        members = best.setdefault(_group(cand.shape), [])
        if not members or cand.score <= members[0].score * (1 + TIE):
            members.append(cand)
    return [min(m, key=lambda c: (_distance(c.shape, o), c.score)) for m in best.values()]


def _group(shape: Shape) -> tuple[object, ...]:
    """A shape without the dims that balance the parameter count (FFN width and layers)."""
    return (
        shape.hidden,
        shape.heads,
        shape.kv_heads,
        shape.head_dim,
        shape.vocab,
        shape.micro_batch,
        shape.tp,
    )


def _distance(shape: Shape, o: Shape) -> int:
    """How many dims differ: among equally fast shapes, the smaller change first."""
    return sum(x != y for x, y in zip(shape.dims().values(), o.dims().values(), strict=True))


def pareto_front(cands: Sequence[Candidate]) -> list[Candidate]:
    """The candidates no other beats on both parameters (fewer) and time per token (lower
    ratio), by parameter count."""
    front: list[Candidate] = []
    for c in sorted(cands, key=lambda c: (c.params, c.ratio)):
        if not front or c.ratio < front[-1].ratio:
            front.append(c)
    return front
