"""Transformer Engine refuses an FP8 recipe that the chosen GPU cannot run.

Guideline: Transformer Engine checks the FP8 recipe against the GPU's compute capability when
its ``autocast`` is entered, before the first forward step, and raises a ``RuntimeError``:
delayed and current (per-tensor) scaling need compute capability 8.9 (Ada) or higher — "Device
compute capability 8.9 or higher required for FP8 execution." — and MXFP8 block scaling needs
10.0 (Blackwell) or higher — "Device compute capability 10.0 or higher required for MXFP8
execution.". An FP8 Megatron-LM config submitted to A100s, or an MXFP8 one to H100s, stops at
its first step; shapelint would otherwise time the FP8 config in bf16 on the A100 without a
word.

The rule runs for configs that themselves train in FP8 (Megatron-LM's ``--fp8-format``, with
``--fp8-recipe``, or ``--fp8-recipe`` given to shapelint) on Transformer Engine, and only on a
GPU that a flag or a setting chose: the built-in default GPU is not the user's, and an MXFP8
config written for Blackwell is not wrong because shapelint's default is an H100. Not
checked: NVFP4 (this version's ``check_recipe_support`` has no NVFP4 branch), FP8 block scaling
(Megatron's ``blockwise`` recipe is not read), Ada's cuBLASLt and CUDA version conditions, and
MXFP8's refusal on compute capability 12.0 and above (no built-in GPU has it).

Source: TransformerEngine commit d0067d0d (2.20.0.dev0)
``transformer_engine/pytorch/quantization.py:149-158`` (FP8 support), ``:162-168`` (MXFP8),
``:224-239`` (``check_recipe_support``: delayed and current scaling → FP8 support, MXFP8 →
MXFP8 support; raises with the reason), ``:1043-1044`` (``autocast.__enter__`` calls it);
compute capabilities from the GPU table (``compute_capability``, NVIDIA's CUDA GPUs page).
"""

from __future__ import annotations

from collections.abc import Iterator

from shapelint.core.dtypes import normalize_dtype
from shapelint.core.model import Dim, Finding, ModelConfig, Target
from shapelint.rules.base import Example, Expect, Rule
from shapelint.rules.engine_shapes import engines_for, refused_by

RULE = Rule(
    code="SL332",
    name="te-fp8-recipe-gpu",
    severity="error",
    summary="Transformer Engine refuses an FP8 recipe the chosen GPU's compute capability "
    "cannot run",
    source="TransformerEngine 2.20.0.dev0: transformer_engine/pytorch/quantization.py",
    family="engine",
)

VERIFIED = {
    "transformer-engine": "transformer_engine/pytorch/quantization.py:149-168, 224-239, 1043-1044",
}

# Recipe (model.FP8_RECIPES; None: Megatron-LM's default, delayed) → the lowest compute
# capability Transformer Engine runs it on, and its words when the GPU is below it.
NEEDS: dict[str | None, tuple[tuple[int, int], str]] = {
    None: ((8, 9), "Device compute capability 8.9 or higher required for FP8 execution."),
    "delayed": ((8, 9), "Device compute capability 8.9 or higher required for FP8 execution."),
    "current": ((8, 9), "Device compute capability 8.9 or higher required for FP8 execution."),
    "mxfp8": ((10, 0), "Device compute capability 10.0 or higher required for MXFP8 execution."),
}

RECIPE_WORDS = {
    None: "FP8 with delayed scaling (Megatron-LM's default recipe)",
    "delayed": "FP8 with delayed scaling",
    "current": "FP8 with current scaling",
    "mxfp8": "the MXFP8 recipe",
}


def _megatron(recipe: str) -> str:
    """A Megatron-LM functional-test model_config.yaml of Llama-3-8B's shape in FP8."""
    return (
        "MODEL_ARGS:\n  --num-layers: 32\n  --hidden-size: 4096\n  --ffn-hidden-size: 14336\n"
        "  --num-attention-heads: 32\n  --group-query-attention: true\n"
        "  --num-query-groups: 8\n  --swiglu: true\n  --seq-length: 8192\n"
        "  --micro-batch-size: 1\n  --bf16: true\n  --fp8-format: hybrid\n"
        f"  --fp8-recipe: {recipe}\n"
    )


EXAMPLES = [
    Example(_megatron("delayed"), True, format="yaml", note="delayed scaling on an H100 (9.0)"),
    Example(
        _megatron("mxfp8"),
        False,
        format="yaml",
        note="MXFP8 on an H100: compute capability 9.0, the recipe needs 10.0",
        expect=(
            Expect(13, "mxfp8", "Device compute capability 10.0 or higher required for MXFP8"),
        ),
    ),
]


def check(config: ModelConfig, target: Target) -> Iterator[Finding]:
    """Report the config's FP8 setting when the chosen GPU is below what its recipe needs."""
    engines = engines_for(target, VERIFIED)
    dtype = config.get(Dim.DTYPE)
    asked = target.asked_dtype or target.dtype
    if not engines or not target.gpu_chosen or asked != "fp8" or target.mode != "train":
        return
    if dtype is None or normalize_dtype(dtype.value) != "fp8" or target.fp8_recipe not in NEEDS:
        return
    capability = target.gpu.compute_capability
    needed, words = NEEDS[target.fp8_recipe]
    if capability is None or capability >= needed:
        return
    recipe = config.get(Dim.FP8_RECIPE)
    anchor = recipe if recipe is not None and recipe.value == target.fp8_recipe else dtype
    name = RECIPE_WORDS[target.fp8_recipe]
    yield RULE.finding(
        config,
        anchor,
        f"{words} — {name} on {target.gpu.name} (compute capability "
        f"{capability[0]}.{capability[1]}) stops at the first training step "
        f"{refused_by(engines)}",
    )
