"""Dialects: which keys mean which `Dim`, per framework, and the framework's own formulas.

Each dialect module has ``NAME``, ``detect(candidate) -> bool`` and
``extract(doc, candidate, extra_keys) -> list[ModelConfig]``. `DIALECTS` is tried in order;
the first whose ``detect`` accepts a candidate extracts it. Hugging Face keys are the
fallback for every candidate no other dialect claims.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from types import ModuleType

from shapelint.lint.dialects import (
    axolotl,
    deepspeed,
    foundry,
    gptfast,
    hf,
    litgpt,
    llama,
    megatron,
    nanogpt,
    nanotron,
    nemo,
    neox,
    olmo,
    torchtitan,
)
from shapelint.lint.dialects.common import KeyAliases
from shapelint.lint.model import ModelConfig
from shapelint.lint.source import Candidate, Document

# Ordered: specific dialects first, HF last (it accepts any mapping).
DIALECTS: list[ModuleType] = [
    llama,
    litgpt,
    gptfast,
    nanogpt,
    # Training configs: NeoX before DeepSpeed (NeoX files carry DeepSpeed keys too), nanotron
    # before NeMo (both have model.make_vocab_size_divisible_by), OLMo before llm-foundry.
    neox,
    megatron,
    nanotron,
    nemo,
    olmo,
    foundry,
    axolotl,
    torchtitan,
    deepspeed,
]


def extract(doc: Document, extra_keys: KeyAliases | None = None) -> list[ModelConfig]:
    """Every model config in ``doc``, in file order."""
    keys: KeyAliases = extra_keys or {}
    configs: list[ModelConfig] = []
    for candidate in doc.candidates:
        found = _dialect_for(candidate)(doc, candidate, keys)
        if candidate.open_bases:
            found = [stated_only(c) for c in found]
        configs.extend(found)
    return configs


def stated_only(config: ModelConfig) -> ModelConfig:
    """``config`` of a Python class with a base that could not be read: a derived value or a
    framework default might be overridden there, so only stated values stay known."""
    dims = {d: replace(v, known=False) if v.derived else v for d, v in config.dims.items()}
    return replace(config, dims=dims)


Extractor = Callable[[Document, Candidate, KeyAliases], list[ModelConfig]]


def _dialect_for(candidate: Candidate) -> Extractor:
    for module in DIALECTS:
        if module.detect(candidate):
            fn: Extractor = module.extract
            return fn
    return hf.extract
