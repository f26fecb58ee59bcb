"""The rule registry: every rule module, by code, in one explicit list.

Adding a rule means writing its module and adding its name to `RULE_MODULES`.
"""

from __future__ import annotations

import importlib
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


def _load() -> dict[str, RuleModule]:
    modules = (importlib.import_module(f"{__name__}.{name}") for name in RULE_MODULES)
    return {m.RULE.code: cast(RuleModule, m) for m in modules}


REGISTRY: dict[str, RuleModule] = _load()


def get(code: str) -> RuleModule | None:
    """The rule module for ``code`` (case-insensitive), or None."""
    return REGISTRY.get(code.upper())


def rules_of(scope: Scope) -> list[RuleModule]:
    """The rules of ``scope`` (what they look at), in code order."""
    return [m for code, m in sorted(REGISTRY.items()) if m.RULE.scope == scope]


def config_rules() -> list[RuleModule]:
    """Rules that check a `ModelConfig`, in code order."""
    return rules_of("config")


def fixable(module: RuleModule) -> bool:
    """A rule is fixable exactly when one of its examples carries a fix."""
    return any(e.fixed is not None for e in module.EXAMPLES)


__all__ = [
    "REGISTRY",
    "RULE_MODULES",
    "SCOPES",
    "Example",
    "Rule",
    "RuleModule",
    "config_rules",
    "fixable",
    "get",
    "rules_of",
]
