"""FlashAttention throughput by kernel, GPU family, pass, head dim and sequence length.

The fused attention kernels do not run like a GEMM of the same shape: their rate grows with
the sequence length (each query block's fixed work, loading Q, rescaling and writing O, is
spread over s/128 key blocks) and depends on the head dim in a way that differs by kernel
(FlashAttention-2 runs head dim 256 slower than 128 on H100; FlashAttention-3 and cuDNN run it
faster). This module takes the rates from the kernels' papers, figure by figure
(`SERIES`, the fit rows of tests/perf/data/flash_attention.csv, where each source is named),
and fits one curve per series:

    time per FLOP = a + b / s,   i.e. rate(s) = R_inf * s / (s + s_0)

(least squares on relative error). The held-out points of the same figures (1k and 4k) are
tests/perf/test_perf_attention.py's. Rates are used as fractions of the measuring GPU's dense
peak (A100 SXM4 312, H100 SXM5 989 TFLOP/s bf16), so another GPU of the family runs at the
same fraction of its own peak.

What the figures do not cover, and what stands in for it (each an assumption):
- FLOPs are counted as the papers count them: forward 4·b·h·s²·d, halved under a causal
  mask; the backward 2.5× the forward.
- A100 has only forward + backward series: both passes run at that rate (their sum is what
  the figure measured). A forward alone on A100 (prefill) is charged the same rate.
- H100 FlashAttention-2 backward with a causal mask: from the forward + backward (FA2 Fig. 7)
  and forward (FA3 Fig. 5) series, 2.5 / (3.5 / R_fwd_bwd − 1 / R_fwd).
- FlashAttention-3 and cuDNN backward are published without a causal mask only: the causal
  backward is taken to lose what the causal forward loses at that s and head dim.
- A head dim between two published ones interpolates linearly; below the smallest, the rate
  scales with d (the per-score softmax work does not shrink with d); above the largest, the
  largest's rate times the forward's ratio between the two head dims where the forward has
  both, else the largest's rate.
- GPU families without a figure: each GPU's ``attention_figures`` (the GPU table) names the
  paper GPU whose fractions it takes: Blackwell Hopper's, every other family Ampere's (Volta,
  Ada and CDNA run other kernels; no figure in these papers).
"""

from __future__ import annotations

import functools
import itertools
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType

# Dense bf16 peak of the GPUs the figures were measured on (TFLOP/s; gpus.yaml has the same).
PAPER_PEAK: Mapping[str, float] = MappingProxyType({"a100": 312.0, "h100": 989.0})

SeriesKey = tuple[str, str, str, str, bool, int]

