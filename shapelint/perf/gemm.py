"""The time of one GEMM on one GPU: roofline, tiles, waves, alignment.

A GEMM multiplies an M×K matrix A by a K×N matrix B, ``batch`` times (a strided-batched GEMM
when batch > 1). The model, from NVIDIA's *Matrix Multiplication Background* guide:

- **tiles**: the output is cut into thread-block tiles (tm × tn) from the cuBLAS-like set in
  `Calibration.tiles`; a dimension that does not divide the tile pays for the whole tail tile.
  Each tile runs its K loop at the per-SM achievable rate times the tile's efficiency, plus a
  fixed per-tile cost (prologue and epilogue) worth ``gpu.tile_overhead_k`` iterations (per GPU
  family, from the GPU table).
- **waves**: tiles run in waves of one per SM, so ⌈tiles / SMs⌉ waves are paid in full.
- **split-K**: when the tiles cannot fill the GPU, K may be split into parts computed by
  separate tiles and summed by a second pass (what cuBLAS and XLA do for small outputs).
- **alignment**, by operand (`alignment`): each operand's leading dimension — A's K or M, B's
  K or N by layout, the output C's N — in bytes. A dimension that leads some operand and is not
  a multiple of the GPU's best alignment (128 B on A100 and later) costs the GPU family's
  ``gpu.align_factor`` for its alignment class (the GPU table: Ampere's from Anthony et al.
  2024, Fig. 7; Hopper's from our H200 measurements); misaligned dimensions multiply (a K and
  an N misaligned at 16 B cost both factors, as measured on the H200). The output's N costs
  nothing from 16 B up (NVIDIA's tile-quantization example is flat there). When a leading
  dimension falls under one of the family's measured ``gpu.kernel_cliffs`` (a dtype, a regime
  — thread-block tiles or skinny —, the operands it concerns and an alignment at or below
  which cuBLAS switches to a slower kernel family), the first such cliff's factor replaces
  the curve. Plain fp32 GEMMs run on the CUDA
  cores (SIMT kernels with scalar loads), not the Tensor Cores: no alignment cost (our H200
  fp32 rows: odd K or N within 5% of aligned). The factor scales the whole kernel body, its
  compute and its memory stream alike (a misaligned skinny GEMM streams slower too: H200, M 16).
- **roofline**: bytes moved (A, B and C once each) over the achievable memory bandwidth — the
  datasheet figure times the GPU family's measured streaming fraction
  (``gpu.memory_stream_fraction``, the same figure the memory-bound ops of a step use) —
  bounds the time from below; the slower of compute and memory binds.
- a fixed launch overhead is added.

The best tile (and split) is taken, as a well-tuned library would. Every constant sits in
`CALIBRATION`, or for the per-family ones in the GPU table (``shapelint/hardware/gpus.yaml``),
with the published data point it was fitted to; ``benchmarks/calibration_report.py`` prints
model against published for each.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, Literal

from shapelint.core.dtypes import ELEMENT_BYTES
from shapelint.hardware.arch import Cliff
from shapelint.hardware.gpus import GPU

Bound = Literal["compute", "memory"]
AContig = Literal["k", "m"]
BContig = Literal["k", "n"]
Operand = Literal["A", "B", "C"]


@dataclass(frozen=True)
class Calibration:
    """The model's constants. Each is fitted to, or read from, the source in its comment."""

    # cuBLAS thread-block tiles (NVIDIA Matrix Multiplication Background guide, listed "most to
    # least efficient"), each with its throughput relative to 256x128. The efficiencies, like
    # the constants below and Hopper's tile_overhead_k in the GPU table, were fitted (monotone
    # in that order) to XLA's measured sm_90 table, tests/perf/data/xla_sm90_matmul.csv, bf16
    # rows, minimizing the median plus a quarter of the worst relative error in time;
    # benchmarks/calibration_report.py prints the result.
    tiles: tuple[tuple[int, int, float], ...] = (
        (256, 128, 1.00),
        (128, 256, 1.00),
        (128, 128, 0.97),
        (256, 64, 0.90),
        (64, 256, 0.90),
        (128, 64, 0.85),
        (64, 128, 0.85),
        (64, 64, 0.74),
    )
    # Split-K factors tried when the tiles do not fill one wave (never splitting below
    # split_k_min_k per part), and the extra cost of combining the parts. XLA sm_90 fit: small
    # M×N with large K (256×256×4096 bf16 runs in 6.4 µs, faster than 256×256×2048).
    split_k: tuple[int, ...] = (1, 2, 4, 8, 16)
    split_k_min_k: int = 256
    split_k_overhead_s: float = 1.0e-6
    # Launch and fixed overhead per GEMM call. XLA sm_90 fit; the table's floor is 5.2 µs
    # (256×256×256 bf16).
    launch_s: float = 5.7e-6
    # Skinny GEMMs (M ≤ skinny_max_m rows, e.g. decode at a small batch): cuBLAS runs GEMV and
    # split-K kernels over narrow tiles rather than 64×64 and wider thread-block tiles, so no
    # tile or wave of M is wasted beyond the Tensor Core's 16-row MMA granularity and K is split
    # until every SM has work. Their weight read binds: a GEMV is memory-bound by construction
    # (NVIDIA guide), and at M ≤ 64 the intensity stays below every GPU's ridge.
    skinny_max_m: int = 64
    mma_rows: int = 16
    # The output's contiguous dimension only: multiples of 16 B cost nothing. NVIDIA's
    # tile-quantization example (N = 136…256 in steps of 8 fp16 elements, i.e. 16 B, at
    # 256x128 tiles) is flat.
    output_free_align_bytes: int = 16


