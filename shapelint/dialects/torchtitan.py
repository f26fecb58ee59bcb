"""torchtitan training configs: the TOML files of releases up to 0.2, and the Python
``Trainer.Config(...)`` that later releases' ``models/*/config_registry.py`` functions return.

Detected by a ``training`` table with ``local_batch_size``, ``batch_size``,
``global_batch_size`` or ``seq_len``, next to ``parallelism``, ``model`` or ``job`` (not a
torchtune recipe, whose ``model`` names a ``torchtune.`` component).

torchtitan keeps the model's shape in Python (``[model] name`` and ``flavor`` pick an entry of
the model's ``*_configs`` dict), so only the batch and parallel dims are read here and the
config is marked ``shape_from_elsewhere``, named ``name flavor`` (``llama3 8B``):
``training.local_batch_size`` (older releases: ``batch_size``), ``training.global_batch_size``,
``training.seq_len``, ``parallelism.tensor_parallel_degree``,
``training.mixed_precision_param``.

Python (torchtitan b5bcd76c): a ``Trainer.Config`` call whose ``training=TrainingConfig(…)``
states ``num_tokens_per_microbatch_per_dp_rank`` or ``max_context_length`` (config/configs.py:
the token slots one data-parallel rank runs per forward, before context/tensor sharding, and
the sequence length; the trainer packs sequences ``max_context_length`` long). The sequence
is ``max_context_length``, the micro-batch the tokens over it when it divides them, and the
degrees ``parallelism=ParallelismConfig(tensor_parallel_degree=…, …)`` states. What a
function sets after building the config (``config.parallelism.… = …``, converters given to
``model_registry``) is not read; nor is the model (``model_spec``), so the config is
``shape_from_elsewhere``, named by its function.
"""

from __future__ import annotations

from dataclasses import replace

from shapelint.core.model import Derivation, Dim, ModelConfig, Traits, Value
from shapelint.core.source import Candidate, Document, Mapping
from shapelint.dialects.common import Builder, KeyAliases, dtype_value, settle_dims, training_config
from shapelint.dialects.lookup import child, derived

NAME = "torchtitan"
ENGINES = ("torchtitan",)  # a torchtitan config runs on torchtitan
# PyTorch eager unless the config compiles the model (`_take_step`).
TRAITS = Traits(framework="pytorch")

TRAINING_KEYS = ("local_batch_size", "batch_size", "global_batch_size", "seq_len")


TRAINER_KEYS = ("num_tokens_per_microbatch_per_dp_rank", "max_context_length")


def _trainer(candidate: Candidate) -> bool:
    """A Python ``Trainer.Config(training=TrainingConfig(…))`` (torchtitan after 0.3)."""
    training = candidate.root.get("training")
    return (
        candidate.kind == "call"
        and candidate.callee.endswith("Trainer.Config")
        and isinstance(training, Mapping)
        and any(child(training, k) for k in TRAINER_KEYS)
    )


def detect(candidate: Candidate) -> bool:
    """A torchtitan ``[training]`` table next to ``[parallelism]``, ``[model]`` or ``[job]``,
    or a Python ``Trainer.Config``."""
    if _trainer(candidate):
        return True
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
    if _trainer(candidate):
        return _trainer_config(b)
    b.take(Dim.MICRO_BATCH, "training.local_batch_size", "training.batch_size")
    b.take(Dim.GLOBAL_BATCH, "training.global_batch_size")
    b.take(Dim.SEQ_LEN, "training.seq_len")
    b.take(Dim.TP, "parallelism.tensor_parallel_degree")
    b.take(Dim.PP, "parallelism.pipeline_parallel_degree")
    b.take(Dim.EP, "parallelism.expert_parallel_degree")
    b.take(Dim.CP, "parallelism.context_parallel_degree")
    b.set(Dim.DTYPE, dtype_value(b.lookup("training.mixed_precision_param")))
    _take_step(b)
    settle_dims(b)
    global_batch = b.dims.get(Dim.GLOBAL_BATCH)
    if global_batch is not None and global_batch.as_int is not None and global_batch.as_int < 0:
        b.dims[Dim.GLOBAL_BATCH] = replace(global_batch, known=False)  # -1: derived at launch
    model = " ".join(
        str(v.value) for v in (b.lookup("model.name"), b.lookup("model.flavor")) if v is not None
    )
    name = ".".join(p for p in (candidate.name, model) if p)
    return [replace(c, name=name, shape_from_elsewhere=True) for c in training_config(b)]


def _take_step(b: Builder) -> None:
    """How the step runs: torch.compile (``training.compile``, later ``compile.enable``),
    activation checkpointing (``activation_checkpoint.mode``: none, full, or selective with
    ``selective_ac_option`` "op", per-op, or a number N, every N-th layer; N = 1 is every
    layer, N = 2 every other one, others are not modelled) and async tensor parallelism
    (``experimental.enable_async_tensor_parallel``, later under ``parallelism``)."""
    compiled = b.lookup("training.compile", "compile.enable")
    if compiled is not None and compiled.known and compiled.value is True:
        formula = f"{compiled.key}: torch.compile"
        b.set(Dim.FRAMEWORK, derived("compile", (compiled,), formula, kind=Derivation.CONVERSION))
    mode = b.lookup("activation_checkpoint.mode")
    if mode is not None and mode.known:
        name = str(mode.value).strip().lower()
        option = b.lookup("activation_checkpoint.selective_ac_option")
        recompute: str | None = {"none": "none", "full": "full"}.get(name)
        sources: tuple[Value, ...] = (mode,)
        if name == "selective" and option is not None and option.known:
            text = str(option.value).strip().lower()
            recompute = {"op": "op", "1": "full", "2": "layer"}.get(text)
            sources = (mode, option)
        if recompute is not None:
            formula = " ".join(f"{v.key} {v.value}" for v in sources)
            b.set(
                Dim.RECOMPUTE,
                derived(recompute, sources, formula, kind=Derivation.CONVERSION),
            )
    b.take(
        Dim.TP_COMM_OVERLAP,
        "experimental.enable_async_tensor_parallel",
        "parallelism.enable_async_tensor_parallel",
    )


def _trainer_config(b: Builder) -> list[ModelConfig]:
    """The sequence, micro-batch and parallel degrees a ``Trainer.Config`` states."""
    seq = b.take(Dim.SEQ_LEN, "training.max_context_length")
    tokens = b.lookup("training.num_tokens_per_microbatch_per_dp_rank")
    t, n = (tokens.as_int if tokens else None), b.int(Dim.SEQ_LEN)
    if tokens is not None and seq is not None and t and n and t % n == 0:
        formula = "num_tokens_per_microbatch_per_dp_rank / max_context_length"
        b.set(Dim.MICRO_BATCH, derived(t // n, (tokens, seq), formula))
    b.take(Dim.TP, "parallelism.tensor_parallel_degree")
    b.take(Dim.PP, "parallelism.pipeline_parallel_degree")
    b.take(Dim.EP, "parallelism.expert_parallel_degree")
    b.take(Dim.CP, "parallelism.context_parallel_degree")
    settle_dims(b)
    return [replace(c, shape_from_elsewhere=True) for c in training_config(b)]
