"""SL005 on the vocab: an error only for an engine of the target that does not pad (or split
unevenly) a vocab that the tensor-parallel size does not divide (issue 25, friction 5)."""

from __future__ import annotations

import io
import re
from pathlib import Path

import pytest
from conftest import configs_of

from shapelint.cli.main import main
from shapelint.core.model import Target
from shapelint.hardware import engines
from shapelint.hardware.gpus import lookup
from shapelint.rules import sl005_tensor_parallel as sl005

# GPT-2 small's config.json: vocab 50257 is odd, so no tensor-parallel size above 1 divides it.
GPT2 = (
    '{"model_type": "gpt2", "n_embd": 768, "n_head": 12, "n_layer": 12, "n_positions": 1024,'
    ' "vocab_size": 50257}\n'
)


def run(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = main(list(argv), out, err)
    return code, out.getvalue(), err.getvalue()


def vocab_findings(target: Target) -> list[str]:
    (config,) = configs_of(GPT2)
    return [f.message for f in sl005.check(config, target) if f.key == "vocab_size"]


def test_tp_2_in_settings_is_no_vocab_error_on_an_hf_config(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / ".git").mkdir()
    (tmp_path / "config.json").write_text(GPT2)
    (tmp_path / "pyproject.toml").write_text("[tool.shapelint]\ntp = 2\n")
    monkeypatch.chdir(tmp_path)
    _, out, err = run("check", "config.json", "--select", "SL0")
    assert "SL005" not in out, out
    assert "vocab" not in out and err == ""


@pytest.mark.parametrize("name", [e.name for e in engines.ENGINES])
def test_no_engine_of_the_catalogue_refuses_an_unpadded_vocab(name: str) -> None:
    target = Target(gpu=lookup("H100-SXM"), tp=2, engines=(name,))
    assert vocab_findings(target) == []


def test_every_engine_says_how_it_splits_the_vocab_with_a_source() -> None:
    assert set(sl005.VOCAB_SPLIT) == {e.name for e in engines.ENGINES}
    for name, how in sl005.VOCAB_SPLIT.items():
        # A file read at a version (a commit or a release), or a kernel, which has no vocab.
        assert how == "an attention kernel: no vocab" or re.search(r"(==|at )[0-9a-f.]+", how), name


def test_an_engine_that_does_not_pad_makes_the_vocab_an_error(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """An engine the table does not list is taken not to pad: the old error, naming it."""
    split = dict(sl005.VOCAB_SPLIT)
    del split["vllm"]
    monkeypatch.setattr(sl005, "VOCAB_SPLIT", split)
    target = Target(gpu=lookup("H100-SXM"), tp=2, engines=("vllm", "megatron"))
    (message,) = vocab_findings(target)
    assert message.startswith("vocab (vocab_size = 50257) must be divisible by the tensor-parallel")
    assert "(2): vLLM 0.34.0 does not pad it" in message
    # Every engine of the target pads: no error.
    assert vocab_findings(Target(gpu=lookup("H100-SXM"), tp=2, engines=("megatron",))) == []


def test_vllm_padded_vocab_refusal_stays_sl309(tmp_path: Path) -> None:
    path = tmp_path / "config.json"
    path.write_text(
        '{"architectures": ["Glm4ForCausalLM"], "hidden_size": 4096, "num_attention_heads": 48,'
        ' "num_key_value_heads": 2, "intermediate_size": 13698, "num_hidden_layers": 40,'
        ' "vocab_size": 151552}\n'
    )
    _, out, _ = run("check", str(path), "--tp", "6", "--engine", "vllm", "--select", "SL0,SL309")
    assert "SL309" in out and "151552 is not divisible by 6" in out
    assert "vocab (vocab_size" not in out
