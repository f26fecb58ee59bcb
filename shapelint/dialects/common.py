"""Building blocks shared by the dialects: config assembly (`Builder`) and the helpers that
take a builder (sliding windows, FFN formulas, training configs).

A dialect is a table of key names per `Dim` plus the framework's own formulas. Key look-up
(``-`` and ``_`` alike, dotted names walking into nested mappings), references and the layer
kinds a mapping describes are in `shapelint.dialects.lookup`.
"""

from __future__ import annotations

from collections.abc import Callable as AbcCallable
from collections.abc import Mapping as AbcMapping
from dataclasses import dataclass, field, replace
from typing import Protocol

from shapelint.core.arith import round_up as round_up  # re-exported for the dialects
from shapelint.core.dtypes import normalize_dtype
from shapelint.core.model import Derivation, Dim, Formula, ModelConfig, Value
from shapelint.core.source import Candidate, Document, Mapping, Scalar, Sequence
from shapelint.dialects.lookup import (
    ATTENTION_DIMS,
    derived,
    find,
    hybrid_mixers,
    recurrent_only,
    resolve,
    settle,
    speech_module,
    unsettled,
)

KeyAliases = AbcMapping[Dim, tuple[str, ...]]


class Dialect(Protocol):
    """What a dialect module provides; `DIALECTS` is typed with it, so mypy checks each one."""

    NAME: str

    def detect(self, candidate: Candidate) -> bool:
        """Whether ``candidate`` carries this framework's evidence."""
        ...

    def extract(
        self, doc: Document, candidate: Candidate, extra_keys: KeyAliases
    ) -> list[ModelConfig]:
        """The configs this framework reads from ``candidate``, with its own formulas."""
        ...


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
    has_lm_head: bool | None = None
    has_attention: bool = True
    runs_on_engines: bool = True
    untimed: str = ""
    formulas: dict[Dim, Formula] = field(default_factory=dict)
    read_keys: set[str] = field(default_factory=set)
    nulls: dict[Dim, Value] = field(default_factory=dict)
    # The stated fraction of each head's dims that rotary embedding turns (HF
    # ``partial_rotary_factor``, NeoX ``rotary_pct`` …): ``build`` derives ROTARY_DIM from it.
    rotary_fraction: Value | None = None
    # Stated dropout probabilities above zero, by where they apply (ModelConfig.dropout).
    dropout: dict[str, float] = field(default_factory=dict)
    # How positions enter the model, when the config says (ModelConfig.position_embedding).
    position_embedding: str | None = None

    @property
    def root(self) -> Mapping:
        return self.candidate.root

    def lookup(self, *names: str) -> Value | None:
        """Find the first of ``names`` under the candidate's root (and remember it was read)."""
        found = find(self.root, names, self.candidate.key_prefix)
        if found is not None:
            self.read_keys.add(found.key)
        return found

    def consult(self, *names: str) -> None:
        """Mark keys as read by this dialect although it chose not to use them (so no other
        reader takes them: llm-foundry's ``kv_n_heads`` means nothing without GQA)."""
        for name in names:
            self.lookup(name)

    def derive(self, dim: Dim, value: Value, formula: Formula | None = None) -> None:
        """Set ``dim`` to a derived ``value`` unless set; ``formula`` recomputes it after a fix."""
        if dim in self.dims:
            return
        self.dims[dim] = value
        if formula is not None:
            self.formulas[dim] = formula

    def take(self, dim: Dim, *names: str) -> Value | None:
        """Set ``dim`` from the first of the user's keys or ``names`` present, if unset."""
        if dim in self.dims:
            return self.dims[dim]
        value = self.lookup(*self.extra_keys.get(dim, ()), *names)
        if value is not None and self.candidate.kind in SENTINEL_KINDS and _sentinel(value):
            # ``dim: int = -1`` in a class body: "set me", not a size (Llama 4); ``--num-layers
            # -1`` in a launch script: a dummy, the size comes from the checkpoint
            # (Megatron-DeepSpeed's eval-harness scripts, whose ``evaluate.py`` replaces the
            # arguments with the checkpoint's: tasks/eval_harness/evaluate.py:318-333 at f4157bea)
            return None
        if (
            value is not None
            and self.candidate.kind in ("class", "init")
            and dim in ZERO_UNSET
            and value.known
            and value.value == 0
            and not isinstance(value.value, bool)
        ):
            # ``num_layers: int = 0`` in a class body: "set me" too (Megatron-core's
            # TransformerConfig, megatron/core/transformer/transformer_config.py:106-108 in
            # microsoft/Megatron-DeepSpeed at f4157bea); no model has zero of these
            return None
        if value is not None and value.value is not None:
            self.dims[dim] = value
            return value
        if (
            value is not None
            and not value.known
            and self.candidate.kind == "shell"
            and dim not in NULL_INVALID
        ):
            # ``--ffn-hidden-size $1``, ``--num-query-groups ${NUM_KEY_VALUE_HEADS}`` set in a
            # branch: stated but unknown, so no default (4 · hidden, KV heads = heads, TP 1 in
            # the padded vocab) may stand in for it. An unknown width/heads/layers stays
            # absent, which already blocks what derives from it, and keeps SL009 for a
            # script whose shape is all unknown.
            self.dims[dim] = value
            return value
        if (
            value is not None
            and dim in NULL_INVALID
            and value.known
            and self.candidate.kind not in PYTHON_KINDS
        ):
            self.nulls[dim] = value  # stated as null: SL002 reports it, nothing derives from it
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
        for dim, value in list(self.dims.items()):
            if unsettled(value):
                # ``${ref}`` (resolved in the candidate when it can be, else unknown), and the
                # strings OmegaConf/Hydra configs leave for "set at run time".
                self.dims[dim] = settle(self.candidate, value)
        hidden, heads = self.dims.get(Dim.HIDDEN), self.dims.get(Dim.HEADS)
        h, a = self.int(Dim.HIDDEN), self.int(Dim.HEADS)
        if Dim.HEAD_DIM not in self.dims and hidden and heads and h and a and h % a == 0:
            split = derived(
                h // a, (hidden, heads), "hidden / heads", kind=Derivation.HEAD_DIM_SPLIT
            )
            self.derive(Dim.HEAD_DIM, split, head_dim_split)
        if Dim.KV_HEADS not in self.dims and heads is not None and a:
            same = derived(
                a, (heads,), "= heads (no KV heads stated)", kind=Derivation.KV_FROM_HEADS
            )
            self.derive(Dim.KV_HEADS, same, lambda get: get(Dim.HEADS))
        self._rotary_dim()
        if self.has_attention and recurrent_only(self._holder()):
            # Recurrent/state-space blocks: what a transformer reading calls the FFN is the
            # recurrence's inner width (transformers' Mamba ``intermediate_size``, lingua's
            # ``SSM`` hidden) or an MLP this reading cannot tell apart from it: unknown.
            self.has_attention = False
            self.dims.pop(Dim.FFN, None)
            self.formulas.pop(Dim.FFN, None)
        if not self.has_attention:
            for dim in ATTENTION_DIMS:
                self.dims.pop(dim, None)
        if speech_module(self._holder()):
            self.runs_on_engines = False
        if self.has_attention and not self.untimed:
            self.untimed = hybrid_mixers(self._holder())
        for dim, null in self.nulls.items():
            self.dims.setdefault(dim, null)
        return ModelConfig(
            name=self.candidate.name,
            path=self.path,
            dialect=self.dialect,
            dims=dict(self.dims),
            gated_mlp=self.gated_mlp,
            pretrained=self.pretrained,
            shape_from_elsewhere=self.shape_from_elsewhere,
            seq_is_max_context=self.seq_is_max_context,
            sources={dim: self.dialect for dim in self.dims},
            has_lm_head=self.has_lm_head,
            has_attention=self.has_attention,
            runs_on_engines=self.runs_on_engines,
            untimed=self.untimed,
            formulas={d: f for d, f in self.formulas.items() if d in self.dims},
            read_keys=frozenset(self.read_keys),
            dropout=dict(self.dropout),
            position_embedding=self.position_embedding,
        )

    def _holder(self) -> Mapping:
        """The mapping that states the hidden size (a YAML ``model:`` block, or the root)."""
        hidden = self.dims.get(Dim.HIDDEN)
        if hidden is None or hidden.derived_from or "." not in hidden.key:
            return self.root
        prefix = self.candidate.key_prefix
        key = (
            hidden.key[len(prefix) :].lstrip(".")
            if prefix and hidden.key.startswith(prefix)
            else hidden.key
        )
        parent = key.rsplit(".", 1)[0] if "." in key else ""
        hit = resolve(self.root, parent, "") if parent else None
        return hit[1] if hit is not None and isinstance(hit[1], Mapping) else self.root

    def _rotary_dim(self) -> None:
        """ROTARY_DIM = int(head dim × the stated rotary fraction), as HF (``int(
        partial_rotary_factor * head_dim)``), GPT-NeoX, LitGPT and Megatron compute it."""
        fraction, head_dim, d = self.rotary_fraction, self.dims.get(Dim.HEAD_DIM), None
        if head_dim is not None:
            d = self.int(Dim.HEAD_DIM)
        if Dim.ROTARY_DIM in self.dims or fraction is None or head_dim is None or not d:
            return
        f = fraction.value
        if isinstance(f, bool) or not isinstance(f, int | float) or not 0 < f <= 1:
            return
        rotary = int(d * f)
        if rotary <= 0:
            return
        self.derive(
            Dim.ROTARY_DIM,
            derived(rotary, (fraction, head_dim), f"int(head_dim × {fraction.key.split('.')[-1]})"),
            lambda get: int(hd * f) if (hd := get(Dim.HEAD_DIM)) else None,
        )


