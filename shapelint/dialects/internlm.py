"""InternLM / InternEVO training configs (mmengine-style Python modules).

A config is a Python module of constants and ``dict(...)`` calls, loaded by InternLM's
launcher (``internlm/initialize/launch.py``)::

    SEQ_LEN = 2048
    HIDDEN_SIZE = 4096
    model_type = "MQLLAMA"
    data = dict(seq_len=SEQ_LEN, micro_num=4, micro_bsz=2, ...)
    model = dict(hidden_size=HIDDEN_SIZE, num_attention_heads=32, num_kv_attention_heads=8,
                 num_layers=32, mlp_ratio=8 / 3, vocab_size=103168, dtype="torch.bfloat16",
                 embed_split_hidden=True, num_chunks=1, ...)
    parallel = dict(zero1=8, tensor=dict(size=8, mode="fstp"), pipeline=dict(size=1))

Detected on the ``model`` dict: ``hidden_size`` and ``mlp_ratio`` beside an InternLM-only key
(``embed_split_hidden``, ``embed_grad_scale``, ``num_chunks``, ``apply_post_layer_norm``).
The reader also reads the module's ``data`` and ``parallel`` dicts, which are candidates of
their own. Rules, from InternLM's source (checked at aaaf4d7b, the last main commit with
``configs/``; ff22c124 for ``MQLLAMA``; 7cec7e98 for ``INTERNLM_MoE``):

- KV heads: ``num_kv_attention_heads`` (``MQLLAMA``'s builder, ``num_kv_attention_heads if
  num_kv_attention_heads else num_attention_heads``); else the heads.
- FFN: ``FeedForward(hidden, int(hidden_size * mlp_ratio), multiple_of=256)`` rounds the
  width up to a multiple of 256 (``internlm/model/linear.py``; InternEvo c628a8c8
  ``internlm/model/modules/mlp.py``) and is SwiGLU (``w3(silu(w1(x)) * w2(x))``), for the
  model types whose builders were read (``INTERNLM``, the default when ``model_type`` is
  absent, ``INTERNLM_MoE``, ``MQLLAMA``, and InternEvo's ``INTERNLM2_PUBLIC`` and ``LLAMA2``);
  other types (``H3``, ``QWEN2`` …) are unknown, as is ``use_swiglu=False`` (an unrounded
  GELU MLP). The builders read do not pass a ``multiple_of`` the model dict states, so a
  stated one leaves the width known only where it rounds to the same width as 256.
- Sequence and microbatch: ``data.seq_len`` and ``data.micro_bsz`` (a ``model`` dict's
  ``max_position_embeddings`` is the position cap, not the training length) — InternLM packs
  ``micro_bsz`` samples of ``seq_len`` tokens into one microbatch (``packed_length =
  seq_len * micro_bsz``); ``data.micro_num`` is the gradient accumulation.
- Parallelism: ``parallel.tensor`` and ``parallel.pipeline``, an int or ``dict(size=…)``
  (``parallel_context.py`` ``_set_parallel_size_from_config``); absent from a ``parallel``
  dict they are 1 (``launch.py``). The tensor size splits each GEMM's weights only in the
  Megatron-style modes (an int, ``mode`` ``origin_tp``/``mtp``/``msp``/``fsp``, ``sp``
  ``none``/``megatron``/``flash-attn``); FSTP/ISP (``sp="intern"``, ``mode="fstp"``/``"isp"``)
  all-gathers the full weight before each GEMM (``FSTPLinear`` → ``fstp_fused_dense_func``,
  ``internlm/model/utils.py`` at 262de4b7) and splits the tokens instead, so there the tensor
  parallel size of the GEMMs is unknown, as it is for a mode this reader does not know.
"""

from __future__ import annotations

from shapelint.core.arith import round_up
from shapelint.core.model import Derivation, Dim, ModelConfig, Value
from shapelint.core.source import Candidate, Document, Mapping, Scalar
from shapelint.dialects.common import Builder, KeyAliases, dtype_value, training_config
from shapelint.dialects.defaults import default
from shapelint.dialects.lookup import child, derived, find

NAME = "internlm"
FRAMEWORK = "InternLM"
MARKERS = ("embed_split_hidden", "embed_grad_scale", "num_chunks", "apply_post_layer_norm")
# Tensor-parallel modes that split the weights Megatron-style (InternLM launch.py at
# 262de4b7 and ed723277; InternEVO's mtp/msp/fsp).
SPLIT_MODES = ("origin_tp", "mtp", "msp", "fsp")
SPLIT_SP = ("none", "megatron", "flash-attn")
MULTIPLE_OF = 256  # FeedForward(multiple_of=256), internlm/model/linear.py
# Model types whose FFN builder was read: FeedForward(hidden, int(hidden * mlp_ratio)).
FFN_TYPES = ("INTERNLM", "INTERNLM_MoE", "MQLLAMA", "INTERNLM2_PUBLIC", "LLAMA2")
DEFAULT_TYPE = "INTERNLM"  # launch.py: the model type when the config names none


def detect(candidate: Candidate) -> bool:
    """The ``model = dict(hidden_size=…, mlp_ratio=…, embed_split_hidden=…)`` of a module."""
    if candidate.kind not in ("call", "dict") or candidate.name != "model":
        return False
    root = candidate.root
    if child(root, "hidden_size") is None or child(root, "mlp_ratio") is None:
        return False
    return any(child(root, k) is not None for k in MARKERS)


