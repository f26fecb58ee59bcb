"""Hugging Face ``config.json`` (and the same keys wherever they appear).

Key families follow the names transformers' config classes use across model types. Nested
sub-configs (``text_config``, ``vision_config`` …) are configs of their own, reported with
dotted key paths. Encoder-decoder configs that keep both stacks in one flat mapping
(Whisper, BART: ``encoder_attention_heads`` / ``decoder_attention_heads``) give one config per
stack. ``padded_vocab_size``, where present, is what the embedding and logit GEMMs see.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from shapelint.lint.dialects.common import (
    Builder,
    KeyAliases,
    derived,
    looks_like_model,
    resolve,
    scalar_value,
)
from shapelint.lint.model import Dim, ModelConfig
from shapelint.lint.source import Candidate, Document, Mapping, Sequence

NAME = "hf"

HIDDEN = ("hidden_size", "n_embd", "d_model")
HEADS = ("num_attention_heads", "n_head", "n_heads", "num_heads")
KV_HEADS = (
    "num_key_value_heads",
    "num_kv_heads",
    "n_head_kv",
    "num_kv_head",
    "attn_config.kv_n_heads",  # DBRX
)
HEAD_DIM = ("head_dim", "d_kv", "kv_channels")
FFN = (
    "intermediate_size",
    "n_inner",
    "ffn_dim",
    "d_ff",
    "ffn_hidden_size",
    "ffn_config.ffn_hidden_size",  # DBRX
)
LAYERS = ("num_hidden_layers", "n_layer", "num_layers", "n_layers")
SEQ = ("max_position_embeddings", "n_positions", "seq_length", "max_sequence_length")
EXPERTS = ("num_local_experts", "num_experts", "n_routed_experts", "ffn_config.moe_num_experts")
TOP_K = ("num_experts_per_tok", "moe_top_k", "num_experts_per_token", "ffn_config.moe_top_k")
MOE_FFN = ("moe_intermediate_size",)
DTYPE = ("torch_dtype", "dtype")

# Sub-config keys whose mapping is a model of its own.
SUB_CONFIGS = (
    "text_config",
    "vision_config",
    "audio_config",
    "llm_config",
    "language_config",
    "thinker_config",
    "talker_config",
    "speech_config",
    "encoder",
    "decoder",
    "encoder_config",
    "decoder_config",
    "generator",
    "question_encoder",
)

# model_type values whose MLP is gated (SwiGLU/GeGLU: gate, up and down matrices).
GATED_MODEL_TYPES = frozenset(
    {
        "llama",
        "mistral",
        "mixtral",
        "qwen2",
        "qwen2_moe",
        "qwen3",
        "qwen3_moe",
        "gemma",
        "gemma2",
        "gemma3",
        "gemma3_text",
        "phi3",
        "deepseek_v2",
        "deepseek_v3",
        "olmo",
        "olmo2",
        "olmoe",
        "granite",
        "granitemoe",
        "cohere",
        "internlm2",
        "baichuan",
        "yi",
        "dbrx",
        "smollm3",
        "glm4",
        "glm4_moe",
        "exaone",
    }
)
GATED_ACTIVATIONS = frozenset({"silu", "swish", "swiglu", "geglu", "gated-gelu", "gated-silu"})
WEIGHT_SUFFIXES = (".safetensors", ".bin", ".pt", ".pth", ".gguf")


def _gated(builder: Builder) -> bool:
    model_type = builder.lookup("model_type")
    if model_type is not None and str(model_type.value).lower() in GATED_MODEL_TYPES:
        return True
    for key in ("hidden_act", "hidden_activation", "activation_function", "feed_forward_proj"):
        act = builder.lookup(key)
        if act is not None and str(act.value).lower() in GATED_ACTIVATIONS:
            return True
    return False


def weights_beside(path: str) -> bool:
    """True when a checkpoint file lies in the same directory as ``path``."""
    try:
        folder = Path(path).parent
        return any(p.suffix in WEIGHT_SUFFIXES for p in folder.iterdir() if p.is_file())
    except OSError:
        return False


def _take_common(b: Builder, stack: str = "") -> None:
    """Read every HF key family into ``b``; ``stack`` is 'encoder' or 'decoder' for a split."""
    pre = f"{stack}_" if stack else ""
    b.take(Dim.HIDDEN, *HIDDEN)
    if stack:
        b.take(Dim.HEADS, f"{pre}attention_heads")
        b.take(Dim.FFN, f"{pre}ffn_dim")
        b.take(Dim.LAYERS, f"{pre}layers")
    b.take(Dim.HEADS, *HEADS, "encoder_attention_heads", "decoder_attention_heads")
    kv = b.take(Dim.KV_HEADS, *KV_HEADS)
    if kv is None:
        mq = b.lookup("multi_query")
        if mq is not None and mq.value is True:
            b.set(Dim.KV_HEADS, derived(1, (mq,), "multi_query: true → 1 KV head"))
    nope, rope = b.lookup("qk_nope_head_dim"), b.lookup("qk_rope_head_dim")
    if nope is not None and rope is not None and nope.as_int and rope.as_int is not None:
        b.set(
            Dim.HEAD_DIM,
            derived(nope.as_int + rope.as_int, (nope, rope), "qk_nope_head_dim + qk_rope_head_dim"),
        )
        b.take(Dim.V_HEAD_DIM, "v_head_dim")
    b.take(Dim.HEAD_DIM, *HEAD_DIM)
    ffn = b.take(Dim.FFN, *FFN, "encoder_ffn_dim", "decoder_ffn_dim")
    hidden = b.dims.get(Dim.HIDDEN)
    if ffn is None and hidden is not None and b.int(Dim.HIDDEN):
        inner = b.lookup("n_inner")
        n_embd = b.lookup("n_embd")
        if (inner is not None and inner.value is None) or (inner is None and n_embd is not None):
            # GPT-2 family: n_inner null or absent means 4 * n_embd.
            b.set(Dim.FFN, derived(4 * (b.int(Dim.HIDDEN) or 0), (hidden,), "4 × hidden (n_inner)"))
    b.take(Dim.LAYERS, *LAYERS)
    b.take(Dim.VOCAB, "vocab_size")
    b.take(Dim.PADDED_VOCAB, "padded_vocab_size")
    b.take(Dim.SEQ_LEN, *SEQ)
    b.take(Dim.EXPERTS, *EXPERTS)
    b.take(Dim.EXPERTS_PER_TOKEN, *TOP_K)
    b.take(Dim.MOE_FFN, *MOE_FFN)
    if Dim.EXPERTS in b.dims and Dim.MOE_FFN not in b.dims and Dim.FFN in b.dims:
        # Mixtral-style: every MLP is an expert and intermediate_size is each expert's width.
        b.dims[Dim.MOE_FFN] = b.dims.pop(Dim.FFN)
    b.take(Dim.DTYPE, *DTYPE)
    b.take(Dim.TP, "tensor_parallel_size", "tp_size")
    _take_quantization(b)
    b.gated_mlp = _gated(b)


def _take_quantization(b: Builder) -> None:
    """A checkpoint's ``quantization_config``: method, bits, group size, FP8 weight blocks."""
    q = "quantization_config."
    b.take(Dim.QUANT_METHOD, q + "quant_method")
    b.take(Dim.QUANT_BITS, q + "bits", q + "w_bit")
    b.take(Dim.QUANT_GROUP_SIZE, q + "group_size", q + "q_group_size")
    b.take(Dim.QUANT_SYM, q + "sym")
    hit = resolve(b.root, q + "weight_block_size", b.candidate.key_prefix)
    if hit is not None and isinstance(hit[1], Sequence) and len(hit[1].items) == 2:
        block_n, block_k = hit[1].items
        b.set(Dim.QUANT_BLOCK_N, scalar_value(block_n, f"{hit[0]}[0]"))
        b.set(Dim.QUANT_BLOCK_K, scalar_value(block_k, f"{hit[0]}[1]"))