CALIBRATION = Calibration()

# Bytes per element of the output. fp8 GEMMs write bf16 (torch._scaled_mm and Transformer
# Engine keep fp8 for inputs; outputs go on in bf16 so the next op can rescale).
OUTPUT_BYTES: Mapping[str, int] = MappingProxyType(
    {"fp32": 4, "tf32": 4, "bf16": 2, "fp16": 2, "fp8": 2}
)


@dataclass(frozen=True)
class LeadingDim:
    """One operand's leading dimension: which operand, which GEMM dim it is, and the largest
    power of two (bytes) dividing its size in bytes."""

    operand: Operand
    dim: str
    align_bytes: int


@dataclass(frozen=True)
class Alignment:
    """What alignment costs one GEMM: the throughput ``factor`` (≤ 1), the leading dimensions
    below the GPU's best alignment (``misaligned``), and the measured cliff that set the factor
    (None when the family's curve did)."""

    factor: float
    misaligned: tuple[LeadingDim, ...] = ()
    cliff: Cliff | None = None

    def describe(self) -> str:
        """``A's K (2 B), C's N (2 B); kernel cliff (hopper, bf16 tiled)`` or ""."""
        parts = [f"{d.operand}'s {d.dim.upper()} ({d.align_bytes} B)" for d in self.misaligned]
        text = ", ".join(parts)
        if self.cliff is not None:
            text += f"; kernel cliff ({'/'.join(self.cliff.dtypes)} {self.cliff.regime})"
        return text


@dataclass(frozen=True)
class GemmTime:
    """The model's prediction for one GEMM call (all ``batch`` matrices).

    ``lost_tiles_s``, ``lost_waves_s`` and ``lost_alignment_s`` split the compute time beyond
    ideal (FLOPs at the achievable rate) into what the tail tiles and per-tile costs, the idle
    SMs of the last wave, and misalignment cost. ``ridge`` is the model's effective ridge point
    (achievable FLOP/s over achievable bytes/s).
    """

    time_s: float
    flops: float
    bytes: float
    intensity: float
    ridge: float
    bound: Bound
    tflops: float
    tile: tuple[int, int]
    split_k: int
    tiles: int
    waves: int
    wave_efficiency: float
    tile_efficiency: float
    align_factor: float
    compute_s: float
    memory_s: float
    launch_s: float
    ideal_s: float
    lost_tiles_s: float
    lost_waves_s: float
    lost_alignment_s: float
    # Which leading dimensions are misaligned and what set the factor (`alignment`).
    alignment: Alignment = Alignment(1.0)

    def report(self) -> dict[str, Any]:
        """The timing as JSON-ready data (``explain`` and ``gemm`` print it); the lost times
        are shares of ``time_s``."""
        share = 1.0 / self.time_s if self.time_s > 0 else 0.0
        return {
            "flops": self.flops,
            "bytes": self.bytes,
            "intensity": self.intensity,
            "time_s": self.time_s,
            "tflops": self.tflops,
            "bound": self.bound,
            "ridge": self.ridge,
            "tile": list(self.tile),
            "split_k": self.split_k,
            "tiles": self.tiles,
            "waves": self.waves,
            "wave_efficiency": self.wave_efficiency,
            "align_factor": self.align_factor,
            "misaligned": self.alignment.describe(),
            "lost_tiles": self.lost_tiles_s * share,
            "lost_waves": self.lost_waves_s * share,
            "lost_alignment": self.lost_alignment_s * share,
        }


def largest_pow2_divisor(n: int) -> int:
    """The largest power of two dividing ``n`` (n > 0)."""
    return n & -n


def achievable_bandwidth(gpu: GPU) -> float:
    """Bytes/s a streaming kernel reaches on ``gpu``: the datasheet bandwidth times the
    family's measured streaming fraction (the GPU table, ``memory_stream_fraction``)."""
    return gpu.mem_bw_gbs * 1e9 * gpu.memory_stream_fraction


