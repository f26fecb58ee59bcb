"""Hugging Face ``config.json`` (and the same keys wherever they appear).

Key families follow the names transformers' config classes use across model types. Nested
sub-configs (``text_config``, ``vision_config`` …) are configs of their own, reported with
dotted key paths. Encoder-decoder configs that keep both stacks in one flat mapping
(Whisper, BART: ``encoder_attention_heads`` / ``decoder_attention_heads``) give one config per
stack. ``padded_vocab_size``, where present, is what the embedding and logit GEMMs see.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import replace

from shapelint.core.model import Derivation, Dim, ModelConfig
from shapelint.core.source import Candidate, Document, Mapping, Scalar, Sequence
from shapelint.dialects.common import (
    PYTHON_KINDS,
    Builder,
    KeyAliases,
    looks_like_model,
    mla_head_dim,
    mpt_ffn,
    sliding_window,
)
from shapelint.dialects.hf_models import (
    chatglm_groups,
    global_head_dim,
    llama4_text,
    mamba_ssm_vocab,
    qwen1_ffn,
    take_llama_ffn,
)
from shapelint.dialects.lookup import derived, resolve, scalar_value
from shapelint.readers.hooks import ReaderHooks

NAME = "hf"
# transformers' config root: a subclass states the shape, and this dialect models the defaults
# the root would add, so the Python reader need not read it.
READER_HOOKS = ReaderHooks(neutral_bases=frozenset({"PretrainedConfig", "PreTrainedConfig"}))

HIDDEN = ("hidden_size", "n_embd", "d_model", "n_embed")  # n_embed: BLOOM (BloomConfig reads it)
HEADS = ("num_attention_heads", "n_head", "n_heads", "num_heads")
KV_HEADS = (
    "num_key_value_heads",
    "num_kv_heads",
    "n_head_kv",
    "num_kv_head",
    "attn_config.kv_n_heads",  # DBRX
    "num_query_groups",  # Megatron / NeMo 2 TransformerConfig
    "n_query_groups",  # LitGPT
    "n_kv_heads",  # Llama params.json
)
HEAD_DIM = ("head_dim", "d_kv", "kv_channels", "head_size")
FFN = (
    "intermediate_size",
    "n_inner",
    "ffn_dim",
    "d_ff",
    "ffn_hidden_size",
    "ffn_config.ffn_hidden_size",  # DBRX
)
LAYERS = ("num_hidden_layers", "n_layer", "num_layers", "n_layers")
SEQ = (
    "max_position_embeddings",
    "n_positions",
    "seq_length",
    "max_sequence_length",
    "encoder_seq_length",
    "block_size",
    "max_seq_len",
    "n_ctx",  # OpenAI GPT-2's hparams.json
)
EXPERTS = (
    "num_local_experts",
    "num_experts",
    "n_routed_experts",
    "ffn_config.moe_num_experts",
    "num_moe_experts",
    "n_expert",
    "moe_num_experts",
)
TOP_K = (
    "num_experts_per_tok",
    "moe_top_k",
    "num_experts_per_token",
    "ffn_config.moe_top_k",
    "moe_router_topk",
    "n_expert_per_token",
)
MOE_FFN = ("moe_intermediate_size", "moe_ffn_hidden_size")

# Which framework a key name comes from, for `ModelConfig.sources` (default "hf").
FAMILIES: dict[str, str] = {
    **dict.fromkeys(
        (
            "num_query_groups",
            "kv_channels",
            "ffn_hidden_size",
            "num_moe_experts",
            "moe_ffn_hidden_size",
            "moe_router_topk",
            "encoder_seq_length",
        ),
        "megatron-core",
    ),
    **dict.fromkeys(
        ("n_query_groups", "head_size", "n_expert", "n_expert_per_token", "block_size"), "litgpt"
    ),
    **dict.fromkeys(("n_kv_heads", "n_heads", "n_layers", "max_seq_len"), "llama-params"),
    "multi_query_group_num": "chatglm",
}

# model_type values of encoder-only models: without an LM-head architecture they have no
# vocabulary projection (no logit GEMM).
ENCODER_MODEL_TYPES = frozenset(
    {
        "bert",
        "roberta",
        "xlm-roberta",
        "distilbert",
        "electra",
        "deberta",
        "deberta-v2",
        "albert",
        "mpnet",
        "camembert",
        "ernie",
        "modernbert",
        "nomic_bert",
    }
)
# Architecture name endings that carry a vocabulary projection.
LM_HEAD_SUFFIXES = ("ForMaskedLM", "ForCausalLM", "LMHeadModel", "ForConditionalGeneration")
ENCODER_HEAD_SUFFIXES = (
    "Model",
    "ForSequenceClassification",
    "ForTokenClassification",
    "ForQuestionAnswering",
    "ForMultipleChoice",
    "ForNextSentencePrediction",
)

# transformers' LlamaConfig defaults (configuration_llama.py), which a partial ``text_config``
# of a LLaVA-style config takes for every key it leaves out.
LLAMA_DEFAULTS: dict[str, int] = {
    "hidden_size": 4096,
    "intermediate_size": 11008,
    "num_hidden_layers": 32,
    "num_attention_heads": 32,
    "vocab_size": 32000,
    "max_position_embeddings": 2048,
}
# Sub-configs built from a dict by their parent's config class (LlavaConfig …).
DEFAULTED_SUB_CONFIGS = frozenset({"text_config"})
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
        "qwen",
        "chatglm",
    }
)
GATED_ACTIVATIONS = frozenset({"silu", "swish", "swiglu", "geglu", "gated-gelu", "gated-silu"})
# Checkpoint files: PyTorch, safetensors, GGUF, TensorFlow/Keras (tf_model.h5), Flax
# (flax_model.msgpack), ONNX, and TF1 checkpoints (model.ckpt, model.ckpt.index, …, beside
# OpenAI GPT-2's hparams.json).
WEIGHT_SUFFIXES = (
    ".safetensors",
    ".bin",
    ".pt",
    ".pth",
    ".gguf",
    ".h5",
    ".msgpack",
    ".onnx",
    ".ckpt",
)


def _gated(builder: Builder) -> bool:
    model_type = builder.lookup("model_type")
    if model_type is not None and str(model_type.value).lower() in GATED_MODEL_TYPES:
        return True
    for key in ("hidden_act", "hidden_activation", "activation_function", "feed_forward_proj"):
        act = builder.lookup(key)
        if act is not None and str(act.value).lower() in GATED_ACTIVATIONS:
            return True
    return False


def _suffix(name: str) -> str:
    """``pathlib.PurePath(name).suffix``: the last extension, none for ``.hidden`` or ``a.``."""
    ext = os.path.splitext(name)[1]
    return "" if ext == "." else ext


def weights_beside(path: str) -> bool:
    """True when a checkpoint file lies in the same directory as ``path``."""
    try:
        # os.scandir, not pathlib: a JSON run imports no pathlib (~3 ms).
        with os.scandir(os.path.dirname(path) or ".") as entries:
            return any(
                _suffix(e.name) in WEIGHT_SUFFIXES or ".ckpt." in e.name
                for e in entries
                if e.is_file()
            )
    except OSError:
        return False


# Dropout keys by where the dropout applies (GPT-2 *_pdrop, BERT *_prob, OPT/OLMo/Llama names).
DROPOUT = {
    "attention": ("attention_dropout", "attn_pdrop", "attention_probs_dropout_prob"),
    "hidden": (
        "hidden_dropout",
        "resid_pdrop",
        "hidden_dropout_prob",
        "residual_dropout",
        "dropout",
    ),
    "embedding": ("embd_pdrop", "embedding_dropout", "emb_pdrop"),
}


def _take_dropout(b: Builder) -> None:
    """Each stated dropout probability above zero (the performance model charges its masks)."""
    for where, names in DROPOUT.items():
        value = b.lookup(*names)
        p = value.value if value is not None else None
        if isinstance(p, (int, float)) and not isinstance(p, bool) and 0 < p < 1:
            b.dropout[where] = float(p)


# model_type values whose transformers class adds learned absolute position embeddings
# (``wpe`` / ``embed_positions`` / BERT's ``position_embeddings``) and has no rotary.
LEARNED_POSITION_TYPES = frozenset(
    {"gpt2", "gpt_neo", "gpt_bigcode", "opt", "biogpt", "bart", "mbart", "bert", "roberta"}
)
# ``position_embedding_type`` values (BERT-family configs) and what they mean here.
POSITION_TYPES = {"absolute": "learned", "rotary": "rope", "alibi": "alibi"}


def _take_positions(b: Builder) -> None:
    """How positions enter the model, from what the config says: a stated
    ``position_embedding_type``, BLOOM (ALiBi), MPT's ``attn_config.alibi``, Falcon's
    ``alibi``, or a model type with learned embeddings; otherwise unknown."""
    stated = b.lookup("position_embedding_type")
    if stated is not None and str(stated.value).lower() in POSITION_TYPES:
        b.position_embedding = POSITION_TYPES[str(stated.value).lower()]
        return
    model_type = b.lookup("model_type")
    kind = str(model_type.value).lower() if model_type is not None else ""
    alibi = b.lookup("alibi", "attn_config.alibi")
    if kind == "bloom" or (alibi is not None and alibi.value is True):
        b.position_embedding = "alibi"
    elif kind in LEARNED_POSITION_TYPES:
        b.position_embedding = "learned"


def _take_common(b: Builder, stack: str = "") -> None:
    """Read every HF key family into ``b``; ``stack`` is 'encoder' or 'decoder' for a split."""
    pre = f"{stack}_" if stack else ""
    _take_dropout(b)
    _take_positions(b)
    width, named = b.lookup("d_model"), b.lookup("hidden_size")
    if width is not None and named is not None and width.value != named.value:
        # Both names, different values: OLMo-core's builders (``llama_like(d_model=…)``,
        # ``v1(d_model=640, hidden_size=640 * 8, …)``) call the FFN width ``hidden_size``.
        b.take(Dim.HIDDEN, "d_model")
    b.take(Dim.HIDDEN, *HIDDEN)
    if stack:
        b.take(Dim.HEADS, f"{pre}attention_heads")
        b.take(Dim.FFN, f"{pre}ffn_dim")
        b.take(Dim.LAYERS, f"{pre}layers")
    b.take(Dim.HEADS, *HEADS, "encoder_attention_heads", "decoder_attention_heads")
    chatglm_groups(b)
    kv = b.take(Dim.KV_HEADS, *KV_HEADS)
    if kv is None:
        mq = b.lookup("multi_query")
        if mq is not None and mq.value is True:
            b.set(Dim.KV_HEADS, derived(1, (mq,), "multi_query: true → 1 KV head"))
    # MLA: HF's qk_nope/qk_rope, Megatron-core's qk_head_dim/qk_pos_emb_head_dim.
    nope = b.lookup("qk_nope_head_dim", "qk_head_dim")
    rope = b.lookup("qk_rope_head_dim", "qk_pos_emb_head_dim")
    if mla_head_dim(b, nope, rope):
        b.take(Dim.V_HEAD_DIM, "v_head_dim")
    if b.lookup("kv_lora_rank", "q_lora_rank") is None:
        b.take(Dim.HEAD_DIM, *HEAD_DIM)
    else:
        # In an MLA config kv_channels / head_dim is not the attention head dim: read, so
        # that no other reader (the key lexicon) takes it for one.
        b.consult(*HEAD_DIM)
    global_head_dim(b)
    qwen1_ffn(b)
    ffn = b.take(Dim.FFN, *FFN, "encoder_ffn_dim", "decoder_ffn_dim")
    hidden = b.dims.get(Dim.HIDDEN)
    if ffn is None and hidden is not None and b.int(Dim.HIDDEN):
        inner = b.lookup("n_inner")
        n_embd = b.lookup("n_embd")
        python = b.candidate.kind in PYTHON_KINDS
        if (inner is not None and inner.value is None) or (
            inner is None and n_embd is not None and not python
        ):
            # GPT-2 family: n_inner null or absent means 4 * n_embd. In Python only when the
            # class says so (GPT2Config's ``n_inner=None``): another class with GPT-2's key
            # names may size its MLP otherwise (lit-llama's LLaMAConfig: SwiGLU, 11008 wide).
            b.derive(
                Dim.FFN,
                derived(4 * (b.int(Dim.HIDDEN) or 0), (hidden,), "4 × hidden (n_inner)"),
                lambda get: 4 * h if (h := get(Dim.HIDDEN)) else None,
            )
    model_type = b.lookup("model_type")
    if model_type is not None and str(model_type.value).lower() == "mpt":
        # MPT states its FFN as expansion_ratio (MptConfig's default 4, configuration_mpt.py:122
        # at transformers 5.25.0); the checkpoints' remote code (auto_map) is llm-foundry's.
        # transformers' own MptMLP builds 4 · hidden whatever the ratio (modeling_mpt.py:144),
        # the same width for every released MPT (ratio 4).
        mpt_ffn(b)
    take_llama_ffn(b)
    b.take(Dim.LAYERS, *LAYERS)
    b.take(Dim.VOCAB, "vocab_size", "n_vocab")  # n_vocab: OpenAI GPT-2's hparams.json, GPT-J
    b.take(Dim.PADDED_VOCAB, "padded_vocab_size")
    mamba_ssm_vocab(b)
    b.take(Dim.SEQ_LEN, *SEQ)
    b.take(Dim.EXPERTS, *EXPERTS)
    b.take(Dim.EXPERTS_PER_TOKEN, *TOP_K)
    b.take(Dim.MOE_FFN, *MOE_FFN)
    b.take(Dim.SHARED_EXPERTS, "n_shared_experts")
    b.take(Dim.DENSE_LAYERS, "first_k_dense_replace")
    b.take(Dim.MOE_LAYER_FREQ, "moe_layer_freq", "moe_frequency")
    b.take(Dim.Q_LORA_RANK, "q_lora_rank")
    b.take(Dim.KV_LORA_RANK, "kv_lora_rank")
    b.take(Dim.ROPE_HEAD_DIM, "qk_rope_head_dim")
    # Partial rotary: GPT-J/CodeGen state the dims, Phi/StableLM/GPT-NeoX/GLM a fraction.
    b.take(Dim.ROTARY_DIM, "rotary_dim")
    b.rotary_fraction = b.rotary_fraction or b.lookup("partial_rotary_factor")
    if b.rotary_fraction is None and b.lookup("model_type") is not None:
        # GPTNeoXConfig's rotary_pct; a NeoX YAML's rotary_pct counts only with pos_emb rotary.
        b.rotary_fraction = b.lookup("rotary_pct")
    llama4_text(b)
    sliding_window(b)
    if Dim.EXPERTS in b.dims and Dim.MOE_FFN not in b.dims and Dim.FFN in b.dims:
        # Mixtral-style: every MLP is an expert and intermediate_size is each expert's width.
        b.dims[Dim.MOE_FFN] = b.dims.pop(Dim.FFN)
    b.take(Dim.DTYPE, *DTYPE)
    b.take(Dim.TP, "tensor_parallel_size", "tp_size")
    _take_quantization(b)
    b.gated_mlp = b.gated_mlp or _gated(b)


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


def lm_head(root: Mapping) -> bool | None:
    """Whether a config's model projects to the vocabulary (None: it does not say).

    ``architectures`` decides when present; an encoder ``model_type`` (BERT, RoBERTa …) without
    it is a bare encoder (``AutoModel``), which has no logit layer.
    """
    archs = root.get("architectures")
    names: list[str] = []
    if isinstance(archs, Sequence):
        names = [str(n.value) for n in archs.items if isinstance(n, Scalar)]
    if names:
        if any(n.endswith(LM_HEAD_SUFFIXES) for n in names):
            return True
        if all(n.endswith(ENCODER_HEAD_SUFFIXES) for n in names):
            return False
        return None
    model_type = root.get("model_type")
    if isinstance(model_type, Scalar) and str(model_type.value).lower() in ENCODER_MODEL_TYPES:
        return False
    return None


def _llama_defaults(b: Builder) -> None:
    """A partial ``text_config`` of model_type llama: transformers' LlamaConfig defaults."""
    model_type = b.lookup("model_type")
    if model_type is None or model_type.value != "llama":
        return
    source = b.lookup("model_type") or model_type
    prefix = b.candidate.key_prefix
    for dim, key in (
        (Dim.HIDDEN, "hidden_size"),
        (Dim.FFN, "intermediate_size"),
        (Dim.LAYERS, "num_hidden_layers"),
        (Dim.HEADS, "num_attention_heads"),
        (Dim.VOCAB, "vocab_size"),
        (Dim.SEQ_LEN, "max_position_embeddings"),
    ):
        if dim in b.dims or b.lookup(key) is not None:
            continue
        path = f"{prefix}.{key}" if prefix else key
        value = LLAMA_DEFAULTS[key]
        b.set(
            dim,
            derived(
                value,
                (source,),
                f"transformers LlamaConfig default {key}={value}",
                key=path,
                kind=Derivation.DEFAULT,
            ),
        )


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
        b = Builder(replace(candidate, name=name), doc.path, NAME, extra_keys)
        b.pretrained = pretrained
        b.seq_is_max_context = True
        b.has_lm_head = lm_head(root)
        _take_common(b, stack)
        if candidate.key_prefix.rpartition(".")[2] in DEFAULTED_SUB_CONFIGS:
            _llama_defaults(b)
        layers = b.dims.get(Dim.LAYERS)
        if candidate.key_prefix and layers is not None and layers.as_int == 0:
            continue  # a sub-stack switched off (NeMo ASR's ``transf_encoder.num_layers: 0``)
        if looks_like_model(b.dims):
            yield b.build()
    for entry in root.entries:
        if entry.key in SUB_CONFIGS and isinstance(entry.value, Mapping):
            prefix = f"{candidate.key_prefix}.{entry.key}" if candidate.key_prefix else entry.key
            name = f"{candidate.name}.{entry.key}" if candidate.name else entry.key
            sub = replace(candidate, name=name, root=entry.value, key_prefix=prefix)
            yield from _extract(doc, sub, extra_keys, pretrained)