# Dims a model cannot be built without: ``null`` there is an error (SL002), not a default.
NULL_INVALID = frozenset({Dim.HIDDEN, Dim.HEADS, Dim.LAYERS})
# Candidates read from Python. There a ``None`` (``n_heads: Optional[int] = None``) is how a
# class says "not given: derived from the other dims" (Meta lingua's ``BaseTransformerArgs``
# takes ``n_heads or dim // head_dim``): unknown, not an invalid value.
PYTHON_KINDS = frozenset({"class", "init", "call", "dict", "module"})


# Dims a class-body default of 0 leaves unset (a count of zero experts is a dense model, so
# only these; see `Builder.take`).
ZERO_UNSET = frozenset({Dim.HIDDEN, Dim.HEADS, Dim.LAYERS})
# Candidate kinds where a negative size is a placeholder, not a value (see `Builder.take`).
SENTINEL_KINDS = frozenset({"class", "init", "shell"})


def _sentinel(value: Value) -> bool:
    """A negative int: the placeholder a config class gives a field that must be set."""
    v = value.value
    return value.known and isinstance(v, int) and not isinstance(v, bool) and v < 0


# How transformers gives layers sliding-window attention when a config has no ``layer_types``
# (transformers 5.24.0): "all" — every layer's attention takes ``config.sliding_window``
# (modeling_mistral.py:173, modeling_mixtral.py:322, modeling_phi3.py:247,
# modeling_starcoder2.py:193); ("pattern", p) — layer i slides when (i + 1) % p != 0, p from
# ``sliding_window_pattern`` where the config class reads it (configuration_gemma2.py:94-97,
# configuration_gpt_oss.py:84-87: p = 2; configuration_gemma3.py:105-110: 6;
# configuration_cohere2.py:95-100: 4); ("from", n) — with ``use_sliding_window``, layers
# i >= ``max_window_layers`` (default n; configuration_qwen2.py:83-91, configuration_qwen3.py).
WINDOW_LAYOUTS: dict[str, tuple[str, int]] = {
    "mistral": ("all", 0),
    "mixtral": ("all", 0),
    "phi3": ("all", 0),
    "starcoder2": ("all", 0),
    "gemma2": ("pattern", 2),
    "gpt_oss": ("pattern", 2),
    "gemma3": ("pattern", 6),
    "gemma3_text": ("pattern", 6),
    "cohere2": ("pattern", 4),
    "qwen2": ("from", 28),
    "qwen3": ("from", 28),
}
# The configs whose class reads ``sliding_window_pattern`` (Gemma 2 and gpt-oss fix it at 2).
PATTERN_KEY_TYPES = frozenset({"gemma3", "gemma3_text", "cohere2"})


