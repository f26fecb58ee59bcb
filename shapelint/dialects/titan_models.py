"""torchtitan 0.3 model flavours (``torchtitan/models/<family>/__init__.py``).

From 0.3 a flavour is a function that returns the model's ``Config`` with its transformer
blocks built by a family helper, called with keywords::

    def _8b(attn_backend: str) -> Llama3Model.Config:
        dim = 4096
        return Llama3Model.Config(
            dim=dim,
            vocab_size=128256,
            layers=_build_llama3_layers(
                n_layers=32, dim=dim, n_heads=32, n_kv_heads=8,
                hidden_dim=compute_ffn_hidden_dim(dim, multiple_of=1024, ffn_dim_multiplier=1.3),
                rope=ComplexRoPE.Config(dim=dim // 32, max_context_length=131072, …),
            ),
        )

The Python reader gives that as one call candidate with the nested keywords under ``layers``.
Detected by the call's class (`FAMILIES`: the families whose block helpers were read at
torchtitan 0.3.0, and Qwen3.5, DeepSeek-V3 and Kimi K2.5 at b5bcd76c) and a ``layers``
mapping with ``n_layers`` and ``n_heads`` (DeepSeek-V3 and Kimi bind the blocks to a local,
``layers=layers``, which the Python reader follows); gpt-oss's ``layers`` states no heads
(`GPT_OSS_ATTENTION`: the defaults its block helper always uses) but ``hidden_dim`` and
``num_experts``.

Keys: ``dim`` hidden (else ``layers.dim``), ``layers.n_layers``, ``layers.n_heads``,
``layers.n_kv_heads`` (left out: the heads, as ``make_gqa_config`` does), ``layers.head_dim``
(left out: dim // n_heads, ``make_gqa_config``), ``layers.hidden_dim`` the SwiGLU width — a
literal, or ``compute_ffn_hidden_dim(dim, multiple_of=…, ffn_dim_multiplier=…)`` evaluated
with torchtitan's formula (``models/common/feed_forward.py``: int(8·dim/3), times the
multiplier, rounded up to ``multiple_of``) when its arguments are literals and ``dim`` is the
config's own; ``vocab_size``; Qwen3's MoE blocks: ``layers.moe_hidden_dim`` (each expert's
width), ``layers.num_experts``, ``layers.top_k``; Qwen3.5's ``layers.rotary_dim``,
``layers.shared_expert_hidden_dim`` (shared experts: that width over ``moe_hidden_dim`` when it
divides), and its hybrid layers: one in ``full_attention_interval`` (4 unless stated) has
softmax attention, the rest are Gated DeltaNet, so the flavour is not timed; DeepSeek-V3's
and Kimi's multi-head latent attention and MoE (`_mla_moe`); gpt-oss's (`_gpt_oss`); the rope's
``max_context_length`` / ``max_seq_len`` as the maximum context. A flavour is a released
model's architecture: its fixes are unsafe (and a builder's values are shared locals, never
edited in place).
"""

from __future__ import annotations

import ast

from shapelint.core.model import Dim, ModelConfig, Traits, Value
from shapelint.core.source import Candidate, Document, Mapping
from shapelint.dialects.common import Builder, KeyAliases, llama_ffn, mla_head_dim
from shapelint.dialects.lookup import child, derived

NAME = "torchtitan"
ENGINES = ("torchtitan",)  # a torchtitan model runs on torchtitan
# PyTorch eager unless a job config compiles the model (`shapelint.dialects.torchtitan`).
TRAITS = Traits(framework="pytorch")

# The model classes whose flavours this reads (torchtitan 0.3.0: llama3/__init__.py
# `_build_llama3_layers`, qwen3/__init__.py `_build_qwen3_layers`, `_build_qwen3_moe_layers`).
# DeepSeek-V3 and Kimi K2.5 (b5bcd76c, deepseek_v3/__init__.py `build_mla_moe_layers`, which
# kimi_k2_7/__init__.py calls too): multi-head latent attention and MoE after dense layers.
MLA_FAMILIES = frozenset({"DeepSeekV3Model.Config", "KimiK25Model.Config"})
FAMILIES = (
    frozenset(
        {"Llama3Model.Config", "Qwen3Model.Config", "Qwen35Model.Config", "GptOssModel.Config"}
    )
    | MLA_FAMILIES
)
FFN_HELPER = "compute_ffn_hidden_dim"
# Qwen3.5 (torchtitan b5bcd76c, qwen3_5/__init__.py): `_build_qwen35_layers` and
# `_build_qwen35_moe_layers` give layer i softmax attention when (i + 1) % interval == 0 and a
# Gated DeltaNet (linear attention) otherwise; the interval defaults to 4 (lines 334, 405).
HYBRID_FAMILY = "Qwen35Model.Config"
FULL_ATTENTION_INTERVAL = 4
# gpt-oss (b5bcd76c, gpt_oss/__init__.py): `_build_gptoss_layers(dim=…, n_layers=…,
# hidden_dim=…, num_experts=…, top_k=…)` states no heads; every layer's attention comes from
# `_make_gptoss_attn_config`'s defaults, 64 heads, 8 KV heads of 64 (lines 74-76), with a
# 128-token window on even layers (line 209); every layer is MoE, experts `hidden_dim` wide.
GPT_OSS = "GptOssModel.Config"
GPT_OSS_ATTENTION = {Dim.HEADS: 64, Dim.KV_HEADS: 8, Dim.HEAD_DIM: 64}
GPT_OSS_WINDOW = 128


