"""``shapelint gemm``: one GEMM through the CLI, text and JSON, and its usage errors."""

from __future__ import annotations

import io
import json

import pytest

from shapelint.cli.main import main


def run(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = main(["gemm", *argv], out, err)
    return code, out.getvalue(), err.getvalue()


def test_json_fields_and_the_guides_intensity() -> None:
    code, out, _ = run(
        "8192", "128", "8192", "--dtype", "fp16", "--gpu", "v100", "--format", "json"
    )
    assert code == 0
    data = json.loads(out)
    # NVIDIA guide: 8192×128×8192 fp16 has intensity 124.1 FLOP/B. The model's ridge is at
    # achievable rates: V100's 125 TFLOP/s × the table's default 0.776 over 900 GB/s × Volta's
    # measured streaming fraction 0.899 = 119.9.
    assert data["intensity"] == pytest.approx(124.1, abs=0.1)
    assert data["ridge"] == pytest.approx(125e12 * 0.776 / (900e9 * 0.899), rel=1e-3)
    assert data["gpu"] == "V100-SXM2"
    assert data["flops"] == 2 * 8192 * 128 * 8192
    assert {"time_s", "tflops", "tile", "waves", "split_k", "lost_alignment"} <= set(data)


def test_layout_decides_which_dims_are_contiguous() -> None:
    def align(layout: str, m: str, k: str) -> float:
        _, out, _ = run(m, "4096", k, "--layout", layout, "--gpu", "a100", "--format", "json")
        return float(json.loads(out)["align_factor"])

    # Odd K hurts when K is contiguous (nt, nn), not in tn where A is stored K×M.
    assert align("nt", "4096", "4097") < 0.5
    assert align("tn", "4096", "4097") == 1.0  # A stored K×M, B stored K×N: K not contiguous
    assert align("tn", "4097", "4096") < 0.5  # A stored K×M: odd M is contiguous
    assert align("nt", "4097", "4096") == 1.0


def test_text_output_names_the_gpu_and_bound() -> None:
    code, out, _ = run("1", "4096", "4096", "--gpu", "h100")
    assert code == 0
    assert "H100-SXM" in out and "memory-bound" in out and "split-K" in out


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (("0", "1", "1"), "M must be a positive integer"),
        (("8", "8", "x"), "K must be a positive integer"),
        (("8", "8", "8", "--batch", "-1"), "BATCH must be a positive integer"),
        (("8", "8", "8", "--gpu", "nope"), "unknown GPU"),
        (("8", "8", "8", "--gpu", "a100", "--dtype", "fp8"), "no fp8 rate"),
    ],
)
def test_usage_errors_exit_2_in_one_line(argv: tuple[str, ...], message: str) -> None:
    code, out, err = run(*argv)
    assert code == 2 and out == ""
    assert message in err and err.count("\n") == 1 and "Traceback" not in err