def leading_dims(
    m: int, n: int, k: int, dtype: str, a_contig: AContig = "k", b_contig: BContig = "k"
) -> tuple[LeadingDim, ...]:
    """The leading dimensions of A, B and the output C (cuBLAS's lda, ldb, ldc for row-major
    operands) with their alignment in bytes."""
    elem = ELEMENT_BYTES[dtype]
    dims = {"m": m, "n": n, "k": k}
    return (
        LeadingDim("A", a_contig, largest_pow2_divisor(dims[a_contig] * elem)),
        LeadingDim("B", b_contig, largest_pow2_divisor(dims[b_contig] * elem)),
        LeadingDim("C", "n", largest_pow2_divisor(n * OUTPUT_BYTES[dtype])),
    )


def alignment(
    m: int,
    n: int,
    k: int,
    *,
    gpu: GPU,
    dtype: str,
    a_contig: AContig = "k",
    b_contig: BContig = "k",
    skinny: bool = False,
    calibration: Calibration = CALIBRATION,
) -> Alignment:
    """What the operands' alignment costs this GEMM on ``gpu`` (see the module docstring).

    ``skinny`` selects the skinny regime's cliffs (M ≤ `Calibration.skinny_max_m`)."""
    if dtype == "fp32":
        # CUDA-core SIMT kernels: no Tensor Core alignment rule applies.
        return Alignment(1.0)
    lds = leading_dims(m, n, k, dtype, a_contig, b_contig)
    misaligned = tuple(d for d in lds if d.align_bytes < gpu.best_align_bytes)
    regime = "skinny" if skinny else "tiled"
    cliff = first_cliff(gpu.kernel_cliffs, dtype, regime, misaligned)
    if cliff is not None:
        return Alignment(cliff.factor, misaligned, cliff)
    factor = 1.0
    for dim in ("m", "n", "k"):
        counted = [
            d.align_bytes
            for d in misaligned
            if d.dim == dim
            and not (d.operand == "C" and d.align_bytes >= calibration.output_free_align_bytes)
        ]
        if counted:
            factor *= gpu.align_factor.get(min(counted), 1.0)
    return Alignment(factor, misaligned)


def first_cliff(
    cliffs: tuple[Cliff, ...], dtype: str, regime: str, misaligned: tuple[LeadingDim, ...]
) -> Cliff | None:
    """The first of ``cliffs`` (the GPU table lists them most specific first) that fires for a
    GEMM of ``dtype`` in ``regime`` with these ``misaligned`` leading dimensions, or None."""
    for c in cliffs:
        if (
            dtype in c.dtypes
            and c.regime == regime
            and any(
                d.operand in c.operands and d.align_bytes <= c.ld_align_bytes for d in misaligned
            )
        ):
            return c
    return None


def alignment_factor(
    m: int,
    n: int,
    k: int,
    *,
    gpu: GPU,
    dtype: str,
    a_contig: AContig = "k",
    b_contig: BContig = "k",
    skinny: bool = False,
    calibration: Calibration = CALIBRATION,
) -> float:
    """The throughput factor (≤ 1) of `alignment`."""
    return alignment(
        m,
        n,
        k,
        gpu=gpu,
        dtype=dtype,
        a_contig=a_contig,
        b_contig=b_contig,
        skinny=skinny,
        calibration=calibration,
    ).factor


