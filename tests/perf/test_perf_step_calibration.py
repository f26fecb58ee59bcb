"""The whole-step model against published training throughput (llm-foundry MPT tables).

Expected values are the published MFU of each row (tests/perf/data/llm_foundry_mpt.csv);
the whole-step constants were fitted on the rows marked ``fit`` only
(``python benchmarks/step_calibration.py --fit``), and these tests look at the others.
"""

from __future__ import annotations

import statistics

import pytest
from test_perf_benchmarks import load

from shapelint.core.model import Dim, ModelConfig, Target, Value
from shapelint.core.source import Span
from shapelint.hardware.gpus import load_table, lookup
from shapelint.perf.estimate import STEP_CALIBRATION, step_time

SC = load("step_calibration")
ROWS = SC.load_rows()
HELD_OUT = [r for r in ROWS if r.split == "held_out"]
GPUS = list(load_table())


def test_split_is_fixed_and_documented() -> None:
    assert len(ROWS) == 142
    assert sum(r.split == "fit" for r in ROWS) == 49
    assert all(r.gpus == 8 for r in ROWS)


def test_published_mfu_matches_the_tables_formula() -> None:
    # The harness's MFU formula, applied to the published throughput, gives the published MFU.
    shapes = SC.load_shapes()
    for r in ROWS:
        shape = shapes[r.model]
        per_token = 6 * r.num_params + 12 * shape["n_layers"] * shape["d_model"] * r.seq_len
        peak = 989e12 if r.gpu == "h100_80gb" else 312e12
        assert r.tokens_per_s_per_gpu * per_token / peak == pytest.approx(r.mfu, abs=0.006)


@pytest.mark.parametrize(
    ("family", "within_20", "median_max", "worst"),
    # What the model reaches today on the held-out rows (issue #10 asks for every row within
    # ±20%; the four A100 rows outside are listed by benchmarks/step_calibration.py: 760m
    # s=512 b=96 and three 13b rows of the A100 40GB table).
    [("hopper", 1.0, 0.03, 0.20), ("ampere", 65 / 69, 0.03, 0.30)],
)
def test_held_out_mfu_against_published(
    family: str, within_20: float, median_max: float, worst: float
) -> None:
    preds = [p for p in SC.predict(HELD_OUT) if SC.arch_of(p.row) == family]
    assert len(preds) >= 20
    errors = [abs(p.mfu / p.row.mfu - 1) for p in preds]
    assert sum(e <= 0.20 for e in errors) / len(errors) >= within_20
    assert statistics.median(errors) <= median_max
    assert max(errors) <= worst


def test_refit_on_fit_rows_reproduces_the_shipped_constants() -> None:
    fitted = SC.fit([r for r in ROWS if r.split == "fit"])
    shipped = SC.shipped()  # the GPU table's family constants and perf/estimate.py's
    for arch in ("hopper", "ampere"):
        assert fitted.sustained[arch] == pytest.approx(shipped.sustained[arch], abs=0.01)
        assert fitted.attention[arch] == pytest.approx(shipped.attention[arch], abs=0.02)
    assert fitted.recompute_cost == pytest.approx(STEP_CALIBRATION.recompute_cost, abs=0.02)
    # Only the kernel the runs used is scaled; every other kernel runs at its papers' rates.
    for gpu in GPUS:
        assert set(gpu.attention_scale) == {"triton"}, gpu.name


SPAN = Span("", 1, 1, 1, 1, 0, 0)


def dense(h: int, a: int, g: int, layers: int, f: int, v: int) -> ModelConfig:
    dims = {Dim.HIDDEN: h, Dim.HEADS: a, Dim.KV_HEADS: g, Dim.LAYERS: layers, Dim.FFN: f}
    dims[Dim.VOCAB] = v
    return ModelConfig(
        "x", "", "hf", {d: Value(x, d.value, SPAN) for d, x in dims.items()}, gated_mlp=True
    )


@pytest.mark.parametrize(
    "config",
    [
        dense(4096, 32, 8, 32, 14336, 128256),  # Llama-3-8B
        dense(8192, 64, 8, 80, 28672, 128256),  # Llama-3-70B
        dense(2048, 16, 16, 24, 8192, 50304),
        dense(5120, 40, 40, 40, 13824, 32000),  # Llama-2-13B
    ],
)
@pytest.mark.parametrize("micro_batch", [1, 4, 16])
@pytest.mark.parametrize("seq_len", [2048, 8192])
@pytest.mark.parametrize("tp", [1, 8])
def test_no_dense_h100_bf16_training_step_above_65_percent_mfu(
    config: ModelConfig, micro_batch: int, seq_len: int, tp: int
) -> None:
    target = Target(gpu=lookup("h100"), micro_batch=micro_batch, seq_len=seq_len, tp=tp)
    assert step_time(config, target).mfu <= 0.65