# (source, GPU, kernel, pass, causal, head dim) → ((seq len, TFLOP/s), ...): the fit rows of
# tests/perf/data/flash_attention.csv (sources there: fa2_fig4/fa2_fig7 = Dao 2023,
# arXiv:2307.08691 Figs. 4 and 7; fa3_fig5/fa3_fig6 = Shah et al. 2024, arXiv:2407.08608,
# Figs. 5 and 6).
SERIES: Mapping[SeriesKey, tuple[tuple[int, int], ...]] = MappingProxyType(
    {
        ("fa2_fig4", "a100", "flash2", "fwd_bwd", False, 64): (
            (512, 132),
            (2048, 162),
            (8192, 175),
            (16384, 176),
        ),
        ("fa2_fig4", "a100", "flash2", "fwd_bwd", False, 128): (
            (2048, 187),
            (8192, 201),
            (16384, 203),
        ),
        ("fa2_fig4", "a100", "flash2", "fwd_bwd", True, 64): (
            (512, 88),
            (2048, 140),
            (8192, 165),
            (16384, 171),
        ),
        ("fa2_fig4", "a100", "flash2", "fwd_bwd", True, 128): (
            (512, 99),
            (2048, 155),
            (8192, 182),
            (16384, 189),
        ),
        ("fa2_fig7", "h100", "flash2", "fwd_bwd", False, 64): (
            (512, 215),
            (2048, 274),
            (8192, 294),
            (16384, 296),
        ),
        ("fa2_fig7", "h100", "flash2", "fwd_bwd", False, 128): (
            (512, 248),
            (2048, 320),
            (8192, 335),
            (16384, 338),
        ),
        ("fa2_fig7", "h100", "flash2", "fwd_bwd", True, 64): (
            (512, 141),
            (2048, 232),
            (8192, 273),
            (16384, 284),
        ),
        ("fa2_fig7", "h100", "flash2", "fwd_bwd", True, 128): (
            (512, 163),
            (2048, 265),
            (8192, 308),
            (16384, 328),
        ),
        ("fa3_fig5", "h100", "flash2", "fwd", False, 64): (
            (512, 282),
            (2048, 318),
            (8192, 322),
            (16384, 324),
        ),
        ("fa3_fig5", "h100", "cudnn", "fwd", False, 64): ((2048, 395), (8192, 412), (16384, 413)),
        ("fa3_fig5", "h100", "flash3", "fwd", False, 64): (
            (512, 333),
            (2048, 460),
            (8192, 496),
            (16384, 497),
        ),
        ("fa3_fig5", "h100", "flash2", "fwd", True, 64): (
            (512, 180),
            (2048, 262),
            (8192, 295),
            (16384, 299),
        ),
        ("fa3_fig5", "h100", "cudnn", "fwd", True, 64): (
            (512, 225),
            (2048, 334),
            (8192, 379),
            (16384, 388),
        ),
        ("fa3_fig5", "h100", "flash3", "fwd", True, 64): (
            (512, 197),
            (2048, 371),
            (8192, 460),
            (16384, 473),
        ),
        ("fa3_fig5", "h100", "flash2", "fwd", False, 128): (
            (512, 309),
            (2048, 362),
            (8192, 370),
            (16384, 370),
        ),
        ("fa3_fig5", "h100", "cudnn", "fwd", False, 128): (
            (512, 497),
            (2048, 617),
            (8192, 600),
            (16384, 595),
        ),
        ("fa3_fig5", "h100", "flash3", "fwd", False, 128): (
            (512, 467),
            (2048, 625),
            (8192, 646),
            (16384, 648),
        ),
        ("fa3_fig5", "h100", "flash2", "fwd", True, 128): (
            (512, 191),
            (2048, 298),
            (8192, 333),
            (16384, 335),
        ),
        ("fa3_fig5", "h100", "cudnn", "fwd", True, 128): (
            (512, 315),
            (2048, 484),
            (8192, 529),
            (16384, 539),
        ),
        ("fa3_fig5", "h100", "flash3", "fwd", True, 128): (
            (512, 292),
            (2048, 521),
            (8192, 602),
            (16384, 616),
        ),
        ("fa3_fig5", "h100", "flash2", "fwd", False, 256): (
            (512, 275),
            (2048, 321),
            (8192, 324),
            (16384, 326),
        ),
        ("fa3_fig5", "h100", "cudnn", "fwd", False, 256): (
            (512, 470),
            (2048, 580),
            (8192, 580),
            (16384, 581),
        ),
        ("fa3_fig5", "h100", "flash3", "fwd", False, 256): (
            (512, 482),
            (2048, 707),
            (8192, 746),
            (16384, 756),
        ),
        ("fa3_fig5", "h100", "flash2", "fwd", True, 256): (
            (512, 208),
            (2048, 278),
            (8192, 297),
            (16384, 298),
        ),
        ("fa3_fig5", "h100", "cudnn", "fwd", True, 256): (
            (512, 308),
            (2048, 450),
            (8192, 497),
            (16384, 509),
        ),
        ("fa3_fig5", "h100", "flash3", "fwd", True, 256): (
            (512, 286),
            (2048, 537),
            (8192, 628),
            (16384, 642),
        ),
        ("fa3_fig6", "h100", "flash2", "bwd", False, 64): (
            (512, 198),
            (2048, 264),
            (8192, 287),
            (16384, 291),
        ),
        ("fa3_fig6", "h100", "cudnn", "bwd", False, 64): (
            (512, 266),
            (2048, 395),
            (8192, 432),
            (16384, 433),
        ),
        ("fa3_fig6", "h100", "flash3", "bwd", False, 64): (
            (512, 272),
            (2048, 422),
            (8192, 472),
            (16384, 474),
        ),
        ("fa3_fig6", "h100", "flash2", "bwd", False, 128): (
            (512, 214),
            (2048, 291),
            (8192, 318),
            (16384, 322),
        ),
        ("fa3_fig6", "h100", "cudnn", "bwd", False, 128): (
            (512, 305),
            (2048, 465),
            (8192, 518),
            (16384, 516),
        ),
        ("fa3_fig6", "h100", "flash3", "bwd", False, 128): (
            (512, 316),
            (2048, 501),
            (8192, 559),
            (16384, 561),
        ),
        ("fa2_fig4", "a100", "flash1", "fwd_bwd", False, 64): (
            (512, 91),
            (2048, 104),
            (8192, 110),
            (16384, 110),
        ),
        ("fa2_fig4", "a100", "flash1", "fwd_bwd", False, 128): (
            (512, 76),
            (2048, 76),
            (8192, 82),
            (16384, 83),
        ),
        ("fa2_fig4", "a100", "flash1", "fwd_bwd", True, 64): (
            (512, 58),
            (2048, 77),
            (8192, 92),
            (16384, 97),
        ),
        ("fa2_fig4", "a100", "flash1", "fwd_bwd", True, 128): (
            (512, 55),
            (2048, 69),
            (8192, 80),
            (16384, 83),
        ),
        ("fa2_fig4", "a100", "triton", "fwd_bwd", False, 64): (
            (512, 90),
            (2048, 98),
            (8192, 100),
            (16384, 100),
        ),
        ("fa2_fig4", "a100", "triton", "fwd_bwd", False, 128): (
            (512, 78),
            (2048, 90),
            (8192, 95),
            (16384, 95),
        ),
        ("fa2_fig4", "a100", "triton", "fwd_bwd", True, 64): (
            (512, 59),
            (2048, 79),
            (8192, 79),
            (16384, 80),
        ),
        ("fa2_fig4", "a100", "triton", "fwd_bwd", True, 128): (
            (512, 50),
            (2048, 68),
            (8192, 78),
            (16384, 80),
        ),
        ("fa2_fig7", "h100", "flash1", "fwd_bwd", False, 64): (
            (512, 157),
            (2048, 161),
            (8192, 166),
            (16384, 168),
        ),
        ("fa2_fig7", "h100", "flash1", "fwd_bwd", False, 128): (
            (512, 127),
            (2048, 128),
            (8192, 137),
            (16384, 139),
        ),
        ("fa2_fig7", "h100", "flash1", "fwd_bwd", True, 64): (
            (512, 104),
            (2048, 136),
            (8192, 149),
            (16384, 156),
        ),
        ("fa2_fig7", "h100", "flash1", "fwd_bwd", True, 128): (
            (512, 98),
            (2048, 108),
            (8192, 135),
            (16384, 137),
        ),
    }
)