def _sibling(doc: Document, name: str) -> Mapping | None:
    """The module-level ``name = dict(...)`` of the file (the last one: it is what runs)."""
    found = None
    for c in doc.candidates:
        if c.name == name and c.kind in ("call", "dict"):
            found = c.root
    return found


def _module_value(doc: Document, name: str) -> Value | None:
    for c in doc.candidates:
        if c.kind == "module":
            return find(c.root, (name,))
    return None


def extract(doc: Document, candidate: Candidate, extra_keys: KeyAliases) -> list[ModelConfig]:
    """The model an InternLM config builds, with its data and parallel settings."""
    b = Builder(candidate, doc.path, NAME, extra_keys)
    b.take(Dim.HIDDEN, "hidden_size")
    b.take(Dim.HEADS, "num_attention_heads")
    b.take(Dim.KV_HEADS, "num_kv_attention_heads")
    b.take(Dim.LAYERS, "num_layers")
    b.take(Dim.VOCAB, "vocab_size")
    b.set(Dim.DTYPE, dtype_value(b.lookup("dtype")))
    # RoPE's cap (InternEvo's Mixtral, Qwen2 …), not the training length: that is data.seq_len.
    b.consult("max_position_embeddings")
    data = _sibling(doc, "data")
    if data is not None:
        _set_from(b, Dim.SEQ_LEN, data, "seq_len", "data")
        _set_from(b, Dim.MICRO_BATCH, data, "micro_bsz", "data")
        _set_from(b, Dim.GRAD_ACCUM, data, "micro_num", "data")
    parallel = _sibling(doc, "parallel")
    if parallel is not None:
        if _splits_weights(parallel):
            _parallel_size(b, Dim.TP, parallel, "tensor")
        _parallel_size(b, Dim.PP, parallel, "pipeline")
    model_type = _module_value(doc, "model_type")
    kind = model_type.value if model_type is not None else DEFAULT_TYPE
    if kind in FFN_TYPES:
        _ffn(b)
    return training_config(b)


def _set_from(b: Builder, dim: Dim, mapping: Mapping, name: str, prefix: str) -> Value | None:
    value = find(mapping, (name,), prefix)
    if value is not None and value.known and value.value is not None:
        b.set(dim, value)
        return value
    return None


def _parallel_size(b: Builder, dim: Dim, parallel: Mapping, name: str) -> None:
    """``parallel.<name>``: an int, or ``dict(size=…)``; absent, 1."""
    hit = child(parallel, name)
    if hit is None:
        b.set(dim, default(_anchor(parallel), name, 1, FRAMEWORK, "parallel"))
    elif isinstance(hit[1], Mapping):
        _set_from(b, dim, hit[1], "size", f"parallel.{hit[0]}")
    else:
        _set_from(b, dim, parallel, name, "parallel")


def _splits_weights(parallel: Mapping) -> bool:
    """Whether ``parallel.tensor`` is Megatron-style tensor parallelism (or absent)."""
    hit = child(parallel, "tensor")
    if hit is None or not isinstance(hit[1], Mapping):
        return True
    for key, allowed in (("mode", SPLIT_MODES), ("sp", SPLIT_SP)):
        entry = child(hit[1], key)
        if entry is None:
            continue
        node = entry[1]
        if not isinstance(node, Scalar) or not node.known or node.value not in allowed:
            return False
    return True


def _anchor(mapping: Mapping) -> Value:
    return Value("parallel", "parallel", mapping.span)


def _ffn(b: Builder) -> None:
    """``FeedForward(hidden, int(hidden_size * mlp_ratio), multiple_of=256)``."""
    hidden, ratio = b.dims.get(Dim.HIDDEN), b.lookup("mlp_ratio")
    h = b.int(Dim.HIDDEN)
    if hidden is None or h is None or ratio is None or not ratio.known:
        return
    r = ratio.value
    if isinstance(r, bool) or not isinstance(r, int | float) or r <= 0:
        return
    swiglu = b.lookup("use_swiglu")
    if swiglu is not None and swiglu.value is not True:
        # The GELU ParallelFusedMLP (unrounded, ungated), or not known.
        _unknown_ffn(b, swiglu, "use_swiglu is not True: the MLP is not FeedForward")
        return
    b.gated_mlp = True
    stated = b.lookup("multiple_of")
    if stated is not None:
        # The model builders read at InternEvo c628a8c8 do not pass it on (256 applies);
        # others may: known only where both give the same width.
        m = stated.as_int if stated.known else None
        if not m or m <= 0 or round_up(int(h * r), m) != round_up(int(h * r), MULTIPLE_OF):
            _unknown_ffn(b, stated, "multiple_of may or may not reach FeedForward")
            return
    multiple = default(hidden, "multiple_of", MULTIPLE_OF, FRAMEWORK)
    width = round_up(int(h * r), MULTIPLE_OF)
    sources = (ratio, hidden, multiple) + ((stated,) if stated is not None else ())
    b.derive(
        Dim.FFN,
        derived(
            width,
            sources,
            "256 · ⌈int(hidden_size · mlp_ratio) / 256⌉",
            kind=Derivation.FORMULA,
        ),
        lambda get: round_up(int(x * r), MULTIPLE_OF) if (x := get(Dim.HIDDEN)) else None,
    )


def _unknown_ffn(b: Builder, source: Value, why: str) -> None:
    """The FFN as unknown, so that no other reading derives one (the neutral reading would
    apply Llama's formula to ``multiple_of``)."""
    b.consult("mlp_ratio", "multiple_of", "use_swiglu")
    b.dims[Dim.FFN] = Value(None, "mlp_ratio", source.span, (source,), why, known=False)
