"""Meta Llama ``params.json`` (and the same ``ModelArgs`` keys in DeepSeek's and ExecuTorch's).

Keys: ``dim``, ``n_heads``, ``n_kv_heads``, ``n_layers``, ``vocab_size`` (``-1`` means "taken
from the tokenizer": not an error, just unknown here), ``multiple_of``,
``ffn_dim_multiplier``, optional explicit ``hidden_dim`` / ``inter_dim``, and DeepSeek's MoE
and MLA keys. torchtitan 0.2's ``*ModelArgs`` use the same names, with MoE settings in a
nested ``moe_args=MoEArgs(num_experts=…, top_k=…, num_shared_experts=…)`` (only what it
states is read: ``MoEArgs`` defaults change by release) and ``moe_enabled=True`` (Qwen3: every
block is MoE, so the dense ``hidden_dim`` is not the model's FFN). Mistral's ``params.json``
states its MoE in a ``moe`` block (``num_experts``, ``num_experts_per_tok``): every layer's
experts are then ``hidden_dim`` wide (`_mistral_moe`).

FFN width when not stated, as Llama's ``FeedForward`` computes it::

    hidden = int(2 * (4 * dim) / 3)
    if ffn_dim_multiplier is not None: hidden = int(ffn_dim_multiplier * hidden)
    hidden = multiple_of * ceil(hidden / multiple_of)

(Llama-2-7B: dim 4096, multiple_of 256 → 11008; Llama-3-8B: multiple_of 1024, multiplier 1.3
→ 14336.)
"""

from __future__ import annotations

from shapelint.core.model import Dim, ModelConfig, Value
from shapelint.core.source import Candidate, Document
from shapelint.dialects.common import (
    Builder,
    KeyAliases,
    llama_ffn,
    looks_like_model,
    mla_head_dim,
    sliding_window,
)
from shapelint.dialects.lookup import derived

NAME = "llama-params"


def detect(candidate: Candidate) -> bool:
    """``dim`` and ``n_heads`` at the top level, and no HF ``hidden_size``."""
    keys = set(candidate.root.keys())
    return "dim" in keys and "n_heads" in keys and "hidden_size" not in keys


def extract(doc: Document, candidate: Candidate, extra_keys: KeyAliases) -> list[ModelConfig]:
    """The one config a params.json describes."""
    b = Builder(candidate, doc.path, NAME, extra_keys)
    b.gated_mlp = True
    b.seq_is_max_context = True
    hidden = b.take(Dim.HIDDEN, "dim")
    b.take(Dim.HEADS, "n_heads")
    b.take(Dim.KV_HEADS, "n_kv_heads")
    b.take(Dim.LAYERS, "n_layers")
    vocab = b.lookup("vocab_size")
    if vocab is not None and vocab.as_int != -1:
        b.set(Dim.VOCAB, vocab)
    nope, rope = b.lookup("qk_nope_head_dim"), b.lookup("qk_rope_head_dim")
    if mla_head_dim(b, nope, rope):
        b.take(Dim.V_HEAD_DIM, "v_head_dim")
    b.take(Dim.HEAD_DIM, "head_dim")
    b.take(Dim.SEQ_LEN, "max_seq_len", "max_position_embeddings")
    b.take(
        Dim.EXPERTS,
        "n_routed_experts",
        "num_experts",
        "moe_num_experts",
        "moe_args.num_experts",
        "moe.num_experts",
    )
    b.take(
        Dim.EXPERTS_PER_TOKEN,
        "n_activated_experts",
        "num_activated_experts",
        "moe_top_k",
        "moe_args.top_k",
        "moe.num_experts_per_tok",
    )
    b.take(Dim.MOE_FFN, "moe_inter_dim")
    b.take(Dim.SHARED_EXPERTS, "n_shared_experts", "moe_args.num_shared_experts")
    b.take(Dim.MOE_LAYER_FREQ, "interleave_moe_layer_step")
    moe_enabled = b.lookup("moe_enabled")
    if moe_enabled is not None and moe_enabled.known and moe_enabled.value is True:
        # torchtitan 0.2 Qwen3: every block is MoE and the dense ``hidden_dim`` is unused.
        b.consult("hidden_dim")
    b.take(Dim.DENSE_LAYERS, "n_dense_layers")
    b.take(Dim.Q_LORA_RANK, "q_lora_rank")
    b.take(Dim.KV_LORA_RANK, "kv_lora_rank")
    b.take(Dim.ROPE_HEAD_DIM, "qk_rope_head_dim")
    b.take(Dim.DTYPE, "dtype")
    multiple = b.take(Dim.FFN_MULTIPLE, "multiple_of")
    mult = b.take(Dim.FFN_MULTIPLIER, "ffn_dim_multiplier")
    if not (moe_enabled is not None and moe_enabled.value is True):
        b.take(Dim.FFN, "hidden_dim", "inter_dim", "intermediate_dim", "intermediate_size")
    dim = b.int(Dim.HIDDEN)
    if Dim.FFN not in b.dims and hidden is not None and dim and multiple is not None:
        m = multiple.as_int
        factor = mult.value if mult is not None and isinstance(mult.value, int | float) else None
        if m and m > 0:
            sources: tuple[Value, ...] = (hidden, multiple) + ((mult,) if mult else ())
            formula = "multiple_of · ⌈int(ffn_dim_multiplier · int(8·dim/3)) / multiple_of⌉"
            b.derive(
                Dim.FFN,
                derived(llama_ffn(dim, m, factor), sources, formula),
                lambda get: (
                    llama_ffn(d, get(Dim.FFN_MULTIPLE) or 1, factor)
                    if (d := get(Dim.HIDDEN))
                    else None
                ),
            )
    _mistral_moe(b)
    sliding_window(b)  # ExecuTorch's params.json lists layer_types (Gemma 3)
    config = b.build()
    return [config] if looks_like_model(config.dims) else []


def _mistral_moe(b: Builder) -> None:
    """Mistral's ``params.json`` (mistral-inference's ``TransformerArgs``): a ``moe`` block
    ``{num_experts, num_experts_per_tok}`` replaces every layer's feed-forward by a ``MoeLayer``
    of ``num_experts`` ``FeedForward`` experts, each ``hidden_dim`` wide, routing each token to
    the top ``num_experts_per_tok`` (src/mistral_inference/args.py:44-45, moe.py:10-13 and
    25-26, transformer_layers.py:149-156 at 2557e12d): the stated width is the experts'."""
    experts = b.dims.get(Dim.EXPERTS)
    if experts is None or not experts.key.startswith("moe."):
        return
    if Dim.FFN in b.dims and Dim.MOE_FFN not in b.dims:
        b.dims[Dim.MOE_FFN] = b.dims.pop(Dim.FFN)
        formula = b.formulas.pop(Dim.FFN, None)
        if formula is not None:
            b.formulas[Dim.MOE_FFN] = formula
