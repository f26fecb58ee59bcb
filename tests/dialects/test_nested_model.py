"""A model's shape kept in one field of a larger record is read by the dialect that knows it.

Fixtures are hand-written in the structure of the real files named in their comments.
"""

from __future__ import annotations

import textwrap

from conftest import configs_of

from shapelint.core.model import Dim, ModelConfig


def dims(config: ModelConfig) -> dict[str, object]:
    return {d.value: config.int(d) for d in config.dims if config.int(d) is not None}


# meta-llama/llama-models models/sku_list.py (8c88b8c0): each SKU is a ``Model(…)`` record whose
# ``arch_args`` dict holds the shape in Meta's params.json names. The FFN is Llama's formula
# (llama_models/llama3/model.py at 8c88b8c0: hidden = int(2 · 4·dim / 3), times
# ffn_dim_multiplier, rounded up to multiple_of): 4096 → 10922 → ×1.3 = 14198 → 14336.
SKU_LIST = textwrap.dedent(
    """
    LLAMA2_VOCAB_SIZE = 32000

    def llama2_base_models() -> List[Model]:
        return [
            Model(
                core_model_id=CoreModelId.llama2_7b,
                description="Llama 2 7b model",
                huggingface_repo="meta-llama/Llama-2-7b",
                arch_args={
                    "dim": 4096,
                    "n_layers": 32,
                    "n_heads": 32,
                    "n_kv_heads": 8,
                    "vocab_size": LLAMA2_VOCAB_SIZE,
                    "ffn_dim_multiplier": 1.3,
                    "multiple_of": 256,
                    "norm_eps": 1e-05,
                },
                pth_file_count=1,
            ),
        ]
    """
)


def test_a_params_dict_in_a_record_field_is_read_with_llamas_formula() -> None:
    (config,) = configs_of(SKU_LIST, "python", "models/sku_list.py")
    assert config.name.endswith("llama2_7b")
    assert config.dialect == "llama-params"
    got = dims(config)
    assert {k: got[k] for k in ("hidden", "heads", "kv_heads", "layers", "vocab", "ffn")} == {
        "hidden": 4096,
        "heads": 32,
        "kv_heads": 8,
        "layers": 32,
        "vocab": 32000,
        "ffn": 14336,
    }
    assert config.dims[Dim.HIDDEN].key == "arch_args.dim"


def test_two_model_fields_are_not_guessed_between() -> None:
    """A record with two fields a dialect reads (a student and a teacher) names neither as
    the model: each field is the model only when it is the one."""
    text = SKU_LIST.replace(
        "pth_file_count=1,",
        'teacher_args={"dim": 8192, "n_layers": 80, "n_heads": 64, "multiple_of": 4096},\n'
        "                pth_file_count=1,",
    )
    for config in configs_of(text, "python", "models/sku_list.py"):
        assert config.dialect != "llama-params"
        assert config.int(Dim.FFN) is None


def test_a_yaml_record_with_a_model_field() -> None:
    """The same in YAML: the record names no width, its one ``arch_args`` does."""
    text = textwrap.dedent(
        """
        core_model_id: llama3_8b
        arch_args:
          dim: 4096
          n_layers: 32
          n_heads: 32
          n_kv_heads: 8
          vocab_size: 128256
          ffn_dim_multiplier: 1.3
          multiple_of: 1024
        """
    )
    configs = configs_of(text, "yaml", "sku.yaml")
    assert [dims(c).get("ffn") for c in configs] == [14336]