def sliding_window(b: Builder) -> None:
    """Sliding-window attention: the window (``sliding_window``, a positive int) and how many
    layers use it — counted from ``layer_types`` when the config lists them, else by the
    model type's rule in transformers (`WINDOW_LAYOUTS`). A model type without a known rule,
    or a Gemma 3 with bidirectional attention (its class rewrites the window), reads no window:
    every layer is then timed as full attention, as before."""
    window = b.lookup("sliding_window")
    w = window.value if window is not None else None
    if window is None or not isinstance(w, int) or isinstance(w, bool) or w <= 0:
        return
    layers = b.dims.get(Dim.LAYERS)
    n = b.int(Dim.LAYERS)
    if layers is None or not n:
        return
    listed = resolve(b.root, "layer_types", b.candidate.key_prefix)
    if listed is not None and isinstance(listed[1], Sequence):
        kinds = [i.value if isinstance(i, Scalar) else None for i in listed[1].items]
        if len(kinds) != n:
            return  # a list that does not match the layers: unknown
        sliding = sum(1 for k in kinds if k == "sliding_attention")
        if sliding:
            b.set(Dim.SLIDING_WINDOW, window)
            b.read_keys.add(listed[0])
            b.set(
                Dim.WINDOW_LAYERS,
                derived(sliding, (window, layers), 'layer_types: "sliding_attention" layers'),
            )
        return
    model_type = b.lookup("model_type")
    kind = str(model_type.value).lower() if model_type is not None else ""
    layout = WINDOW_LAYOUTS.get(kind)
    if model_type is None or layout is None:
        return
    rule, p = layout
    if kind in ("gemma3", "gemma3_text"):
        bidirectional = b.lookup("use_bidirectional_attention")
        if bidirectional is not None and bidirectional.value is not False:
            return
    if rule == "from":
        enabled = b.lookup("use_sliding_window")
        if enabled is None or enabled.value is not True:
            return  # use_sliding_window defaults to False: the window is not used
        first = b.lookup("max_window_layers")
        start = first.value if first is not None else p
        if not isinstance(start, int) or isinstance(start, bool) or start < 0:
            return
        sliding, formula = max(0, n - start), "layers from max_window_layers on"
    elif rule == "pattern":
        stated = b.lookup("sliding_window_pattern") if kind in PATTERN_KEY_TYPES else None
        if stated is not None:
            p = stated.value if isinstance(stated.value, int) else 0
        if isinstance(p, bool) or p <= 0:
            return
        sliding, formula = n - n // p, f"layers i with (i + 1) % {p} != 0"
    else:
        sliding, formula = n, "every layer"
    if sliding:
        b.set(Dim.SLIDING_WINDOW, window)
        b.set(Dim.WINDOW_LAYERS, derived(sliding, (window, layers, model_type), formula))


