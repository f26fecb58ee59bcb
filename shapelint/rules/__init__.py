"""The rule registry: every rule module, by code, in one explicit list.

Adding a rule means writing its module and adding its name to `RULE_MODULES` (and, for a rule
that does not check configs, its scope to `NOT_CONFIG`).

A rule module is imported the first time it is looked up, so that a run imports only the rules
it runs: a JSON file's check needs neither the YAML reader's problems nor the engine rules of a
config that names no engine. What picks them without importing them is the code in the
module's name (``sl101_...`` is SL101), `NOT_CONFIG` and `needs_engines`; the tests check both
against every module's `Rule`.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterator, Mapping
from typing import cast

from shapelint.rules.base import SCOPES, Example, Rule, RuleModule, Scope

# The rule modules of this package, one name each (imported by name below).
RULE_MODULES = (
    "sl000_parse_error",
    "sl001_duplicate_key",
    "sl002_invalid_dim",
    "sl003_heads_divide_hidden",
    "sl004_kv_heads_divide_heads",
    "sl005_tensor_parallel",
    "sl006_unsafe_yaml_tag",
    "sl007_yaml_alias_limit",
    "sl008_unused_ignore",
    "sl009_config_not_understood",
    "sl101_vocab_padding",
    "sl102_head_dim",
    "sl103_hidden_alignment",
    "sl104_ffn_alignment",
    "sl105_fp8_alignment",
    "sl201_tokens_per_microbatch",
    "sl202_wave_quantization",
    "sl203_attention_batch",
    "sl204_memory_bound",
    "sl205_tensor_parallel_too_large",
    "sl301_engine_heads_tp",
    "sl302_attention_kernel_head_dim",
    "sl303_pipeline_stages_layers",
    "sl304_expert_parallel_experts",
    "sl305_context_parallel_seq",
    "sl306_quantized_group_size",
    "sl307_marlin_shape",
    "sl308_block_fp8_shard",
    "sl309_vocab_shard",
    "sl310_attention_backend_fallback",
    "sl311_kv_head_replication",
    "sl312_uneven_expert_split",
    "sl313_flashinfer_decode",
    "sl314_fp8_linear_left_bf16",
    "sl315_llama_cpp_flash_attention",
    "sl317_trtllm_moe_parallel",
    "sl320_flash_attn4_head_dim",
    "sl321_te_attention_unfused",
    "sl322_te_no_attention_backend",
    "sl323_fused_rotary_dim",
    "sl324_te_fp8_gemm_dims",
    "sl325_ulysses_sequence_parallel",
    "sl326_trtllm_head_size",
    "sl327_torchtitan_nvfp4_dims",
    "sl328_te_mxfp8_gated_activation",
    "sl329_te_mxfp8_userbuffers",
    "sl330_te_mxfp8_gather_high_precision",
    "sl331_trtllm_context_fmha",
    "sl332_te_fp8_recipe_gpu",
)


# The scope (`Rule.scope`) of each rule that does not check configs; every other rule does.
NOT_CONFIG: Mapping[str, Scope] = {
    "SL000": "reader",
    "SL001": "reader",
    "SL006": "reader",
    "SL007": "reader",
    "SL008": "suppression",
    "SL009": "document",
}


def code_of(name: str) -> str:
    """The code of the rule module ``name`` (``sl101_vocab_padding``: SL101)."""
    return "SL" + name[2:5]


def scope_of(code: str) -> Scope:
    """What the rule ``code`` looks at (its `Rule.scope`), without importing it."""
    return NOT_CONFIG.get(code, "config")


def needs_engines(code: str) -> bool:
    """Whether the rule ``code`` checks what an engine accepts (`Rule.needs_engines`): the
    SL3xx family, without importing it."""
    return code.startswith("SL3")


class _Registry(Mapping[str, RuleModule]):
    """Every rule module by code, in `RULE_MODULES` order, each imported when first looked up
    (iterating over the codes, or testing one, imports nothing)."""

    def __init__(self, names: tuple[str, ...]) -> None:
        self._names = {code_of(name): name for name in names}
        self._loaded: dict[str, RuleModule] = {}

    def __getitem__(self, code: str) -> RuleModule:
        module = self._loaded.get(code)
        if module is None:
            name = self._names[code]  # KeyError for an unknown code, as a dict
            module = cast(RuleModule, importlib.import_module(f"{__name__}.{name}"))
            self._loaded[code] = module
        return module

    def __iter__(self) -> Iterator[str]:
        return iter(self._names)

    def __len__(self) -> int:
        return len(self._names)

    def __contains__(self, code: object) -> bool:
        return code in self._names


REGISTRY: Mapping[str, RuleModule] = _Registry(RULE_MODULES)


def get(code: str) -> RuleModule | None:
    """The rule module for ``code`` (case-insensitive), or None."""
    return REGISTRY.get(code.upper())


def rules_of(scope: Scope) -> list[RuleModule]:
    """The rules of ``scope`` (what they look at), in code order (only they are imported)."""
    return [REGISTRY[code] for code in sorted(REGISTRY) if scope_of(code) == scope]


def config_rules(*, engines: bool = True) -> list[RuleModule]:
    """Rules that check a `ModelConfig`, in code order; without the rules that check engines
    when ``engines`` is False (and those are not imported)."""
    return [
        REGISTRY[code]
        for code in sorted(REGISTRY)
        if scope_of(code) == "config" and (engines or not needs_engines(code))
    ]


def fixable(module: RuleModule) -> bool:
    """A rule is fixable exactly when one of its examples carries a fix."""
    return any(e.fixed is not None for e in module.EXAMPLES)


__all__ = [
    "NOT_CONFIG",
    "REGISTRY",
    "RULE_MODULES",
    "SCOPES",
    "Example",
    "Rule",
    "RuleModule",
    "code_of",
    "config_rules",
    "fixable",
    "get",
    "needs_engines",
    "rules_of",
    "scope_of",
]