def fit_curve(points: tuple[tuple[int, int], ...]) -> tuple[float, float]:
    """``(a, b)`` of time per TFLOP = a + b/s through ``points`` ((s, TFLOP/s), ...), by
    least squares on the relative error (weights rate²)."""
    xs = [1.0 / s for s, _ in points]
    ys = [1.0 / r for _, r in points]
    ws = [float(r) ** 2 for _, r in points]
    sw = sum(ws)
    mx = sum(w * x for w, x in zip(ws, xs, strict=True)) / sw
    my = sum(w * y for w, y in zip(ws, ys, strict=True)) / sw
    sxx = sum(w * (x - mx) ** 2 for w, x in zip(ws, xs, strict=True))
    sxy = sum(w * (x - mx) * (y - my) for w, x, y in zip(ws, xs, ys, strict=True))
    b = sxy / sxx if sxx > 0 else 0.0
    return my - b * mx, b


@functools.cache
def _curves() -> dict[tuple[str, str, str, bool, int], tuple[float, float]]:
    """(GPU, kernel, pass, causal, head dim) → (a, b) of each series' curve."""
    return {key[1:]: fit_curve(points) for key, points in SERIES.items()}


def _series_rate(gpu: str, kernel: str, pass_: str, causal: bool, d: int, s: int) -> float | None:
    curve = _curves().get((gpu, kernel, pass_, causal, d))
    if curve is None:
        return None
    a, b = curve
    return 1.0 / (a + b / max(1, s))


def _dims(gpu: str, kernel: str, pass_: str, causal: bool) -> list[int]:
    return sorted({k[4] for k in _curves() if k[:4] == (gpu, kernel, pass_, causal)})


def _at_head_dim(gpu: str, kernel: str, pass_: str, causal: bool, d: int, s: int) -> float | None:
    """A series' rate at head dim ``d`` (interpolated / extended, see the module docstring)."""
    dims = _dims(gpu, kernel, pass_, causal)
    if not dims:
        return None
    if d in dims:
        return _series_rate(gpu, kernel, pass_, causal, d, s)
    if d < dims[0]:
        low = _series_rate(gpu, kernel, pass_, causal, dims[0], s)
        return None if low is None else low * d / dims[0]
    if d > dims[-1]:
        top = _series_rate(gpu, kernel, pass_, causal, dims[-1], s)
        fwd_dims = _dims(gpu, kernel, "fwd", causal)
        if top is not None and pass_ != "fwd" and d in fwd_dims and dims[-1] in fwd_dims:
            here = _series_rate(gpu, kernel, "fwd", causal, d, s)
            there = _series_rate(gpu, kernel, "fwd", causal, dims[-1], s)
            if here is not None and there is not None:
                return top * here / there
        return top
    lo = max(x for x in dims if x < d)
    hi = min(x for x in dims if x > d)
    r_lo = _series_rate(gpu, kernel, pass_, causal, lo, s)
    r_hi = _series_rate(gpu, kernel, pass_, causal, hi, s)
    if r_lo is None or r_hi is None:
        return None
    return r_lo + (r_hi - r_lo) * (d - lo) / (hi - lo)


