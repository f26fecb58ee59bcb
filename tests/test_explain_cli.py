"""``shapelint explain`` through main(argv): text, JSON, target flags, errors and the plot."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from shapelint import __version__
from shapelint.cli.main import main

GPT2 = (
    '{"model_type": "gpt2", "n_embd": 768, "n_head": 12, "n_layer": 12, "n_positions": 1024,'
    ' "vocab_size": 50257}\n'
)
MULTI = (
    '{"text_config": {"hidden_size": 2048, "num_attention_heads": 8, "num_hidden_layers": 18,'
    ' "intermediate_size": 16384, "vocab_size": 257216},'
    ' "vision_config": {"hidden_size": 1152, "num_attention_heads": 16,'
    ' "num_hidden_layers": 27, "intermediate_size": 4304}}\n'
)
NEOX = """\
# GPT-NeoX 125M
{
  "pipe_parallel_size": 1,
  "model_parallel_size": 2,
  "num_layers": 12,
  "hidden_size": 768,
  "num_attention_heads": 12,
  "seq_length": 2048,
  "train_micro_batch_size_per_gpu": 4,
}
"""
GEMM_KEYS = {"name", "pass", "m", "n", "k", "batch", "count", "flops", "bytes", "intensity"}


def run(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = main(["explain", *argv], out, err)
    return code, out.getvalue(), err.getvalue()


@pytest.fixture
def gpt2(tmp_path: Path) -> Path:
    path = tmp_path / "config.json"
    path.write_text(GPT2)
    return path


def test_text_lists_every_gemm_with_roofline_numbers(gpt2: Path) -> None:
    code, out, err = run(str(gpt2))
    assert code == 0 and err == ""
    for needle in ("H100-SXM", "bf16", "ridge point", "FLOP/B", "bound", "TFLOP/s", "MFU"):
        assert needle in out, needle
    # seq from n_positions (1024), the logit GEMM with the odd vocab, forward and backward.
    assert "seq 1024" in out and "micro-batch 1" in out
    logit_rows = [ln for ln in out.splitlines() if ln.startswith("logits")]
    assert [r.split()[1] for r in logit_rows] == ["fwd", "dgrad", "wgrad"]
    assert "50257" in logit_rows[0]
    assert out.rstrip().splitlines()[-1].startswith("step time:")


def test_json_is_one_object_with_the_documented_fields(gpt2: Path) -> None:
    code, out, _ = run(str(gpt2), "--format", "json", "--gpu", "a100")
    assert code == 0
    data = json.loads(out)
    assert {"gpu", "dtype", "mode", "step_time_s", "mfu", "gemms"} <= set(data)
    assert data["gpu"] == "A100-SXM-80GB" and data["mode"] == "train"
    assert 0 < data["mfu"] < 1
    for g in data["gemms"]:
        assert GEMM_KEYS | {"time_s", "tflops", "bound"} <= set(g)
        assert g["bound"] in ("compute", "memory")
        assert g["intensity"] == pytest.approx(g["flops"] / g["bytes"])
    total = sum(g["time_s"] * g["count"] for g in data["gemms"])
    total += sum(o["exposed_s"] * o["count"] for o in data["ops"])
    assert total == pytest.approx(data["step_time_s"])


def test_target_flags_and_the_configs_own_values(tmp_path: Path) -> None:
    path = tmp_path / "neox.yml"
    path.write_text(NEOX)
    _, out, _ = run(str(path), "--format", "json")
    data = json.loads(out)
    # The config states micro-batch 4, sequence 2048 and tensor parallel 2.
    assert (data["micro_batch"], data["seq_len"], data["tp"]) == (4, 2048, 2)
    qkv = next(g for g in data["gemms"] if g["name"] == "qkv" and g["pass"] == "fwd")
    assert (qkv["m"], qkv["n"], qkv["k"]) == (4 * 2048, 3 * 768 // 2, 768)
    # Flags win over the file, as in check.
    _, out, _ = run(
        str(path),
        "--format",
        "json",
        "--micro-batch",
        "2",
        "--seq-len",
        "512",
        "--tp",
        "1",
        "--mode",
        "prefill",
        "--dtype",
        "fp16",
        "--attention",
        "unfused",
    )
    data = json.loads(out)
    assert (data["micro_batch"], data["seq_len"], data["tp"]) == (2, 512, 1)
    assert (data["mode"], data["dtype"], data["attention"]) == ("prefill", "fp16", "unfused")
    assert {g["pass"] for g in data["gemms"]} == {"fwd"}
    assert any(g["name"] == "attn_scores" for g in data["gemms"])
    decode = json.loads(run(str(path), "--format", "json", "--mode", "decode")[1])
    # Decoding 4 sequences: M = 4, far below the ridge point.
    mlp_up = next(g for g in decode["gemms"] if g["name"] == "mlp_up")
    assert mlp_up["m"] == 4 and mlp_up["intensity"] < mlp_up["ridge"] / 10


def test_a_parallel_step_shows_its_collectives_and_bubble(gpt2: Path) -> None:
    flags = ("--tp", "2", "--pp", "4", "--data-parallel", "2", "--global-batch", "32")
    flags += ("--recompute", "selective", "--gpus-per-node", "8", "--framework", "megatron")
    _, out, _ = run(str(gpt2), "--format", "json", *flags)
    data = json.loads(out)
    assert (data["pp"], data["global_batch"], data["recompute_mode"]) == (4, 32, "selective")
    assert data["recompute"] is True
    assert data["micro_batches"] == 32 // (1 * 2) and data["framework"] == "megatron"
    comms = {(c["name"], c["pass"]): c for c in data["comms"]}
    assert {"tp_reduce", "pp_send", "dp_reduce"} <= {name for name, _ in comms}
    tp = comms[("tp_reduce", "fwd")]
    # GPT-2: 12 layers on 4 stages, two reductions each; one 768-wide bf16 activation of the
    # 1024-token micro-batch, all-reduced over 2 GPUs of one node.
    assert tp["count"] == 2 * 12 // 4 and tp["bytes"] == 1024 * 768 * 2
    assert tp["wire_bytes"] == 1024 * 768 * 2 and tp["link"] == "NVLink"
    assert 0 <= tp["exposed_s"] <= tp["time_s"]
    assert data["bubble"] == 3 / 16
    exposed = sum(c["total_s"] for c in data["comms"])
    parts = data["gemm_time_s"] + data["other_time_s"] + exposed + data["bubble_s"]
    assert parts == pytest.approx(data["step_time_s"])
    _, text, _ = run(str(gpt2), *flags)
    assert "pp 4, data-parallel 2, global batch 32, recompute selective, megatron step" in text
    assert "collectives (bytes this GPU sends per call" in text
    assert "tp_reduce" in text and "NVLink" in text
    assert "pipeline bubble: (p-1)/(m*v) = 3/(16*1) = 19%" in text
    # Without the micro-batches per step the bubble is not counted, and says so.
    _, text, _ = run(str(gpt2), "--tp", "2", "--pp", "4")
    assert "pipeline bubble: not counted" in text


def test_several_configs_and_picking_one(tmp_path: Path) -> None:
    path = tmp_path / "config.json"
    path.write_text(MULTI)
    code, out, _ = run(str(path), "--format", "json")
    assert code == 0
    data = json.loads(out)
    assert set(data) == {"$schema", "version", "configs"}
    assert [c["config"] for c in data["configs"]] == ["text_config", "vision_config"]
    code, out, _ = run(str(path), "--format", "json", "--config-name", "vision_config")
    assert code == 0 and json.loads(out)["config"] == "vision_config"
    code, out, _ = run(str(path), "--config-name", "text_config", "--gpu", "h100", "--gpu", "a100")
    assert code == 0 and "H100-SXM" in out and "A100-SXM-80GB" in out
    text = run(str(path))[1]
    assert "text_config:" in text and "vision_config:" in text


@pytest.mark.parametrize(
    ("make", "argv", "message"),
    [
        (None, [], "no such file: "),
        ("dir", [], "is a directory"),
        ('{"name": "x", "version": "1.0"}\n', [], "no model config found"),
        ('{"n_embd": 768,\n', [], "invalid JSON"),
        (GPT2, ["--gpu", "no-such-gpu"], "unknown GPU 'no-such-gpu'"),
        (GPT2, ["--gpu", "a100", "--dtype", "fp8"], "has no fp8 rate"),
        (GPT2, ["--config-name", "nope"], "no config named 'nope'"),
        (MULTI, ["--plot", "x.png"], "--plot draws one config on one GPU"),
    ],
)
def test_errors_are_one_line_and_exit_2(
    tmp_path: Path, make: str | None, argv: list[str], message: str
) -> None:
    if make == "dir":
        target = tmp_path
    else:
        target = tmp_path / "config.json"
        if make is not None:
            target.write_text(make)
    argv = [a if a != "x.png" else str(tmp_path / "x.png") for a in argv]
    code, out, err = run(str(target), *argv)
    assert code == 2 and out == ""
    assert err.startswith("shapelint: error: ") and err.count("\n") == 1, err
    assert message in err
    assert not (tmp_path / "x.png").exists()


@pytest.mark.parametrize("suffix", ["png", "svg"])
def test_plot_writes_the_roofline_chart(gpt2: Path, tmp_path: Path, suffix: str) -> None:
    pytest.importorskip("matplotlib")
    chart = tmp_path / f"roofline.{suffix}"
    code, out, err = run(str(gpt2), "--plot", str(chart))
    assert code == 0, err
    assert chart.stat().st_size > 0
    head = chart.read_bytes()[:200]
    assert head.startswith(b"\x89PNG") if suffix == "png" else b"<svg" in chart.read_bytes()
    assert "step time:" in out
    assert err == f"shapelint: wrote the roofline chart to {chart}\n"  # it said nothing


def test_plot_without_matplotlib_names_the_extra(
    gpt2: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    chart = tmp_path / "roofline.png"
    code, out, err = run(str(gpt2), "--plot", str(chart))
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and not chart.exists()
    # The index has no shapelint yet: a clone's and the release tag's ways come first.
    assert "in a clone of shapelint, pip install '.[plot]'" in err
    assert (
        f"pip install 'shapelint[plot] @ git+https://github.com/shapelint/shapelint@v{__version__}'"
        in err
    )
    assert "once published, pip install 'shapelint[plot]'" in err


def test_plot_to_an_unknown_format_is_a_usage_error(gpt2: Path, tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    code, _, err = run(str(gpt2), "--plot", str(tmp_path / "chart.nope"))
    assert code == 2 and "cannot draw" in err


def _check_says(path: Path) -> tuple[int, str]:
    """What ``shapelint check`` answers for one named file: exit code and first line."""
    out, err = io.StringIO(), io.StringIO()
    code = main(["check", str(path)], out, err)
    return code, out.getvalue().splitlines()[0]


@pytest.mark.parametrize("make", ["fifo", "symlink loop"])
def test_an_unreadable_file_answers_at_once_as_check_does(tmp_path: Path, make: str) -> None:
    """A FIFO (a blocking open would wait for a writer forever) or a file the OS refuses is
    one SL000 line on stderr, with check's exit code, and nothing on stdout."""
    path = tmp_path / "config.json"
    if make == "fifo":
        os.mkfifo(path)
    else:  # unreadable even for root: the OS refuses the path itself
        os.symlink(tmp_path / "other.json", path)
        os.symlink(path, tmp_path / "other.json")
    check_code, check_line = _check_says(path)
    assert " SL000 " in check_line and "cannot read file:" in check_line
    # A child process, so that a hang fails the test instead of stopping the suite.
    proc = subprocess.run(
        [sys.executable, "-m", "shapelint", "explain", str(path)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert (proc.returncode, proc.stdout) == (check_code, "")
    assert proc.stderr == check_line + "\n"
