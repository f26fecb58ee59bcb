"""NeMo speech modules (a Hydra ``_target_`` under ``nemo.collections.asr``/``tts``/``audio``)
are NeMo's own attention and MLP code: no engine in the registry runs them, so the SL3xx rules
check them only against engines a user names. Their shape rules (SL1xx) still apply.

The fixture has the shape of NeMo's ``examples/tts/g2p/conf/g2p_conformer_ctc.yaml`` (NeMo
8cfedd72): a ConformerEncoder with ``d_model: 176`` and ``n_heads: 4``, so a head dim of 44,
which vLLM's FlashAttention/FlashInfer backends do not take (SL310) and Transformer Engine has
no fused kernel for (SL321) — neither of which a NeMo conformer ever runs on.
"""

from __future__ import annotations

import io
import json
from pathlib import Path

from shapelint.cli.main import main

CONFORMER = """\
name: G2P-Conformer-CTC
model:
  max_source_len: 512
  embedding:
    d_model: 300
  encoder:
    _target_: {target}
    feat_in: ${{model.embedding.d_model}}
    n_layers: 16
    d_model: 176
    ff_expansion_factor: 4
    self_attention_model: rel_pos
    n_heads: 4
    dropout: 0.1
"""
CONFORMER_TARGET = "nemo.collections.asr.modules.ConformerEncoder"


def codes(path: Path, *argv: str) -> list[str]:
    out, err = io.StringIO(), io.StringIO()
    main(["check", str(path), "--no-cache", "--exit-zero", "--format", "json", *argv], out, err)
    return sorted(f["code"] for f in json.loads(out.getvalue())["findings"])


def write(tmp_path: Path, target: str) -> Path:
    path = tmp_path / "g2p_conformer_ctc.yaml"
    path.write_text(CONFORMER.format(target=target))
    return path


def test_a_speech_encoder_is_not_checked_against_llm_engines(tmp_path: Path) -> None:
    found = codes(write(tmp_path, CONFORMER_TARGET))
    assert not [c for c in found if c.startswith("SL3")]
    # 176 is not a multiple of 64 and 44 is not a multiple of 8: the shape rules still report.
    assert [c for c in found if c.startswith("SL1")]


def test_a_named_engine_is_still_checked(tmp_path: Path) -> None:
    # The user says it runs on vLLM: 44 is a multiple of 4 but not of 8 (vLLM's FlashAttention
    # backend takes multiples of 8 up to 256; FlashInfer 64/128/256/512).
    assert "SL310" in codes(write(tmp_path, CONFORMER_TARGET), "--engine", "vllm")


def test_tts_and_audio_targets_too(tmp_path: Path) -> None:
    for target in (
        "nemo.collections.tts.modules.transformer.FFTransformerEncoder",
        "nemo.collections.audio.parts.submodules.conformer.SpectrogramConformer",
    ):
        assert not [c for c in codes(write(tmp_path, target)) if c.startswith("SL3")], target


def test_other_targets_keep_the_default_engines(tmp_path: Path) -> None:
    # The same shape built by a class outside NeMo's speech collections is checked as before.
    for target in ("nemo.collections.llm.gpt.model.base.GPTConfig", "my_project.Encoder"):
        assert "SL310" in codes(write(tmp_path, target)), target
