"""The kernel-level model against measurements (issue 24, deliverables 3-5): misaligned GEMMs on
our H200 (benchmarks/results/nvidia-h200/), the ~1B train step's shape effects, batch-1 decode
as published (tests/perf/data/decode_batch1.csv), unfused attention's pieces and whole path,
and the attention kernel Transformer Engine selects.

Every expected number is a measurement (ours, split fit / held out by the SPLIT.md files, or
published); the fitted constants are checked to be what their fit rows give.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

from shapelint.core.model import Dim, ModelConfig, Target, Value
from shapelint.core.source import Span
from shapelint.hardware.gpus import lookup
from shapelint.perf.attention import MEASURED, UNFUSED
from shapelint.perf.estimate import step_time
from shapelint.perf.gemm import alignment, gemm_time
from shapelint.perf.te_attention import engine_attention

BENCH = Path(__file__).resolve().parents[2] / "benchmarks"
H200, H100, A100 = lookup("h200"), lookup("h100"), lookup("a100")
SPAN = Span("config.json", 1, 1, 1, 2, 0, 1)


def load(name: str) -> ModuleType:
    sys.path.insert(0, str(BENCH))
    spec = importlib.util.spec_from_file_location(f"bench_{name}", BENCH / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


REPORT = load("kernel_report")
FIT = load("fit_alignment")


def within(rows: list, split: str) -> tuple[int, int]:  # type: ignore[type-arg]
    some = [r for r in rows if r.split == split]
    return sum(r.within for r in some), len(some)


# --- alignment: fp32, per operand, cliffs ---------------------------------------------------


def test_fp32_gemms_carry_no_alignment_penalty() -> None:
    # Our H200 fp32 rows (TF32 off): odd, 8- and 16-element K and N within 8% of aligned.
    rows = [r for r in REPORT.gemm_section(H200) if " fp32 " in r.label]
    assert len(rows) == 54
    for r in rows:
        assert 0.92 <= r.measured <= 1.08, r.label
        assert r.within, r.label
    assert alignment(8192, 4097, 4097, gpu=H200, dtype="fp32").factor == 1.0
    assert alignment(8192, 4097, 4097, gpu=A100, dtype="fp32").factor == 1.0
    # tf32 runs on the Tensor Cores and pays (measured ~0.3 at odd sizes).
    assert alignment(8192, 4097, 4096, gpu=H200, dtype="tf32").factor < 0.5


def test_h200_misaligned_gemm_slowdowns_held_out() -> None:
    rows = REPORT.gemm_section(H200)
    inside, total = within(rows, "held_out")
    assert total >= 190
    assert inside / total >= 0.9  # 179 of 194 within ±25% of the measured slowdown


def test_which_operand_leads_decides() -> None:
    # TN (wgrad): K leads no operand, so an odd K costs nothing; N leads B and C.
    free = alignment(8192, 4096, 4097, gpu=H200, dtype="bf16", a_contig="m", b_contig="n")
    assert free.factor == 1.0 and not free.misaligned
    hit = alignment(8192, 4097, 4096, gpu=H200, dtype="bf16", a_contig="m", b_contig="n")
    assert {(d.operand, d.dim) for d in hit.misaligned} == {("B", "n"), ("C", "n")}
    assert hit.cliff is not None


def test_hopper_cliff_factors_are_their_fit_rows_medians() -> None:
    cliffs, curve = FIT.factors("fit")
    table = {(c.ld_align_bytes, c.regime, c.operands): c.factor for c in H200.kernel_cliffs}
    for i, (nbytes, regime, operands) in enumerate(FIT.CLIFF_ROWS):
        values = sorted(cliffs[i])
        mid = len(values) // 2
        median = values[mid] if len(values) % 2 else (values[mid - 1] + values[mid]) / 2
        assert table[(nbytes, regime, operands)] == pytest.approx(median, abs=5e-4)
    for nbytes in (16, 32, 64):
        values = sorted(curve[nbytes])
        mid = len(values) // 2
        median = values[mid] if len(values) % 2 else (values[mid - 1] + values[mid]) / 2
        assert H200.align_factor[nbytes] == pytest.approx(median, abs=5e-4)


def test_families_without_measurements_have_no_cliffs() -> None:
    for name in ("a100", "l40s", "b200", "v100", "mi300x"):
        assert lookup(name).kernel_cliffs == ()
    # Blackwell takes Hopper's curve (the same 16-byte TMA rule), not its cliffs.
    assert dict(lookup("b200").align_factor) == dict(H100.align_factor)


# --- the ~1B train step's shape effects ----------------------------------------------------


def test_train_step_shape_effects_within_25_percent() -> None:
    ratios = [r for r in REPORT.train_section(H200) if "slowdown" in r.label]
    by = {r.label.split()[1]: r for r in ratios}
    # FFN 5461 (odd: 2.49x measured) and 5464 (x8: +2.7%) are held out; vocab 50257 (+28.5%)
    # and head dim 80 (+4.6%) fit rows.
    assert set(by) == {"vocab50257", "ffn5461", "h2560-32x80", "ffn5464"}
    for r in ratios:
        assert r.within, r.label


# --- decode at batch 1 --------------------------------------------------------------------


def test_published_batch1_decode_within_20_percent() -> None:
    rows = REPORT.published_decode_section()
    gpus = {r.label.split()[2] for r in rows}
    assert gpus == {"a100-80gb", "h100-sxm"}
    assert len(rows) == 6
    for r in rows:
        assert r.within, r.label


def test_h200_decode_harness_kernel_cost_is_its_fit_rows_median() -> None:
    # Our H200 decode rows run gpu_validate.py's eager PyTorch step (as a CUDA graph), which
    # launches kernels the model does not time: counted from its code, 14 per layer (+2 under
    # GQA) and 8 per token. Their cost is fitted on the fit rows only; it stays in the
    # benchmark (the harness's, not a user's) and is near the model's 2 µs kernel floor.
    fitted = REPORT.decode_harness_fit(H200)
    assert fitted == pytest.approx(REPORT.HARNESS_KERNEL_S, abs=0.01e-6)
    assert 1.0e-6 <= REPORT.HARNESS_KERNEL_S <= 2.0e-6
    rows = {r.variant: r for r in REPORT._decode_rows()}
    assert REPORT.harness_kernels(rows["base"]) == 16 * 14 + 8  # MHA, 16 layers
    assert REPORT.harness_kernels(rows["llama3-8b"]) == 32 * 16 + 8  # GQA, 32 layers
    assert REPORT.harness_kernels(rows["llama2-7b"]) == 32 * 14 + 8


def test_h200_decode_within_20_percent() -> None:
    # Issue 24: decode at batch 1 within ±20%, the fit rows and the held-out ones alike.
    rows = REPORT.decode_section(H200)
    assert within(rows, "fit") == (4, 4)
    assert within(rows, "held_out") == (5, 5)
    # Without the harness's kernels the model is fast on every row but the odd-FFN one
    # (whose modelled GEMV cliff hides it): the term is what closes the gap.
    bare = {r.label: r for r in REPORT.decode_section(H200, harness=False)}
    for r in rows:
        assert bare[r.label].model < r.model


def test_decode_reads_weights_at_the_streaming_fraction() -> None:
    # Llama-2-7B at batch 1 is bound by its 13.5 GB of weights: the model's per-token time is
    # at least that at the family's streaming rate, and gpt-fast's 104.9 tokens/s (A100 at
    # 330 W) is within 20% of it.
    cfg = REPORT.config("llama2", **REPORT.DECODE_MODELS["Llama-2-7B"])
    t = step_time(cfg, Target(gpu=A100, mode="decode", micro_batch=1, seq_len=105)).total_s
    weights = 6.74e9 * 2
    assert t >= weights / (A100.mem_bw_gbs * 1e9 * A100.memory_stream_fraction)
    assert 1 / 1.2 <= t * 104.9 <= 1.2


# --- fused attention as PyTorch's SDPA and cuDNN run it ---------------------------------------


def test_measured_attention_factors_are_their_fit_rows() -> None:
    """`MEASURED` is what `attention-fit` gives on the fit head dims of our H200 rows (the
    papers' curve against the measured time), every fitted point and no other."""
    fitted = REPORT.attention_fit("fit")
    shipped = {(k, d): f for (_, k), points in MEASURED.factors.items() for d, f in points}
    assert set(shipped) == set(fitted)
    for key, value in fitted.items():
        assert shipped[key] == pytest.approx(value, abs=5e-3), key


def test_sdpa_attention_held_out_head_dims() -> None:
    """Held out (80, 112, 132, 160, 256): the attention kernel alone, within ±25% but for
    cuDNN at 160 (measured slower than at 192; no fitted head dim shows it)."""
    rows = REPORT.attention_section(H200)
    held = [r for r in rows if r.split == "held_out"]
    assert len(held) == 9
    outside = sorted(r.label for r in held if r.error > 0.25)
    assert outside == ["sdpa cudnn d=160 fwd+bwd"]
    # Head dim 132 (padded to 136, FlashAttention-2's 160 kernel) against 128, as measured
    # (2.04x): the papers' curve alone gave 1.25x.
    by = {r.label: r for r in rows}
    ratio = by["sdpa flash d=132 fwd+bwd"].model / by["sdpa flash d=128 fwd+bwd"].model
    measured = by["sdpa flash d=132 fwd+bwd"].measured / by["sdpa flash d=128 fwd+bwd"].measured
    assert ratio == pytest.approx(measured, rel=0.10)


# --- unfused attention ---------------------------------------------------------------------


def test_unfused_constants_are_their_fit_rows_medians() -> None:
    fwd, bwd, mask = REPORT.unfused_fit("fit")
    assert (UNFUSED.softmax_fwd, UNFUSED.softmax_bwd, UNFUSED.mask) == pytest.approx(
        (fwd, bwd, mask), abs=5e-4
    )


def test_unfused_attention_whole_path_held_out() -> None:
    rows = [r for r in REPORT.unfused_section(H200) if " unfused " in r.label]
    held = [r for r in rows if r.split == "held_out"]
    assert len(held) == 20  # 5 head dims x 2 layouts x (fwd, fwd+bwd)
    for r in held:
        assert r.error <= 0.10, r.label


# --- the attention kernel the engine selects ------------------------------------------------


def config(**dims: int) -> ModelConfig:
    values = {Dim(k): Value(v, k, SPAN) for k, v in dims.items()}
    return ModelConfig("test", "config.json", "test", values, gated_mlp=True)


HEAD_DIM_100 = dict(hidden=3200, heads=32, kv_heads=32, head_dim=100, layers=26, ffn=8640)
HEAD_DIM_128 = dict(hidden=4096, heads=32, kv_heads=32, head_dim=128, layers=26, ffn=8640)


def test_transformer_engine_times_an_unfusable_head_dim_unfused() -> None:
    te = Target(gpu=H100, mode="train", engines=("transformer-engine",))
    plain = Target(gpu=H100, mode="train")
    assert engine_attention(config(**HEAD_DIM_100), te) == "unfused"
    assert engine_attention(config(**HEAD_DIM_100), plain) == "flash"
    assert engine_attention(config(**HEAD_DIM_128), te) == "flash"  # TE fuses 128
    step = step_time(config(**HEAD_DIM_100), te)
    names = {e.gemm.name for e in step.gemms}
    assert step.attention == "unfused" and {"attn_scores", "attn_values"} <= names
    assert any(o.op.name == "softmax" for o in step.ops)
    assert step.total_s > step_time(config(**HEAD_DIM_100), plain).total_s
    # Decode and context parallelism keep the target's kernel (TE's choice is for training;
    # under context parallelism TE has no unfused backend and raises: SL322).
    assert engine_attention(config(**HEAD_DIM_100), Target(gpu=H100, mode="decode")) == "flash"
    cp = Target(gpu=H100, mode="train", engines=("transformer-engine",), cp=2)
    assert engine_attention(config(**HEAD_DIM_100), cp) == "flash"


def test_unfused_softmax_runs_at_its_measured_share_of_the_stream() -> None:
    te = Target(gpu=H200, mode="train", engines=("transformer-engine",))
    step = step_time(config(**HEAD_DIM_100), te)
    (fwd,) = [o for o in step.ops if o.op.name == "softmax" and o.op.pass_ == "fwd"]
    stream = H200.mem_bw_gbs * H200.memory_stream_fraction
    assert fwd.time.bandwidth_gbs == pytest.approx(stream * UNFUSED.softmax_fwd)


def test_unfused_bmm_with_an_unaligned_head_dim_hits_the_cliff() -> None:
    # H200, b·h = 128, s = 2048: QKᵀ at head dim 140 (8-byte rows) measured 1.34 ms against
    # 0.37 ms at 128 (round2/unfused.csv): the model puts the cliff between them.
    t128 = gemm_time(2048, 2048, 128, gpu=H200, dtype="bf16", batch=128).time_s
    t140 = gemm_time(2048, 2048, 140, gpu=H200, dtype="bf16", batch=128).time_s
    assert t140 / t128 > 2.0
