"""Meta lingua run YAMLs, OpenLM model JSONs, and models without attention.

Expected values are worked out by hand in each test from the frameworks' own formulas (lingua
``lingua/transformer.py`` at 437d680e: ``FeedForward``, ``TransformerBlock``; OpenLM
``open_lm/model.py`` at 9bb92ef1: ``Block``), never taken from shapelint.
"""

from __future__ import annotations

import io
import json
import textwrap
from pathlib import Path

from shapelint import dialects
from shapelint.cli.main import main
from shapelint.core.model import Dim, ModelConfig
from shapelint.readers import parse
from shapelint.readers.python import parse_python


def run(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = main(list(argv), out, err)
    return code, out.getvalue(), err.getvalue()


def read(name: str, text: str, fmt: str) -> list[ModelConfig]:
    return dialects.extract(parse(name, textwrap.dedent(text).encode(), fmt))


def ints(config: ModelConfig) -> dict[str, object]:
    return {d.value: v.value for d, v in config.dims.items() if v.known}


LINGUA_7B = """\
    name: "7b_baseline"
    steps: 100_000
    grad_acc_steps: 2
    distributed:
      fsdp_type: full_shard
      model_dtype: bf16
      tp_size: 1
    model:
      dim: 4096
      n_layers: 32
      n_heads: 32
      rope_theta: 100_000
      ffn_dim_multiplier: 1.0
      multiple_of: 256
    data:
      batch_size: 2
      seq_len: 4096
"""


def test_lingua_llama_block_with_lingua_formulas() -> None:
    (config,) = read("llama_7B.yaml", LINGUA_7B, "yaml")
    assert config.dialect == "lingua"
    # FeedForward(hidden_dim=4·4096): int(2·16384/3) = 10922; ·1.0 = 10922; ⌈/256⌉·256 = 11008.
    assert ints(config) == {
        "hidden": 4096,
        "layers": 32,
        "heads": 32,
        "kv_heads": 32,
        "head_dim": 128,
        "ffn": 11008,
        "ffn_multiple": 256,
        "ffn_multiplier": 1.0,
        "seq_len": 4096,
        "micro_batch": 2,
        "grad_accum": 2,
        "tp": 1,
        "dtype": "bf16",
    }
    assert Dim.VOCAB not in config.dims  # taken from the tokenizer at run time


def test_lingua_defaults_multiple_of_and_derives_heads_from_head_dim() -> None:
    text = """\
        data:
          seq_len: 2048
        model:
          dim: 2048
          n_layers: 25
          head_dim: 128
          n_kv_heads: 4
          vocab_size: -1
    """
    (config,) = read("run.yaml", text, "yaml")
    got = ints(config)
    # n_heads = dim // head_dim = 16; FFN: int(2·8192/3) = 5461 → 5632 (multiple_of 256).
    assert got["heads"] == 16 and got["kv_heads"] == 4 and got["head_dim"] == 128
    assert got["ffn"] == 5632
    assert Dim.VOCAB not in config.dims


def test_lingua_mamba_is_read_without_attention() -> None:
    text = """\
        model:
          dim: 2048
          n_heads: 32
          n_groups: 1
          state_dim: 128
          conv_size: 4
          n_layers: 50
        data:
          batch_size: 4
          seq_len: 4096
    """
    (config,) = read("mamba_1b.yaml", text, "yaml")
    assert not config.has_attention
    assert ints(config) == {"hidden": 2048, "layers": 50, "seq_len": 4096, "micro_batch": 4}


HAWK = """\
    from dataclasses import dataclass
    from typing import Optional


    @dataclass
    class BaseHawkArgs:
        dim: int = 512
        n_layers: int = 8
        n_heads: int = 1
        multiple_of: int = 256
        ffn_dim_multiplier: Optional[float] = None
        lru_dim_multiplier: Optional[float] = None
        conv_size: Optional[int] = None
"""


def test_recurrent_python_class_has_no_attention_findings(tmp_path: Path) -> None:
    (config,) = dialects.extract(parse_python("core_hawk.py", textwrap.dedent(HAWK)))
    assert not config.has_attention
    assert {Dim.HEADS, Dim.HEAD_DIM, Dim.KV_HEADS, Dim.FFN}.isdisjoint(config.dims)
    path = tmp_path / "core_hawk.py"
    path.write_text(textwrap.dedent(HAWK))
    # Before: head dim 512 (= 512 / 1 "heads") drew SL321 for Transformer Engine, twice.
    code, out, _ = run(str(path), "--no-cache", "--engine", "te")
    assert code == 0, out


def test_optional_none_in_a_python_class_is_unknown_not_invalid(tmp_path: Path) -> None:
    source = """\
        from dataclasses import dataclass
        from typing import Optional


        @dataclass
        class BaseTransformerArgs:
            dim: int = 512
            n_layers: int = 8
            head_dim: Optional[int] = None
            n_heads: Optional[int] = None
            n_kv_heads: Optional[int] = None
    """
    path = tmp_path / "transformer.py"
    path.write_text(textwrap.dedent(source))
    code, out, _ = run(str(path), "--no-cache", "--format", "json")
    data = json.loads(out)
    assert [f["code"] for f in data["findings"]] == []
    assert code == 0


def test_null_heads_in_json_is_still_invalid(tmp_path: Path) -> None:
    path = tmp_path / "config.json"
    path.write_text(
        '{"hidden_size": 512, "num_attention_heads": null, "num_hidden_layers": 8,'
        ' "vocab_size": 32000}'
    )
    _, out, _ = run(str(path), "--no-cache", "--format", "json")
    assert "SL002" in {f["code"] for f in json.loads(out)["findings"]}


MAMBA2_HF = {
    "model_type": "mamba2",
    "hidden_size": 2560,
    "num_heads": 80,
    "head_dim": 64,
    "num_hidden_layers": 64,
    "state_size": 128,
    "n_groups": 1,
    "expand": 2,
    "conv_kernel": 4,
    "vocab_size": 50280,
}


def test_hf_mamba2_has_no_attention_and_no_step_estimate(tmp_path: Path) -> None:
    (config,) = read("config.json", json.dumps(MAMBA2_HF), "json")
    assert not config.has_attention
    assert ints(config) == {"hidden": 2560, "layers": 64, "vocab": 50280}
    path = tmp_path / "config.json"
    path.write_text(json.dumps(MAMBA2_HF))
    code, out, _ = run("explain", str(path))
    assert code == 0
    assert "model without attention" in out and "qkv" not in out


def test_hybrid_with_attention_keys_keeps_its_heads() -> None:
    hybrid = {
        "model_type": "some_hybrid",
        "hidden_size": 4096,
        "num_attention_heads": 32,
        "num_key_value_heads": 8,
        "num_hidden_layers": 32,
        "state_size": 16,
        "attn_layer_period": 8,
        "vocab_size": 65536,
    }
    (config,) = read("config.json", json.dumps(hybrid), "json")
    assert config.has_attention
    assert ints(config)["heads"] == 32 and ints(config)["kv_heads"] == 8


OPENLM_1B = """\
    {
        "hidden_dim": 2048,
        "n_layers": 24,
        "n_heads": 16,
        "seq_len": 2048,
        "vocab_size": 50432,
        "post_embed_norm": false,
        "weight_tying": false
    }
"""


def test_openlm_json_reads_hidden_dim_as_the_width() -> None:
    (config,) = read("open_lm_1b.json", OPENLM_1B, "json")
    assert config.dialect == "open_lm"
    # --ffn-type swiglu (the default): 256·⌈int(2·4·2048/3)/256⌉ = 256·⌈5461/256⌉ = 5632.
    assert ints(config) == {
        "hidden": 2048,
        "layers": 24,
        "heads": 16,
        "kv_heads": 16,
        "head_dim": 128,
        "ffn": 5632,
        "vocab": 50432,
        "seq_len": 2048,
    }
    assert config.gated_mlp is True
    assert config.dims[Dim.FFN].derived


def test_openlm_gelu_and_a_floored_head_split(tmp_path: Path) -> None:
    text = OPENLM_1B.replace('"hidden_dim": 2048', '"hidden_dim": 488').replace(
        '"n_heads": 16', '"n_heads": 12, "ffn_type": "gelu"'
    )
    (config,) = read("open_lm_87m.json", text, "json")
    # head_dim = 488 // 12 = 40 (OpenLM floors; the attention is 480 wide); gelu: 4·488.
    assert ints(config)["head_dim"] == 40 and ints(config)["ffn"] == 1952
    assert config.gated_mlp is False
    path = tmp_path / "open_lm_87m.json"
    path.write_text(textwrap.dedent(text))
    _, out, _ = run(str(path), "--no-cache", "--format", "json")
    assert "SL003" not in {f["code"] for f in json.loads(out)["findings"]}


def test_a_finding_on_an_inherited_value_is_listed_once(tmp_path: Path) -> None:
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "base.py").write_text(
        "from dataclasses import dataclass\n\n\n@dataclass\nclass BaseArgs:\n"
        "    dim: int = 2560\n    n_layers: int = 32\n    n_heads: int = 32\n"
    )
    (pkg / "lm.py").write_text(
        "from dataclasses import dataclass\n\nfrom pkg.base import BaseArgs\n\n\n"
        "@dataclass\nclass LMArgs(BaseArgs):\n    seed: int = 42\n    vocab_size: int = -1\n"
    )
    _, out, _ = run(str(tmp_path), "--no-cache", "--format", "json")
    data = json.loads(out)
    assert len(data["configs"]) == 2
    # head dim 2560 / 32 = 80, read by both classes at base.py's position: reported once.
    assert [f["code"] for f in data["findings"]] == ["SL102"]


