"""gpt-fast (pytorch-labs): ``ModelArgs`` and the ``transformer_configs`` dicts of ``model.py``.

Keys: ``dim`` hidden, ``n_head`` heads, ``n_local_heads`` KV heads, ``n_layer`` layers,
``intermediate_size`` FFN, ``vocab_size``, ``block_size`` context length. The MLP is SwiGLU
(``w1``, ``w3``, ``w2``): gated.

A key left out takes ``ModelArgs``' default, and ``__post_init__`` fills the rest::

    block_size = 2048, vocab_size = 32000, n_layer = 32, n_head = 32, dim = 4096
    n_local_heads     = n_head                                  # when -1 (the default)
    intermediate_size = find_multiple(int(2 * 4 * dim / 3), 256)  # when None (the default)
    head_dim          = dim // n_head                           # always recomputed

(7B: dim 4096 → 11008; 13B: dim 5120 → 13824.)
"""

from __future__ import annotations

from shapelint.core.model import Derivation, Dim, ModelConfig, Traits
from shapelint.core.source import Candidate, Document
from shapelint.dialects.common import Builder, KeyAliases, looks_like_model, round_up
from shapelint.dialects.defaults import anchor, take_or_default
from shapelint.dialects.lookup import derived

NAME = "gpt-fast"
# ``block_size`` is the model's maximum context, not a run's sequence length.
TRAITS = Traits(context_keys=frozenset({"block_size"}))
FRAMEWORK = "gpt-fast ModelArgs"
DEFAULTS: dict[str, int] = {
    "block_size": 2048,
    "vocab_size": 32000,
    "n_layer": 32,
    "n_head": 32,
    "dim": 4096,
}
FFN_MULTIPLE = 256


def detect(candidate: Candidate) -> bool:
    """``dim`` with gpt-fast's singular ``n_layer``/``n_head``/``n_local_heads`` (Meta's Llama
    ``ModelArgs`` says ``n_layers``/``n_heads``)."""
    keys = set(candidate.root.keys())
    return (
        "dim" in keys
        and bool(keys & {"n_layer", "n_head", "n_local_heads"})
        and not keys & {"n_heads", "n_layers", "hidden_size", "model_type"}
    )


def gptfast_ffn(dim: int) -> int:
    """gpt-fast's default FeedForward width for model width ``dim``."""
    return round_up(int(2 * (4 * dim) / 3), FFN_MULTIPLE)


def extract(doc: Document, candidate: Candidate, extra_keys: KeyAliases) -> list[ModelConfig]:
    """The one ``ModelArgs`` a mapping describes, defaults filled in."""
    b = Builder(candidate, doc.path, NAME, extra_keys)
    b.gated_mlp = True
    source = anchor(b)
    hidden = take_or_default(b, Dim.HIDDEN, ("dim",), DEFAULTS["dim"], source, FRAMEWORK)
    heads = take_or_default(b, Dim.HEADS, ("n_head",), DEFAULTS["n_head"], source, FRAMEWORK)
    take_or_default(b, Dim.LAYERS, ("n_layer",), DEFAULTS["n_layer"], source, FRAMEWORK)
    take_or_default(b, Dim.VOCAB, ("vocab_size",), DEFAULTS["vocab_size"], source, FRAMEWORK)
    take_or_default(b, Dim.SEQ_LEN, ("block_size",), DEFAULTS["block_size"], source, FRAMEWORK)
    h, a = b.int(Dim.HIDDEN), b.int(Dim.HEADS)

    local = b.lookup("n_local_heads")
    if local is not None and local.known and local.as_int not in (None, -1):
        b.set(Dim.KV_HEADS, local)
    elif (local is None or local.as_int == -1) and heads is not None and a:
        b.derive(
            Dim.KV_HEADS,
            derived(a, (heads,), "n_local_heads = n_head (when -1)", kind=Derivation.KV_FROM_HEADS),
            lambda get: get(Dim.HEADS),
        )

    if hidden is not None and heads is not None and h and a:
        # __post_init__ overwrites head_dim whatever the file says.
        b.derive(
            Dim.HEAD_DIM,
            derived(h // a, (hidden, heads), "head_dim = dim // n_head"),
            lambda get: x // y if (x := get(Dim.HIDDEN)) and (y := get(Dim.HEADS)) else None,
        )

    ffn = b.take(Dim.FFN, "intermediate_size")
    stated = b.lookup("intermediate_size")
    if ffn is None and (stated is None or (stated.known and stated.value is None)) and hidden and h:
        formula = "find_multiple(int(2 * 4 * dim / 3), 256)"
        b.derive(
            Dim.FFN,
            derived(gptfast_ffn(h), (hidden,), formula),
            lambda get: gptfast_ffn(x) if (x := get(Dim.HIDDEN)) else None,
        )
    config = b.build()
    return [config] if looks_like_model(config.dims) else []
