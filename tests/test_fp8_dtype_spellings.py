"""Every FP8 spelling is one dtype: SL105's FP8 check and the target it is estimated for agree.

The bug: SL105 kept its own list of FP8 names (with ``e5m2``) beside the dtype table (without
it), so a config with ``"torch_dtype": "e5m2"`` got SL105's FP8 errors while its
"Estimated for:" line said bf16.
"""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from shapelint.cli.main import main

FFN_11000 = (
    '{{"hidden_size": 4096, "num_attention_heads": 32, "num_hidden_layers": 32,'
    ' "intermediate_size": 11000, "vocab_size": 32000, "torch_dtype": "{dtype}"}}\n'
)


def run(*argv: str) -> str:
    out, err = io.StringIO(), io.StringIO()
    main([*argv, "--no-cache", "--min-slowdown", "0"], out, err)
    return out.getvalue()


@pytest.mark.parametrize(
    "dtype", ["e5m2", "E5M2", "e4m3", "float8_e5m2", "float8_e4m3fn", "torch.float8_e5m2", "fp8"]
)
def test_sl105_and_the_target_agree_on_fp8(tmp_path: Path, dtype: str) -> None:
    path = tmp_path / "config.json"
    path.write_text(FFN_11000.format(dtype=dtype))
    text = run(str(path))
    assert "SL105" in text
    target = [ln for ln in text.splitlines() if ln.startswith("Estimated for")]
    assert target and ", fp8," in target[0], target
    report = json.loads(run(str(path), "--format", "json"))
    assert any(f["code"] == "SL105" for f in report["findings"])
    (config,) = report["configs"]
    assert config["target"]["dtype"] == "fp8"


def test_a_non_fp8_dtype_gets_neither(tmp_path: Path) -> None:
    path = tmp_path / "config.json"
    path.write_text(FFN_11000.format(dtype="bfloat16"))
    text = run(str(path))
    assert "SL105" not in text
    assert ", bf16," in text


def test_the_configs_own_fp8_dtype_under_another_target_dtype(tmp_path: Path) -> None:
    # --dtype bf16 times the run in bf16, but the config still says FP8: SL105 reads it with
    # the same table (the torch. prefix included).
    path = tmp_path / "config.json"
    path.write_text(FFN_11000.format(dtype="torch.float8_e4m3fn"))
    text = run(str(path), "--dtype", "bf16")
    assert "SL105" in text
    assert ", bf16," in text
