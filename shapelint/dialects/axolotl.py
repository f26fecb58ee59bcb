"""axolotl fine-tuning YAMLs.

Detected by ``base_model`` next to an axolotl training key (``sequence_len``,
``micro_batch_size``, ``datasets``, ``adapter``, ``gradient_accumulation_steps``).

The model's shape comes from the hub (``base_model``), so only the batch and parallel dims are
read and the config is marked ``shape_from_elsewhere`` (and ``pretrained``: it fine-tunes
existing weights): ``sequence_len``, ``micro_batch_size``, ``gradient_accumulation_steps``,
``tensor_parallel_size``, ``bf16`` / ``fp16`` (``auto`` is unknown).
"""

from __future__ import annotations

from dataclasses import replace

from shapelint.core.model import Dim, ModelConfig
from shapelint.core.source import Candidate, Document
from shapelint.dialects.common import (
    Builder,
    KeyAliases,
    set_dtype_from_flags,
    settle_dims,
    training_config,
)
from shapelint.dialects.lookup import child

NAME = "axolotl"

MARKERS = ("sequence_len", "micro_batch_size", "datasets", "adapter", "gradient_accumulation_steps")


def detect(candidate: Candidate) -> bool:
    """``base_model`` and an axolotl training key at the top level."""
    root = candidate.root
    return child(root, "base_model") is not None and any(child(root, k) for k in MARKERS)


def extract(doc: Document, candidate: Candidate, extra_keys: KeyAliases) -> list[ModelConfig]:
    """The batch and parallel settings of one axolotl run."""
    b = Builder(candidate, doc.path, NAME, extra_keys, shape_from_elsewhere=True)
    b.pretrained = True
    b.take(Dim.SEQ_LEN, "sequence_len")
    b.take(Dim.MICRO_BATCH, "micro_batch_size")
    b.take(Dim.GRAD_ACCUM, "gradient_accumulation_steps")
    b.take(Dim.TP, "tensor_parallel_size")
    set_dtype_from_flags(b, {"bf16": ("bf16",), "fp16": ("fp16",)})
    settle_dims(b)
    return [replace(c, shape_from_elsewhere=True) for c in training_config(b)]
