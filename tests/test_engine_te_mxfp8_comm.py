"""Megatron-LM's FP8 settings read from a launch script, and the two Transformer Engine
conditions on MXFP8 sequence-parallel all-gathers (SL329, SL330).

The script has the shape of Megatron-LM's ``examples/llama/train_llama3_8b_h100_fp8.sh``
(d98e8a64): Llama-3-8B's dims as flags. Expected values are worked out here by hand:
tokens per GPU = micro-batch × sequence / (context parallel × tensor parallel); Userbuffers
needs a multiple of 128 (TE ``module/base.py:709-713`` at d0067d0d), an MXFP8 all-gather a
multiple of 32 for the tokens and the hidden size (``tensor/mxfp8_tensor.py:125-133``).
"""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

from shapelint.cli.main import main


def script(seq: int = 8192, extra: str = "", hidden: int = 4096) -> str:
    return (
        "#!/bin/bash\n"
        f'MODEL_ARGS="--num-layers 32 --hidden-size {hidden} --ffn-hidden-size 14336 '
        "--num-attention-heads 32 --group-query-attention --num-query-groups 8 --swiglu "
        f'--seq-length {seq} --max-position-embeddings 8192"\n'
        "torchrun pretrain_gpt.py $MODEL_ARGS --micro-batch-size 1 "
        f"--tensor-model-parallel-size 8 --bf16 {extra}\n"
    )


def run(tmp_path: Path, text: str, *argv: str) -> dict[str, Any]:
    path = tmp_path / "train.sh"
    path.write_text(text)
    out, err = io.StringIO(), io.StringIO()
    main(["check", str(path), "--no-cache", "--exit-zero", "--format", "json", *argv], out, err)
    return dict(json.loads(out.getvalue()))


def dims(tmp_path: Path, text: str) -> dict[str, Any]:
    (config,) = run(tmp_path, text)["configs"]
    return dict(config["dims"])


def codes(tmp_path: Path, text: str, *argv: str) -> list[str]:
    return [f["code"] for f in run(tmp_path, text, *argv)["findings"]]


MXFP8_UB = "--sequence-parallel --tp-comm-overlap --fp8-format hybrid --fp8-recipe mxfp8"


def test_fp8_settings_are_read(tmp_path: Path) -> None:
    read = dims(tmp_path, script(extra=MXFP8_UB))
    assert (read["dtype"], read["fp8_recipe"]) == ("fp8", "mxfp8")
    assert (read["sequence_parallel"], read["tp_comm_overlap"]) == (True, True)
    # Megatron-LM's names: tensorwise is current scaling; no --fp8-recipe is delayed scaling.
    tensorwise = dims(tmp_path, script(extra="--fp8-format e4m3 --fp8-recipe tensorwise"))
    assert tensorwise["fp8_recipe"] == "current"
    assert dims(tmp_path, script(extra="--fp8-format hybrid"))["fp8_recipe"] == "delayed"
    # blockwise has no counterpart here: FP8, recipe unknown.
    blockwise = dims(tmp_path, script(extra="--fp8-format hybrid --fp8-recipe blockwise"))
    assert blockwise["dtype"] == "fp8" and "fp8_recipe" not in blockwise
    # Without --fp8-format the run is BF16, whatever --fp8-recipe says.
    plain = dims(tmp_path, script(extra="--fp8-recipe mxfp8"))
    assert plain["dtype"] == "bf16" and "fp8_recipe" not in plain


def test_userbuffers_refuses_a_shard_that_is_not_128_rows(tmp_path: Path) -> None:
    # 8192 / 8 = 1024 tokens per GPU = 8·128: accepted.
    assert "SL329" not in codes(tmp_path, script(8192, MXFP8_UB))
    # 2560 / 8 = 320 = 2·128 + 64: refused (a multiple of 32, so SL330 has nothing to say).
    found = run(tmp_path, script(2560, MXFP8_UB))["findings"]
    (sl329,) = [f for f in found if f["code"] == "SL329"]
    assert sl329["message"].startswith(
        "Userbuffers requires MXFP8 tensor dims that are divisible by 128, but got MXFP8 tensor "
        "with shape=(320, 4096)"
    )
    assert sl329["key"] == "--seq-length" and sl329["severity"] == "error"
    assert "SL330" not in [f["code"] for f in found]
    # Context parallel splits the sequence first: 6144 / (2 · 8) = 384 = 3·128, accepted;
    # 5120 / (2 · 8) = 320, refused.
    assert "SL329" not in codes(tmp_path, script(6144, MXFP8_UB + " --context-parallel-size 2"))
    assert "SL329" in codes(tmp_path, script(5120, MXFP8_UB + " --context-parallel-size 2"))


def test_userbuffers_check_needs_every_condition(tmp_path: Path) -> None:
    for extra in (
        "--sequence-parallel --fp8-format hybrid --fp8-recipe mxfp8",  # no overlap
        "--sequence-parallel --tp-comm-overlap --fp8-format hybrid",  # delayed scaling
        "--sequence-parallel --tp-comm-overlap --fp8-recipe mxfp8",  # BF16
        "--tp-comm-overlap --fp8-format hybrid --fp8-recipe mxfp8",  # no sequence parallel
    ):
        assert "SL329" not in codes(tmp_path, script(2560, extra)), extra


def test_a_shard_mxfp8_cannot_quantize_is_gathered_in_bf16(tmp_path: Path) -> None:
    sp = "--sequence-parallel --fp8-format hybrid --fp8-recipe mxfp8"
    # 4160 / 8 = 520 = 16·32 + 8 tokens per GPU.
    (found,) = [f for f in run(tmp_path, script(4160, sp))["findings"] if f["code"] == "SL330"]
    assert found["severity"] == "warning" and found["key"] == "--seq-length"
    assert found["message"].startswith(
        '"Cannot quantize input tensor. Performing all-gather in high precision.": 520 tokens'
    )
    # A hidden size of 4080 = 127·32 + 16 (and 8192 / 8 = 1024 tokens, a multiple of 32).
    hidden = [f for f in run(tmp_path, script(8192, sp, 4080))["findings"] if f["code"] == "SL330"]
    assert [f["key"] for f in hidden] == ["--hidden-size"]
    assert "SL330" not in codes(tmp_path, script(8192, sp))
    # The recipe from the command line counts as the config's would.
    bf16_sp = "--sequence-parallel"
    assert "SL330" not in codes(tmp_path, script(4160, bf16_sp))
    assert "SL330" in codes(
        tmp_path, script(4160, bf16_sp), "--dtype", "fp8", "--fp8-recipe", "mxfp8"
    )
