"""The normalized model every dialect produces and every rule reads.

`Dim` names the dimensions shapelint understands; a `Value` is one of them as written in a
file (or derived from others), with its key path and `Span`; a `ModelConfig` is one model's
dims; a `Target` (`shapelint.core.target`) is what the config is run on; `Finding`, `Fix` and
`Edit` are what rules report and the fixer applies.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Literal

from shapelint.core.limits import MAX_DIM
from shapelint.core.source import Span

# Re-exported for the transition: `Target` lives in shapelint.core.target.
from shapelint.core.target import Target as Target


class Dim(str, enum.Enum):
    """A normalized dimension; the value is the name used in JSON output and settings."""

    HIDDEN = "hidden"
    HEADS = "heads"
    KV_HEADS = "kv_heads"
    HEAD_DIM = "head_dim"
    V_HEAD_DIM = "v_head_dim"
    FFN = "ffn"
    VOCAB = "vocab"
    PADDED_VOCAB = "padded_vocab"
    LAYERS = "layers"
    SEQ_LEN = "seq_len"
    MICRO_BATCH = "micro_batch"
    GLOBAL_BATCH = "global_batch"
    GRAD_ACCUM = "grad_accum"
    TP = "tp"
    EXPERTS = "experts"
    EXPERTS_PER_TOKEN = "experts_per_token"
    MOE_FFN = "moe_ffn"
    # MoE layout and multi-head latent attention (DeepSeek-V2/V3, Kimi K2): shared experts,
    # leading dense layers, the MoE layer period, the low-rank q/kv widths, the rotary part of
    # the head dim (HEAD_DIM is nope + rope).
    SHARED_EXPERTS = "shared_experts"
    DENSE_LAYERS = "dense_layers"
    MOE_LAYER_FREQ = "moe_layer_freq"
    Q_LORA_RANK = "q_lora_rank"
    KV_LORA_RANK = "kv_lora_rank"
    ROPE_HEAD_DIM = "rope_head_dim"
    # How many of each head's dims rotary embedding turns (HF ``rotary_dim``, or the head dim
    # times ``partial_rotary_factor`` / ``rotary_pct`` / ``rotary_percentage``).
    ROTARY_DIM = "rotary_dim"
    # Sliding-window attention: the window (keys each query sees, HF ``sliding_window``) and
    # how many layers use it (the rest attend to the whole sequence).
    SLIDING_WINDOW = "sliding_window"
    WINDOW_LAYERS = "window_layers"
    # The head dim of a Gemma 4 family model's full-attention layers (``global_head_dim``,
    # 512 by default), where the sliding-window layers use HEAD_DIM.
    GLOBAL_HEAD_DIM = "global_head_dim"
    # The implementation a config names for its transformer layers (Megatron-LM's
    # ``transformer_impl``): reported; its dialect derives the engines it implies from it.
    TRANSFORMER_IMPL = "transformer_impl"
    DTYPE = "dtype"
    # Framework knobs that fixes prefer over raw numbers.
    VOCAB_MULTIPLE = "vocab_multiple"
    FFN_MULTIPLE = "ffn_multiple"
    FFN_MULTIPLIER = "ffn_multiplier"
    # Parallel sizes a training config states, and a checkpoint's quantization
    # (``quantization_config``): the SL3xx engine rules read them.
    PP = "pp"
    EP = "ep"
    CP = "cp"
    # DeepSpeed Ulysses sequence parallelism (``sequence_parallel_size``).
    SP = "sp"
    # Interleaved pipeline stages per GPU (Megatron's virtual pipeline size) and what activation
    # recomputation reruns (`shapelint.core.target.RECOMPUTE_MODES`): the step model reads them.
    VP = "vp"
    RECOMPUTE = "recompute"
    # The framework a config states it runs its step with where its dialect's default does not
    # say it (torchtitan's ``compile``: `shapelint.core.target.FRAMEWORKS`).
    FRAMEWORK = "framework"
    # The GPUs of one node a launch uses (NeMo's ``trainer.devices``, torchrun's
    # ``--nproc_per_node``): the NVLink domain the step model's collectives take.
    GPUS_PER_NODE = "gpus_per_node"
    # Set when a config sizes its pipeline stages itself (Megatron-LM's layout settings,
    # Megatron-DeepSpeed's pipeline partitioning): the setting that does; no even split is
    # then required.
    PP_LAYOUT = "pp_layout"
    # Megatron-LM's tensor-parallel communication settings: sequence parallelism (the
    # activations between tensor-parallel regions split along the sequence, all-gathered before
    # each column-parallel linear) and Userbuffers overlap of those all-gathers (booleans).
    SEQUENCE_PARALLEL = "sequence_parallel"
    TP_COMM_OVERLAP = "tp_comm_overlap"
    # The FP8-family recipe a config trains with, in `FP8_RECIPES` names (Megatron-LM's
    # ``--fp8-recipe``; "tensorwise" is current scaling).
    FP8_RECIPE = "fp8_recipe"
    QUANT_METHOD = "quant_method"
    QUANT_BITS = "quant_bits"
    QUANT_GROUP_SIZE = "quant_group_size"
    QUANT_SYM = "quant_sym"
    QUANT_BLOCK_N = "quant_block_n"
    QUANT_BLOCK_K = "quant_block_k"


# Dims that must be positive integers when present (SL002 checks them).
INTEGER_DIMS: frozenset[Dim] = frozenset(
    {
        Dim.HIDDEN,
        Dim.HEADS,
        Dim.KV_HEADS,
        Dim.HEAD_DIM,
        Dim.V_HEAD_DIM,
        Dim.GLOBAL_HEAD_DIM,
        Dim.FFN,
        Dim.VOCAB,
        Dim.PADDED_VOCAB,
        Dim.LAYERS,
        Dim.SEQ_LEN,
        Dim.MICRO_BATCH,
        Dim.GLOBAL_BATCH,
        Dim.GRAD_ACCUM,
        Dim.TP,
        Dim.EXPERTS,
        Dim.EXPERTS_PER_TOKEN,
        Dim.MOE_FFN,
        Dim.VOCAB_MULTIPLE,
        Dim.FFN_MULTIPLE,
        Dim.PP,
        Dim.EP,
        Dim.CP,
        Dim.SP,
        Dim.VP,
        Dim.GPUS_PER_NODE,
        Dim.QUANT_BITS,
        Dim.QUANT_BLOCK_N,
        Dim.QUANT_BLOCK_K,
    }
)

# Dims that change how much work the model does per token (its capacity), unlike vocabulary
# padding (rows never used) or the batch and parallel sizes: a fix that sets one of them is
# estimated per model FLOP (`shapelint.perf.estimate.estimate_fix`), not per step.
CAPACITY_DIMS: frozenset[Dim] = frozenset(
    {
        Dim.HIDDEN,
        Dim.HEADS,
        Dim.KV_HEADS,
        Dim.HEAD_DIM,
        Dim.V_HEAD_DIM,
        Dim.FFN,
        Dim.MOE_FFN,
        Dim.LAYERS,
        Dim.EXPERTS,
        Dim.EXPERTS_PER_TOKEN,
        Dim.SHARED_EXPERTS,
        Dim.DENSE_LAYERS,
        Dim.Q_LORA_RANK,
        Dim.KV_LORA_RANK,
        Dim.ROPE_HEAD_DIM,
    }
)


class Derivation(str, enum.Enum):
    """How a derived `Value` was computed: rules test this, never the display formula."""

    # head_dim = hidden / heads (a config that states neither head_dim nor an MLA split).
    HEAD_DIM_SPLIT = "head_dim_split"
    # KV heads = heads (no grouped-query attention stated).
    KV_FROM_HEADS = "kv_from_heads"
    # head_dim = hidden // heads by a framework whose attention is heads × head_dim wide
    # whatever the remainder (OpenLM): heads need not divide hidden.
    FLOOR_SPLIT = "floor_split"
    # A framework's formula of stated values (FFN from hidden, padded vocab, MLA head dims).
    FORMULA = "formula"
    # A framework's default for a key the config leaves out.
    DEFAULT = "default"
    # A stated value read in another unit or spelling (dtype names, boolean switches).
    CONVERSION = "conversion"


# Computes one dim from the others (``get(dim)`` is a known positive int or None); a dialect
# attaches one to each dim it derives, so a fix's consequences use the framework's own formula.
Formula = Callable[[Callable[["Dim"], "int | None"]], "int | None"]


@dataclass(frozen=True)
class Value:
    """One dim's value as a config states or implies it.

    ``key`` is the dotted key path (``text_config.vocab_size``). A derived value (head_dim =
    hidden / heads when absent) has ``derived_from`` set to the values it came from and
    ``formula`` saying how; its ``span`` is that of the first source, so findings on it point
    somewhere a user can look. ``shared`` marks a YAML value reached through an alias;
    ``expression`` is the source text of a computed Python value. ``kind`` says how a derived
    value was computed (`Derivation`); ``formula`` is only for display.
    """

    value: object
    key: str
    span: Span
    derived_from: tuple[Value, ...] = ()
    formula: str = ""
    shared: bool = False
    expression: str | None = None
    known: bool = True
    kind: Derivation | None = None

    @property
    def derived(self) -> bool:
        """True when no single key in the file holds this value."""
        return bool(self.derived_from)

    @property
    def as_int(self) -> int | None:
        """The value as an int when it is a known integer (bools are not) of at most
        `MAX_DIM` in size, else None: a larger one never reaches a formula, the performance
        model or a message (SL002 reports it)."""
        v = self.value
        if not self.known or isinstance(v, bool):
            return None
        if isinstance(v, float) and v.is_integer():
            v = int(v)
        if isinstance(v, int) and -MAX_DIM <= v <= MAX_DIM:
            return v
        return None


_Int = int  # ModelConfig.int shadows the builtin inside the class body


@dataclass(frozen=True)
class Traits:
    """What a config's framework implies for the rules beyond its dims: its dialect declares
    them (``TRAITS`` in the dialect's module), and every config that dialect names has them,
    so a rule asks about a trait, never about a framework's name."""

    # Keys (their last part) that hold the model's maximum context in this framework, not the
    # sequence length a run trains at (LitGPT trains at ``train.max_seq_length``, not at
    # ``block_size``).
    context_keys: frozenset[str] = frozenset()
    # The framework applies the MLP's activation itself, between two linear layers, instead of
    # running a fused LayerNorm-MLP module's activation kernel (Megatron-LM and NeMo with
    # Transformer Engine): that kernel's limits do not apply.
    own_mlp_activation: bool = False
    # The framework that runs the step (`shapelint.core.target.FRAMEWORKS`), whose whole-step
    # efficiency the performance model applies when neither a flag nor the settings name one.
    framework: str | None = None


@dataclass(frozen=True)
class ModelConfig:
    """One model's dims as found in one file.

    ``pretrained`` is True when the config ships with or names trained weights
    (``architectures``, ``_name_or_path``, a checkpoint file beside it): architecture-changing
    fixes are then unsafe. ``gated_mlp`` is True for SwiGLU/GeGLU MLPs (three FFN matrices),
    False for plain two-matrix MLPs, None when the config does not say.
    """

    name: str
    path: str
    dialect: str
    dims: Mapping[Dim, Value] = field(default_factory=dict)
    gated_mlp: bool | None = None
    pretrained: bool = False
    # Dims whose absence is expected in this dialect (axolotl takes the shape from the hub).
    shape_from_elsewhere: bool = False
    # True when SEQ_LEN is the model's maximum context (HF max_position_embeddings) rather
    # than the sequence length a training run uses.
    seq_is_max_context: bool = False
    # Which reader supplied each dim ("gpt-neox", "hf", "megatron-core" …), for --format json.
    sources: Mapping[Dim, str] = field(default_factory=dict)
    # False for encoder-only models without a vocabulary projection (BERT-style backbones):
    # the performance model then has no logit GEMM. None: the config does not say.
    has_lm_head: bool | None = None
    # False when no layer has attention (Mamba stacks): head rules do not apply.
    has_attention: bool = True
    # Why the performance model does not time this config although it has attention ("" when
    # it does): a hybrid whose other layers are mixers it has no cost for (Mamba, linear
    # attention, short convolutions), e.g. "24 of 32 layers are linear_attention".
    untimed: str = ""
    # False when the config builds a module that none of the engines in `shapelint.hardware.engines`
    # runs (a NeMo speech encoder named by its Hydra ``_target_``): the SL3xx rules then check
    # it only against engines the user names.
    runs_on_engines: bool = True
    # The framework formulas of derived dims, re-evaluated when a fix changes their inputs.
    formulas: Mapping[Dim, Formula] = field(default_factory=dict)
    # Every key path the dialect that built this config read (found), whatever it used it for.
    read_keys: frozenset[str] = frozenset()
    # How positions enter the model: "rope", "alibi", "learned", or None when the config does
    # not say (the performance model then assumes rotary, the common case today).
    position_embedding: str | None = None
    # Dropout probabilities the config states above zero, by where they apply: "attention"
    # (the attention probabilities), "hidden" (the residual branches), "embedding".
    dropout: Mapping[str, float] = field(default_factory=dict)
    # Batch-like keys the config states that no reader understood (``per_replica_batch``, a
    # micro-batch whose value cannot be known) while no micro-batch was read: an estimate at
    # the default micro-batch would then rest on a guess (`shapelint.dialects.lexicon`).
    unread_batch: tuple[Value, ...] = ()
    # Keys of the config's mapping that the key lexicon recognises but cannot place (a word
    # such as ``hidden_dim`` that the values do not settle): SL009 names them.
    unplaced: tuple[Value, ...] = ()
    # What the config's framework implies (set by `shapelint.dialects.extract`).
    traits: Traits = Traits()

    def get(self, dim: Dim) -> Value | None:
        """The value of ``dim`` or None."""
        return self.dims.get(dim)

    def int(self, dim: Dim) -> int | None:
        """The value of ``dim`` when it is a known positive integer, else None."""
        v = self.dims.get(dim)
        if v is None:
            return None
        n = v.as_int
        return n if n is not None and n > 0 else None

    @property
    def vocab_value(self) -> Value | None:
        """The vocab the embedding and logit GEMMs see: the padded one where stated."""
        return self.dims.get(Dim.PADDED_VOCAB) or self.dims.get(Dim.VOCAB)

    def rederive(self, changes: Mapping[Dim, _Int]) -> dict[Dim, _Int]:
        """``changes`` plus every derived dim recomputed by its framework formula from them."""
        out = dict(changes)

        def get(dim: Dim) -> _Int | None:
            return out[dim] if dim in out else self.int(dim)

        for _ in range(3):  # formulas may feed each other (hidden → ffn → expert ffn)
            for dim, formula in self.formulas.items():
                value = self.dims.get(dim)
                if dim in changes or value is None or not value.derived:
                    continue
                new = formula(get)
                if new is not None and new > 0 and new != get(dim):
                    out[dim] = new
        return out

    def with_dims(self, changes: Mapping[Dim, object]) -> ModelConfig:
        """A copy with some dims replaced by plain values (used for counterfactual estimates)."""
        dims = dict(self.dims)
        for dim, new in changes.items():
            old = dims.get(dim)
            if old is not None:
                dims[dim] = replace(old, value=new, known=True)
            else:
                dims[dim] = Value(new, dim.value, _NOWHERE)
        return replace(self, dims=dims)


_NOWHERE = Span("", 1, 1, 1, 1, 0, 0)

Severity = Literal["error", "warning", "info"]
Applicability = Literal["safe", "unsafe"]

SEVERITY_RANK: dict[str, int] = {"info": 0, "warning": 1, "error": 2}


@dataclass(frozen=True)
class Edit:
    """Replace the text at ``span`` (the value ``old`` at ``key``) with ``new``.

    The new text is rendered by the fixer in the style of the old text (quotes, digit
    separators); ``text`` overrides that when a rule needs exact text.
    """

    span: Span
    key: str
    old: object
    new: object
    text: str | None = None


@dataclass(frozen=True)
class Fix:
    """A change that resolves a finding: edits to the file and the dims they change.

    ``dims`` holds the effective dim values after the fix (e.g. the padded vocab when the fix
    sets a padding knob), so the performance model can estimate the fixed config.
    """

    description: str
    applicability: Applicability
    edits: tuple[Edit, ...]
    dims: tuple[tuple[Dim, object], ...] = ()


@dataclass(frozen=True)
class Estimate:
    """The estimated cost of a finding on one GPU."""

    gpu: str
    slowdown_pct: float
    step_time_s: float
    fixed_step_time_s: float


@dataclass(frozen=True)
class Finding:
    """One reported problem, pointing at ``span`` in ``path``."""

    code: str
    name: str
    severity: Severity
    message: str
    path: str
    span: Span
    config: str = ""
    key: str = ""
    value: object = None
    related: tuple[Value, ...] = ()
    fix: Fix | None = None
    estimates: tuple[Estimate, ...] = ()

    @property
    def max_slowdown(self) -> float:
        """The largest estimated slowdown over the target GPUs (0 when none)."""
        return max((e.slowdown_pct for e in self.estimates), default=0.0)
