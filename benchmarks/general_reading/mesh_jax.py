"""kingoflolz/mesh-transformer-jax: GPT-J's JSON configs, a batch stated per model replica.

Units: every configs/*.json (mesh-transformer-jax at f8315e30). Dims, with the model's code
(mesh_transformer/layers.py): hidden ``d_model``, heads ``n_heads`` (KV heads the same), head
dim ``d_model // n_heads`` (layers.py:242), FFN ``4 · d_model`` (``dense_proj``, line 256),
layers ``layers``, vocab ``n_vocab`` (line 168), sequence ``seq``. The batch is stated per
model replica (``per_replica_batch``, ``cores_per_replica`` cores per replica;
device_train.py:239, 253): that is the micro-batch of one data-parallel rank.
"""

from __future__ import annotations

import json
from pathlib import Path

from .core import Source, Unit
from .pyeval import as_int


def units(root: Path) -> list[Unit]:
    """One unit per config file."""
    out: list[Unit] = []
    for path in sorted((root / "configs").glob("*.json")):
        try:
            c = json.loads(path.read_text())
        except json.JSONDecodeError:
            continue
        dim, heads = as_int(c.get("d_model")), as_int(c.get("n_heads"))
        out.append(
            Unit(
                path=str(path.relative_to(root)),
                names=(path.stem,),
                line=1,
                expected={
                    "hidden": dim,
                    "heads": heads,
                    "kv_heads": heads,
                    "head_dim": dim // heads if dim and heads else None,
                    "ffn": 4 * dim if dim else None,
                    "vocab": as_int(c.get("n_vocab")),
                    "layers": as_int(c.get("layers")),
                    "seq_len": as_int(c.get("seq")),
                    "micro_batch": as_int(c.get("per_replica_batch")),
                },
                patterns=("keys", "batch-form"),
                batch_stated=True,
            )
        )
    return out


SOURCE = Source(
    key="mesh-jax",
    repo="kingoflolz/mesh-transformer-jax",
    commit="f8315e3003033b23f21d78361b288953064e0e76",
    community="JAX/TPU trainer",
    formats="JSON",
    collect=units,
)