def extract(doc: Document, candidate: Candidate, extra_keys: KeyAliases) -> list[ModelConfig]:
    """Every HF-style model config in ``candidate``, nested sub-configs included."""
    return list(_extract(doc, candidate, extra_keys, pretrained=None))


def _extract(
    doc: Document, candidate: Candidate, extra_keys: KeyAliases, pretrained: bool | None
) -> Iterator[ModelConfig]:
    root = candidate.root
    if pretrained is None:
        pretrained = any(k in ("architectures", "_name_or_path") for k in root) or weights_beside(
            doc.path
        )
    stacks = [""]
    if root.get("encoder_attention_heads") is not None and root.get("decoder_attention_heads"):
        stacks = ["encoder", "decoder"]
    for stack in stacks:
        name = ".".join(p for p in (candidate.name, stack) if p)
        b = Builder(Candidate(name, root, candidate.key_prefix), doc.path, NAME, extra_keys)
        b.pretrained = pretrained
        b.seq_is_max_context = True
        _take_common(b, stack)
        if looks_like_model(b.dims):
            yield b.build()
    for entry in root.entries:
        if entry.key in SUB_CONFIGS and isinstance(entry.value, Mapping):
            prefix = f"{candidate.key_prefix}.{entry.key}" if candidate.key_prefix else entry.key
            name = f"{candidate.name}.{entry.key}" if candidate.name else entry.key
            yield from _extract(doc, Candidate(name, entry.value, prefix), extra_keys, pretrained)
