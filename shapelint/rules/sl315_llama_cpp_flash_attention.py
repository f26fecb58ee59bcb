"""llama.cpp's CUDA backend has no FlashAttention kernel for this head dim, so it is not used.

Guideline: llama.cpp's CUDA FlashAttention (``ggml_cuda_get_best_fattn_kernel``) has kernels
for query/key head dims 40, 64, 72, 80, 96, 112, 128 and 256 with values of the same width,
and for the wide MLA and multi-query shapes only with grouped-query attention: (192, 128) when
the GQA ratio is a multiple of 8, (320, 256) when it is a multiple of 32, (512, 512) and
(576, 512) when it is at least 2. For any other shape the kernel choice is "none", the CUDA
backend declares the op unsupported (``ggml_cuda_flash_attn_ext_supported``), and with
``--flash-attn auto`` (the default) llama.cpp's probe finds the FlashAttention op off the
layer's device and disables it (older releases log "Flash Attention was auto, set to
disabled"): attention runs unfused, the K·Q scores materialised, which costs time and memory,
and a quantized V cache is then refused ("quantized V cache was requested, but this requires
Flash Attention"). DeepSeek-style MLA models run llama.cpp's absorbed (576, 512) form and are
not checked here.

The rule runs only when llama.cpp is named (``--engine llama.cpp``): its kernel set changes
from release to release. The estimate is the step with unfused attention against the same
step with a fused kernel (shapelint's performance model).

Source: ggml-org/llama.cpp commit 00a2d609, ``ggml/src/ggml-cuda/fattn.cu``
(``ggml_cuda_get_best_fattn_kernel``: the switch on ``K->ne[0]``, ``gqa_opt_applies``;
``ggml_cuda_flash_attn_ext_supported``), and at commit 001d906a ``src/llama-context.cpp``
(``llama_context::resolve_fused_ops``: the auto Flash Attention probe that disables it when its
tensor is not on the layer's device; the constructor's refusal of a quantized V cache without
it).
"""

from __future__ import annotations

from collections.abc import Iterator

from shapelint.core.model import Dim, Finding, ModelConfig, Target
from shapelint.rules.base import Example, Expect, Rule
from shapelint.rules.engine_shapes import engines_for, refused_by
from shapelint.rules.sl321_te_attention_unfused import unfused_cost

RULE = Rule(
    code="SL315",
    name="llama-cpp-flash-attention",
    severity="warning",
    summary="llama.cpp's CUDA FlashAttention has no kernel for this head dim: attention unfused",
    source="llama.cpp 00a2d609: ggml/src/ggml-cuda/fattn.cu ggml_cuda_get_best_fattn_kernel",
    family="engine",
)

VERIFIED = {
    "llama.cpp": "ggml/src/ggml-cuda/fattn.cu:ggml_cuda_get_best_fattn_kernel, "
    "fattn.cu:ggml_cuda_flash_attn_ext_supported (00a2d609); "
    "src/llama-context.cpp:llama_context::resolve_fused_ops (001d906a)",
}

# Head dims with a kernel when values have the same width.
SAME_WIDTH = frozenset({40, 64, 72, 80, 96, 112, 128, 256})
# (K, V) head dims with a kernel only under grouped-query attention: the GQA ratio must be a
# multiple of the value given (512/576 need the GQA optimisation, i.e. a ratio of at least 2).
GQA_ONLY = {(192, 128): 8, (320, 256): 32, (512, 512): 2, (576, 512): 2}

_LLAMA_CPP: dict[str, object] = {"engines": ("llama.cpp",), "mode": "decode"}
EXAMPLES = [
    Example(
        '{"hidden_size": 3072, "num_attention_heads": 32, "num_key_value_heads": 32,'
        ' "head_dim": 96, "intermediate_size": 8192, "num_hidden_layers": 32,'
        ' "vocab_size": 32064}\n',
        True,
        target=_LLAMA_CPP,
        note="Phi-3-mini: head dim 96 has a kernel",
    ),
    Example(
        '{"hidden_size": 2560, "num_attention_heads": 32, "num_key_value_heads": 32,'
        ' "intermediate_size": 10240, "num_hidden_layers": 32, "vocab_size": 51200,'
        ' "partial_rotary_factor": 0.4}\n',
        True,
        target=_LLAMA_CPP,
        note="Phi-2: head dim 2560 / 32 = 80 has a kernel",
    ),
    Example(
        '{"hidden_size": 3200, "num_attention_heads": 32, "intermediate_size": 8640,'
        ' "num_hidden_layers": 26, "vocab_size": 32000}\n',
        False,
        target=_LLAMA_CPP,
        note="OpenLLaMA 3B: head dim 3200 / 32 = 100",
        expect=(Expect(1, "3200", "no CUDA FlashAttention kernel for head dim 100"),),
    ),
]


def _unsupported(d: int, dv: int, ratio: float) -> str | None:
    """Why llama.cpp has no kernel for (d, dv) at GQA ``ratio``; None when it has one."""
    if dv == d and d in SAME_WIDTH:
        return None
    need = GQA_ONLY.get((d, dv))
    if need is not None:
        if ratio >= 2 and ratio == int(ratio) and int(ratio) % need == 0:
            return None
        return f"head dims {d}/{dv} need a GQA ratio that is a multiple of {need}"
    if dv != d:
        return f"no CUDA FlashAttention kernel for head dims {d}/{dv} (Q·K/V)"
    return f"no CUDA FlashAttention kernel for head dim {d}"


def check(config: ModelConfig, target: Target) -> Iterator[Finding]:
    """Report a head dim llama.cpp's CUDA FlashAttention has no kernel for."""
    engines = engines_for(target, VERIFIED)
    if not engines or not config.has_attention or config.int(Dim.KV_LORA_RANK):
        return  # MLA: llama.cpp runs the absorbed (576, 512) form
    head_dim, d = config.get(Dim.HEAD_DIM), config.int(Dim.HEAD_DIM)
    a, kv = config.int(Dim.HEADS), config.int(Dim.KV_HEADS)
    if head_dim is None or d is None or a is None or kv is None:
        return
    dv = config.int(Dim.V_HEAD_DIM) or d
    why = _unsupported(d, dv, a / kv)
    if why is None:
        return
    cost = unfused_cost(config, target)
    yield RULE.finding(
        config,
        head_dim,
        f"{why}: llama.cpp disables FlashAttention (auto) and runs attention unfused; a "
        f"quantized V cache is then refused{cost} "
        f"{refused_by(engines, 'in')}",
    )
