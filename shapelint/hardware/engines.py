"""The engines and kernels the SL3xx rules know: names, aliases, the version each was checked at.

A target names the engines a config will run on (``--engine vllm``, settings ``engines =
[...]``); the SL3xx rules report what those engines refuse or run on a slower path. An engine
named with a version (``vllm@0.30``) is accepted: the rules still describe the version they
were checked against, which ``shapelint engines`` lists beside each engine's rule codes.

When no engine is named, the config chooses where it can do so unambiguously
(`shapelint.dialects.engines`); otherwise every engine of kind "serve" or "train" is checked.
Kernels (FlashAttention, FlashInfer) are checked when named. This module is the catalogue
(data); the rules that check the engines are `shapelint.rules.engine_rules`.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal

from shapelint.core.model import Target

Kind = Literal["serve", "train", "kernel"]


@dataclass(frozen=True)
class Engine:
    """One engine or kernel: ``name`` as typed, ``title`` as its project writes it, the
    ``version`` its rules were checked against and where that code was read (``checked``)."""

    name: str
    title: str
    kind: Kind
    version: str
    checked: str
    aliases: tuple[str, ...] = ()
    # Checked only when named (``--engine``): its supported shapes change from release to
    # release, so a default run does not hold every config to them.
    named_only: bool = False


ENGINES: tuple[Engine, ...] = (
    Engine("vllm", "vLLM", "serve", "0.34.0", "vllm==0.34.0 wheel (PyPI)"),
    Engine("sglang", "SGLang", "serve", "0.5.23", "sglang==0.5.23 wheel (PyPI)"),
    Engine(
        "tgi",
        "TGI",
        "serve",
        "db931fcf",
        "huggingface/text-generation-inference@db931fcf (2026-01-08)",
        ("text-generation-inference",),
    ),
    Engine(
        "megatron",
        "Megatron-LM",
        "train",
        "d98e8a64",
        "NVIDIA/Megatron-LM@d98e8a64 (2026-08-22)",
        ("megatron-lm", "megatron-core", "mcore", "nemo"),
    ),
    Engine(
        "nanotron",
        "nanotron",
        "train",
        "2411b022",
        "huggingface/nanotron@2411b022 (2026-04-07)",
    ),
    Engine(
        "torchtitan",
        "torchtitan",
        "train",
        "0.2.0",
        "torchtitan==0.2.0 wheel (PyPI)",
    ),
    Engine(
        "flash-attn2",
        "FlashAttention-2",
        "kernel",
        "2.8.4",
        "Dao-AILab/flash-attention@0251105a (2.8.4, 2026-08-15)",
        ("flash-attn", "flash-attention", "fa2"),
    ),
    Engine(
        "flashinfer",
        "FlashInfer",
        "kernel",
        "0.6.18",
        "flashinfer-ai/flashinfer@fb28d724 (0.6.18, 2026-08-22)",
    ),
    Engine(
        "flash-attn3",
        "FlashAttention-3",
        "kernel",
        "2.8.4",
        "Dao-AILab/flash-attention@0251105a (hopper/, 2026-08-15)",
        ("fa3",),
    ),
    Engine(
        "flash-attn4",
        "FlashAttention-4",
        "kernel",
        "4.0.0.beta27",
        "Dao-AILab/flash-attention@0251105a (tag fa4-v4.0.0.beta27, flash_attn/cute/, 2026-08-15)",
        ("fa4", "flash-attn-cute"),
    ),
    Engine(
        "transformer-engine",
        "Transformer Engine",
        "train",
        "2.20.0.dev0",
        "NVIDIA/TransformerEngine@d0067d0d (2.20.0.dev0, 2026-08-22)",
        ("te", "transformerengine"),
    ),
    Engine(
        "deepspeed",
        "DeepSpeed",
        "train",
        "0.19.8",
        "deepspeed==0.19.8 sdist (PyPI)",
        ("ds", "deepspeed-ulysses"),
    ),
    Engine(
        "tensorrt-llm",
        "TensorRT-LLM",
        "serve",
        "c6d3bb2a",
        "NVIDIA/TensorRT-LLM@c6d3bb2a (tensorrt_llm/_torch/modules/attention.py); @2340c776 "
        "(cpp/tensorrt_llm/kernels/unfusedAttentionKernels/unfusedAttentionKernels_2_template.h); "
        "@00dbe288 (cpp/tensorrt_llm/common/attentionOp.cpp, thop/attentionOp.cpp, "
        "contextFusedMultiHeadAttention/fmhaRunner.cpp); @0ab9d17a "
        "(kernels/decoderMaskedMultiheadAttention.cu); @03cdd5a6 "
        "(contextFusedMultiHeadAttention/cubin/fmha_cubin.h)",
        ("trtllm", "trt-llm", "tensorrt_llm"),
        named_only=True,
    ),
    Engine(
        "llama.cpp",
        "llama.cpp",
        "serve",
        "00a2d609",
        "ggml-org/llama.cpp@00a2d609 (ggml/src/ggml-cuda/fattn.cu); "
        "@001d906a (src/llama-context.cpp)",
        ("llamacpp", "llama-cpp", "ggml"),
        named_only=True,
    ),
)

_BY_NAME: dict[str, Engine] = {}
for _engine in ENGINES:
    for _alias in (_engine.name, *_engine.aliases):
        _BY_NAME[_alias] = _engine

DEFAULT_KINDS: tuple[Kind, ...] = ("serve", "train")


class UnknownEngineError(ValueError):
    """An engine name that is not in `ENGINES`."""


def lookup(spec: str) -> Engine:
    """The engine a ``NAME[@VERSION]`` spec names (case-insensitive, aliases accepted)."""
    name = spec.split("@", 1)[0].strip().lower().replace("_", "-")
    engine = _BY_NAME.get(name)
    if engine is None:
        known = ", ".join(e.name for e in ENGINES)
        raise UnknownEngineError(f"unknown engine {spec!r} (choose from {known})")
    return engine


def get(name: str) -> Engine:
    """The engine with canonical ``name`` (KeyError when unknown)."""
    return _BY_NAME[name]


def canonical(specs: Iterable[str]) -> tuple[str, ...]:
    """Canonical names of ``specs``, each once, in the order given."""
    out: list[str] = []
    for spec in specs:
        name = lookup(spec).name
        if name not in out:
            out.append(name)
    return tuple(out)


def titles(names: Iterable[str]) -> str:
    """``vLLM 0.34.0, SGLang 0.5.23``: the engines' own names with the versions checked."""
    return ", ".join(f"{get(n).title} {get(n).version}" for n in names)


def all_default() -> tuple[str, ...]:
    """Every engine checked when neither the user nor the config names one."""
    return tuple(e.name for e in ENGINES if e.kind in DEFAULT_KINDS and not e.named_only)


def selected(target: Target, names: Iterable[str]) -> list[str]:
    """Those of ``names`` that ``target`` runs on, in ``names``' order."""
    chosen = set(target.engines or all_default())
    return [n for n in names if n in chosen]


__all__ = [
    "ENGINES",
    "Engine",
    "UnknownEngineError",
    "all_default",
    "canonical",
    "get",
    "lookup",
    "selected",
    "titles",
]
