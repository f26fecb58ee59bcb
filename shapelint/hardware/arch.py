"""The CUDA compute capability of the built-in GPUs, for the rules whose kernels choose by it.

FlashAttention-4 and Transformer Engine choose their attention kernels by the GPU's compute
capability (sm80, sm86, sm89, sm90, sm100 …), which the GPU table does not carry: its ``arch``
names the family, and one family spans several (Ampere: A100 is sm80, A10 and RTX 3090 sm86).
A GPU that is not listed here (one from a user's GPU file) has no known capability, and the
rules that need one stay silent for it rather than guess.

Source: NVIDIA, "CUDA GPU Compute Capability" (developer.nvidia.com/cuda-gpus): V100 7.0;
A100 8.0; A10, A10G, GeForce RTX 3090 8.6; L4, L40S, GeForce RTX 4090 8.9; H100, H200 9.0;
B200, GB200 10.0.
"""

from __future__ import annotations

from shapelint.hardware.gpus import GPU

# Built-in GPU name (shapelint/hardware/gpus.yaml) → (major, minor).
COMPUTE_CAPABILITY: dict[str, tuple[int, int]] = {
    "V100-SXM2": (7, 0),
    "A100-SXM-40GB": (8, 0),
    "A100-SXM-80GB": (8, 0),
    "A100-PCIe": (8, 0),
    "A10": (8, 6),
    "A10G": (8, 6),
    "RTX-3090": (8, 6),
    "L4": (8, 9),
    "L40S": (8, 9),
    "RTX-4090": (8, 9),
    "H100-SXM": (9, 0),
    "H100-PCIe": (9, 0),
    "H100-NVL": (9, 0),
    "H200": (9, 0),
    "B200": (10, 0),
    "GB200": (10, 0),
}


def compute_capability(gpu: GPU) -> tuple[int, int] | None:
    """``gpu``'s CUDA compute capability, or None when it is not a listed NVIDIA GPU."""
    if gpu.vendor != "nvidia":
        return None
    return COMPUTE_CAPABILITY.get(gpu.name)


def sm(capability: tuple[int, int]) -> str:
    """``sm90`` for (9, 0)."""
    return f"sm{capability[0]}{capability[1]}"
