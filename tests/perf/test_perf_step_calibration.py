"""The whole-step model against published training throughput (benchmarks/published_runs.py).

Expected values are the published numbers of each row (tests/perf/data: llm-foundry's MPT
tables, NeMo's performance summary, torchtitan's tables, Megatron-LM's scaling tables, and our
H200 rows); the whole-step constants were fitted on the rows marked ``fit`` only
(``python benchmarks/step_calibration.py --fit``), and these tests look at the others.
"""

from __future__ import annotations

import math

import pytest
from test_perf_benchmarks import load

from shapelint.core.model import Dim, ModelConfig, Target, Value
from shapelint.core.source import Span
from shapelint.hardware.gpus import load_table, lookup
from shapelint.perf.estimate import STEP_CALIBRATION, step_time

SC = load("step_calibration")
PR = SC.sys.modules["published_runs"]
RUNS = PR.all_runs()
PREDICTIONS = SC.predict(SC.usable(RUNS))
GPUS = list(load_table())


def test_splits_are_fixed_and_documented() -> None:
    counts = {}
    for table in PR.TABLES:
        mine = [r for r in RUNS if r.table == table]
        counts[table] = (sum(r.split == "fit" for r in mine), len(mine))
    assert counts == {
        "llm-foundry": (49, 142),
        "nemo": (18, 51),
        "torchtitan": (17, 43),
        "megatron": (7, 19),
        "h200": (4, 7),
    }
    # Rows the model cannot express carry their reason: LoRA (frozen weights) and the
    # long-sequence runs whose parallel settings NeMo does not publish.
    reasons: dict[str, int] = {}
    for r in RUNS:
        if r.skip:
            reasons[r.skip.split(":")[0]] = reasons.get(r.skip.split(":")[0], 0) + 1
    assert reasons == {
        "LoRA": 3,
        "parallel settings not published (the best configuration without CP)": 16,
    }


def test_published_mfu_matches_the_foundry_tables_formula() -> None:
    # The table's MFU formula, applied to the published throughput, gives the published MFU.
    shapes = {r["model"]: r for r in PR._rows(PR.DATA / "mpt_shapes.csv")}
    for r in PR._rows(PR.DATA / "llm_foundry_mpt.csv"):
        shape = shapes[r["model"]]
        n_layers, d_model = int(shape["n_layers"]), int(shape["d_model"])
        per_token = 6 * int(r["num_params"]) + 12 * n_layers * d_model * int(r["seq_len"])
        peak = 989e12 if r["gpu"] == "h100_80gb" else 312e12
        mfu = float(r["tokens_per_s_per_gpu"]) * per_token / peak
        assert mfu == pytest.approx(float(r["mfu_pct"]) / 100, abs=0.006)


def test_nemo_counts_model_flops_as_megatron_does() -> None:
    # The long-sequence tables publish TFLOP/s only; the harness converts them with Megatron's
    # FLOPs per token. NeMo's pretraining table publishes both: its ratio is that count.
    shapes = PR.shapes()
    checked = 0
    for r in PR._rows(PR.DATA / "nemo_performance_summary.csv"):
        if r["table"] != "pretrain_24.07":
            continue
        s = shapes[r["model"]]
        per_token = PR.megatron_flops_per_token(
            int(s["hidden"]),
            int(s["heads"]),
            int(s["kv_heads"]),
            int(s["layers"]),
            int(s["ffn"]),
            int(s["vocab"]),
            int(r["seq_len"]),
            s["mlp"] == "swiglu",
        )
        published = float(r["model_tflops_per_gpu"]) * 1e12 / float(r["tokens_per_s_per_gpu"])
        assert published == pytest.approx(per_token, rel=0.01), r["model"]
        checked += 1
    assert checked == 12


def _held_out(table: str) -> list[object]:
    return [p for p in PREDICTIONS if p.run.table == table and p.run.split == "held_out"]


@pytest.mark.parametrize("table", ["llm-foundry", "nemo", "torchtitan", "megatron"])
def test_held_out_rows_meet_the_accuracy_target(table: str) -> None:
    # Issue 24's target on every held-out row of each table: median error ≤ 10%, at least 80%
    # within ±20%, geometric-mean bias within ±10%.
    s = SC.summary(_held_out(table))
    assert s.rows >= 12
    assert s.median <= 0.10
    assert s.within_20 >= 0.80
    assert abs(s.bias) <= 0.10


