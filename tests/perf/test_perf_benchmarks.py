"""The plumbing of benchmarks/validate_model.py on a synthetic sweep CSV (no torch needed)."""

from __future__ import annotations

import csv
import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

from shapelint.hardware.gpus import lookup
from shapelint.perf.gemm import gemm_time

BENCH = Path(__file__).resolve().parents[2] / "benchmarks"


def load(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(f"bench_{name}", BENCH / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up here
    spec.loader.exec_module(module)
    return module


def write_sweep(path: Path, scale: dict[tuple[int, int, int], float]) -> None:
    """A sweep whose 'measured' times are the model's times scaled per shape."""
    h100 = lookup("h100")
    fields = ["kind", "b", "m", "n", "k", "dtype", "time_s", "tflops", "device", "torch"]
    with path.open("w", newline="", encoding="utf-8") as f:
        w = csv.DictWriter(f, fieldnames=fields)
        w.writeheader()
        for (m, n, k), factor in scale.items():
            t = gemm_time(m, n, k, gpu=h100, dtype="bf16").time_s * factor
            w.writerow(
                {
                    "kind": "gemm",
                    "b": 1,
                    "m": m,
                    "n": n,
                    "k": k,
                    "dtype": "bf16",
                    "time_s": t,
                    "tflops": 0,
                    "device": "synthetic",
                    "torch": "-",
                }
            )
        w.writerow(
            {
                "kind": "other",
                "b": 1,
                "m": 1,
                "n": 1,
                "k": 1,
                "dtype": "bf16",
                "time_s": 1,
                "tflops": 0,
                "device": "synthetic",
                "torch": "-",
            }
        )


def test_validate_model_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    vm = load("validate_model")
    path = tmp_path / "sweep.csv"
    # Measured = model x factor, so the errors are |1/factor - 1|: 1.0, 0.0 and 0.25.
    write_sweep(path, {(4096, 4096, 4096): 0.5, (1024, 1024, 1024): 1.0, (512, 512, 4096): 0.8})
    rows = vm.compare(path, "h100")
    assert len(rows) == 3  # the unknown kind is skipped
    median, worst = vm.summary(rows)
    assert median == pytest.approx(0.25)
    assert worst == pytest.approx(1.0)
    assert vm.main([str(path), "--gpu", "h100"]) == 0
    out = capsys.readouterr().out
    assert "median relative error 25.0%, worst 100.0%" in out


def test_validate_model_sdpa_rows(tmp_path: Path) -> None:
    vm = load("validate_model")
    path = tmp_path / "sdpa.csv"
    path.write_text(
        "kind,b,m,n,k,dtype,time_s,tflops,device,torch\n"
        "sdpa,128,2048,2048,80,bf16,0.001,0,synthetic,-\n",
        encoding="utf-8",
    )
    (row,) = vm.compare(path, "h100")
    assert row.kind == "sdpa" and row.predicted_s > 0


def test_gemm_sweep_shapes_cover_the_cases() -> None:
    sweep = load("gemm_sweep")
    shapes = list(sweep.gemm_shapes(False))
    ks = {k for _, _, _, k in shapes}
    assert {4096, 4104, 4097} <= ks  # aligned, 16 B, odd
    assert {m for _, m, _, _ in shapes} >= {16, 8192}
    assert [d for *_, d in sweep.sdpa_shapes(False)] == [64, 80, 96, 128, 132]
    assert list(sweep.gemm_shapes(True))  # the --quick sweep is not empty
