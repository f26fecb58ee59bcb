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

Steps 1 and 2, the space and its pruning, are `shapelint.perf.space`.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field, replace

from shapelint.core.model import Dim, Fix, ModelConfig, Target
from shapelint.perf.space import (
    Change,
    Shape,
    SuggestError,
    SuggestOptions,
    build_space,
    changes_of,
    enumerate_shapes,
    param_count,
    to_config,
)


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