def test_h200_held_out_rows() -> None:
    # Our H200's three held-out rows, FFN 5461 (odd; measured 2.5x slower than 5504) among
    # them: the GEMM model's kernel-selection cliff (issue 24, deliverable 5) covers it.
    preds = {p.run.label: p for p in _held_out("h200")}
    assert set(preds) == {"ffn5504", "ffn5461", "ffn5464"}
    for label, p in preds.items():
        assert abs(p.error) <= 0.20, label


def test_pipeline_context_and_tensor_parallel_rows_are_in_the_held_out_sets() -> None:
    # The new terms are checked on held-out rows that use them, not only on fit rows.
    held = [p.run for p in PREDICTIONS if p.run.split == "held_out"]
    for setting in ("pp", "cp", "tp"):
        assert sum(int(r.settings.get(setting, 1)) > 1 for r in held) >= 5, setting
    assert sum(r.settings.get("recompute") == "full" for r in held) >= 5


def test_refit_on_fit_rows_reproduces_the_shipped_constants() -> None:
    fitted = SC.fit([r for r in RUNS if r.split == "fit"])
    shipped = SC.shipped()
    for arch, value in fitted.sustained.items():
        assert value == pytest.approx(shipped.sustained[arch], abs=0.01), arch
    for arch, kernels in fitted.attention.items():
        for kernel, value in kernels.items():
            assert value == pytest.approx(shipped.attention[arch][kernel], abs=0.02), (
                arch,
                kernel,
            )
    for name, (scale, tp) in fitted.frameworks.items():
        assert scale == pytest.approx(shipped.frameworks[name][0], abs=0.01), name
        assert tp == pytest.approx(shipped.frameworks[name][1], abs=0.03), name
    for name, value in fitted.gpus.items():
        assert value == pytest.approx(shipped.gpus[name], abs=0.01), name


def test_held_out_rows_cannot_be_fitted() -> None:
    with pytest.raises(ValueError, match="fit rows only"):
        SC.fit(RUNS)


def test_every_framework_constant_names_its_source() -> None:
    for name, framework in STEP_CALIBRATION.frameworks.items():
        assert framework.source, name
    for gpu in GPUS:
        # Only kernels some framework's fit rows run are scaled.
        assert set(gpu.attention_scale) <= {"triton", "cudnn", "sdpa"}, gpu.name


SPAN = Span("", 1, 1, 1, 1, 0, 0)


def dense(h: int, a: int, g: int, layers: int, f: int, v: int) -> ModelConfig:
    dims = {Dim.HIDDEN: h, Dim.HEADS: a, Dim.KV_HEADS: g, Dim.LAYERS: layers, Dim.FFN: f}
    dims[Dim.VOCAB] = v
    return ModelConfig(
        "x", "", "hf", {d: Value(x, d.value, SPAN) for d, x in dims.items()}, gated_mlp=True
    )


CONFIGS = [
    dense(4096, 32, 8, 32, 14336, 128256),  # Llama-3-8B
    dense(8192, 64, 8, 80, 28672, 128256),  # Llama-3-70B
    dense(2048, 16, 16, 24, 8192, 50304),
    dense(5120, 40, 40, 40, 13824, 32000),  # Llama-2-13B
]


@pytest.mark.parametrize("config", CONFIGS)
@pytest.mark.parametrize("micro_batch", [1, 4, 16])
@pytest.mark.parametrize("seq_len", [2048, 8192])
@pytest.mark.parametrize("tp", [1, 8])
@pytest.mark.parametrize("framework", ["megatron", "pytorch", "compile", "foundry"])
def test_no_dense_h100_bf16_training_step_above_65_percent_mfu(
    config: ModelConfig, micro_batch: int, seq_len: int, tp: int, framework: str
) -> None:
    # The best published dense bf16 H100 runs reach 46-50% MFU (Megatron-LM's 2024 table);
    # 65% is the ceiling the issue sets.
    target = Target(
        gpu=lookup("h100"),
        micro_batch=micro_batch,
        seq_len=seq_len,
        tp=tp,
        framework=framework,  # type: ignore[arg-type]
    )
    assert step_time(config, target).mfu <= 0.65


@pytest.mark.parametrize("config", CONFIGS)
def test_parallel_steps_stay_below_the_mfu_ceiling(config: ModelConfig) -> None:
    for pp, cp, dp, sharded in ((4, 1, 8, False), (1, 2, 16, True), (2, 2, 4, False)):
        target = Target(
            gpu=lookup("h100"),
            micro_batch=1,
            seq_len=8192,
            tp=4,
            pp=pp,
            cp=cp,
            data_parallel=dp,
            sharded=sharded,
            global_batch=256,
            framework="megatron",
        )
        step = step_time(config, target)
        assert 0 < step.mfu <= 0.65
        assert math.isfinite(step.total_s)