def mla_head_dim(b: Builder, nope: Value | None, rope: Value | None) -> bool:
    """Multi-head latent attention's query/key head dim, ``qk_nope_head_dim +
    qk_rope_head_dim`` (the formula `engine_shapes.is_mla` recognises), set when both are
    stated; True when it was."""
    if nope is None or rope is None or not nope.as_int or rope.as_int is None:
        return False
    formula = "qk_nope_head_dim + qk_rope_head_dim"
    b.set(Dim.HEAD_DIM, derived(nope.as_int + rope.as_int, (nope, rope), formula))
    return True


def head_dim_split(get: AbcCallable[[Dim], int | None]) -> int | None:
    """hidden / heads when heads divide hidden."""
    h, a = get(Dim.HIDDEN), get(Dim.HEADS)
    return h // a if h and a and h % a == 0 else None


def llama_ffn(dim: int, multiple_of: int, multiplier: float | None) -> int:
    """Llama's FeedForward hidden width for model width ``dim`` (``params.json`` and any
    config whose keys a user mapped to ``multiple_of`` / ``ffn_dim_multiplier``)."""
    hidden = int(2 * (4 * dim) / 3)
    if multiplier is not None:
        hidden = int(multiplier * hidden)
    return round_up(hidden, multiple_of)


MPT_DEFAULT_EXPANSION = 4


