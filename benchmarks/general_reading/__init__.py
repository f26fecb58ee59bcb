"""The sources of ``benchmarks/general_reading.py``: one module per public repository."""

from __future__ import annotations

from . import (
    bigcode_megatron,
    corenet,
    easylm,
    fairseq,
    flax,
    gemma,
    grok,
    llama_models,
    mesh_jax,
    metaseq,
    paxml,
    tensor2tensor,
    torchchat,
)
from .core import Source

SOURCES: list[Source] = [
    paxml.SOURCE,
    flax.SOURCE,
    easylm.SOURCE,
    gemma.SOURCE,
    mesh_jax.SOURCE,
    grok.SOURCE,
    tensor2tensor.SOURCE,
    fairseq.SOURCE,
    metaseq.SOURCE,
    corenet.SOURCE,
    bigcode_megatron.SOURCE,
    llama_models.SOURCE,
    torchchat.SOURCE,
]