def paper_rate(gpu: str, kernel: str, pass_: str, causal: bool, d: int, s: int) -> float | None:
    """TFLOP/s of ``kernel`` (flash2, flash3, cudnn) on the paper's ``gpu`` (a100, h100) for
    ``pass_`` (``fwd`` or ``bwd``), as the curves fitted to the figures give it; None when no
    figure covers the kernel on that GPU."""
    rate = _at_head_dim(gpu, kernel, pass_, causal, d, s)
    if rate is not None:
        return rate
    both = _at_head_dim(gpu, kernel, "fwd_bwd", causal, d, s)
    if pass_ == "fwd":
        return both
    fwd = _at_head_dim(gpu, kernel, "fwd", causal, d, s)
    if both is not None and fwd is not None:
        rest = 3.5 / both - 1.0 / fwd
        return 2.5 / rest if rest > 0 else both
    if both is not None:
        return both
    if causal:
        # Published without a causal mask only: lose what the forward loses to the mask.
        open_bwd = _at_head_dim(gpu, kernel, pass_, False, d, s)
        masked = _at_head_dim(gpu, kernel, "fwd", True, d, s)
        unmasked = _at_head_dim(gpu, kernel, "fwd", False, d, s)
        if open_bwd is not None and masked is not None and unmasked:
            return open_bwd * masked / unmasked
    return None


def kernel_on(kernel: str, figures: str) -> tuple[str, str]:
    """The (paper GPU, kernel) whose figures stand for ``kernel`` on a GPU whose
    ``attention_figures`` (the GPU table) are ``figures``: FlashAttention-3 and cuDNN's figures
    are Hopper's; elsewhere (and for ``sdpa``, whose flash backend is FlashAttention-2's
    kernel) FlashAttention-2's."""
    gpu = figures if figures in PAPER_PEAK else "a100"
    if kernel == "sdpa" or (kernel in ("flash3", "cudnn") and gpu != "h100"):
        kernel = "flash2"
    if kernel == "triton" and gpu == "h100":
        # No H100 figure of the Triton kernel: FlashAttention-1's stands in (on A100, Fig. 4,
        # the two are within 10% of each other with a causal mask at head dim 128).
        kernel = "flash1"
    if kernel not in ("flash1", "flash2", "flash3", "cudnn", "triton"):
        kernel = "flash2"
    return gpu, kernel


@dataclass(frozen=True)
class MeasuredKernels:
    """How much slower (> 1) or faster (< 1) than its papers' curve a kernel ran in our own
    measurement, by the head dim it was compiled for: the papers measured FlashAttention-2's
    own build and cuDNN 9 (2024) at head dims 64, 128 and 256; what PyTorch's SDPA and
    today's cuDNN run differs per compiled head dim (FlashAttention-2's head-dim-160 kernel
    runs slower than its 192 one on Hopper, which no interpolation between 128 and 256 gives).

    ``factors[(paper GPU, kernel)]`` (``sdpa``: PyTorch's SDPA flash backend, whose figures are
    otherwise FlashAttention-2's; ``cudnn``: cuDNN's fused attention, as SDPA and Transformer
    Engine call it) holds (padded head dim, measured time / the papers' time)
    for a causal forward + backward at s = 2048, b·h = 128, bf16: the fit head dims of our H200
    measurements, benchmarks/results/nvidia-h200/attention.csv (torch 2.11.0+cu130, cuDNN
    9.19; split in its SPLIT.md: head dims 64, 96, 128, 140, 192 fit). Head dim 140 runs the
    160 kernel (padded to 144 first, as SDPA pads a head dim that is not a multiple of 8), so
    its row stands for 160. ``python benchmarks/kernel_report.py attention-fit`` refits them;
    tests/perf/test_perf_kernels.py pins them to that refit and reports the held-out head dims
    (80, 112, 132, 160, 256).

    Assumptions: one factor for both passes and every sequence length; between two fitted head
    dims the factor interpolates linearly, outside them the nearest one's holds; the H200's
    factors stand for every GPU whose ``attention_figures`` are Hopper's (Blackwell included:
    no measurement there). FlashAttention-3 (no measurement) keeps its papers' figures.
    """

    factors: Mapping[tuple[str, str], tuple[tuple[int, float], ...]]

    def factor(self, gpu: str, kernel: str, d: int) -> float:
        """The factor of ``kernel`` on the paper GPU ``gpu`` at padded head dim ``d``."""
        points = self.factors.get((gpu, kernel))
        if not points:
            return 1.0
        if d <= points[0][0]:
            return points[0][1]
        for (d0, f0), (d1, f1) in itertools.pairwise(points):
            if d <= d1:
                return f0 + (f1 - f0) * (d - d0) / (d1 - d0)
        return points[-1][1]