def mpt_ffn(b: Builder, prefix: str = "") -> None:
    """MPT's FFN (llm-foundry YAMLs under ``model.``, HF MPT configs at the top level), as
    llm-foundry's ``resolve_ffn_hidden_size`` (``llmfoundry/models/layers/ffn.py``) computes
    it when ``ffn_config.ffn_hidden_size`` is not stated: ``int(d_model · expansion_ratio)``,
    ``4 · d_model`` when the ratio is absent (its default). ``ffn_type: mptglu`` is gated."""
    ffn_type = b.lookup(f"{prefix}ffn_config.ffn_type")
    b.gated_mlp = b.gated_mlp or (ffn_type is not None and str(ffn_type.value) == "mptglu")
    hidden, h = b.dims.get(Dim.HIDDEN), b.int(Dim.HIDDEN)
    if Dim.FFN in b.dims or hidden is None or not h:
        return
    ratio = b.lookup(f"{prefix}expansion_ratio")
    if ratio is None:
        b.derive(
            Dim.FFN,
            derived(MPT_DEFAULT_EXPANSION * h, (hidden,), "4 · d_model"),
            lambda get: MPT_DEFAULT_EXPANSION * x if (x := get(Dim.HIDDEN)) else None,
        )
    elif isinstance(ratio.value, int | float) and not isinstance(ratio.value, bool):
        r = float(ratio.value)
        b.derive(
            Dim.FFN,
            derived(int(h * ratio.value), (hidden, ratio), "int(d_model · expansion_ratio)"),
            lambda get: int(x * r) if (x := get(Dim.HIDDEN)) else None,
        )


def looks_like_model(dims: AbcMapping[Dim, Value]) -> bool:
    """True when the dims describe a transformer: a width and at least heads or layers."""
    return Dim.HIDDEN in dims and (Dim.HEADS in dims or Dim.LAYERS in dims)


# --- Training-config helpers (NeoX, Megatron, NeMo, OLMo, llm-foundry, nanotron, axolotl,
# --- DeepSpeed, torchtitan): references, "auto", dtypes, batch-only configs.

# Dims a training config can state without stating a model shape.
BATCH_DIMS = frozenset({Dim.MICRO_BATCH, Dim.GLOBAL_BATCH, Dim.GRAD_ACCUM, Dim.TP, Dim.SEQ_LEN})


def dtype_name(raw: object) -> str | None:
    """The canonical dtype (bf16, fp16, fp32, fp8) a precision setting names, or None."""
    if isinstance(raw, bool) or not isinstance(raw, str | int):
        return None
    return normalize_dtype(raw)


