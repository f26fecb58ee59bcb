"""torchtitan TOML training configs.

Detected by a ``training`` table with ``local_batch_size``, ``batch_size``,
``global_batch_size`` or ``seq_len``, next to ``parallelism``, ``model`` or ``job`` (not a
torchtune recipe, whose ``model`` names a ``torchtune.`` component).

torchtitan keeps the model's shape in Python (``[model] name`` and ``flavor`` pick an entry of
the model's ``*_configs`` dict), so only the batch and parallel dims are read here and the
config is marked ``shape_from_elsewhere``, named ``name flavor`` (``llama3 8B``):
``training.local_batch_size`` (older releases: ``batch_size``), ``training.global_batch_size``,
``training.seq_len``, ``parallelism.tensor_parallel_degree``,
``training.mixed_precision_param``.
"""

from __future__ import annotations

from dataclasses import replace

from shapelint.lint.dialects.common import (
    Builder,
    KeyAliases,
    child,
    dtype_value,
    settle_dims,
    training_config,
)
from shapelint.lint.model import Dim, ModelConfig
from shapelint.lint.source import Candidate, Document, Mapping

NAME = "torchtitan"

TRAINING_KEYS = ("local_batch_size", "batch_size", "global_batch_size", "seq_len")


def detect(candidate: Candidate) -> bool:
    """A torchtitan ``[training]`` table next to ``[parallelism]``, ``[model]`` or ``[job]``."""
    root = candidate.root
    training = root.get("training")
    if not isinstance(training, Mapping) or not any(child(training, k) for k in TRAINING_KEYS):
        return False
    model = root.get("model")
    if isinstance(model, Mapping):
        hit = child(model, "_component_")
        if hit is not None and str(getattr(hit[1], "value", "")).startswith("torchtune."):
            # A torchtune recipe (its GRPO ``training.batch_size`` sizes a replay-buffer sample,
            # recipes/dev/async_grpo_full_finetune_distributed.py:133-137 at bd2a0fc): not ours.
            return False
    return any(isinstance(root.get(k), Mapping) for k in ("parallelism", "model", "job"))


def extract(doc: Document, candidate: Candidate, extra_keys: KeyAliases) -> list[ModelConfig]:
    """The batch and parallel settings of one torchtitan run."""
    b = Builder(candidate, doc.path, NAME, extra_keys, shape_from_elsewhere=True)
    b.take(Dim.MICRO_BATCH, "training.local_batch_size", "training.batch_size")
    b.take(Dim.GLOBAL_BATCH, "training.global_batch_size")
    b.take(Dim.SEQ_LEN, "training.seq_len")
    b.take(Dim.TP, "parallelism.tensor_parallel_degree")
    b.take(Dim.PP, "parallelism.pipeline_parallel_degree")
    b.take(Dim.EP, "parallelism.expert_parallel_degree")
    b.take(Dim.CP, "parallelism.context_parallel_degree")
    b.set(Dim.DTYPE, dtype_value(b.lookup("training.mixed_precision_param")))
    settle_dims(b)
    global_batch = b.dims.get(Dim.GLOBAL_BATCH)
    if global_batch is not None and global_batch.as_int is not None and global_batch.as_int < 0:
        b.dims[Dim.GLOBAL_BATCH] = replace(global_batch, known=False)  # -1: derived at launch
    model = " ".join(
        str(v.value) for v in (b.lookup("model.name"), b.lookup("model.flavor")) if v is not None
    )
    name = ".".join(p for p in (candidate.name, model) if p)
    return [replace(c, name=name, shape_from_elsewhere=True) for c in training_config(b)]
