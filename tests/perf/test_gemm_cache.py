"""The within-run GEMM timing cache returns what the model computes, per GPU object."""

from __future__ import annotations

import dataclasses
from types import MappingProxyType

from shapelint.hardware.gpus import load_table
from shapelint.perf import estimate
from shapelint.perf.gemm import gemm_time
from shapelint.perf.workload import Gemm

SHAPES = [(4096, 4096, 4096), (8192, 50257, 2560), (1, 11008, 4096), (2048, 80, 2048)]


def test_cached_timings_equal_the_model() -> None:
    gpu = load_table().lookup("h100")
    for m, n, k in SHAPES:
        g = Gemm("x", "fwd", m, n, k)
        first = estimate.op_time(g, gpu)
        assert estimate.op_time(g, gpu) is first  # the second call is the cached one
        assert first == gemm_time(m, n, k, gpu=gpu, dtype="bf16")


def test_a_gpu_with_other_figures_is_timed_anew() -> None:
    gpu = load_table().lookup("h100")
    halved = MappingProxyType({d: v / 2 for d, v in gpu.peak_tflops.items()})
    slower = dataclasses.replace(gpu, peak_tflops=halved)  # same name, other figures
    g = Gemm("x", "fwd", 8192, 8192, 8192)
    assert estimate.op_time(g, slower) == gemm_time(8192, 8192, 8192, gpu=slower, dtype="bf16")
    assert estimate.op_time(g, slower).time_s > estimate.op_time(g, gpu).time_s