def gemm_time(
    m: int,
    n: int,
    k: int,
    *,
    gpu: GPU,
    dtype: str,
    batch: int = 1,
    a_contig: AContig = "k",
    b_contig: BContig = "k",
    tile: tuple[int, int] | None = None,
    calibration: Calibration = CALIBRATION,
) -> GemmTime:
    """Predict one (batched) GEMM: C[M×N] = A[M×K]·B[K×N], ``batch`` times.

    ``a_contig``/``b_contig`` name each operand's contiguous (fastest-varying) dimension:
    ``"k"``/``"k"`` is ``X·Wᵀ`` with row-major X and W (a Linear layer's forward, QKᵀ);
    ``"k"``/``"n"`` is ``dY·W`` (a Linear's dgrad, P·V); ``"m"``/``"n"`` is ``Xᵀ·dY`` (wgrad).
    The output's contiguous dimension is always N. ``tile`` forces one tile shape (to reproduce
    a published example at a fixed tile) instead of taking the best.
    """
    if min(m, n, k, batch) <= 0:
        raise ValueError(f"GEMM dims must be positive, got m={m} n={n} k={k} batch={batch}")
    cal = calibration
    elem = ELEMENT_BYTES[dtype]
    flops = 2.0 * m * n * k * batch
    nbytes = float(batch * (m * k * elem + k * n * elem + m * n * OUTPUT_BYTES[dtype]))
    rate = gpu.achievable_flops(dtype)
    bandwidth = achievable_bandwidth(gpu)
    overhead_k = gpu.tile_overhead_k
    skinny = m <= cal.skinny_max_m and tile is None
    align = alignment(
        m,
        n,
        k,
        gpu=gpu,
        dtype=dtype,
        a_contig=a_contig,
        b_contig=b_contig,
        skinny=skinny,
        calibration=cal,
    )
    ideal = flops / rate

    if skinny:
        return _skinny_time(m, n, k, batch, flops, nbytes, rate, bandwidth, align, gpu, cal)

    tiles = [t for t in cal.tiles if tile is None or (t[0], t[1]) == tile]
    if not tiles:
        raise ValueError(f"unknown tile {tile}; known: {[(t[0], t[1]) for t in cal.tiles]}")

    best: tuple[float, ...] | None = None
    for tm, tn, eff in tiles:
        tiles_mn = math.ceil(m / tm) * math.ceil(n / tn)
        for split in cal.split_k:
            if split > 1 and (tiles_mn * batch * split > gpu.sms or k // split < cal.split_k_min_k):
                break
            k_part = math.ceil(k / split)
            n_tiles = tiles_mn * batch * split
            waves = math.ceil(n_tiles / gpu.sms)
            # Time of all tiles if spread perfectly over the SMs, then whole waves.
            spread = n_tiles * 2.0 * tm * tn * (k_part + overhead_k) / (rate * eff)
            waved = spread * waves * gpu.sms / n_tiles
            if split > 1:
                # The reduction of the parts counts with the tiles: it is how the work was cut.
                spread += cal.split_k_overhead_s
                waved += cal.split_k_overhead_s
            if best is None or waved < best[0]:
                best = (waved, tm, tn, split, n_tiles, waves, spread)
    assert best is not None
    waved, tm_f, tn_f, split_f, n_tiles_f, waves_f, spread = best
    # The alignment factor slows the kernel's compute and its memory stream alike.
    compute = waved / align.factor
    memory = nbytes / bandwidth / align.factor
    body = max(compute, memory)
    time_s = cal.launch_s + body
    return GemmTime(
        time_s=time_s,
        flops=flops,
        bytes=nbytes,
        intensity=flops / nbytes,
        ridge=rate / bandwidth,
        bound="compute" if compute >= memory else "memory",
        tflops=flops / time_s / 1e12,
        tile=(int(tm_f), int(tn_f)),
        split_k=int(split_f),
        tiles=int(n_tiles_f),
        waves=int(waves_f),
        wave_efficiency=n_tiles_f / (waves_f * gpu.sms),
        tile_efficiency=ideal / spread,
        align_factor=align.factor,
        compute_s=compute,
        memory_s=memory,
        launch_s=cal.launch_s,
        ideal_s=ideal,
        lost_tiles_s=spread - ideal,
        lost_waves_s=waved - spread,
        lost_alignment_s=body - max(waved, memory * align.factor),
        alignment=align,
    )


def _skinny_time(
    m: int,
    n: int,
    k: int,
    batch: int,
    flops: float,
    nbytes: float,
    rate: float,
    bandwidth: float,
    align: Alignment,
    gpu: GPU,
    cal: Calibration,
) -> GemmTime:
    """A skinny GEMM (M ≤ `Calibration.skinny_max_m`): M padded to the MMA's rows, the work
    spread over every SM by split-K (one wave), at the smallest tile's efficiency."""
    rows = -(-m // cal.mma_rows) * cal.mma_rows
    eff = min(e for _, _, e in cal.tiles)
    ideal = flops / rate
    spread = 2.0 * rows * n * k * batch / (rate * eff)
    n_tiles = -(-n // 128) * batch
    split = max(1, min(max(cal.split_k), gpu.sms // n_tiles, k // cal.split_k_min_k))
    # The split-K reduction is a fixed cost beside the launch, not work that competes with
    # the memory stream.
    launch = cal.launch_s + (cal.split_k_overhead_s if split > 1 else 0.0)
    compute = spread / align.factor
    memory = nbytes / bandwidth / align.factor
    body = max(compute, memory)
    time_s = launch + body
    return GemmTime(
        time_s=time_s,
        flops=flops,
        bytes=nbytes,
        intensity=flops / nbytes,
        ridge=rate / bandwidth,
        bound="compute" if compute >= memory else "memory",
        tflops=flops / time_s / 1e12,
        tile=(rows, 128),
        split_k=split,
        tiles=n_tiles * split,
        waves=1,
        wave_efficiency=min(1.0, n_tiles * split / gpu.sms),
        tile_efficiency=ideal / spread,
        align_factor=align.factor,
        compute_s=compute,
        memory_s=memory,
        launch_s=launch,
        ideal_s=ideal,
        lost_tiles_s=spread - ideal,
        lost_waves_s=0.0,
        lost_alignment_s=body - body * align.factor,
        alignment=align,
    )
