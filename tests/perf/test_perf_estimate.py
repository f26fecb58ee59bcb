"""Step estimates, fix estimates, explain and the roofline plot."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from shapelint.cli.explain import explain, render_explain_text
from shapelint.core.model import Dim, Fix, ModelConfig, Target, Value
from shapelint.core.source import Span
from shapelint.hardware.gpus import lookup
from shapelint.perf.estimate import estimate_fix, op_time, step_time
from shapelint.perf.workload import Gemm
from shapelint.report.plot import MissingExtraError, plot_roofline

SPAN = Span("config.json", 1, 1, 1, 2, 0, 1)


def config(gated: bool | None = False, **dims: int) -> ModelConfig:
    return ModelConfig(
        name="test",
        path="config.json",
        dialect="test",
        dims={Dim(k): Value(v, k, SPAN) for k, v in dims.items()},
        gated_mlp=gated,
    )


GPT2 = dict(hidden=768, heads=12, layers=12, ffn=3072, vocab=50257)  # n_inner null: 4 · 768
H100 = lookup("h100")


def pad_vocab(v: int) -> Fix:
    return Fix("pad vocab", "safe", (), ((Dim.VOCAB, v),))


@pytest.mark.parametrize("gpu", ["h100", "a100", "4090", "mi300x"])
def test_padding_gpt2_vocab_is_a_real_slowdown(gpu: str) -> None:
    target = Target(gpu=lookup(gpu), micro_batch=12, seq_len=1024)
    est = estimate_fix(config(**GPT2), target, pad_vocab(50304))
    assert est is not None
    assert est.gpu == lookup(gpu).name
    assert est.slowdown_pct > 5
    assert est.step_time_s > est.fixed_step_time_s
    assert est.slowdown_pct == pytest.approx((est.step_time_s / est.fixed_step_time_s - 1) * 100)


def test_a_fix_that_grows_the_model_is_compared_per_flop() -> None:
    # hidden 2000 -> 2048 is a bigger model (more FLOPs per token): the two steps do different
    # work, so the estimate is the ratio of their MFUs, not of their times.
    target = Target(gpu=H100, micro_batch=4, seq_len=2048)
    written = config(True, hidden=2000, heads=16, layers=24, ffn=5504, vocab=32000)
    est = estimate_fix(written, target, Fix("x", "unsafe", (), ((Dim.HIDDEN, 2048),)))
    assert est is not None
    now = step_time(written, target)
    fixed = step_time(written.with_dims({Dim.HIDDEN: 2048}), target)
    assert fixed.flops > now.flops
    assert est.slowdown_pct == pytest.approx((fixed.mfu / now.mfu - 1) * 100)
    per_step = (now.total_s / fixed.total_s - 1) * 100
    assert est.slowdown_pct > 0 and est.slowdown_pct != pytest.approx(per_step)
    # Vocabulary padding adds rows no token uses: still compared per step.
    gpt2 = config(**GPT2)
    pad = estimate_fix(gpt2, target, pad_vocab(50304))
    assert pad is not None
    padded = step_time(gpt2.with_dims({Dim.VOCAB: 50304}), target)
    assert pad.fixed_step_time_s == pytest.approx(padded.total_s)


def test_noop_fix_is_none_or_zero() -> None:
    target = Target(gpu=H100)
    assert estimate_fix(config(**GPT2), target, pad_vocab(50257)) is None
    assert estimate_fix(config(**GPT2), target, Fix("x", "safe", ())) is None
    # A fix that changes a dim the model ignores costs nothing.
    est = estimate_fix(config(**GPT2), target, Fix("x", "safe", (), ((Dim.GLOBAL_BATCH, 512),)))
    assert est is not None and est.slowdown_pct == pytest.approx(0.0, abs=1e-9)


def test_empty_workload_gives_no_estimate() -> None:
    cfg = config(hidden=768, heads=12)
    assert estimate_fix(cfg, Target(gpu=H100), pad_vocab(50304)) is None
    assert step_time(cfg, Target(gpu=H100)).total_s == 0


def test_step_time_sums_gemms_and_mfu_is_sane() -> None:
    cfg = config(True, hidden=4096, heads=32, layers=32, ffn=11008, vocab=32000)
    step = step_time(cfg, Target(gpu=H100, micro_batch=1, seq_len=4096))
    gemms = sum(e.time.time_s * e.gemm.count for e in step.gemms)
    ops = sum(o.time.exposed_s * o.op.count for o in step.ops)
    assert step.total_s == pytest.approx(gemms + ops)
    assert step.gemm_s == pytest.approx(gemms) and step.memops_s == pytest.approx(ops)
    assert {"norm", "swiglu", "residual_add", "rotary", "cross_entropy", "optimizer"} <= {
        o.op.name for o in step.ops
    }
    # Issue #10: no dense bf16 training step on H100 above 65% MFU.
    assert 0.3 < step.mfu < 0.65
    # 6·params·tokens plus attention: the model's FLOPs are in that ballpark.
    params = 32 * (4 * 4096 * 4096 + 3 * 4096 * 11008) + 4096 * 32000
    assert step.flops == pytest.approx(6 * params * 4096, rel=0.2)
    decode = step_time(cfg, Target(gpu=H100, micro_batch=1, seq_len=4096, mode="decode"))
    assert all(e.time.bound == "memory" for e in decode.gemms)


def test_head_dim_padding_costs_time() -> None:
    # Flash attention pays for head dim 96 at 80 and 128 at 100.
    def fa3(d: int) -> Gemm:
        return Gemm(
            "attention", "fwd", 4096, 4096, 96, 32, kind="flash", head_dim=d, kernel="flash3"
        )

    at80, at96 = op_time(fa3(80), H100), op_time(fa3(96), H100)
    assert at80.time_s == pytest.approx(at96.time_s)
    assert at80.tflops < at96.tflops
    assert at80.lost_tiles_s > at96.lost_tiles_s
    # At head dim 128 and s = 4096 (a held-out point of the FA3 paper's Fig. 5: causal
    # forward, FlashAttention-3 579 TFLOP/s, FlashAttention-2 319 TFLOP/s), the kernel runs at
    # the published rate: causal FLOPs 4·b·s²·d / 2, by hand.
    flops = 4 * 32 * 4096**2 * 128 / 2

    def at128(kernel: str) -> float:
        g = Gemm("attention", "fwd", 4096, 4096, 128, 32, kind="flash", kernel=kernel)
        return op_time(g, H100).compute_s

    assert flops / at128("flash3") / 1e12 == pytest.approx(579, rel=0.1)
    assert flops / at128("flash2") / 1e12 == pytest.approx(319, rel=0.1)


REQUIRED_GEMM_KEYS = {
    "name",
    "pass",
    "m",
    "n",
    "k",
    "batch",
    "count",
    "flops",
    "bytes",
    "intensity",
    "time_s",
    "tflops",
    "bound",
}


def test_explain_json_and_text() -> None:
    cfg = config(True, hidden=4096, heads=32, layers=32, ffn=11008, vocab=32001)
    data = explain(cfg, Target(gpu=H100, micro_batch=1, seq_len=2048))
    json.dumps(data)  # JSON-ready
    assert {"gpu", "dtype", "mode", "step_time_s", "mfu", "gemms"} <= set(data)
    assert data["gpu"] == "H100-SXM"
    for g in data["gemms"]:
        assert set(g) >= REQUIRED_GEMM_KEYS
        assert 0 <= g["lost_tiles"] + g["lost_waves"] + g["lost_alignment"] <= 1
    total = sum(g["time_s"] * g["count"] for g in data["gemms"])
    other = sum(o["exposed_s"] * o["count"] for o in data["ops"])
    assert total + other == pytest.approx(data["step_time_s"])
    assert {o["name"] for o in data["ops"]} >= {"norm", "cross_entropy", "optimizer"}
    logits = next(g for g in data["gemms"] if g["name"] == "logits" and g["pass"] == "fwd")
    assert logits["lost_alignment"] > 0.3  # odd vocab
    text = render_explain_text(data)
    for needle in (
        "H100-SXM",
        "logits",
        "qkv",
        "FLOP/B",
        "ridge",
        "step time",
        "MFU",
        "compute",
        "memory-bound ops",
        "cross_entropy",
    ):
        assert needle in text
    assert str(logits["n"]) in text


def test_explain_empty_config() -> None:
    data = explain(config(hidden=10), Target(gpu=H100))
    assert data["gemms"] == [] and data["step_time_s"] == 0
    assert "no GEMMs" in render_explain_text(data)


def test_plot_without_matplotlib_names_the_extra(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    data = explain(config(**GPT2), Target(gpu=H100))
    with pytest.raises(MissingExtraError, match=r"pip install 'shapelint\[plot\]'"):
        plot_roofline(data, tmp_path / "roofline.png")


def _overlap(a: object, b: object) -> bool:
    return bool(a.x0 < b.x1 and b.x0 < a.x1 and a.y0 < b.y1 and b.y0 < a.y1)  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    ("cfg", "target"),
    [
        (config(**GPT2), Target(gpu=H100, seq_len=1024)),
        (
            config(True, hidden=4096, heads=32, layers=32, ffn=11008, vocab=32001),
            Target(gpu=lookup("a100"), micro_batch=2, seq_len=2048, tp=2, attention="unfused"),
        ),
    ],
)
def test_plot_labels_do_not_collide(tmp_path: Path, cfg: ModelConfig, target: Target) -> None:
    pytest.importorskip("matplotlib")
    data = explain(cfg, target)
    out = tmp_path / "roofline.png"
    layout = plot_roofline(data, out)
    assert out.stat().st_size > 0
    labels, boxes = layout["labels"], layout["boxes"]
    assert len(labels) >= 4
    # Every GEMM that loses time to alignment is labelled with the share it loses.
    for g in data["gemms"]:
        if g["lost_alignment"] >= 0.01:
            want = f"{g['name']} {g['pass']} (−{g['lost_alignment']:.0%} alignment)"
            assert want in layout["texts"]
    # No label overlaps another label, the title, the legend or the summary box.
    for i, a in enumerate(labels):
        assert not any(_overlap(a, b) for b in labels[i + 1 :])
        assert not any(_overlap(a, b) for b in boxes.values())


def test_plot_title_summary_and_misaligned_labels() -> None:
    from shapelint.report.plot import ALIGN_SHARE, summary, title

    data = explain(config(**GPT2), Target(gpu=H100, seq_len=1024))
    assert "H100-SXM" in title(data) and "seq 1024" in title(data) and "test" in title(data)
    text = summary(data)
    assert "memory-bound ops" in text and "optimizer" in text
    misaligned = [g for g in data["gemms"] if g["lost_alignment"] >= ALIGN_SHARE]
    assert {g["name"] for g in misaligned} == {"logits"}  # the odd vocab, nothing else
