"""GPT-NeoX training configs (YAML, often JSON-like flow style with comments and trailing commas).

Detected by keys only NeoX writes at the top level next to a model width or depth:
``pipe_parallel_size``, ``model_parallel_size``, ``pos_emb``, ``gpt_j_residual``,
``attention_config``, ``output_layer_parallelism``, ``no_weight_tying``, ``rotary_pct``,
``mlp_multiple_of`` (dashes and underscores alike). Keys: ``hidden_size``,
``num_attention_heads``, ``num_kv_heads``, ``num_layers``, ``intermediate_size``,
``expansion_factor``, ``mlp_multiple_of`` (the FFN knob, default 1), ``seq_length`` (else
``max_position_embeddings``), ``train_micro_batch_size_per_gpu``,
``gradient_accumulation_steps``, ``train_batch_size``, ``model_parallel_size`` (tensor parallel),
``pipe_parallel_size`` (pipeline stages; ``0`` runs the model as one sequential stage, so the
stage count is 1: ``pp = pipe_parallel_size if pipe_parallel_size >= 1 else 1`` in
``megatron/initialize.py``),
``make_vocab_size_divisible_by`` (the vocab knob; NeoX's default is 128), ``precision`` or
``fp16.enabled`` / ``bf16.enabled``, ``activation`` (geglu, reglu, swiglu, glu, bilinear are
gated), ``moe_num_experts``, ``moe_top_k``; forks' keys: ``mlp_type`` (EleutherAI's ``llama`` of
2023-24 and Stability AI's ``gated``: a gated MLP ``int(8 · hidden/3)`` wide rounded up to 256
or to ``mlp_multiple_of``, `_typed_mlp`) and Stability AI's ``attention_head_type``
(``multiquery``: one KV head).

NeoX configs carry no vocab size (it comes from the tokenizer), so vocab stays unknown; NeoX
pads it to a multiple of ``make_vocab_size_divisible_by · model_parallel_size``
(``megatron/tokenizer/tokenizer.py`` ``_vocab_size_with_padding``).

FFN width, as ``ParallelMLP.__init__`` in ``megatron/model/transformer.py`` computes it
(GPT-NeoX main; the older ``LLaMAParallelMLP`` was merged into it)::

    ffn = intermediate_size or int(expansion_factor · hidden) or 4 · hidden
    if gated:                       # activation in geglu/reglu/swiglu/glu/bilinear
        ffn = int(ffn · 2 / 3)      # width of the fused gate+up projection
        ffn_in = ffn // 2           # width of each branch = the down projection's input
    else:
        ffn_in = ffn
    ffn_in = mlp_multiple_of · ⌈ffn_in / mlp_multiple_of⌉

The down projection's input ``ffn_in`` is the FFN width reported; it is a derived value
whenever it differs from the key as written (so Llama-2-7B's ``intermediate_size: 32768``
with swiglu and ``mlp_multiple_of: 256`` gives 11008).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from shapelint.core.model import Derivation, Dim, ModelConfig, Value
from shapelint.core.source import Candidate, Document, Scalar, Sequence
from shapelint.dialects.common import (
    Builder,
    KeyAliases,
    dtype_value,
    round_up,
    set_dtype_from_flags,
    settle_dims,
    training_config,
)
from shapelint.dialects.lookup import child, derived, normalize_key

NAME = "gpt-neox"

MARKERS = (
    "pipe_parallel_size",
    "model_parallel_size",
    "pos_emb",
    "gpt_j_residual",
    "attention_config",
    "output_layer_parallelism",
    "no_weight_tying",
    "rotary_pct",
    "mlp_multiple_of",
)
SHAPE_KEYS = ("hidden_size", "num_layers", "num_attention_heads")
GATED = frozenset({"geglu", "reglu", "swiglu", "glu", "bilinear"})
# attention_config layer types without attention heads.
ATTENTION_FREE = frozenset({"mamba", "rwkv"})


def detect(candidate: Candidate) -> bool:
    """A NeoX-only key and a NeoX model key at the top level.

    Hugging Face configs (``model_type``) and Python config classes are never NeoX files,
    even when they carry a NeoX-like key (transformers' ChameleonConfig has
    ``model_parallel_size``).
    """
    root = candidate.root
    if candidate.kind in ("class", "init") or child(root, "model_type") is not None:
        return False
    shape = [k for k in root if normalize_key(k) in SHAPE_KEYS]
    # Dash-spelled shape keys (``hidden-size``) are NeoX's alone.
    return bool(shape) and (any(child(root, k) for k in MARKERS) or any("-" in k for k in shape))


def attention_free(candidate: Candidate) -> bool:
    """True when ``attention_config`` gives every layer an attention-free type (Mamba, RWKV)."""
    hit = child(candidate.root, "attention_config")
    if hit is None or not isinstance(hit[1], Sequence):
        return False
    kinds: list[object] = []
    for group in hit[1].items:  # [[["mamba"], 12], …]
        if not isinstance(group, Sequence) or not group.items:
            return False
        names = group.items[0]
        if isinstance(names, Sequence):
            kinds.extend(n.value for n in names.items if isinstance(n, Scalar))
        elif isinstance(names, Scalar):
            kinds.append(names.value)
    return bool(kinds) and all(str(k).lower() in ATTENTION_FREE for k in kinds)


def neox_ffn(base: int, gated: bool, multiple_of: int) -> int:
    """The down projection's input width for a base FFN width (see the module docstring)."""
    ffn_in = int(base * 2 / 3) // 2 if gated else base
    return round_up(ffn_in, max(multiple_of, 1))


