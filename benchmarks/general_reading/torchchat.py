"""pytorch/torchchat: a zoo of llama-style ``params.json`` files (torchchat/model_params/).

Units: every ``*.json`` there (torchchat at a1a7f370). ``ModelArgs.from_params``
(torchchat/model.py:371-) reads the file; a file without ``model_type`` is one text
``TransformerArgs`` (model.py:261-320); dims with its defaults and ``__post_init__``:
hidden ``dim``, heads ``n_heads``, KV heads ``n_local_heads`` (``n_kv_heads`` renamed to it,
line 315; -1 or absent: the heads, lines 297-298), head dim ``dim // n_heads`` (line 309),
FFN ``hidden_dim``, else ``find_multiple(int(ffn_dim_multiplier · int(2 · 4 · dim / 3)),
multiple_of)`` with ``multiple_of`` 256 by default (lines 299-308; find_multiple is
torchchat/utils/build_utils.py:225-228), layers ``n_layers`` (default 32, line 264), vocab
``vocab_size`` (default 32000, line 263). ``block_size`` is the context limit, not a
sequence: unknown.

A file with ``model_type`` builds modules (model.py:205-243): ``llama3_1`` a torchtune
decoder from ``text`` (``embed_dim``, ``num_heads``, ``num_kv_heads``, ``intermediate_dim``,
``num_layers``, ``vocab_size``; head dim ``embed_dim // num_heads``); ``flamingo`` a vision
decoder from ``decoder`` with fusion layers added every ``fusion_interval`` (layers unknown);
``llava`` a ``TransformerArgs`` decoder from ``decoder``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from .core import Source, Unit
from .pyeval import as_int

DIR = "torchchat/model_params"


def find_multiple(n: int, k: int) -> int:
    """torchchat/utils/build_utils.py:225-228."""
    return n if n % k == 0 else n + k - (n % k)


def transformer_args(p: dict[str, Any]) -> dict[str, int | None]:
    """``TransformerArgs(**p)`` after ``from_params`` and ``__post_init__``."""
    p = dict(p)
    if "n_kv_heads" in p:
        p["n_local_heads"] = p.pop("n_kv_heads")
    dim = as_int(p.get("dim", 4096))
    heads = as_int(p.get("n_heads", 32))
    kv = as_int(p.get("n_local_heads", -1))
    if kv == -1:
        kv = heads
    ffn = as_int(p["hidden_dim"]) if p.get("hidden_dim") is not None else None
    if p.get("hidden_dim") is None and dim:
        hidden = int(2 * (4 * dim) / 3)
        if p.get("ffn_dim_multiplier") is not None:
            hidden = int(float(p["ffn_dim_multiplier"]) * hidden)
        ffn = find_multiple(hidden, as_int(p.get("multiple_of", 256)) or 256)
    return {
        "hidden": dim,
        "heads": heads,
        "kv_heads": kv,
        "head_dim": dim // heads if dim and heads else None,
        "ffn": ffn,
        "vocab": as_int(p.get("vocab_size", 32000)),
        "layers": as_int(p.get("n_layers", 32)),
    }


def torchtune_args(p: dict[str, Any], layers: bool = True) -> dict[str, int | None]:
    """A torchtune llama decoder's keywords."""
    dim, heads = as_int(p.get("embed_dim")), as_int(p.get("num_heads"))
    return {
        "hidden": dim,
        "heads": heads,
        "kv_heads": as_int(p.get("num_kv_heads")),
        "head_dim": dim // heads if dim and heads else None,
        "ffn": as_int(p.get("intermediate_dim")),
        "vocab": as_int(p.get("vocab_size")),
        "layers": as_int(p.get("num_layers")) if layers else None,
    }


def units(root: Path) -> list[Unit]:
    """One unit per params file."""
    out: list[Unit] = []
    for path in sorted((root / DIR).glob("*.json")):
        try:
            params = json.loads(path.read_text())
        except json.JSONDecodeError:
            continue
        kind = params.get("model_type")
        if kind is None:
            exp = transformer_args(params)
        elif kind == "llama3_1" and isinstance(params.get("text"), dict):
            exp = torchtune_args(params["text"])
        elif kind == "flamingo" and isinstance(params.get("decoder"), dict):
            exp = torchtune_args(params["decoder"], layers=False)
        elif kind == "llava" and isinstance(params.get("decoder"), dict):
            exp = transformer_args(params["decoder"])
        else:
            continue
        out.append(
            Unit(
                path=str(path.relative_to(root)),
                names=(path.stem,),
                line=1,
                expected=exp,
                patterns=("keys",),
            )
        )
    return out


SOURCE = Source(
    key="torchchat",
    repo="pytorch/torchchat",
    commit="a1a7f3702e52fffd798e302fa049b56b608602aa",
    community="inference repo / model zoo",
    formats="JSON",
    collect=units,
)