MEASURED = MeasuredKernels(
    MappingProxyType(
        {
            ("h100", "sdpa"): ((64, 1.121), (96, 1.177), (128, 1.122), (160, 1.841), (192, 1.219)),
            ("h100", "cudnn"): ((64, 0.972), (96, 1.067), (128, 0.915), (192, 1.162)),
        }
    )
)


def attention_fraction(kernel: str, figures: str, pass_: str, d: int, s: int) -> float:
    """The fraction of the dense peak a causal ``kernel`` sustains on a GPU whose
    ``attention_figures`` are ``figures`` (a100, h100) for ``pass_`` (``fwd`` or ``bwd``) at
    padded head dim ``d`` and sequence length ``s``: the papers' rate, corrected by our own
    measurement of the kernel where there is one (`MEASURED`)."""
    gpu, name = kernel_on(kernel, figures)
    rate = paper_rate(gpu, name, pass_, True, d, s)
    if rate is None:  # every kernel_on() result has figures; kept for the type checker
        rate = paper_rate(gpu, "flash2", "fwd_bwd", True, d, s) or PAPER_PEAK[gpu] / 2
    # PyTorch's SDPA runs its own build of FlashAttention-2's kernel: the papers' FA2 figures,
    # corrected by what that build measured.
    factor = MEASURED.factor(gpu, "sdpa" if kernel == "sdpa" else name, d)
    return rate / PAPER_PEAK[gpu] / factor


@dataclass(frozen=True)
class UnfusedCalibration:
    """The memory-bound kernels of unfused attention, each at a measured fraction of the GPU
    family's streaming bandwidth (``memory_stream_fraction``): they move the b·h·s² scores
    row by row (a softmax reads each row for its maximum and its sum before writing it), so
    they reach less than a plain stream. The bmms of unfused attention are GEMMs
    (`shapelint.perf.gemm`, at their head dim's alignment).

    Fitted on the fit head dims (64, 96, 128, 140, 192) of our H200 measurements,
    benchmarks/results/nvidia-h200/round2/unfused.csv (b·h = 128, s = 2048, bf16; split in its
    SPLIT.md), against the H200's streaming rate (0.852 × 4800 GB/s): ``softmax_fwd``, one
    softmax kernel reading and writing the scores (torch.softmax; Megatron's and Transformer
    Engine's fused scale-mask-softmax kernels read and write the same bytes in one pass);
    ``softmax_bwd``, its backward (reads probabilities and their gradient, writes one tensor);
    ``mask``, an eager mask applied as its own kernel (masked_fill with the broadcast causal
    mask, forward and backward alike). ``python benchmarks/kernel_report.py unfused-fit`` refits
    them; held out: 0.394, 0.538 and 0.244. The same fractions stand for every GPU family (no
    other GPU measured).
    """

    softmax_fwd: float = 0.400
    softmax_bwd: float = 0.538
    mask: float = 0.243

    def efficiency(self, name: str, pass_: str) -> float:
        """The fraction of the streaming bandwidth the memory-bound op ``name`` (a step's
        `shapelint.perf.ops.MemOp` name) reaches in ``pass_``; 1.0 for every other op."""
        if name == "softmax":
            return self.softmax_fwd if pass_ in ("fwd", "recompute") else self.softmax_bwd
        if name == "attention_mask":
            return self.mask
        return 1.0


UNFUSED = UnfusedCalibration()


__all__ = [
    "MEASURED",
    "PAPER_PEAK",
    "SERIES",
    "UNFUSED",
    "MeasuredKernels",
    "UnfusedCalibration",
    "attention_fraction",
    "fit_curve",
    "kernel_on",
    "paper_rate",
]
