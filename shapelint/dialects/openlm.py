"""OpenLM (mlfoundations/open_lm) model configs: ``open_lm/model_configs/*.json``.

An OpenLM model JSON names the model width ``hidden_dim`` (Llama's ``params.json`` uses that
name for the FFN width) and always carries ``post_embed_norm`` and ``weight_tying``, which
``create_params`` reads unconditionally::

    {"hidden_dim": 2048, "n_layers": 24, "n_heads": 16, "seq_len": 2048,
     "vocab_size": 50432, "post_embed_norm": false, "weight_tying": false}

Detected by ``hidden_dim``, ``n_layers`` and ``n_heads`` next to ``post_embed_norm`` or
``weight_tying``, with no ``dim``. Read with OpenLM's formulas (checked at commit 9bb92ef1,
``open_lm/model.py``: ``Block``, ``CustomAttn``): every head has its own K and V (``in_proj``
is ``3 · n_heads · head_dim`` wide), the head dim is ``hidden_dim // n_heads`` — floored:
a width the heads do not divide runs, with an attention narrower than the model (488 wide
with 12 heads: 12 × 40 = 480), so SL003 does not apply — and the FFN
width follows ``ffn_type``: ``swiglu``, ``swiglu_torch`` and ``gemma_geglu`` are gated and
``256 · ⌈int(2 · 4·dim / 3) / 256⌉`` wide, ``gelu`` is ``4 · dim``; a file without ``ffn_type``
takes the run's ``--ffn-type`` flag, whose default is ``swiglu`` (``open_lm/params.py``), and
the width is reported as that default. ``seq_len`` sizes the rotary tables: the model's
maximum context. MoE (``ffn_type: moe``, MegaBlocks) is not read.
"""

from __future__ import annotations

from shapelint.core.model import Derivation, Dim, ModelConfig, Value
from shapelint.core.source import Candidate, Document
from shapelint.dialects.common import Builder, KeyAliases, round_up
from shapelint.dialects.defaults import default
from shapelint.dialects.lookup import child, derived

NAME = "open_lm"
FRAMEWORK = "OpenLM"
GATED = frozenset({"swiglu", "swiglu_torch", "gemma_geglu"})
# open_lm/params.py: parser.add_argument("--ffn-type", ..., default="swiglu").
FFN_TYPE_DEFAULT = "swiglu"


def detect(candidate: Candidate) -> bool:
    """``hidden_dim``, ``n_layers``, ``n_heads`` and ``post_embed_norm``/``weight_tying`` at
    the top of a JSON or YAML file, and no ``dim``."""
    if candidate.kind:
        return False
    root = candidate.root
    return (
        all(child(root, k) is not None for k in ("hidden_dim", "n_layers", "n_heads"))
        and (child(root, "post_embed_norm") is not None or child(root, "weight_tying") is not None)
        and child(root, "dim") is None
    )


def gated_width(dim: int) -> int:
    """``256 * ((int(2 * 4 * dim / 3) + 256 - 1) // 256)`` (open_lm/model.py, ``Block``)."""
    return round_up(int(2 * 4 * dim / 3), 256)


def extract(doc: Document, candidate: Candidate, extra_keys: KeyAliases) -> list[ModelConfig]:
    """The model one OpenLM JSON describes."""
    b = Builder(candidate, doc.path, NAME, extra_keys)
    hidden = b.take(Dim.HIDDEN, "hidden_dim")
    b.take(Dim.LAYERS, "n_layers")
    heads = b.take(Dim.HEADS, "n_heads")
    b.take(Dim.VOCAB, "vocab_size")
    if b.take(Dim.SEQ_LEN, "seq_len") is not None:
        b.seq_is_max_context = True
    h, a = b.int(Dim.HIDDEN), b.int(Dim.HEADS)
    if hidden is not None and heads is not None and h and a:
        b.derive(
            Dim.HEAD_DIM,
            derived(h // a, (hidden, heads), "hidden_dim // n_heads", kind=Derivation.FLOOR_SPLIT),
            lambda get: x // y if (x := get(Dim.HIDDEN)) and (y := get(Dim.HEADS)) else None,
        )
    kind = b.lookup("ffn_type")
    if hidden is not None:
        if kind is None:
            kind = default(hidden, "ffn_type", FFN_TYPE_DEFAULT, FRAMEWORK)
        _ffn(b, hidden, kind)
    config = b.build()
    return [config] if Dim.HIDDEN in config.dims and Dim.HEADS in config.dims else []


def _ffn(b: Builder, hidden: Value, kind: Value) -> None:
    h = b.int(Dim.HIDDEN)
    name = str(kind.value).lower() if kind.known else None
    if h is None or name is None:
        return
    if name in GATED:
        b.gated_mlp = True
        b.derive(
            Dim.FFN,
            derived(gated_width(h), (hidden, kind), "256 · ⌈int(2·4·hidden_dim/3) / 256⌉"),
            lambda get: gated_width(x) if (x := get(Dim.HIDDEN)) else None,
        )
    elif name == "gelu":
        b.gated_mlp = False
        b.derive(
            Dim.FFN,
            derived(4 * h, (hidden, kind), "4 · hidden_dim"),
            lambda get: 4 * x if (x := get(Dim.HIDDEN)) else None,
        )