def _layers(candidate: Candidate) -> Mapping | None:
    layers = candidate.root.get("layers")
    return layers if isinstance(layers, Mapping) else None


def detect(candidate: Candidate) -> bool:
    """A call of a known family's model ``Config`` with a ``layers`` block of keywords."""
    if candidate.kind != "call" or not any(
        candidate.callee == f or candidate.callee.endswith("." + f) for f in FAMILIES
    ):
        return False
    layers = _layers(candidate)
    if layers is None or child(layers, "n_layers") is None:
        return False
    if candidate.callee.endswith(GPT_OSS):
        return child(layers, "hidden_dim") is not None and child(layers, "num_experts") is not None
    return child(layers, "n_heads") is not None


def extract(doc: Document, candidate: Candidate, extra_keys: KeyAliases) -> list[ModelConfig]:
    """The model one flavour function builds."""
    b = Builder(candidate, doc.path, NAME, extra_keys)
    b.pretrained = True
    b.take(Dim.HIDDEN, "dim", "layers.dim")
    b.take(Dim.HEADS, "layers.n_heads")
    b.take(Dim.KV_HEADS, "layers.n_kv_heads")
    if any(candidate.callee.endswith(f) for f in MLA_FAMILIES):
        _mla_moe(b)
    gpt_oss = candidate.callee.endswith(GPT_OSS)
    if gpt_oss:
        _gpt_oss(b)
    b.take(Dim.HEAD_DIM, "layers.head_dim")
    b.take(Dim.LAYERS, "layers.n_layers")
    b.take(Dim.VOCAB, "vocab_size")
    b.take(Dim.MOE_FFN, "layers.moe_hidden_dim")
    b.take(Dim.EXPERTS, "layers.num_experts")
    b.take(Dim.EXPERTS_PER_TOKEN, "layers.top_k")
    b.take(Dim.ROTARY_DIM, "layers.rotary_dim")
    _shared_expert(b)
    if b.take(Dim.SEQ_LEN, "layers.rope.max_context_length", "layers.rope.max_seq_len"):
        b.seq_is_max_context = True
    width = b.lookup("layers.hidden_dim")
    if width is not None and not gpt_oss:
        if width.known and width.value is not None:
            b.set(Dim.FFN, width)
        else:
            b.set(Dim.FFN, _ffn_helper(b, width))
    b.gated_mlp = True  # make_ffn_config: w1, w2, w3 (SwiGLU); MoE experts likewise
    if candidate.callee.endswith(HYBRID_FAMILY):
        b.untimed = _linear_attention_layers(b)
    config = b.build()
    return [config] if Dim.HIDDEN in config.dims and Dim.HEADS in config.dims else []