OLMO_CORE_LADDER = """\
    class GemmaLikeTransformerConfig(TransformerConfig):
        @classmethod
        def v1_250M(cls, vocab_size: int, **kwargs) -> "TransformerConfig":
            return cls.v1(
                d_model=640,
                hidden_size=640 * 8,
                n_layers=10,
                n_heads=6,
                vocab_size=vocab_size,
                **kwargs,
            )
"""


def test_olmo_core_builder_call_reads_d_model_and_leaves_head_dim_open(tmp_path: Path) -> None:
    (config,) = dialects.extract(parse_python("ladder.py", textwrap.dedent(OLMO_CORE_LADDER)))
    # OLMo-core: d_model is the width, hidden_size the FFN; cls.v1 sets head_dim=128 itself.
    assert ints(config) == {"hidden": 640, "layers": 10, "heads": 6}
    assert not config.dims[Dim.HEAD_DIM].known
    path = tmp_path / "ladder.py"
    path.write_text(textwrap.dedent(OLMO_CORE_LADDER))
    _, out, _ = run(str(path), "--no-cache", "--format", "json")
    # Before: hidden 5120 (the FFN) and SL003 "5120 is not divisible by 6".
    assert [f["code"] for f in json.loads(out)["findings"]] == []


def test_negative_class_defaults_are_placeholders_not_sizes(tmp_path: Path) -> None:
    source = """\
        class ModelArgs(BaseModel):
            dim: int = -1
            n_layers: int = -1
            n_heads: int = -1
            vocab_size: int = -1
            multiple_of: int = 256
    """
    path = tmp_path / "args.py"
    path.write_text(textwrap.dedent(source))
    _, out, _ = run(str(path), "--no-cache", "--format", "json")
    codes = [f["code"] for f in json.loads(out)["findings"]]
    assert "SL002" not in codes  # Llama 4's ModelArgs: -1 means "set from params.json"