def dtype_value(value: Value | None) -> Value | None:
    """``value`` as a canonical dtype: itself when already canonical, else derived from it."""
    if value is None or not value.known:
        return None
    name = dtype_name(value.value)
    if name is None:
        return None
    if name == value.value:
        return value
    return derived(
        name, (value,), f"{value.key}: {value.value} → {name}", kind=Derivation.CONVERSION
    )


def set_dtype_from_flags(b: Builder, flags: AbcMapping[str, tuple[str, ...]]) -> None:
    """Set DTYPE from boolean switches (``bf16: true``, ``fp16.enabled: true``)."""
    for name, keys in flags.items():
        flag = b.lookup(*keys)
        if flag is not None and flag.value is True:
            b.set(
                Dim.DTYPE, derived(name, (flag,), f"{flag.key}: true", kind=Derivation.CONVERSION)
            )


def settle_dims(b: Builder) -> None:
    """Apply the user's keys, then `settle` every dim taken so far (before derivations)."""
    b.apply_user_keys()
    for dim, value in list(b.dims.items()):
        b.dims[dim] = settle(b.candidate, value)


def training_config(b: Builder) -> list[ModelConfig]:
    """Build ``b``: a model config, or one with batch/parallel dims only (shape elsewhere)."""
    config = b.build()
    if looks_like_model(config.dims):
        return [config]
    if any(dim in config.dims for dim in BATCH_DIMS):
        return [replace(config, shape_from_elsewhere=True)]
    return []


# Activation recomputation as frameworks write it → `shapelint.core.target.RECOMPUTE_MODES`.
RECOMPUTE_NAMES = {"full": "full", "selective": "selective", "none": "none"}


def take_recompute(b: Builder, granularity: tuple[str, ...], switch: tuple[str, ...] = ()) -> None:
    """``Dim.RECOMPUTE`` from a granularity key ("full", "selective"; Megatron-LM's
    ``recompute_granularity``, NeMo's ``activations_checkpoint_granularity``), else from a
    switch that means selective recompute when true (Megatron-LM's ``--recompute-activations``
    sets ``recompute_granularity = 'selective'``, megatron/training/arguments.py)."""
    stated = b.lookup(*granularity)
    if stated is not None and stated.known:
        mode = RECOMPUTE_NAMES.get(str(stated.value).strip().lower())
        if mode is not None:
            b.set(
                Dim.RECOMPUTE,
                derived(mode, (stated,), f"{stated.key}: {mode}", kind=Derivation.CONVERSION),
            )
        return
    on = b.lookup(*switch) if switch else None
    if on is not None and on.known and on.value is True:
        b.set(
            Dim.RECOMPUTE,
            derived("selective", (on,), f"{on.key}: selective", kind=Derivation.CONVERSION),
        )


def take_interleaving(
    b: Builder, stages: tuple[str, ...], layers_per_stage: tuple[str, ...] = ()
) -> None:
    """``Dim.VP``, the interleaved stages per pipeline rank: stated (Megatron-core's and NeMo's
    ``virtual_pipeline_model_parallel_size``), or Megatron-LM's ``layers / pp /
    num_layers_per_virtual_pipeline_stage`` (megatron/training/arguments.py)."""
    if b.take(Dim.VP, *stages) is not None or not layers_per_stage:
        return
    per_stage = b.lookup(*layers_per_stage)
    layers, pp = b.dims.get(Dim.LAYERS), b.dims.get(Dim.PP)
    n = per_stage.as_int if per_stage is not None and per_stage.known else None
    total, p = b.int(Dim.LAYERS), b.int(Dim.PP)
    if per_stage is None or layers is None or pp is None or not (n and total and p):
        return
    if total % p == 0 and (total // p) % n == 0:
        formula = f"{layers.key} / {pp.key} / {per_stage.key}"
        b.set(Dim.VP, derived(total // p // n, (per_stage, layers, pp), formula))
