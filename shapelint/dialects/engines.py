"""The engines a config implies by itself: its framework's, or its quantization format's.

Each dialect declares the engines its configs run on: ``ENGINES`` in its module, or
``engines(config)`` when that depends on the config (a Megatron-LM config runs on Transformer
Engine unless its ``transformer_impl`` is "local"). This module collects them by the name of
the dialect that read the config; an HF checkpoint with ``quantization_config`` is served by
the engines that load that format.

Used when neither a flag nor the settings name the engines (`shapelint.engine.target`).
"""

from __future__ import annotations

from collections.abc import Callable

from shapelint.core.model import Dim, ModelConfig
from shapelint.dialects import MODULES

# Quantization formats (``quantization_config.quant_method``) and the engines that serve them.
QUANT_ENGINES: dict[str, tuple[str, ...]] = {
    "awq": ("vllm", "sglang", "tgi"),
    "gptq": ("vllm", "sglang", "tgi"),
    "fp8": ("vllm", "sglang"),
}

Declared = Callable[[ModelConfig], tuple[str, ...]]


def _declared(module: object) -> Declared | None:
    function = getattr(module, "engines", None)
    if callable(function):
        return function  # type: ignore[no-any-return]
    constant = getattr(module, "ENGINES", None)
    if isinstance(constant, tuple):
        return lambda _config: constant
    return None


def declared_engines() -> dict[str, Declared]:
    """Each dialect's engines by its name (the first module of a name that declares them)."""
    out: dict[str, Declared] = {}
    for module in MODULES:
        found = _declared(module)
        name = getattr(module, "NAME", "")
        if found is not None and name not in out:
            out[name] = found
    return out


_BY_DIALECT = declared_engines()


def default_engines(config: ModelConfig) -> tuple[str, ...] | None:
    """The engines ``config`` itself implies, or None when it does not say."""
    declared = _BY_DIALECT.get(config.dialect)
    if declared is not None:
        return declared(config)
    method = config.get(Dim.QUANT_METHOD)
    if method is not None and isinstance(method.value, str):
        return QUANT_ENGINES.get(method.value.lower())
    return None