LIT_LLAMA = """\
    from dataclasses import dataclass


    @dataclass
    class LLaMAConfig:
        block_size: int = 2048
        vocab_size: int = 32000
        n_layer: int = 32
        n_head: int = 32
        n_embd: int = 4096


    llama_configs = {
        "7B": dict(n_layer=32, n_head=32, n_embd=4096),
        "13B": dict(n_layer=40, n_head=40, n_embd=5120),
    }
"""


def test_nanogpt_defaults_stay_with_nanogpts_gptconfig() -> None:
    found = dialects.extract(parse_python("model.py", textwrap.dedent(LIT_LLAMA)))
    cls = next(c for c in found if c.name == "LLaMAConfig")
    # lit-llama: SwiGLU (find_multiple(int(2·4·4096/3), 256) = 11008), not nanoGPT's 4·n_embd.
    assert cls.dialect != "nanogpt" and Dim.FFN not in cls.dims
    assert ints(cls)["vocab"] == 32000 and ints(cls)["seq_len"] == 2048
    seven = next(c for c in found if c.name == 'llama_configs["7B"]')
    # Its block_size and vocab are LLaMAConfig's class defaults, not nanoGPT's 1024 and 50304.
    assert Dim.VOCAB not in seven.dims and Dim.SEQ_LEN not in seven.dims
    assert ints(seven)["hidden"] == 4096


def test_a_script_with_only_a_batch_and_a_context_is_no_nanogpt_config() -> None:
    script = "devices = 4\nbatch_size = 128 // devices\nmicro_batch_size = 4\nblock_size = 512\n"
    found = dialects.extract(parse_python("finetune/full.py", script))
    assert all(c.dialect != "nanogpt" for c in found)
    assert all(Dim.HIDDEN not in c.dims for c in found)


def test_mamba_ssm_pads_the_vocab_to_its_multiple(tmp_path: Path) -> None:
    cfg = {"d_model": 2560, "n_layer": 64, "vocab_size": 50277, "ssm_cfg": {}, "d_intermediate": 0}
    (plain,) = read("config.json", json.dumps({**cfg, "pad_vocab_size_multiple": 8}), "json")
    # MambaLMHeadModel: 50277 rounded up to a multiple of 8 = 50280 (6285 · 8).
    assert ints(plain)["padded_vocab"] == 50280
    path = tmp_path / "config.json"
    path.write_text(json.dumps({**cfg, "pad_vocab_size_multiple": 8}))
    _, out, _ = run(str(path), "--no-cache", "--format", "json")
    (finding,) = json.loads(out)["findings"]
    assert finding["code"] == "SL101" and "50280" in finding["message"]
    # transformers' Mamba keeps the key but builds a vocab_size-wide embedding: no padding.
    hf = {**cfg, "model_type": "mamba", "pad_vocab_size_multiple": 8}
    (config,) = read("config.json", json.dumps(hf), "json")
    assert Dim.PADDED_VOCAB not in config.dims
