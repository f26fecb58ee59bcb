"""The key lexicon reading one mapping (`Scope`): each key's meaning from its words
(`shapelint.dialects.lexicon_words`), ambiguous keys placed only when other dims confirm them
(`_place_ambiguous`, `_confirms`), and every reading's values checked (`_checks`).

The evidence half of the key lexicon (`shapelint.dialects.lexicon`, whose docstring describes
the whole); what the dialect registry calls is in that module.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from collections.abc import Mapping as AbcMapping
from dataclasses import dataclass, field, replace

from shapelint.core.model import Derivation, Dim, Value
from shapelint.core.source import Mapping, Scalar, Sequence
from shapelint.dialects.lexicon_words import (
    ACCUMULATION_WORDS,
    ATTENTION_WIDTH,
    DIMS,
    FFN_KIND,
    HEAD_DIM_RANGE,
    MAX_FFN_RATIO,
    MAX_LAYERS,
    MICRO_BATCH_PATTERNS,
    MOE_WORDS,
    NEUTRAL,
    PATTERNS,
    PER_LAYER_LISTS,
    Role,
    canonical,
    encoder_meaning,
    meaning,
    stack_word,
    words,
)
from shapelint.dialects.lookup import derived, scalar_value

# --- Reading a mapping -------------------------------------------------------------------


@dataclass(frozen=True)
class Scope:
    """A mapping the lexicon reads as one model: its key path from the candidate's root
    (``""`` for the root) and the name a config from it is reported under."""

    mapping: Mapping
    path: str
    name: str


@dataclass
class Reading:
    """What the lexicon made of one scope: placed values by role, dims a failed check left
    unknown (with the value that failed), and ambiguous keys left unplaced."""

    placed: dict[Role, Value] = field(default_factory=dict)
    blocked: dict[Dim, Value] = field(default_factory=dict)
    unplaced: list[Value] = field(default_factory=list)
    max_context: bool = False

    def dim(self, dim: Dim) -> Value | None:
        value = self.placed.get(dim)
        return value if isinstance(value, Value) else None


def scope_entries(scope: Scope) -> Iterator[tuple[str, Value]]:
    """The scalar entries of a scope as values with full key paths."""
    for entry in scope.mapping.entries:
        path = f"{scope.path}.{entry.key}" if scope.path else entry.key
        value = scalar_value(entry.value, path)
        if value is not None:
            yield entry.key, value


def positive_int(value: Value) -> int | None:
    """A known integer above zero (a count or a size), else None."""
    n = value.as_int
    return n if n is not None and n > 0 else None


def read_scope(
    scope: Scope,
    context: AbcMapping[Dim, Value] | None = None,
    exclude: frozenset[str] = frozenset(),
) -> Reading:
    """The lexicon's reading of one mapping. ``context`` holds dims another reader already
    gave the same model (the lexicon does not place them again, and checks its readings
    against them); keys in ``exclude`` were read by another reader and are skipped."""
    context = context or {}
    reading = Reading()
    sure: dict[Role, list[Value]] = {}
    ambiguous: list[tuple[Value, tuple[Role, ...]]] = []
    contexts: set[str] = set()  # keys of a model's maximum context, not a training length
    entries = list(scope_entries(scope))
    stacks = {stack_word(k) for k, _ in entries if meaning(k) is not None or _foreign_shape(k)}
    two_stacks = {"encoder", "decoder"} <= stacks
    # An encoder-only model (RoBERTa in fairseq's names): no key of the mapping is a model key
    # as it stands and none names a decoder; the encoder's keys are the model's.
    alone = not any(meaning(k) is not None for k, _ in entries) and not any(
        stack_word(k) in ("decoder", "dec") for k, _ in entries
    )
    lookup = (lambda k: meaning(k) or encoder_meaning(k)) if alone else meaning
    plain = {
        r for k, _ in entries if (m := lookup(k)) is not None and not m.qualified for r in m.roles
    }
    for key, value in entries:
        if value.key in exclude:
            continue
        found = lookup(key)
        if found is None or (two_stacks and stack_word(key) == "decoder"):
            continue
        if found.qualified and plain & set(found.roles):
            continue  # the text model's size beside this model's own
        if positive_int(value) is None:
            continue
        if found.sure:
            sure.setdefault(found.roles[0], []).append(value)
            if found.max_context:
                contexts.add(value.key)
        else:
            ambiguous.append((value, found.roles))
    known: dict[Role, Value] = {d: v for d, v in context.items() if positive_int(v) is not None}
    present = set(context)
    seq = sure.get(Dim.SEQ_LEN, [])
    trained = [v for v in seq if v.key not in contexts]
    if trained and len(trained) < len(seq):
        # A training length beside a maximum context (``--seq-length`` and
        # ``--max-position-embeddings``): the sequence a step runs is the training length.
        sure[Dim.SEQ_LEN] = seq = trained
    reading.max_context = bool(seq) and all(v.key in contexts for v in seq)
    for role, values in sure.items():
        if role in present:
            continue
        if len({v.as_int for v in values}) > 1:
            reading.unplaced.extend(values)  # two keys, two values: which one holds?
            continue
        reading.placed[role] = values[0]
    # A head dim a key states by its name (``head_dim: 256``) stands even where heads × head
    # dim is not the width (Gemma 7B: 16 × 256 beside 3072); only a head dim the lexicon
    # placed from an ambiguous key or derived is checked against that product.
    stated = frozenset(
        [r for r in sure if r in reading.placed]
        + [d for d, v in known.items() if isinstance(v, Value) and not v.derived]
    )
    _checks(reading, known, stated)
    _place_ambiguous(reading, ambiguous, known, present | set(reading.blocked), stated)
    _checks(reading, known, stated)
    _attention_width(reading, known)
    _heads_from_head_dim(reading, known, scope)
    selector = _layer_selector(scope)
    if selector is not None and Dim.LAYERS in reading.placed:
        # ``select_layers: [0, 4, 8]``, ``layers_to_keep``: the model runs a subset of them.
        reading.placed.pop(Dim.LAYERS)
        reading.blocked[Dim.LAYERS] = selector
    if dense_ffn(scope) is not None:
        for dim in (Dim.EXPERTS, Dim.EXPERTS_PER_TOKEN):
            reading.placed.pop(dim, None)
    if Dim.LAYERS not in reading.placed and Dim.LAYERS not in present | set(reading.blocked):
        listed = per_layer_list(scope)
        if listed is not None:
            reading.placed[Dim.LAYERS] = listed
    micro = micro_batch(scope)
    if micro is not None and Dim.MICRO_BATCH not in present:
        reading.placed[Dim.MICRO_BATCH] = micro
    experts = reading.dim(Dim.EXPERTS) or known.get(Dim.EXPERTS)
    if experts is not None and (positive_int(experts) or 0) > 1 and Dim.FFN in reading.placed:
        # Dense or per expert? The framework decides how its FFN width applies to experts.
        ffn = reading.placed.pop(Dim.FFN)
        assert isinstance(ffn, Value)
        reading.blocked[Dim.FFN] = ffn
    return reading


def dense_ffn(scope: Scope) -> Value | None:
    """The key that says ``scope``'s FFN is dense (tensor2tensor's ``ffn_layer =
    "dense_relu_dense"`` beside the ``moe_num_experts`` its MoE layers would use): a key of
    ``ffn`` and a kind word whose string value names no mixture of experts. The expert
    counts beside it then belong to a layer the model does not run."""
    for key, value in scope_entries(scope):
        found = set(canonical(key))
        if "ffn" not in found or not found - {"ffn"} or not found - {"ffn"} <= FFN_KIND:
            continue
        kind = value.value
        if isinstance(kind, str) and kind.strip() and not set(words(kind)) & MOE_WORDS:
            return value
    return None


def per_layer_list(scope: Scope) -> Value | None:
    """The layer count as the length of a list with one entry per layer (gemma's
    ``attention_types``, whose length is the model's ``num_layers``: gemma/gm/nn/_config.py:
    86-88 at 7691fd4e), when it is the one such list of scalars (enum members count: the
    length is known when the values are not)."""
    found: list[Value] = []
    for entry in scope.mapping.entries:
        if frozenset(canonical(entry.key)) not in PER_LAYER_LISTS:
            continue
        items = entry.value
        if not isinstance(items, Sequence) or not items.items:
            continue
        if not all(isinstance(i, Scalar) for i in items.items):
            continue
        path = f"{scope.path}.{entry.key}" if scope.path else entry.key
        listed = Value(None, path, items.span)
        found.append(derived(len(items.items), (listed,), f"len({entry.key})"))
    return found[0] if len(found) == 1 else None


def micro_batch(scope: Scope) -> Value | None:
    """The micro-batch a key states by its words (``per_device_batch_size``), when no key of
    the scope speaks of accumulating gradients (a per-device batch then spans several
    micro-batches, split as the framework decides)."""
    entries = list(scope_entries(scope))
    if any(set(canonical(k)) & ACCUMULATION_WORDS for k, _ in entries):
        return None
    found = [v for k, v in entries if frozenset(canonical(k)) in MICRO_BATCH_PATTERNS]
    values = {positive_int(v) for v in found}
    return found[0] if len(values) == 1 and None not in values else None


def _foreign_shape(key: str) -> bool:
    """A key of another stack that would otherwise be a model key (``encoder_layers``)."""
    found = canonical(key)
    core = frozenset(w for w in found if w not in NEUTRAL and w not in ("encoder", "enc"))
    return any(w in ("encoder", "enc") for w in found) and core in PATTERNS


def _all(reading: Reading, known: AbcMapping[Role, Value]) -> dict[Role, int]:
    """Every placed or known role as an integer."""
    out: dict[Role, int] = {}
    for role, value in {**known, **reading.placed}.items():
        n = positive_int(value)
        if n is not None:
            out[role] = n
    return out


def _place_ambiguous(
    reading: Reading,
    ambiguous: list[tuple[Value, tuple[Role, ...]]],
    known: AbcMapping[Role, Value],
    present: set[Dim],
    stated: frozenset[Role] = frozenset(),
) -> None:
    """Place the ambiguous keys by the one best assignment of roles the values confirm."""
    if not ambiguous:
        return
    if len(ambiguous) > 6:
        reading.unplaced.extend(v for v, _ in ambiguous)
        return
    taken = set(reading.placed) | present
    options = [(None, *[r for r in roles if r not in taken]) for _, roles in ambiguous]
    best: list[tuple[Role | None, ...]] = []
    best_score = 0
    for choice in itertools.product(*options):
        chosen = [r for r in choice if r is not None]
        if len(chosen) != len(set(chosen)) or len(chosen) < best_score:
            continue
        trial = Reading(placed=dict(reading.placed))
        for (value, _), role in zip(ambiguous, choice, strict=True):
            if role is not None:
                trial.placed[role] = value
        values = _all(trial, known)
        ok = all(
            role is None or _confirms(role, value, values, roles)
            for (value, roles), role in zip(ambiguous, choice, strict=True)
        )
        if not ok or not _passes(values, stated):
            continue
        if len(chosen) > best_score:
            best, best_score = [choice], len(chosen)
        elif len(chosen) == best_score:
            best.append(choice)
    if best_score and len(best) == 1:
        for (value, _), role in zip(ambiguous, best[0], strict=True):
            if role is not None:
                reading.placed[role] = value
            else:
                reading.unplaced.append(value)
        return
    reading.unplaced.extend(v for v, _ in ambiguous)


def _confirms(
    role: Role, value: Value, values: AbcMapping[Role, int], roles: tuple[Role, ...]
) -> bool:
    """Whether the other dims confirm reading ``value`` as ``role`` (see the module doc)."""
    n = positive_int(value) or 0
    h = values.get(Dim.HIDDEN)
    a = values.get(Dim.HEADS)
    d = values.get(Dim.HEAD_DIM)
    if role == Dim.HIDDEN:
        if a is not None:  # the heads must split it: heads × head dim, or a plausible head dim
            if d is not None:
                return a * d == n
            lo, hi = HEAD_DIM_RANGE
            return n % a == 0 and lo <= n // a <= hi and (n // a) % 8 == 0
        if len(roles) == 1:
            larger = [values.get(Dim.VOCAB), values.get(Dim.FFN)]
            return any(x is not None and x > n for x in larger)
        return False
    if role == Dim.FFN:
        return h is not None and h <= n <= MAX_FFN_RATIO * h
    if role == Dim.VOCAB:
        return h is not None and n > h
    if role == Dim.HEAD_DIM:
        return h is not None and a is not None and a * n == h
    return False


def _passes(values: AbcMapping[Role, int], stated: frozenset[Role] = frozenset()) -> bool:
    """Whether a set of readings passes every value check (`_failures` is empty)."""
    return not _failures(values, stated)


def _failures(values: AbcMapping[Role, int], stated: frozenset[Role] = frozenset()) -> list[Dim]:
    """The dims whose reading fails a value check against the others; a head dim in
    ``stated`` (named by its key) is not checked against heads × head dim = width."""
    out: list[Dim] = []
    h, a = values.get(Dim.HIDDEN), values.get(Dim.HEADS)
    kv, d = values.get(Dim.KV_HEADS), values.get(Dim.HEAD_DIM)
    layers = values.get(Dim.LAYERS)
    if layers is not None and layers > MAX_LAYERS:
        out.append(Dim.LAYERS)
    if a is not None and h is not None and a > h:
        out.append(Dim.HEADS)
    if kv is not None and a is not None and (kv > a or a % kv):
        out.append(Dim.KV_HEADS)
    if (
        d is not None
        and a is not None
        and h is not None
        and a * d != h
        and Dim.HEAD_DIM not in stated
    ):
        out.append(Dim.HEAD_DIM)
    ffn = values.get(Dim.FFN)
    if ffn is not None and h is not None and ffn < h:
        out.append(Dim.FFN)
    vocab = values.get(Dim.VOCAB)
    if vocab is not None and h is not None and vocab <= h:
        out.append(Dim.VOCAB)
    top_k, experts = values.get(Dim.EXPERTS_PER_TOKEN), values.get(Dim.EXPERTS)
    if top_k is not None and experts is not None and top_k > experts:
        out.append(Dim.EXPERTS_PER_TOKEN)
    return out


def _checks(
    reading: Reading, known: AbcMapping[Role, Value], stated: frozenset[Role] = frozenset()
) -> None:
    """Leave unknown each dim the lexicon placed whose value fails a check."""
    for _ in range(len(DIMS)):
        failed = [d for d in _failures(_all(reading, known), stated) if d in reading.placed]
        if not failed:
            break
        dim = failed[0]
        value = reading.placed.pop(dim)
        assert isinstance(value, Value)
        reading.blocked[dim] = value
        if dim == Dim.HEADS:  # KV heads and the head dim cannot be checked without heads
            for other in (Dim.KV_HEADS, Dim.HEAD_DIM):
                if other in reading.placed:
                    kept = reading.placed.pop(other)
                    assert isinstance(kept, Value)
                    reading.blocked[other] = kept


def _attention_width(reading: Reading, known: AbcMapping[Role, Value]) -> None:
    """The head dim from a total attention width (flax's ``qkv_dim``) the heads divide."""
    width = reading.placed.pop(ATTENTION_WIDTH, None)
    values = _all(reading, known)
    a = values.get(Dim.HEADS)
    if width is None or Dim.HEAD_DIM in values or a is None:
        return
    w = positive_int(width) or 0
    if w % a == 0 and 8 <= w // a <= 1024:
        heads = reading.dim(Dim.HEADS) or known[Dim.HEADS]
        reading.placed[Dim.HEAD_DIM] = derived(
            w // a,
            (width, heads),
            f"{width.key.rsplit('.', 1)[-1]} / heads (total attention width)",
        )
    else:
        reading.blocked[Dim.HEAD_DIM] = width


def _heads_from_head_dim(reading: Reading, known: AbcMapping[Role, Value], scope: Scope) -> None:
    """The heads as width / head dim when a config states both and sets its heads key to
    null (paxml's ``NUM_HEADS = None`` beside ``DIMS_PER_HEAD`` and ``MODEL_DIMS``, for
    "computed from the others": paxml/tasks/lm/model_params.py:620-624 at b397693f): the
    relation every reader uses the other way round (head dim = width / heads). Without a
    heads key saying so, no heads are derived: a model whose heads vary by layer (OpenELM's
    ``qkv_multipliers`` beside ``head_dim``) states no heads either."""
    if Dim.HEADS in reading.placed or Dim.HEADS in known or Dim.HEADS in reading.blocked:
        return
    nulls = [
        v
        for k, v in scope_entries(scope)
        if (m := meaning(k)) is not None and m.roles == (Dim.HEADS,)
    ]
    if not nulls or any(not v.known or v.value is not None for v in nulls):
        return
    width = reading.dim(Dim.HIDDEN) or known.get(Dim.HIDDEN)
    head = reading.dim(Dim.HEAD_DIM) or known.get(Dim.HEAD_DIM)
    if not isinstance(width, Value) or not isinstance(head, Value) or head.derived:
        return
    h, d = positive_int(width), positive_int(head)
    if h is None or d is None or h % d or not 1 <= h // d <= h:
        return
    heads = derived(h // d, (width, head), "hidden / head_dim (no heads stated)")
    reading.placed[Dim.HEADS] = heads
    if Dim.KV_HEADS not in reading.placed and Dim.KV_HEADS not in known:
        reading.placed[Dim.KV_HEADS] = derived(
            h // d, (heads,), "= heads (no KV heads stated)", kind=Derivation.KV_FROM_HEADS
        )


# Words that, beside ``layer``, say a model runs only some of its layers.
LAYER_SELECTORS = frozenset({"select", "selected", "keep", "kept", "prune", "pruned", "subset"})


# Words that, beside ``layer``, ``block`` or ``depth``, name a second kind of layer whose count
# the model adds (Flux's ``depth`` double-stream and ``depth_single_blocks`` single-stream
# blocks, torchtitan/models/flux/__init__.py:215-216 at the corpus commit).
OTHER_LAYERS = frozenset({"single", "double", "extra"})


def _layer_selector(scope: Scope) -> Value | None:
    """A stated key that selects which layers run (``select_layers``, ``layers_to_keep``) or
    counts layers of a second kind (``depth_single_blocks``): the layer count is not one key."""
    for entry in scope.mapping.entries:
        found = canonical(entry.key)
        selects = "layer" in found and any(w in LAYER_SELECTORS for w in found)
        stacks = {"layer", "block", "depth"} & set(found) and any(w in OTHER_LAYERS for w in found)
        if not (selects or stacks):
            continue
        node = entry.value
        if isinstance(node, Scalar) and node.known and node.value in (None, "", False):
            continue
        path = f"{scope.path}.{entry.key}" if scope.path else entry.key
        value = node.value if isinstance(node, Scalar) else None
        return Value(value, path, node.span, known=False, expression=entry.key)
    return None


def unknown_value(value: Value) -> Value:
    """``value``'s key and place, its dim unknown: the lexicon read it, and a value check (or
    a key that changes what it means) left it unknown."""
    return replace(value, value=None, known=False, expression=None, formula="not settled")