def extract(doc: Document, candidate: Candidate, extra_keys: KeyAliases) -> list[ModelConfig]:
    """The one model a NeoX config describes (or its batch/parallel settings)."""
    b = Builder(candidate, doc.path, NAME, extra_keys)
    if attention_free(candidate):
        b.has_attention = False  # "num_attention_heads: 12  # ignored when using mamba"
        b.consult("num_attention_heads", "num_kv_heads")
    b.take(Dim.HIDDEN, "hidden_size")
    b.take(Dim.HEADS, "num_attention_heads")
    b.take(Dim.KV_HEADS, "num_kv_heads")
    _head_type(b)
    b.take(Dim.LAYERS, "num_layers")
    b.take(Dim.SEQ_LEN, "seq_length", "max_position_embeddings")
    b.take(Dim.MICRO_BATCH, "train_micro_batch_size_per_gpu")
    b.take(Dim.GRAD_ACCUM, "gradient_accumulation_steps")
    b.take(Dim.GLOBAL_BATCH, "train_batch_size")
    b.take(Dim.TP, "model_parallel_size")
    b.take(Dim.PP, "pipe_parallel_size")
    b.take(Dim.VOCAB_MULTIPLE, "make_vocab_size_divisible_by")
    b.take(Dim.FFN_MULTIPLE, "mlp_multiple_of")
    b.take(Dim.EXPERTS, "moe_num_experts")
    b.take(Dim.EXPERTS_PER_TOKEN, "moe_top_k")
    b.set(Dim.DTYPE, dtype_value(b.lookup("precision")))
    set_dtype_from_flags(b, {"bf16": ("bf16.enabled",), "fp16": ("fp16.enabled",)})
    activation = b.lookup("activation")
    b.gated_mlp = activation is not None and str(activation.value).lower() in GATED
    pos_emb = b.lookup("pos_emb")
    # NeoX's pos_emb: "rotary", "learned", "alibi" (others — "sinusoidal", "rpe" — left unknown).
    b.position_embedding = {"rotary": "rope", "learned": "learned", "alibi": "alibi"}.get(
        str(pos_emb.value).lower() if pos_emb is not None else ""
    )
    if pos_emb is not None and str(pos_emb.value).lower() == "rotary":
        # int(hidden_size_per_attention_head * rotary_pct) (megatron/model/transformer.py).
        b.rotary_fraction = b.lookup("rotary_pct")
    settle_dims(b)
    _stages(b)
    mlp_type = b.lookup("mlp_type")
    if mlp_type is not None and str(mlp_type.value).lower() != "regular":
        _typed_mlp(b, mlp_type)
    _ffn(b, activation)
    return training_config(b)