def _gpt_oss(b: Builder) -> None:
    """gpt-oss: the attention `_build_gptoss_layers` always builds (`GPT_OSS_ATTENTION`), its
    sliding window on every other layer, and MoE in every layer."""
    layers = b.lookup("layers.n_layers")
    if layers is None:
        return
    for dim, value in GPT_OSS_ATTENTION.items():
        if b.lookup(f"layers.{dim.value}", f"layers.n_{dim.value}") is None:
            b.set(dim, derived(value, (layers,), f"_make_gptoss_attn_config default {value}"))
    n = layers.as_int
    if n:
        window = derived(GPT_OSS_WINDOW, (layers,), "sliding_window_size 128 on even layers")
        b.set(Dim.SLIDING_WINDOW, window)
        b.set(Dim.WINDOW_LAYERS, derived((n + 1) // 2, (layers,), "layers i with i % 2 == 0"))
    b.take(Dim.MOE_FFN, "layers.hidden_dim")


def _mla_moe(b: Builder) -> None:
    """``build_mla_moe_layers``'s keywords: the query/key head is ``qk_nope_head_dim +
    qk_rope_head_dim`` wide, values ``v_head_dim``; ``q_lora_rank`` 0 means a plain ``wq``
    (no query LoRA, left out); the first ``n_dense_layers`` are ``dense_hidden_dim`` SwiGLU
    MLPs, the rest MoE with ``num_experts`` experts of ``moe_hidden_dim``, ``router_top_k``
    per token and ``num_shared_experts`` shared ones."""
    nope, rope = b.lookup("layers.qk_nope_head_dim"), b.lookup("layers.qk_rope_head_dim")
    mla_head_dim(b, nope, rope)
    b.take(Dim.V_HEAD_DIM, "layers.v_head_dim")
    b.take(Dim.ROPE_HEAD_DIM, "layers.qk_rope_head_dim")
    b.take(Dim.KV_LORA_RANK, "layers.kv_lora_rank")
    q_lora = b.lookup("layers.q_lora_rank")
    if q_lora is not None and (q_lora.as_int is None or q_lora.as_int > 0):
        b.set(Dim.Q_LORA_RANK, q_lora)
    b.take(Dim.FFN, "layers.dense_hidden_dim")
    b.take(Dim.DENSE_LAYERS, "layers.n_dense_layers")
    b.take(Dim.EXPERTS_PER_TOKEN, "layers.router_top_k")
    b.take(Dim.SHARED_EXPERTS, "layers.num_shared_experts")


def _shared_expert(b: Builder) -> None:
    """Qwen3.5's ``shared_expert_hidden_dim``: one shared SwiGLU expert that wide
    (``_shared_experts_config``), counted in routed experts' widths when it is a whole
    multiple of ``moe_hidden_dim``; otherwise unknown."""
    shared, moe = b.lookup("layers.shared_expert_hidden_dim"), b.dims.get(Dim.MOE_FFN)
    s, m = (shared.as_int if shared else None), b.int(Dim.MOE_FFN)
    if shared is None or moe is None or not s or not m or s % m:
        return
    formula = "shared_expert_hidden_dim / moe_hidden_dim"
    b.set(Dim.SHARED_EXPERTS, derived(s // m, (shared, moe), formula))


def _linear_attention_layers(b: Builder) -> str:
    """Why a Qwen3.5 flavour is not timed: most of its layers are Gated DeltaNet."""
    stated = b.lookup("layers.full_attention_interval")
    interval = stated.as_int if stated is not None else FULL_ATTENTION_INTERVAL
    n = b.int(Dim.LAYERS)
    if interval is None or interval < 1 or n is None:
        return "its layers mix Gated DeltaNet (linear attention) with softmax attention"
    linear = n - n // interval
    return f"{linear} of {n} layers are Gated DeltaNet linear attention (full_attention_interval)"


def _ffn_helper(b: Builder, width: Value) -> Value | None:
    """``compute_ffn_hidden_dim(dim, multiple_of=…, ffn_dim_multiplier=…)`` with literal
    arguments and the config's own ``dim``, evaluated; otherwise None (unknown)."""
    hidden, h = b.dims.get(Dim.HIDDEN), b.int(Dim.HIDDEN)
    if width.expression is None or hidden is None or h is None:
        return None
    try:
        call = ast.parse(width.expression.strip(), mode="eval").body
    except SyntaxError:
        return None
    if not isinstance(call, ast.Call) or ast.unparse(call.func).rsplit(".")[-1] != FFN_HELPER:
        return None
    if len(call.args) != 1 or not _is_hidden(call.args[0], hidden, h):
        return None
    kwargs: dict[str, object] = {}
    for kw in call.keywords:
        if kw.arg is None:
            return None
        try:
            kwargs[kw.arg] = ast.literal_eval(kw.value)
        except ValueError:
            return None
    multiple, multiplier = kwargs.pop("multiple_of", 1), kwargs.pop("ffn_dim_multiplier", None)
    if kwargs or not isinstance(multiple, int) or isinstance(multiple, bool) or multiple < 1:
        return None
    if multiplier is not None and not isinstance(multiplier, int | float):
        return None
    m = float(multiplier) if multiplier is not None else None
    return derived(
        llama_ffn(h, multiple, m),
        (width, hidden),
        f"{FFN_HELPER}(dim, multiple_of={multiple}, ffn_dim_multiplier={multiplier})",
    )


def _is_hidden(arg: ast.expr, hidden: Value, h: int) -> bool:
    """The helper's ``dim`` argument is the config's hidden size: the same literal, or the
    same local name the config's ``dim`` keyword was written with."""
    if isinstance(arg, ast.Constant):
        return arg.value == h
    return isinstance(arg, ast.Name) and (hidden.expression or "").strip() == arg.id
