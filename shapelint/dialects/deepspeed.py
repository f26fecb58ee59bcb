"""DeepSpeed configs (JSON or YAML): batch settings and precision only.

Detected by ``train_micro_batch_size_per_gpu``, ``train_batch_size`` or ``zero_optimization``
at the top level (GPT-NeoX configs, which also carry these, are claimed by `neox` first).
A mapping with a Hydra ``_target_`` that names no DeepSpeed class holds the arguments of that
class: its ``train_batch_size`` is that class's (NeMo's NeRF ``data.AggregatorDataModule``:
camera poses per step), not DeepSpeed's.

Keys: ``train_micro_batch_size_per_gpu``, ``gradient_accumulation_steps``,
``train_batch_size``, ``bf16.enabled`` / ``fp16.enabled``, ``sequence_parallel_size`` (Ulysses
sequence parallelism, ``deepspeed/runtime/config.py``). DeepSpeed's ``"auto"`` (filled in
by the HF Trainer or axolotl at launch) is an unknown value, not an error. The model's shape
is elsewhere, so the config is marked ``shape_from_elsewhere``.
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

NAME = "deepspeed"

MARKERS = ("train_micro_batch_size_per_gpu", "train_batch_size", "zero_optimization")


def detect(candidate: Candidate) -> bool:
    """A DeepSpeed batch key or ``zero_optimization`` at the top level, in a mapping that is
    not the arguments of another class (a Hydra ``_target_``)."""
    target = child(candidate.root, "_target_")
    if target is not None and "deepspeed" not in str(getattr(target[1], "value", "")).lower():
        return False
    return any(child(candidate.root, k) for k in MARKERS)


def extract(doc: Document, candidate: Candidate, extra_keys: KeyAliases) -> list[ModelConfig]:
    """The batch settings of one DeepSpeed config."""
    b = Builder(candidate, doc.path, NAME, extra_keys, shape_from_elsewhere=True)
    b.take(Dim.MICRO_BATCH, "train_micro_batch_size_per_gpu")
    b.take(Dim.GRAD_ACCUM, "gradient_accumulation_steps")
    b.take(Dim.GLOBAL_BATCH, "train_batch_size")
    b.take(Dim.SP, "sequence_parallel_size")
    set_dtype_from_flags(b, {"bf16": ("bf16.enabled",), "fp16": ("fp16.enabled",)})
    settle_dims(b)
    return [replace(c, shape_from_elsewhere=True) for c in training_config(b)]
