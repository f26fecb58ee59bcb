"""Levanter run configs: the ``model:`` block of a registered type, read as stated.

Expected values are written by hand from the YAML in each test; the class defaults a block
leaves out are never filled in (they differ between Levanter releases).
"""

from __future__ import annotations

import io
from pathlib import Path

from shapelint import dialects
from shapelint.cli.main import main
from shapelint.core.model import Dim, ModelConfig
from shapelint.readers import parse


def configs(text: str) -> list[ModelConfig]:
    return dialects.extract(parse("run.yaml", text.encode(), "yaml"))


def one(text: str) -> ModelConfig:
    found = configs(text)
    assert len(found) == 1, found
    assert found[0].dialect == "levanter"
    return found[0]


def ints(config: ModelConfig) -> dict[str, object]:
    return {d.value: v.value for d, v in config.dims.items() if v.known}


LLAMA = """\
data: !include data/dclm.yaml
model:
  type: llama
  hidden_dim: 2048
  intermediate_dim: 7168
  num_heads: 16
  num_kv_heads: 8
  num_layers: 24
  seq_len: 4096
trainer:
  mp: p=f32,c=bfloat16
  model_axis_size: 2
  per_device_parallelism: 4
  train_batch_size: 256
"""


def test_llama_block_as_stated() -> None:
    config = one(LLAMA)
    assert ints(config) == {
        "hidden": 2048,
        "ffn": 7168,
        "heads": 16,
        "kv_heads": 8,
        "layers": 24,
        "seq_len": 4096,
        "tp": 2,
        "micro_batch": 4,
        "head_dim": 128,  # Levanter: hidden_dim // num_heads when head_dim is not set
    }
    assert config.gated_mlp is True
    assert not config.seq_is_max_context
    assert not config.pretrained


def test_left_out_kv_heads_stay_unknown() -> None:
    # LlamaConfig's default num_kv_heads is 32 in 1.2 (a 16-head model would not even build)
    # and the field did not exist in 1.1 (multi-head): neither is a value to report.
    config = one(LLAMA.replace("  num_kv_heads: 8\n", ""))
    assert Dim.KV_HEADS not in config.dims
    assert Dim.HEADS in config.dims


def test_gpt2_mlp_is_hidden_times_mlp_scale() -> None:
    text = "model:\n  type: gpt2\n  hidden_dim: 768\n  num_heads: 12\n  num_layers: 12\n"
    assert ints(one(text))["ffn"] == 4 * 768  # Gpt2Config.mlp_scale defaults to 4
    assert ints(one(text))["kv_heads"] == 12  # GPT-2 attention is multi-head
    assert one(text).gated_mlp is False
    assert ints(one(text + "  mlp_scale: 2\n"))["ffn"] == 2 * 768


def test_gemma_head_dim_is_never_hidden_over_heads() -> None:
    text = (
        "model:\n  type: gemma\n  hidden_dim: 3072\n  intermediate_dim: 24576\n"
        "  num_heads: 16\n  num_kv_heads: 16\n  num_layers: 28\n"
    )
    assert Dim.HEAD_DIM not in one(text).dims  # Gemma-7B's head dim is 256, not 3072 / 16
    assert ints(one(text + "  head_dim: 256\n"))["head_dim"] == 256


def test_mixtral_intermediate_dim_is_the_expert_width() -> None:
    text = (
        "model:\n  type: mixtral\n  hidden_dim: 4096\n  intermediate_dim: 14336\n"
        "  num_heads: 32\n  num_kv_heads: 8\n  num_layers: 32\n"
        "  n_routed_experts: 8\n  num_experts_per_tok: 2\n"
    )
    values = ints(one(text))
    assert (values["moe_ffn"], values["experts"], values["experts_per_token"]) == (14336, 8, 2)
    assert "ffn" not in values


def test_weights_from_hf_make_fixes_unsafe_and_hf_shapes_are_not_read() -> None:
    assert one(LLAMA + 'initialize_from_hf: "meta-llama/Llama-3.2-1B"\n').pretrained
    assert one(LLAMA + "initialize_from_checkpoint_path: gs://bucket/ckpt\n").pretrained
    assert not one(LLAMA + "initialize_from_hf: false\n").pretrained
    # use_hf_model_config: Levanter builds the checkpoint's shape and ignores the block.
    found = configs(LLAMA + "initialize_from_hf: true\nuse_hf_model_config: true\n")
    assert [c for c in found if c.dialect == "levanter"] == []


def test_per_device_parallelism_minus_one_is_no_micro_batch() -> None:
    config = one(LLAMA.replace("per_device_parallelism: 4", "per_device_parallelism: -1"))
    assert Dim.MICRO_BATCH not in config.dims


def test_untyped_or_foreign_blocks_are_not_levanter() -> None:
    # The default type changed (Gpt2Config in 1.1, LlamaConfig in 1.2): no type, no reading.
    untyped = LLAMA.replace("  type: llama\n", "")
    assert all(c.dialect != "levanter" for c in configs(untyped))
    hyena = "model:\n  type: gpt2_hyena\n  num_layers: 4\ntrainer:\n  mp: p=f32\n"
    assert all(c.dialect != "levanter" for c in configs(hyena))


def test_a_levanter_file_lints_without_yaml_tag_errors(tmp_path: Path) -> None:
    # ``!include`` is Levanter's own tag: not SL006. The 80-wide head dim is SL102's.
    path = tmp_path / "run.yaml"
    path.write_text(
        LLAMA.replace("hidden_dim: 2048", "hidden_dim: 2560").replace("heads: 16", "heads: 32")
    )
    out, err = io.StringIO(), io.StringIO()
    # h/a = 80 costs <1% on H100 with FA3's figures: every finding counts here.
    argv = ["check", str(path), "--no-cache", "--format", "json", "--min-slowdown", "0"]
    code = main(argv, out, err)
    assert code == 1, err.getvalue()
    assert "SL006" not in out.getvalue()
    assert '"SL102"' in out.getvalue()


MARIN_STYLE = """\
from levanter.models.llama import LlamaConfig
from transformers import LlamaConfig as HfLlamaConfig

llama_1_4b = LlamaConfig(
    max_seq_len=4096,
    hidden_dim=2048,
    intermediate_dim=7168,
    num_heads=16,
    num_kv_heads=8,
    num_layers=16,
)
hf = HfLlamaConfig(hidden_size=4096, num_attention_heads=32, num_hidden_layers=32)
"""


def test_levanter_config_classes_called_in_python() -> None:
    found = {c.name: c for c in dialects.extract(parse("llama.py", MARIN_STYLE.encode(), "python"))}
    levanter = found["llama_1_4b"]
    assert levanter.dialect == "levanter"
    assert ints(levanter) == {
        "hidden": 2048,
        "ffn": 7168,
        "heads": 16,
        "kv_heads": 8,
        "layers": 16,
        "seq_len": 4096,
        "head_dim": 128,
    }
    assert levanter.seq_is_max_context  # max_seq_len: the model's maximum, not the batch's
    assert levanter.gated_mlp is True
    # Hugging Face's LlamaConfig (hidden_size, …) is not Levanter's.
    assert found["hf"].dialect != "levanter"
    assert found["hf"].int(Dim.HIDDEN) == 4096
