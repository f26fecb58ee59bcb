"""FlashAttention rates by kernel, head dim and sequence length against the papers' figures.

The model (`shapelint.perf.attention`) holds the fit rows of tests/perf/data/flash_attention.csv
and fits one curve per series on them; the held-out rows (1k and 4k of every series) are read
here from the CSV and compared with the published TFLOP/s.
"""

from __future__ import annotations

import csv
import statistics
from pathlib import Path

import pytest

from shapelint.hardware.gpus import lookup
from shapelint.perf.attention import (
    PAPER_PEAK,
    SERIES,
    attention_fraction,
    kernel_on,
    paper_rate,
)

DATA = Path(__file__).parent / "data" / "flash_attention.csv"


def rows(split: str) -> list[dict[str, str]]:
    with DATA.open(encoding="utf-8") as f:
        lines = [ln for ln in f if not ln.startswith("#")]
    return [r for r in csv.DictReader(lines) if r["split"] == split]


def key(r: dict[str, str]) -> tuple[str, str, str, str, bool, int]:
    return (
        r["source"],
        r["gpu"],
        r["kernel"],
        r["pass"],
        r["causal"] == "True",
        int(r["head_dim"]),
    )


def test_the_model_holds_exactly_the_fit_rows() -> None:
    fit: dict[tuple[str, str, str, str, bool, int], list[tuple[int, int]]] = {}
    for r in rows("fit"):
        fit.setdefault(key(r), []).append((int(r["seq_len"]), int(r["tflops"])))
    assert {k: tuple(v) for k, v in fit.items()} == dict(SERIES)
    held = rows("held_out")
    assert {int(r["seq_len"]) for r in held} == {1024, 4096}
    assert not any((int(r["seq_len"]), int(r["tflops"])) in SERIES[key(r)] for r in held)


def test_held_out_points_within_ten_percent_of_published() -> None:
    errors = []
    for r in rows("held_out"):
        gpu, kernel, pass_, causal = r["gpu"], r["kernel"], r["pass"], r["causal"] == "True"
        rate = paper_rate(gpu, kernel, pass_, causal, int(r["head_dim"]), int(r["seq_len"]))
        assert rate is not None, r
        error = rate / float(r["tflops"]) - 1
        assert abs(error) <= 0.10, (r, rate)
        errors.append(abs(error))
    assert len(errors) >= 70
    assert statistics.median(errors) <= 0.03


def test_head_dim_order_differs_by_kernel_on_h100() -> None:
    # FA3 paper Fig. 5, causal forward at 16k: FlashAttention-2 298 (hd 256) < 335 (hd 128);
    # FlashAttention-3 642 > 616; cuDNN 509 < 539. The model keeps each kernel's order, per
    # FLOP of real work, at every sequence length the figure covers.
    for s in (2048, 8192, 16384):
        fa2 = [attention_fraction("flash2", "h100", "fwd", d, s) for d in (128, 256)]
        fa3 = [attention_fraction("flash3", "h100", "fwd", d, s) for d in (128, 256)]
        assert fa2[1] < fa2[0]
        assert fa3[1] > fa3[0]
    # The FA2 backward at 256 has no figure: it follows the forward's ratio (slower too).
    assert attention_fraction("flash2", "h100", "bwd", 256, 8192) < attention_fraction(
        "flash2", "h100", "bwd", 128, 8192
    )


def test_short_sequences_run_slower() -> None:
    # FA2 paper Fig. 4, causal, head dim 128, A100: 99 TFLOP/s at 512, 189 at 16k.
    short = attention_fraction("flash2", "a100", "fwd", 128, 512) * 312
    long = attention_fraction("flash2", "a100", "fwd", 128, 16384) * 312
    assert short == pytest.approx(99, rel=0.1)
    assert long == pytest.approx(189, rel=0.1)


def test_which_figures_stand_for_a_kernel() -> None:
    assert kernel_on("flash3", "a100") == ("a100", "flash2")  # FA3 is Hopper-only
    assert kernel_on("cudnn", "a100") == ("a100", "flash2")
    assert kernel_on("sdpa", "h100") == ("h100", "flash2")
    assert kernel_on("triton", "a100") == ("a100", "triton")
    assert kernel_on("triton", "h100") == ("h100", "flash1")  # no H100 Triton figure
    assert kernel_on("flash3", lookup("b200").attention_figures) == ("h100", "flash3")
    assert kernel_on("flash2", lookup("l40s").attention_figures) == ("a100", "flash2")
    # Another GPU of a family takes its family's figures, at the same fraction of its own peak.
    assert lookup("a10").attention_figures == lookup("a100").attention_figures == "a100"
    assert lookup("h200").attention_figures == "h100"


def test_head_dims_without_a_figure() -> None:
    # Below the smallest published head dim the rate scales with d; between two it is linear.
    f32 = attention_fraction("flash2", "a100", "fwd", 32, 4096)
    f64 = attention_fraction("flash2", "a100", "fwd", 64, 4096)
    f96 = attention_fraction("flash2", "a100", "fwd", 96, 4096)
    f128 = attention_fraction("flash2", "a100", "fwd", 128, 4096)
    assert f32 == pytest.approx(f64 / 2)
    assert f96 == pytest.approx((f64 + f128) / 2)


def test_paper_peaks_are_the_gpu_tables() -> None:
    assert lookup("a100").peak("bf16") == PAPER_PEAK["a100"]
    assert lookup("h100").peak("bf16") == PAPER_PEAK["h100"]
