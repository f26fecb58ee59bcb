"""SL325: DeepSpeed Ulysses sequence parallelism (deepspeed 0.19.8,
``runtime/sequence_parallel/ulysses_sp.py:147-152, 706-707``).

Shapes are published configs' numbers, written here by hand with their sources; the expected
verdicts are DeepSpeed's conditions worked out by hand.
"""

from __future__ import annotations

import io
import json
from pathlib import Path

from published_configs import LLAMA_3_8B

from shapelint.cli.main import main

# Qwen2.5-7B (Qwen/Qwen2.5-7B config.json): 28 query heads, 4 KV heads.
QWEN25_7B = {
    "hidden_size": 3584,
    "num_attention_heads": 28,
    "num_key_value_heads": 4,
    "intermediate_size": 18944,
    "num_hidden_layers": 28,
    "vocab_size": 152064,
}


def run(*argv: str) -> tuple[int, list[dict[str, object]]]:
    out, err = io.StringIO(), io.StringIO()
    code = main(["check", *argv, "--no-cache", "--format", "json"], out, err)
    return code, [f for f in json.loads(out.getvalue())["findings"] if f["code"] == "SL325"]


def write(tmp_path: Path, name: str, data: dict[str, object]) -> Path:
    path = tmp_path / name
    path.write_text(json.dumps(data))
    return path


def test_qwen_heads_over_sp(tmp_path: Path) -> None:
    path = write(tmp_path, "config.json", QWEN25_7B)
    # 28 % 4 == 0, and 4 KV heads over 4 ranks: accepted.
    assert run(str(path), "--engine", "deepspeed", "--sp", "4")[1] == []
    # 28 % 8 == 4: refused. 4 KV heads under sp 8: 8 % 4 == 0, replicated twice, accepted.
    code, found = run(str(path), "--engine", "deepspeed", "--sp", "8")
    assert code == 1
    assert [str(f["message"]).split(" (")[0] for f in found] == [
        "Attention head count 28 is not divisible by SP size 8"
    ]
    assert "DeepSpeed 0.19.8" in str(found[0]["message"])


def test_kv_heads_neither_divides(tmp_path: Path) -> None:
    path = write(tmp_path, "config.json", {**LLAMA_3_8B, "num_key_value_heads": 6})
    # 32 % 4 == 0; 6 % 4 == 2 and 4 % 6 == 4: refused.
    _, found = run(str(path), "--engine", "deepspeed", "--sp", "4")
    assert len(found) == 1 and "KV attention head count 6" in str(found[0]["message"])


def test_sequence_length_must_divide(tmp_path: Path) -> None:
    path = tmp_path / "run.yaml"
    path.write_text(
        "model:\n  hidden_size: 4096\n  num_attention_heads: 32\n  num_layers: 32\n"
        "  seq_length: 8190\n  tensor_model_parallel_size: 1\n"
    )
    _, found = run(str(path), "--engine", "deepspeed", "--sp", "4")
    # 8190 % 4 == 2 (32 heads split fine).
    assert any("seqlen=8190 isn't divisible by sp-size=4" in str(f["message"]) for f in found)


def test_sp_from_a_deepspeed_config_and_from_settings(tmp_path: Path) -> None:
    ds = write(
        tmp_path,
        "ds_config.json",
        {
            "train_micro_batch_size_per_gpu": 1,
            "sequence_parallel_size": 8,
            "bf16": {"enabled": True},
        },
    )
    out, err = io.StringIO(), io.StringIO()
    main(["check", str(ds), "--no-cache", "--format", "json"], out, err)
    (config,) = json.loads(out.getvalue())["configs"]
    assert config["dims"]["sp"] == 8
    model = write(tmp_path, "config.json", QWEN25_7B)
    (tmp_path / "pyproject.toml").write_text('[tool.shapelint]\nsp = 8\nengines = ["deepspeed"]\n')
    _, found = run(str(model), "--config", str(tmp_path / "pyproject.toml"))
    assert len(found) == 1


def test_no_finding_without_deepspeed_or_sp(tmp_path: Path) -> None:
    path = write(tmp_path, "config.json", QWEN25_7B)
    assert run(str(path), "--engine", "vllm", "--sp", "8")[1] == []
    assert run(str(path), "--engine", "deepspeed")[1] == []
