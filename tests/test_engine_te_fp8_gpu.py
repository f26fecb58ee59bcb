"""SL332: Transformer Engine refuses an FP8 recipe the chosen GPU cannot run.

The script has the shape of Megatron-LM's ``examples/llama/train_llama3_8b_h100_fp8.sh``
(d98e8a64): Llama-3-8B's dims as flags, ``--fp8-format hybrid``. What each GPU can run is
written here from the sources, not from the rule: Transformer Engine d0067d0d
``pytorch/quantization.py:149-168`` — delayed and current scaling need compute capability
8.9, MXFP8 needs 10.0; NVIDIA's compute-capability table — A100 8.0, V100 7.0, L4 8.9,
H100 9.0, B200 10.0.
"""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest

from shapelint.cli.main import main

SCRIPT = (
    "#!/bin/bash\n"
    'MODEL_ARGS="--num-layers 32 --hidden-size 4096 --ffn-hidden-size 14336 '
    "--num-attention-heads 32 --group-query-attention --num-query-groups 8 --swiglu "
    '--seq-length 8192 --max-position-embeddings 8192"\n'
    "torchrun pretrain_gpt.py $MODEL_ARGS --micro-batch-size 1 "
    "--tensor-model-parallel-size 8 --bf16 {extra}\n"
)


def run(tmp_path: Path, extra: str, *argv: str) -> dict[str, Any]:
    path = tmp_path / "train.sh"
    path.write_text(SCRIPT.format(extra=extra))
    out, err = io.StringIO(), io.StringIO()
    main(["check", str(path), "--no-cache", "--exit-zero", "--format", "json", *argv], out, err)
    return dict(json.loads(out.getvalue()))


def sl332(tmp_path: Path, extra: str, *argv: str) -> list[str]:
    found = run(tmp_path, extra, *argv)["findings"]
    return [f["message"] for f in found if f["code"] == "SL332"]


@pytest.mark.parametrize(
    ("extra", "gpu", "refused"),
    [
        ("--fp8-format hybrid", "a100", True),  # 8.0 < 8.9
        ("--fp8-format hybrid", "v100", True),  # 7.0
        ("--fp8-format hybrid", "l4", False),  # 8.9: Ada runs delayed scaling
        ("--fp8-format hybrid", "h100", False),
        ("--fp8-format e4m3 --fp8-recipe tensorwise", "a100", True),  # current scaling: 8.9
        ("--fp8-format e4m3 --fp8-recipe tensorwise", "h100", False),
        ("--fp8-format hybrid --fp8-recipe mxfp8", "h100", True),  # 9.0 < 10.0
        ("--fp8-format hybrid --fp8-recipe mxfp8", "l4", True),
        ("--fp8-format hybrid --fp8-recipe mxfp8", "b200", False),
        ("", "a100", False),  # a BF16 run
    ],
)
def test_recipe_against_compute_capability(
    tmp_path: Path, extra: str, gpu: str, refused: bool
) -> None:
    found = sl332(tmp_path, extra, "--gpu", gpu)
    assert bool(found) == refused, found


def test_message_is_transformer_engines(tmp_path: Path) -> None:
    (a100,) = sl332(tmp_path, "--fp8-format hybrid", "--gpu", "a100")
    assert a100.startswith("Device compute capability 8.9 or higher required for FP8 execution.")
    assert "compute capability 8.0" in a100
    (h100,) = sl332(tmp_path, "--fp8-format hybrid --fp8-recipe mxfp8", "--gpu", "h100")
    assert h100.startswith("Device compute capability 10.0 or higher required for MXFP8")


def test_the_built_in_default_gpu_is_not_held_against_a_config(tmp_path: Path) -> None:
    # An MXFP8 config written for Blackwell says nothing about shapelint's default H100.
    assert sl332(tmp_path, "--fp8-format hybrid --fp8-recipe mxfp8") == []


def test_gpu_from_settings_counts_as_chosen(tmp_path: Path) -> None:
    settings = tmp_path / "pyproject.toml"
    settings.write_text('[tool.shapelint]\ngpu = ["a100"]\n')
    assert len(sl332(tmp_path, "--fp8-format hybrid", "--config", str(settings))) == 1


def test_flags_that_change_the_run_are_respected(tmp_path: Path) -> None:
    fp8 = "--fp8-format hybrid"
    # --dtype bf16 overrides the config's FP8; another engine than Transformer Engine is not
    # held to its check.
    assert sl332(tmp_path, fp8, "--gpu", "a100", "--dtype", "bf16") == []
    assert sl332(tmp_path, fp8, "--gpu", "a100", "--engine", "vllm") == []
    assert sl332(tmp_path, fp8, "--gpu", "a100", "--mode", "decode") == []


def test_finding_points_at_the_fp8_setting(tmp_path: Path) -> None:
    found = run(tmp_path, "--fp8-format hybrid --fp8-recipe mxfp8", "--gpu", "h100")
    (finding,) = [f for f in found["findings"] if f["code"] == "SL332"]
    text = SCRIPT.format(extra="--fp8-format hybrid --fp8-recipe mxfp8")
    line = text.splitlines()[finding["line"] - 1]
    start = finding["column"] - 1
    assert line[start : start + len("mxfp8")] == "mxfp8"


def test_estimate_line_says_the_fp8_config_is_timed_in_bf16(tmp_path: Path) -> None:
    # The A100's table row has no FP8 Tensor Core rate (shapelint/hardware/gpus.yaml), so the
    # step is timed in bf16; the "Estimated for:" line says which dtype was asked for.
    path = tmp_path / "train.sh"
    path.write_text(SCRIPT.format(extra="--fp8-format hybrid"))
    out, err = io.StringIO(), io.StringIO()
    main(["check", str(path), "--no-cache", "--gpu", "a100"], out, err)
    (line,) = [x for x in out.getvalue().splitlines() if x.startswith("Estimated for:")]
    assert "A100-SXM-80GB, bf16 (fp8 asked: no fp8 rate)," in line
    out = io.StringIO()
    main(["check", str(path), "--no-cache", "--gpu", "h100"], out, err)
    assert "asked" not in out.getvalue()