# Stability AI's NeoX fork: ``attention_head_type`` ``multihead`` (the default) or
# ``multiquery``, whose keys and values are one head, ``2 · head_dim`` wide, shared by all heads
# (Stability-AI/gpt-neox megatron/neox_arguments/neox_args.py:189-193, megatron/model/
# transformer.py:636-659 at d2476c1f); its StableLM 2 configs add ``groupedquery`` with
# ``num_kv_heads`` (Stability-AI/StableLM configs/stablelm-2-12b.yml:14-15 at 93eea082).


def _head_type(b: Builder) -> None:
    """One KV head under ``attention_head_type: multiquery``; a type picked elsewhere leaves the
    KV heads unknown."""
    kind = b.lookup("attention_head_type")
    if kind is None or Dim.KV_HEADS in b.dims:
        return
    if not kind.known:
        b.set(Dim.KV_HEADS, kind)
    elif str(kind.value).lower() == "multiquery":
        formula = "attention_head_type multiquery: one KV head shared by all heads"
        b.set(Dim.KV_HEADS, derived(1, (kind,), formula, kind=Derivation.CONVERSION))


# ``mlp_type`` in the NeoX trees of 2023-24 (EleutherAI's ``regular`` is the default MLP, read
# by `_ffn`). EleutherAI's ``llama`` (megatron/neox_arguments/neox_args.py:355-360, picked at
# megatron/model/transformer.py:762-777 at 299b68cd; removed at 22149f0f) builds
# ``LLaMAParallelMLP``: gate, up and down projections ``int(2 · hidden · 4/3)`` rounded up to a
# multiple of 256 (transformer.py:148-160; the layer never passes another multiple), whatever
# ``activation`` says. Stability AI's fork, in which the StableLM models were trained, names it
# ``gated`` and makes the multiple a setting, ``mlp_multiple_of`` (Stability-AI/StableLM
# configs/stablelm-3b-4e1t.yml:19-21, stablelm-2-1_6b.yml, stablelm-2-12b.yml and the alpha v2
# configs at 93eea082). The fork's own source after 2023-06 is not public in any snapshot read
# here; the formula is EleutherAI's with the setting, and it gives the width published for
# stablelm-3b-4e1t: hidden 2560 → 6912 (transformers src/transformers/models/stablelm/
# configuration_stablelm.py, StableLmConfig's defaults "similar … to stabilityai/stablelm-3b-
# 4e1t", at 05cd1ec1). A width the config states beside such a type has no known meaning there.
TYPED_MLP_MULTIPLE = {"llama": 256, "gated": None}


def gated_mlp_width(hidden: int, multiple: int) -> int:
    """``LLaMAParallelMLP``'s width: ``int(2 · hidden · 4/3)`` rounded up to ``multiple``."""
    return round_up(int(2 * hidden * 4 / 3), max(multiple, 1))


