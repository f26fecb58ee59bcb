"""xai-org/grok-1: the one model config, built in ``main()`` with its own key names.

Unit: the ``TransformerConfig(...)`` call nested in ``LanguageModelConfig(...)`` inside
``main()`` of run.py (grok-1 at 7050ed20). Dims, with model.py's meaning: hidden
``emb_size``, heads ``num_q_heads``, KV heads ``num_kv_heads``, head dim ``key_size``
(model.py:195-196), layers ``num_layers``, vocab ``vocab_size`` and sequence
``sequence_len`` of the outer call; every layer is MoE with ``num_experts`` experts whose
width is ``ffn_size(emb_size, widening_factor)`` = ``int(w · e) · 2 // 3`` rounded up to a
multiple of 8 (model.py:85-89).
"""

from __future__ import annotations

import ast
from pathlib import Path

from .core import Source, Unit
from .pyeval import as_int, call_name, keywords, parse

FILE = "run.py"


def ffn_size(emb_size: int, widening_factor: float) -> int:
    """model.py:85-89."""
    size = int(widening_factor * emb_size) * 2 // 3
    return size + (8 - size) % 8


def units(root: Path) -> list[Unit]:
    """The config of ``main()``."""
    out: list[Unit] = []
    for node in ast.walk(parse(root / FILE)):
        if not (isinstance(node, ast.Call) and call_name(node) == "LanguageModelConfig"):
            continue
        outer = keywords(node)
        inner_call = next(
            (k.value for k in node.keywords if k.arg == "model" and isinstance(k.value, ast.Call)),
            None,
        )
        if inner_call is None:
            continue
        m = keywords(inner_call)
        emb, wide = as_int(m.get("emb_size")), m.get("widening_factor")
        out.append(
            Unit(
                path=FILE,
                names=("main", "grok_1_model", "TransformerConfig"),
                line=node.lineno,
                expected={
                    "hidden": emb,
                    "heads": as_int(m.get("num_q_heads")),
                    "kv_heads": as_int(m.get("num_kv_heads")),
                    "head_dim": as_int(m.get("key_size")),
                    "layers": as_int(m.get("num_layers")),
                    "vocab": as_int(outer.get("vocab_size")),
                    "seq_len": as_int(outer.get("sequence_len")),
                    "experts": as_int(m.get("num_experts")),
                    "moe_ffn": (
                        ffn_size(emb, float(wide))
                        if emb and isinstance(wide, (int, float))
                        else None
                    ),
                },
                patterns=("main-or-if", "keys"),
            )
        )
    return out


SOURCE = Source(
    key="grok-1",
    repo="xai-org/grok-1",
    commit="7050ed204b8206bb8645c7b7bbef7252f79561b0",
    community="JAX inference repo",
    formats="Python",
    collect=units,
)
