"""The one dtype table: canonical names, the spellings configs and torch use, bytes per element,
FP8-family membership, and what a GPU without a dtype's Tensor Core rate runs instead.

Every part of shapelint that reads or compares a dtype asks this table: the dialects and the
settings when they read a config's or a user's dtype, the target when it picks the dtype a GPU
runs, the rules that check FP8 shapes, and the performance model for bytes per element. A
spelling added here is understood everywhere at once.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType


@dataclass(frozen=True)
class Dtype:
    """One canonical dtype.

    ``aliases`` are the spellings that mean it (lower case, without ``torch.``); ``fallback``
    the dtypes, nearest first, a GPU without this one's rate runs instead (V100: bf16 → fp16);
    ``element_bytes`` what one element of a GEMM input takes (tf32 GEMMs read fp32 tensors).
    """

    name: str
    element_bytes: int
    aliases: tuple[str, ...] = ()
    fallback: tuple[str, ...] = ()

    @property
    def fp8(self) -> bool:
        """True for the FP8 family (E4M3 and E5M2 alike)."""
        return self.name == "fp8"


# In the order the CLI lists them.
TABLE: tuple[Dtype, ...] = (
    Dtype(
        "bf16",
        2,
        ("bfloat16", "bf16-mixed", "bf16-true", "bf16_mixed", "amp_bf16"),
        ("fp16", "fp32"),
    ),
    Dtype(
        "fp16",
        2,
        ("float16", "half", "16", "16-mixed", "fp16-mixed", "amp_fp16"),
        ("bf16", "fp32"),
    ),
    Dtype(
        "fp8",
        1,
        ("float8", "float8_e4m3fn", "float8_e5m2", "e4m3", "e5m2", "amp_fp8"),
        ("bf16", "fp16"),
    ),
    Dtype("tf32", 4, (), ("fp32",)),
    Dtype("fp32", 4, ("float32", "float", "32", "32-true", "full")),
)

BY_NAME: Mapping[str, Dtype] = MappingProxyType({d.name: d for d in TABLE})
DTYPES: tuple[str, ...] = tuple(d.name for d in TABLE)
ELEMENT_BYTES: Mapping[str, int] = MappingProxyType({d.name: d.element_bytes for d in TABLE})
_SPELLINGS: Mapping[str, str] = MappingProxyType(
    {spelling: d.name for d in TABLE for spelling in (d.name, *d.aliases)}
)

# FP8-family training recipes (``--fp8-recipe``): per-tensor delayed or current scaling, and
# the block-scaled MXFP8 (32-element blocks) and NVFP4 (16-element blocks, FP4 values).
FP8_RECIPES: tuple[str, ...] = ("delayed", "current", "mxfp8", "nvfp4")


def normalize_dtype(name: object) -> str | None:
    """``bf16|fp16|fp8|tf32|fp32`` for a dtype as configs and torch spell it, else None."""
    if name is None or isinstance(name, bool):
        return None
    return _SPELLINGS.get(str(name).strip().lower().removeprefix("torch."))


def runnable_dtype(dtype: str, rates: Mapping[str, object]) -> str:
    """``dtype`` if ``rates`` (a GPU's peak rates by dtype) has it, else the nearest dtype of
    its fallback order that it has, else ``dtype`` itself."""
    if dtype in rates:
        return dtype
    entry = BY_NAME.get(dtype)
    for other in entry.fallback if entry is not None else ():
        if other in rates:
            return other
    return dtype