def _typed_mlp(b: Builder, mlp_type: Value) -> None:
    """The FFN of a NeoX ``mlp_type`` other than ``regular``: the gated width of `gated_mlp_width`
    for ``llama`` and ``gated``, else (a type picked elsewhere, or one with no model here)
    unknown, as is the width of a typed MLP whose config also states one."""
    kind = str(mlp_type.value).lower() if mlp_type.known else ""
    stated = b.lookup("intermediate_size") or b.lookup("expansion_factor")
    hidden, h = b.dims.get(Dim.HIDDEN), b.int(Dim.HIDDEN)
    if kind not in TYPED_MLP_MULTIPLE or stated is not None:
        b.gated_mlp = True if kind in TYPED_MLP_MULTIPLE else None
        written = mlp_type.expression or str(mlp_type.value)
        why = f"mlp_type {written}" + (f" with {stated.key}" if stated is not None else "")
        b.set(Dim.FFN, replace(mlp_type, value=None, known=False, expression=why))
        return
    b.gated_mlp = True
    fixed = TYPED_MLP_MULTIPLE[kind]
    knob = b.dims.get(Dim.FFN_MULTIPLE) if fixed is None else None
    multiple = fixed if fixed is not None else b.int(Dim.FFN_MULTIPLE)
    if multiple is None:  # Stability's gated MLP without its multiple: no default known
        why = f"mlp_type {kind} without mlp_multiple_of"
        b.set(Dim.FFN, replace(mlp_type, value=None, known=False, expression=why))
        return
    if hidden is None or not h:
        return
    sources: tuple[Value, ...] = (hidden, mlp_type) + ((knob,) if knob is not None else ())
    shown = "mlp_multiple_of" if fixed is None else str(fixed)
    formula = f"NeoX mlp_type {kind}: {shown} · ⌈int(2 · hidden · 4/3) / {shown}⌉"

    def recompute(get: Callable[[Dim], int | None]) -> int | None:
        new_h = get(Dim.HIDDEN)
        m = fixed if fixed is not None else get(Dim.FFN_MULTIPLE)
        return gated_mlp_width(new_h, m) if new_h and m else None

    b.derive(Dim.FFN, derived(gated_mlp_width(h, multiple), sources, formula), recompute)


def _stages(b: Builder) -> None:
    """``pipe_parallel_size: 0`` is no PipelineModule: one stage, not zero (NeoX's
    ``megatron/initialize.py``: ``pp = pipe_parallel_size if pipe_parallel_size >= 1 else 1``)."""
    pipe = b.dims.get(Dim.PP)
    if pipe is not None and pipe.as_int == 0:
        formula = "pipe_parallel_size 0: one sequential stage (no PipelineModule)"
        b.dims[Dim.PP] = derived(1, (pipe,), formula)


def _ffn(b: Builder, activation: Value | None) -> None:
    if Dim.FFN in b.dims:  # a user key named it
        return
    hidden = b.dims.get(Dim.HIDDEN)
    h = b.int(Dim.HIDDEN)
    multiple = b.dims.get(Dim.FFN_MULTIPLE)
    m = b.int(Dim.FFN_MULTIPLE) or 1
    gated = bool(b.gated_mlp)
    stated = b.lookup("intermediate_size")
    factor = b.lookup("expansion_factor")
    sources: tuple[Value, ...]
    fixed_base: int | None = None
    ratio: float | None = None
    if stated is not None and stated.as_int:
        base, sources, formula = stated.as_int, (stated,), "intermediate_size"
        fixed_base = base
    elif hidden is not None and h and factor is not None and factor.known:
        if not isinstance(factor.value, int | float) or isinstance(factor.value, bool):
            return
        ratio = float(factor.value)
        base, sources = int(factor.value * h), (hidden, factor)
        formula = "int(expansion_factor · hidden)"
    elif hidden is not None and h:
        base, sources, formula = 4 * h, (hidden,), "4 · hidden"
    else:
        return
    width = neox_ffn(base, gated, m)
    if stated is not None and sources == (stated,) and width == base:
        b.set(Dim.FFN, stated)
        return
    if gated:
        formula = f"int(({formula}) · 2/3) // 2"
        sources += (activation,) if activation is not None else ()
    if m > 1 and multiple is not None:
        formula = f"mlp_multiple_of · ⌈{formula} / mlp_multiple_of⌉"
        sources += (multiple,)

    def recompute(get: Callable[[Dim], int | None]) -> int | None:
        new_h = get(Dim.HIDDEN)
        if fixed_base is not None:
            new_base = fixed_base
        elif new_h is None:
            return None
        else:
            new_base = int(ratio * new_h) if ratio is not None else 4 * new_h
        return neox_ffn(new_base, gated, get(Dim.FFN_MULTIPLE) or 1)

    b.derive(Dim.FFN, derived(width, sources, f"NeoX ParallelMLP: {formula}"), recompute)
