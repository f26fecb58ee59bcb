"""Meta lingua (facebookresearch/lingua) training YAMLs.

A lingua run config is an OmegaConf YAML loaded into the app's ``TrainArgs``: a ``model:``
block of ``LMTransformerArgs`` (``lingua/transformer.py``, ``apps/main/transformer.py``), a
``data:`` block with the training ``seq_len`` and the per-GPU ``batch_size``, ``grad_acc_steps``
and a ``distributed:`` block (``tp_size``, ``model_dtype``, ``fsdp_type``)::

    model:
      dim: 4096
      n_layers: 32
      n_heads: 32
      ffn_dim_multiplier: 1.0
      multiple_of: 256
    data:
      batch_size: 2
      seq_len: 4096
    distributed:
      fsdp_type: full_shard
      tp_size: 1

Detected by a ``model:`` block with ``dim`` and ``n_layers`` next to a ``data:`` block with
``seq_len`` or a ``distributed:`` block. Read with lingua's own formulas (checked at commit
437d680e, ``lingua/transformer.py``: ``TransformerBlock``, ``FeedForward``): the head dim is
``head_dim or dim // n_heads``, the heads ``n_heads or dim // head_dim``, the KV heads
``n_kv_heads or n_heads``; the SwiGLU FFN starts from ``4 · dim`` and is Llama's
``multiple_of · ⌈int(ffn_dim_multiplier · int(2 · 4·dim / 3)) / multiple_of⌉``, with
``multiple_of`` 256 when the block leaves it out (``BaseTransformerArgs``). The vocabulary
comes from the tokenizer at run time (``vocab_size: -1``, the default) unless stated.

lingua's recurrent apps (Mamba, Hawk, minGRU, minLSTM) use the same ``model:`` keys for a
model without attention; their blocks carry ``state_dim`` or ``conv_size``, and only the width,
depth, vocabulary and batch are read from them (their ``n_heads`` split the recurrence).
"""

from __future__ import annotations

from shapelint.core.model import Dim, ModelConfig, Value
from shapelint.core.source import Candidate, Document, Mapping
from shapelint.dialects.common import Builder, KeyAliases, dtype_value, llama_ffn
from shapelint.dialects.defaults import default
from shapelint.dialects.lookup import child, derived, recurrent_only

NAME = "lingua"
FRAMEWORK = "lingua"
# BaseTransformerArgs.multiple_of (lingua/transformer.py at 437d680e).
MULTIPLE_OF = 256


def _block(candidate: Candidate, name: str) -> Mapping | None:
    hit = child(candidate.root, name)
    return hit[1] if hit is not None and isinstance(hit[1], Mapping) else None


def detect(candidate: Candidate) -> bool:
    """``model.dim`` and ``model.n_layers`` next to ``data.seq_len`` or a ``distributed``
    block, in a YAML or JSON file (not Python)."""
    if candidate.kind:
        return False
    model = _block(candidate, "model")
    if model is None or child(model, "dim") is None or child(model, "n_layers") is None:
        return False
    data = _block(candidate, "data")
    return (data is not None and child(data, "seq_len") is not None) or _block(
        candidate, "distributed"
    ) is not None


def extract(doc: Document, candidate: Candidate, extra_keys: KeyAliases) -> list[ModelConfig]:
    """The model a lingua run config states, with lingua's formulas of it."""
    model = _block(candidate, "model")
    if model is None:
        return []
    b = Builder(candidate, doc.path, NAME, extra_keys)
    recurrent = recurrent_only(model)
    hidden = b.take(Dim.HIDDEN, "model.dim")
    b.take(Dim.LAYERS, "model.n_layers")
    vocab = b.lookup("model.vocab_size")
    if vocab is not None and (vocab.as_int or 0) > 0:
        b.set(Dim.VOCAB, vocab)
    b.take(Dim.SEQ_LEN, "data.seq_len")
    b.take(Dim.MICRO_BATCH, "data.batch_size")
    b.take(Dim.GRAD_ACCUM, "grad_acc_steps")
    b.take(Dim.TP, "distributed.tp_size")
    b.set(Dim.DTYPE, dtype_value(b.lookup("distributed.model_dtype")))
    if recurrent:
        b.has_attention = False
        b.consult("model.n_heads", "model.n_kv_heads", "model.head_dim")
        config = b.build()
        return [config] if Dim.HIDDEN in config.dims else []
    b.gated_mlp = True
    heads = b.take(Dim.HEADS, "model.n_heads")
    head_dim = b.take(Dim.HEAD_DIM, "model.head_dim")
    b.take(Dim.KV_HEADS, "model.n_kv_heads")
    h, d = b.int(Dim.HIDDEN), b.int(Dim.HEAD_DIM)
    if heads is None and hidden is not None and head_dim is not None and h and d and h % d == 0:
        b.derive(
            Dim.HEADS,
            derived(h // d, (hidden, head_dim), "dim // head_dim"),
            lambda get: (x // y) if (x := get(Dim.HIDDEN)) and (y := get(Dim.HEAD_DIM)) else None,
        )
    _ffn(b, hidden)
    config = b.build()
    return [config] if Dim.HIDDEN in config.dims and Dim.HEADS in config.dims else []


def _ffn(b: Builder, hidden: Value | None) -> None:
    """``FeedForward(dim, hidden_dim=4·dim, multiple_of, ffn_dim_multiplier)``."""
    h = b.int(Dim.HIDDEN)
    if hidden is None or h is None:
        return
    multiple = b.take(Dim.FFN_MULTIPLE, "model.multiple_of")
    if multiple is None:
        multiple = default(hidden, "multiple_of", MULTIPLE_OF, FRAMEWORK, "model")
    mult = b.take(Dim.FFN_MULTIPLIER, "model.ffn_dim_multiplier")
    m = multiple.as_int if multiple.known else None
    factor = mult.value if mult is not None and isinstance(mult.value, int | float) else None
    if mult is not None and factor is None:
        return  # stated but not a number we can read: unknown
    if not m or m <= 0:
        return
    sources: tuple[Value, ...] = (hidden, multiple) + ((mult,) if mult is not None else ())
    b.derive(
        Dim.FFN,
        derived(
            llama_ffn(h, m, factor),
            sources,
            "multiple_of · ⌈int(ffn_dim_multiplier · int(2·4·dim/3)) / multiple_of⌉",
        ),
        lambda get: llama_ffn(x, m, factor) if (x := get(Dim.HIDDEN)) else None,
    )
