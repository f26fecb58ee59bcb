"""An FP8 config has a GEMM dimension that is not a multiple of 16.

Guideline: FP8 GEMMs in PyTorch (``torch._scaled_mm``) require both dimensions of the second
operand and the first operand's inner dimension to be divisible by 16 and raise otherwise, so
a misaligned dimension is not slow but broken. The GEMM dimensions checked are h/t, the FFN
and expert FFN widths per rank, the vocab per rank and the QKV output width per rank.

Source: PyTorch ``torch/_meta_registrations.py`` (``_scaled_mm`` shape checks); NVIDIA
Transformer Engine FP8 documentation.
"""

from __future__ import annotations

from collections.abc import Iterator

from shapelint.core.dtypes import normalize_dtype
from shapelint.core.model import Dim, Finding, ModelConfig, Target
from shapelint.rules.base import Example, Expect, Rule, describe

RULE = Rule(
    code="SL105",
    name="fp8-alignment",
    severity="error",
    summary="FP8 GEMM dimension (per tensor-parallel rank) not a multiple of 16",
    source="PyTorch _scaled_mm shape checks",
    family="alignment",
)

MULTIPLE = 16

EXAMPLES = [
    Example(
        '{"hidden_size": 4096, "num_attention_heads": 32, "intermediate_size": 14336,'
        ' "num_hidden_layers": 32, "vocab_size": 128256, "torch_dtype": "float8_e4m3fn"}\n',
        True,
    ),
    Example(
        '{"hidden_size": 4096, "num_attention_heads": 32, "intermediate_size": 11000,'
        ' "num_hidden_layers": 32, "vocab_size": 32000}\n',
        False,
        target={"dtype": "fp8"},
        expect=(Expect(1, "11000", "FP8 GEMMs need dims divisible by 16"),),
    ),
]


def is_fp8(config: ModelConfig, target: Target) -> bool:
    """True when the target dtype or the config's own dtype is an FP8 format (any spelling
    the dtype table knows, the same reading that chose the target's dtype)."""
    if target.dtype == "fp8":
        return True
    dtype = config.get(Dim.DTYPE)
    return dtype is not None and normalize_dtype(dtype.value) == "fp8"


def check(config: ModelConfig, target: Target) -> Iterator[Finding]:
    """Report each FP8 GEMM dim (per rank) not divisible by 16."""
    if not is_fp8(config, target):
        return
    t = max(target.tp, 1)
    for dim in (Dim.HIDDEN, Dim.FFN, Dim.MOE_FFN, Dim.PADDED_VOCAB, Dim.VOCAB):
        value, n = config.get(dim), config.int(dim)
        if dim is Dim.VOCAB and config.get(Dim.PADDED_VOCAB) is not None:
            continue
        if value is None or n is None or n % t or (n // t) % MULTIPLE == 0:
            continue
        yield RULE.finding(
            config,
            value,
            f"FP8 GEMMs need dims divisible by {MULTIPLE}: {describe(value)}"
            + (f" is {n // t} per rank" if t > 1 else " is not")
            + " (torch._scaled_mm raises)",
        )
