"""Dropout where a config states it: read by the HF dialect, charged as memory-bound ops in
training (mask write and read), named in `explain`. Truth from the files, read with json."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest
from conftest import configs_of

from shapelint.core.model import ModelConfig, Target
from shapelint.hardware.gpus import lookup
from shapelint.perf.estimate import step_time
from shapelint.perf.ops import step_memops

OLMO = "hf_config_json/allenai+OLMo/test_fixtures/test-olmo-model/config.json"
QWEN = (
    "hf_config_json/alibaba+rtp-llm/rtp_llm/test/model_test/fake_test/testdata/qwen_7b/fake/"
    "config.json"
)
H100 = lookup("h100")


def read(corpus: Path, rel: str) -> tuple[dict[str, object], ModelConfig]:
    text = (corpus / rel).read_text(encoding="utf-8")
    (config,) = configs_of(text)
    return json.loads(text), config


def stated(raw: dict[str, object], *keys: str) -> float | None:
    values = [raw[k] for k in keys if k in raw]
    value = values[0] if values else None
    return float(value) if isinstance(value, (int, float)) and value > 0 else None


@pytest.mark.corpus
def test_olmo_fixture_states_three_dropouts(corpus: Path) -> None:
    raw, config = read(corpus, OLMO)
    truth = {
        "attention": stated(raw, "attention_dropout"),
        "hidden": stated(raw, "residual_dropout"),
        "embedding": stated(raw, "embedding_dropout"),
    }
    assert all(v is not None for v in truth.values())  # the file does state all three
    assert dict(config.dropout) == truth


@pytest.mark.corpus
def test_zero_dropout_is_no_dropout(corpus: Path) -> None:
    raw, config = read(corpus, QWEN)
    assert stated(raw, "attn_pdrop") is None and stated(raw, "embd_pdrop") is None
    assert dict(config.dropout) == {"hidden": stated(raw, "resid_pdrop")}


@pytest.mark.corpus
def test_dropout_ops_bytes_by_hand(corpus: Path) -> None:
    raw, config = read(corpus, QWEN)
    h, layers = int(str(raw["n_embd"])), int(str(raw["n_layer"]))
    target = Target(gpu=H100, micro_batch=2, seq_len=1024)
    tokens = 2 * 1024

    def dropout_ops(t: Target) -> dict[tuple[str, str], tuple[float, int]]:
        return {
            (o.name, o.pass_): (o.bytes, o.count)
            for o in step_memops(config, t)
            if "dropout" in o.name
        }

    # Fused into the residual add (the default): a 1-byte mask, written then read back.
    assert dropout_ops(target) == {
        ("dropout", "fwd"): (tokens * h * 1.0, 2 * layers),
        ("dropout", "dgrad"): (tokens * h * 1.0, 2 * layers),
    }
    # Eager: read x (2 B), write y (2 B) and the mask (1 B); backward alike.
    eager = dropout_ops(dataclasses.replace(target, fused="none"))
    assert eager[("dropout", "fwd")] == (tokens * h * 5.0, 2 * layers)
    # Recomputed layers draw their masks again; inference has no dropout.
    redo = dropout_ops(dataclasses.replace(target, recompute="full"))
    assert redo[("dropout", "recompute")] == (tokens * h * 1.0, 2 * layers)
    assert dropout_ops(dataclasses.replace(target, mode="prefill")) == {}
    # The step is slower with the masks than without.
    without = dataclasses.replace(config, dropout={})
    assert step_time(config, target).total_s > step_time(without, target).total_s


@pytest.mark.corpus
def test_attention_dropout_only_outside_flash(corpus: Path) -> None:
    raw, config = read(corpus, OLMO)
    flash = {o.name for o in step_memops(config, Target(gpu=H100, seq_len=512))}
    assert {"dropout", "embedding_dropout"} <= flash and "attention_dropout" not in flash
    unfused = Target(gpu=H100, seq_len=512, attention="unfused")
    op = next(o for o in step_memops(config, unfused) if o.name == "attention_dropout")
    heads = int(str(raw["n_heads"]))
    assert op.bytes == heads * 512 * 512 * 5.0  # b·a·s² probabilities, eager


def test_explain_names_the_dropout_ops(tmp_path: Path) -> None:
    import io

    from shapelint.cli.main import main

    path = tmp_path / "config.json"
    path.write_text(
        json.dumps(
            {"n_embd": 768, "n_head": 12, "n_layer": 12, "vocab_size": 50304, "resid_pdrop": 0.1}
        ),
        encoding="utf-8",
    )
    out = io.StringIO()
    assert main(["explain", str(path)], out, io.StringIO()) == 0
    rows = [ln for ln in out.getvalue().splitlines() if ln.startswith("dropout ")]
    assert len(rows) == 2 and "fused into the residual add" in rows[0]
