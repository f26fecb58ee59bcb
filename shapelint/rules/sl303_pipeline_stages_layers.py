"""Megatron-LM refuses a layer count that the pipeline-parallel stages do not divide.

Guideline: Megatron-LM gives each of the pp pipeline stages the same number of transformer
layers and asserts that they divide, unless the first and last stages' layer counts are given
(``decoder_first_pipeline_num_layers`` / ``decoder_last_pipeline_num_layers``); with
``account_for_embedding_in_pipeline_split`` or ``account_for_loss_in_pipeline_split`` the
embedding and the loss each count as one more layer. A config with any of these settings (or
a ``pipeline_model_parallel_layout``, ``num_virtual_stages_per_pipeline_rank`` or
``hybrid_layer_pattern``) sizes its stages itself and is not reported; so is a
Megatron-DeepSpeed launch script with ``--deepspeed`` (and no ``--no-pipeline-parallel``),
whose stages DeepSpeed's ``PipelineModule`` sizes. Inference engines (vLLM) split layers
unevenly instead and are not reported here.

The stage count comes from the config (``pipeline_model_parallel_size``, torchtitan's
``pipeline_parallel_degree``, nanotron's ``parallelism.pp``) or ``--pp``.

Source: Megatron-LM d98e8a64 ``megatron/training/arguments.py:941-998``.
"""

from __future__ import annotations

from collections.abc import Iterator

from shapelint.core.model import Dim, Finding, ModelConfig, Target
from shapelint.rules.base import Example, Expect, Rule
from shapelint.rules.engine_shapes import engines_for, refused_by

RULE = Rule(
    code="SL303",
    name="pipeline-stages-layers",
    severity="error",
    summary="Megatron-LM refuses layers not divisible by the pipeline-parallel size",
    source="Megatron-LM d98e8a64 megatron/training/arguments.py",
    family="engine",
)

VERIFIED = {"megatron": "megatron/training/arguments.py:941-998"}

EXAMPLES = [
    Example(
        "language_model:\n  num_layers: 32\n  hidden_size: 4096\n  num_attention_heads: 32\n"
        "seq_length: 4096\n"
        "model_parallel:\n  pipeline_model_parallel_size: 4\n",
        True,
        format="yaml",
    ),
    Example(
        "language_model:\n  num_layers: 28\n  hidden_size: 3072\n  num_attention_heads: 24\n"
        "seq_length: 8192\n"
        "model_parallel:\n  pipeline_model_parallel_size: 8\n",
        False,
        format="yaml",
        note="Llama 3.2 3B's shape: 28 layers over 8 stages",
        expect=(
            Expect(2, "28", "Number of layers should be divisible by the pipeline-model-parallel"),
        ),
    ),
    Example(
        "language_model:\n  num_layers: 30\n  hidden_size: 4096\n  num_attention_heads: 32\n"
        "seq_length: 4096\n"
        "model_parallel:\n  pipeline_model_parallel_size: 4\n"
        "  decoder_first_pipeline_num_layers: 6\n",
        True,
        format="yaml",
        note="the first stage's size is given: the other three take 8 each",
    ),
]


def check(config: ModelConfig, target: Target) -> Iterator[Finding]:
    """Report the layer count when it does not divide the pipeline stages."""
    pp = target.pp
    engines = engines_for(target, VERIFIED)
    layers, n = config.get(Dim.LAYERS), config.int(Dim.LAYERS)
    if pp <= 1 or not engines or layers is None or n is None or n % pp == 0:
        return
    if config.get(Dim.PP_LAYOUT) is not None:
        return  # the config sizes its stages itself
    yield RULE.finding(
        config,
        layers,
        "Number of layers should be divisible by the pipeline-model-parallel size: "
        f"{layers.key} = {n}, pipeline stages {pp} {refused_by(engines)}",
    )
