"""Print every published data point the GEMM model is calibrated on, model against published.

Usage:
    python benchmarks/calibration_report.py

Sources: NVIDIA Matrix Multiplication Background guide (tile- and wave-quantization
examples, A100, fp16); XLA's measured sm_90 table (tests/perf/data/xla_sm90_matmul.csv,
Apache-2.0); Anthony et al. 2024 (arXiv 2401.14489) Fig. 7 (A100, QKᵀ, a = 32).
"""

from __future__ import annotations

import csv
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from shapelint.perf.gemm import gemm_time
from shapelint.perf.gpus import lookup

ROOT = Path(__file__).resolve().parent.parent
XLA_CSV = ROOT / "tests" / "perf" / "data" / "xla_sm90_matmul.csv"


def nvidia_tile_example() -> None:
    a100 = lookup("a100")
    print("NVIDIA guide, tile quantization: A100 fp16, M=27648, K=4096, 256x128 tiles")
    print("  published: flat for N = 136..256 (step 8); a step from N = 128 to 136")
    for n in (128, 136, 192, 256):
        forced = gemm_time(27648, n, 4096, gpu=a100, dtype="fp16", tile=(256, 128))
        best = gemm_time(27648, n, 4096, gpu=a100, dtype="fp16")
        print(
            f"  N={n:4d}: model {forced.time_s * 1e6:7.1f} us at 256x128"
            f" ({forced.tiles} tiles); best tile {best.tile}: {best.time_s * 1e6:7.1f} us"
        )


def nvidia_wave_example() -> None:
    a100 = lookup("a100")
    print("NVIDIA guide, wave quantization: A100 fp16, M=2304, K=4096")
    print("  published: whole waves (108, 216, 324, 432 tiles) at N = 1536, 3072, 4608, 6144,")
    print("  throughput peaks there and falls just past each")
    for n in (1536, 1600, 3072, 3136, 4608, 4672, 6144, 6208):
        t = gemm_time(2304, n, 4096, gpu=a100, dtype="fp16")
        print(
            f"  N={n:4d}: model {t.tflops:6.1f} TFLOP/s, tile {t.tile}, {t.tiles} tiles,"
            f" wave efficiency {t.wave_efficiency:.2f}"
        )


def xla_table() -> None:
    h100 = lookup("h100")
    errors = []
    points = {(1, 4096, 4096, 4096), (1, 256, 2048, 256), (1, 256, 256, 256), (4, 4096, 4096, 4096)}
    print("XLA sm_90 measured table (bf16 rows) on H100-SXM")
    with XLA_CSV.open(encoding="utf-8") as f:
        for r in csv.DictReader(f):
            if not r["dtype"].startswith("bf16"):
                continue
            b, m, n, k = (int(r[c]) for c in "bmnk")
            measured = float(r["flops_per_s"]) / 1e12
            t = gemm_time(m, n, k, gpu=h100, dtype="bf16", batch=b)
            errors.append(abs(measured / t.tflops - 1))  # = |t_model / t_measured - 1|
            if (b, m, n, k) in points:
                print(
                    f"  b={b} {m}x{n}x{k}: published {measured:6.1f} TFLOP/s, model {t.tflops:6.1f}"
                )
    print(
        f"  all {len(errors)} bf16 rows, relative error in time:"
        f" median {statistics.median(errors):.2%}, worst {max(errors):.2%}"
    )


def anthony_fig7() -> None:
    a100 = lookup("a100")
    print("Anthony et al. 2024, Fig. 7: A100 fp16 QKt, a=32, s=2048, b=4 (batch 128), K = h/a")
    bands = (
        ("largest power-of-two factor 8-64", "200-215", (504, 496, 480, 448)),
        ("factor 2-4", "100-150", (502, 500)),
        ("h/a odd", "75-95", (501, 503)),
    )
    for label, published, dims in bands:
        got = ", ".join(
            f"h/a={d}: {gemm_time(2048, 2048, d, gpu=a100, dtype='fp16', batch=128).tflops:.0f}"
            for d in dims
        )
        print(f"  {label}: published {published} TFLOP/s; model {got}")


def main() -> int:
    nvidia_tile_example()
    nvidia_wave_example()
    xla_table()
    anthony_fig7()
    return 0


if __name__ == "__main__":
    sys.exit(main())
