"""Training-config dialects: NeoX, Megatron-LM, NeMo, OLMo, llm-foundry, nanotron, axolotl,
DeepSpeed, torchtitan — real models' numbers, the frameworks' own formulas, detection."""

from __future__ import annotations

from types import ModuleType

import pytest

from shapelint import dialects
from shapelint.core.model import Dim, ModelConfig, Value
from shapelint.core.source import Document
from shapelint.dialects import (
    axolotl,
    deepspeed,
    foundry,
    megatron,
    nanotron,
    nemo,
    neox,
    olmo,
    torchtitan,
)
from shapelint.engine.options import LintOptions
from shapelint.engine.pipeline import lint_document
from shapelint.hardware.gpus import lookup
from shapelint.readers import parse

MINE: list[ModuleType] = [
    neox,
    megatron,
    nanotron,
    nemo,
    olmo,
    foundry,
    axolotl,
    torchtitan,
    deepspeed,
]


def doc_of(text: str, fmt: str = "yaml") -> Document:
    return parse(f"config.{fmt}", text.encode(), fmt)


def one(
    text: str, fmt: str = "yaml", extra: dict[Dim, tuple[str, ...]] | None = None
) -> ModelConfig:
    configs = dialects.extract(doc_of(text, fmt), extra)
    assert len(configs) == 1, configs
    return configs[0]


def ints(config: ModelConfig) -> dict[str, object]:
    return {d.value: v.value for d, v in config.dims.items() if v.known}


def written(text: str, value: Value) -> str:
    return text[value.span.start : value.span.end]


PYTHIA_1_4B = """{
  "pipe_parallel_size": 1,
  "model_parallel_size": 1,
  # model settings
  "num_layers": 24,
  "hidden_size": 2048,
  "num_attention_heads": 16,
  "seq_length": 2048,
  "max_position_embeddings": 2048,
  "pos_emb": "rotary",
  "train_micro_batch_size_per_gpu": 16,
  "fp16": {"fp16": true, "enabled": true,},
}
"""

NEOX_LLAMA2_7B = """{
  "pipe-parallel-size": 1,
  "model-parallel-size": 2,
  "make_vocab_size_divisible_by": 1,
  "num_layers": 32,
  "hidden_size": 4096,
  "intermediate_size": 32768,
  "num_attention_heads": 32,
  "seq_length": 4096,
  "activation": "swiglu",
  "mlp_multiple_of": 256,
  "precision": "bfloat16",
}
"""


def test_neox_pythia() -> None:
    config = one(PYTHIA_1_4B)
    assert config.dialect == "gpt-neox"
    assert ints(config) | {} == {
        "hidden": 2048,
        "heads": 16,
        "layers": 24,
        "seq_len": 2048,
        "micro_batch": 16,
        "tp": 1,
        "pp": 1,
        "dtype": "fp16",
        "ffn": 8192,
        "head_dim": 128,
        "kv_heads": 16,
    }
    assert config.gated_mlp is False
    ffn = config.dims[Dim.FFN]
    assert ffn.derived and "4 · hidden" in ffn.formula
    assert Dim.VOCAB not in config.dims  # NeoX takes the vocab from the tokenizer
    assert written(PYTHIA_1_4B, config.dims[Dim.HIDDEN]) == "2048"


@pytest.mark.parametrize(
    ("written_pipe", "stages", "is_derived"),
    [
        ('"pipe-parallel-size": 1', 1, False),  # pythia-1b.yml: a PipelineModule of 1 stage
        ('"pipe_parallel_size": 4', 4, False),  # gpt-neox configs/20B.yml
        ('"pipe_parallel_size": 0', 1, True),  # no PipelineModule: one sequential stage
    ],
)
def test_neox_pipe_parallel_size(written_pipe: str, stages: int, is_derived: bool) -> None:
    # NeoX's megatron/initialize.py: pp = pipe_parallel_size if pipe_parallel_size >= 1 else 1.
    text = PYTHIA_1_4B.replace('"pipe_parallel_size": 1', written_pipe)
    config = one(text)
    pp = config.dims[Dim.PP]
    assert (pp.value, pp.derived) == (stages, is_derived)
    assert text[pp.span.start : pp.span.end] == written_pipe.rpartition(" ")[2]
    options = LintOptions(gpus=(lookup("h100"),), min_slowdown=0.0)
    _, found = lint_document(doc_of(text), options)
    assert "SL002" not in {f.code for f in found}  # 0 stages is not an invalid dim


def test_neox_llama2_gated_ffn_uses_neox_formula() -> None:
    config = one(NEOX_LLAMA2_7B)
    assert config.gated_mlp is True
    ffn = config.dims[Dim.FFN]
    assert ffn.value == 11008 and ffn.derived
    assert {v.key for v in ffn.derived_from} == {
        "intermediate_size",
        "activation",
        "mlp_multiple_of",
    }
    assert written(NEOX_LLAMA2_7B, ffn) == "32768"  # points at the key a user can change
    assert config.dims[Dim.TP].value == 2  # dashed keys are the same keys
    assert config.dims[Dim.VOCAB_MULTIPLE].value == 1
    assert config.dims[Dim.FFN_MULTIPLE].value == 256
    assert config.dims[Dim.DTYPE].value == "bf16"


@pytest.mark.parametrize(
    ("base", "gated", "multiple", "expected"),
    [
        (32768, True, 256, 11008),  # Llama-2-7B
        (86016, True, 256, 28672),  # Llama-2-70B
        (4 * 8192, True, 256, 11008),  # no intermediate_size: 4h, as NeoX builds it
        (8192, False, 1, 8192),  # Pythia-1.4B
        (14336, True, 1, 4778),  # a Mistral config written for the old LLaMA MLP
    ],
)
def test_neox_ffn(base: int, gated: bool, multiple: int, expected: int) -> None:
    assert neox.neox_ffn(base, gated, multiple) == expected


def test_neox_plain_intermediate_size_is_not_derived() -> None:
    config = one(PYTHIA_1_4B.replace('"seq_length"', '"intermediate_size": 8192,\n  "seq_length"'))
    assert config.dims[Dim.FFN].value == 8192 and not config.dims[Dim.FFN].derived


MEGATRON_LLAMA2 = """ENV_VARS:
  CUDA_DEVICE_MAX_CONNECTIONS: 1
MODEL_ARGS:
  --num-layers: 32
  --hidden-size: 4096
  --ffn-hidden-size: 11008
  --num-attention-heads: 32
  --num-query-groups: 8
  --seq-length: 4096
  --max-position-embeddings: 4096
  --micro-batch-size: 1
  --global-batch-size: 1024
  --tensor-model-parallel-size: 2
  --vocab-size: 50257
  --make-vocab-size-divisible-by: 128
  --swiglu: true
  --bf16: true
  --tensorboard-dir: ${TENSORBOARD_PATH}
TEST_TYPE: regular
"""


def test_megatron_model_args() -> None:
    config = one(MEGATRON_LLAMA2)
    assert config.dialect == "megatron-lm"
    assert ints(config) == {
        "hidden": 4096,
        "heads": 32,
        "ffn": 11008,
        "layers": 32,
        "seq_len": 4096,
        "micro_batch": 1,
        "global_batch": 1024,
        "tp": 2,
        "vocab": 50257,
        "vocab_multiple": 128,
        "dtype": "bf16",
        "padded_vocab": 50432,  # ⌈50257 / 256⌉ · 256
        "head_dim": 128,
        "kv_heads": 32,  # --num-query-groups counts only with --group-query-attention
    }
    padded = config.dims[Dim.PADDED_VOCAB]
    assert {v.key for v in padded.derived_from} == {
        "MODEL_ARGS.--vocab-size",
        "MODEL_ARGS.--make-vocab-size-divisible-by",
        "MODEL_ARGS.--tensor-model-parallel-size",
    }
    assert config.gated_mlp is True
    assert written(MEGATRON_LLAMA2, config.dims[Dim.HIDDEN]) == "4096"


def test_megatron_gqa_flag_and_default_ffn() -> None:
    text = MEGATRON_LLAMA2.replace("  --ffn-hidden-size: 11008\n", "").replace(
        "  --num-query-groups: 8\n", "  --group-query-attention: true\n  --num-query-groups: 8\n"
    )
    config = one(text)
    assert config.dims[Dim.KV_HEADS].value == 8
    ffn = config.dims[Dim.FFN]
    assert ffn.value == 10880 and ffn.derived  # int((4·4096·2/3)/64)·64


@pytest.mark.parametrize(
    ("vocab", "multiple", "tp", "padded"),
    [
        (50257, 128, 1, 50304),
        (50257, 128, 8, 51200),
        (32000, 128, 2, 32000),
        (131073, 128, 1, 131200),
    ],
)
def test_megatron_padded_vocab(vocab: int, multiple: int, tp: int, padded: int) -> None:
    assert megatron.padded_vocab(vocab, multiple, tp) == padded


MEGATRON_YAML = """language_model:
  num_layers: 24
  hidden_size: 1024
  num_attention_heads: 16
  num_query_groups: null
  ffn_hidden_size: null
  activation_func: swiglu
  num_moe_experts: null
  moe_router_topk: 2
model_parallel:
  tensor_model_parallel_size: 1
  bf16: True
micro_batch_size: 2
global_batch_size: 128
make_vocab_size_divisible_by: 128
seq_length: 4096
"""


def test_megatron_yaml_layout() -> None:
    config = one(MEGATRON_YAML)
    assert ints(config) == {
        "hidden": 1024,
        "heads": 16,
        "layers": 24,
        "tp": 1,
        "micro_batch": 2,
        "global_batch": 128,
        "seq_len": 4096,
        "vocab_multiple": 128,
        "dtype": "bf16",
        "ffn": 2688,
        "head_dim": 64,
        "kv_heads": 16,
    }


MEGATRON_NEMO_OVERRIDES = """MODEL_ARGS:
  trainer.strategy.tensor_model_parallel_size: 2
  model.config.num_layers: 32
  model.config.hidden_size: 4096
  model.config.num_attention_heads: 32
  model.config.num_query_groups: 8
  model.config.ffn_hidden_size: 14336
  data.micro_batch_size: 1
  data.global_batch_size: 8
  data.seq_length: 8192
"""


def test_megatron_nemo_overrides() -> None:
    config = one(MEGATRON_NEMO_OVERRIDES)
    assert config.dialect == "megatron-lm"
    assert config.dims[Dim.KV_HEADS].value == 8
    assert config.dims[Dim.TP].value == 2
    assert config.dims[Dim.SEQ_LEN].key == "MODEL_ARGS.data.seq_length"
    assert written(MEGATRON_NEMO_OVERRIDES, config.dims[Dim.FFN]) == "14336"


NEMO_LLAMA2_7B = """trainer:
  precision: bf16
distributed_strategy:
  tensor_model_parallel_size: 8
data:
  micro_batch_size: 1
  global_batch_size: 1024
  seq_length: ${model.encoder_seq_length}
exp_manager:
  model_parallel_size: ${multiply:${distributed_strategy.tensor_model_parallel_size}, 1}
model:
  global_batch_size: ${data.global_batch_size}
  encoder_seq_length: 4096
  max_position_embeddings: ${.encoder_seq_length}
  num_layers: 32
  hidden_size: 4096
  ffn_hidden_size: 11008
  num_attention_heads: 32
  num_kv_heads: 32
  make_vocab_size_divisible_by: 8
  activation: 'swiglu'
  micro_batch_size: ${oc.env:MBS}
"""


def test_nemo_with_references() -> None:
    config = one(NEMO_LLAMA2_7B)
    assert config.dialect == "nemo"
    assert config.gated_mlp is True
    assert ints(config) == {
        "hidden": 4096,
        "heads": 32,
        "kv_heads": 32,
        "ffn": 11008,
        "layers": 32,
        "seq_len": 4096,
        "global_batch": 1024,
        "tp": 8,
        "vocab_multiple": 8,
        "dtype": "bf16",
        "head_dim": 128,
    }
    global_batch = config.dims[Dim.GLOBAL_BATCH]
    assert global_batch.key == "data.global_batch_size" and global_batch.shared
    assert global_batch.span.line == 7
    micro = config.dims[Dim.MICRO_BATCH]
    assert not micro.known and micro.key == "model.micro_batch_size"


OLMO_7B = """run_name: OLMo-7B
model:
  d_model: 4096
  n_heads: 32
  n_layers: 32
  mlp_hidden_size: 22016
  activation_type: swiglu
  max_sequence_length: 4096
  vocab_size: 50280
  embedding_size: 50304
global_train_batch_size: 1024
device_train_microbatch_size: 2
precision: amp_bf16
"""


def test_olmo() -> None:
    config = one(OLMO_7B)
    assert config.dialect == "olmo"
    assert ints(config) == {
        "hidden": 4096,
        "heads": 32,
        "layers": 32,
        "vocab": 50280,
        "padded_vocab": 50304,
        "seq_len": 4096,
        "micro_batch": 2,
        "global_batch": 1024,
        "dtype": "bf16",
        "ffn": 11008,
        "head_dim": 128,
        "kv_heads": 32,
    }
    assert config.dims[Dim.FFN].derived and config.gated_mlp
    assert config.vocab_value is config.dims[Dim.PADDED_VOCAB]


def test_olmo_mlp_ratio() -> None:
    text = OLMO_7B.replace("mlp_hidden_size: 22016", "mlp_ratio: 8").replace(
        "4096\n  n_h", "2048\n  n_h"
    )
    assert one(text).dims[Dim.FFN].value == 8192  # OLMo-1B: 8 · 2048 / 2


# allenai/OLMo configs/c4-extra-tiny-debug.yaml (c904429d): vocab_size stated, embedding_size
# left out, so OLMo's ModelConfig default embedding_size=50304 (olmo/config.py) sizes the
# embedding and logits (model.py: ``embedding_size or vocab_size``).
OLMO_TINY_DEBUG = """run_name: c4-extra-tiny-debug
model:
  d_model: 256
  n_heads: 4
  n_layers: 5
  mlp_ratio: 4
  alibi: true
  max_sequence_length: 2048
  vocab_size: 50257
device_train_microbatch_size: 4
global_train_batch_size: 16
"""


def test_olmo_embedding_size_default() -> None:
    config = one(OLMO_TINY_DEBUG)
    padded = config.dims[Dim.PADDED_VOCAB]
    assert padded.value == 50304 and padded.derived
    assert padded.key == "model.embedding_size"
    assert config.vocab_value is padded
    # No SL101: the logits already run a multiple of 128 wide.
    options = LintOptions(gpus=(lookup("h100"),), min_slowdown=0.0)
    _, found = lint_document(doc_of(OLMO_TINY_DEBUG), options)
    assert not [f for f in found if f.code == "SL101"], found


def test_olmo_embedding_size_default_not_for_larger_vocab() -> None:
    # OLMo rejects a vocab above the default embedding size: no padded vocab is derived.
    config = one(OLMO_TINY_DEBUG.replace("50257", "100278"))
    assert Dim.PADDED_VOCAB not in config.dims
    assert config.dims[Dim.VOCAB].value == 100278


MPT_7B = """variables:
  max_seq_len: 2048
max_seq_len: ${variables.max_seq_len}
model:
  name: mpt_causal_lm
  d_model: 4096
  n_heads: 32
  n_layers: 32
  expansion_ratio: 4
  max_seq_len: ${variables.max_seq_len}
  vocab_size: 50368
  attn_config:
    attn_impl: flash
global_train_batch_size: 1024
device_train_microbatch_size: 8
precision: amp_bf16
"""


def test_foundry_mpt_inference_benchmark_yaml() -> None:
    # llm-foundry's scripts/inference/benchmarking/yamls/1b.yaml: no trainer keys; the MPT
    # registry name says it is foundry's, so expansion_ratio 4 gives the FFN (2048 · 4).
    text = (
        "max_seq_len: 2048\nmodel:\n  name: mpt_causal_lm\n  d_model: 2048\n  n_heads: 16\n"
        "  n_layers: 24\n  expansion_ratio: 4\n  max_seq_len: ${max_seq_len}\n"
        "  vocab_size: 50368\n"
    )
    config = one(text)
    assert config.dialect == "llm-foundry" and ints(config)["ffn"] == 8192


def test_foundry_mpt() -> None:
    config = one(MPT_7B)
    assert config.dialect == "llm-foundry"
    assert ints(config) == {
        "hidden": 4096,
        "heads": 32,
        "layers": 32,
        "vocab": 50368,
        "seq_len": 2048,
        "micro_batch": 8,
        "global_batch": 1024,
        "dtype": "bf16",
        "ffn": 16384,
        "head_dim": 128,
        "kv_heads": 32,
    }
    seq = config.dims[Dim.SEQ_LEN]
    assert seq.key == "variables.max_seq_len" and seq.shared and seq.span.line == 2


def test_foundry_hf_wrapper_has_batch_dims_only() -> None:
    text = """model:
  name: hf_causal_lm
  pretrained_model_name_or_path: meta-llama/Meta-Llama-3.1-8B
max_seq_len: 8192
global_train_batch_size: 512
device_train_microbatch_size: auto
"""
    config = one(text)
    assert config.shape_from_elsewhere
    assert not config.dims[Dim.MICRO_BATCH].known
    assert config.dims[Dim.SEQ_LEN].value == 8192


SMOLLM2_135M = """model:
  dtype: bfloat16
  make_vocab_size_divisible_by: 1
  model_config:
    hidden_act: silu
    hidden_size: 576
    intermediate_size: 1536
    is_llama_config: true
    max_position_embeddings: 2048
    num_attention_heads: 9
    num_hidden_layers: 30
    num_key_value_heads: 3
    vocab_size: 49152
parallelism:
  dp: 64
  pp: 1
  tp: 1
tokens:
  batch_accumulation_per_replica: 1
  micro_batch_size: 8
  sequence_length: 2048
"""


def test_nanotron_smollm2() -> None:
    config = one(SMOLLM2_135M)
    assert config.dialect == "nanotron"
    assert ints(config) == {
        "hidden": 576,
        "heads": 9,
        "kv_heads": 3,
        "ffn": 1536,
        "layers": 30,
        "vocab": 49152,
        "seq_len": 2048,
        "tp": 1,
        "micro_batch": 8,
        "grad_accum": 1,
        "vocab_multiple": 1,
        "dtype": "bf16",
        "padded_vocab": 49152,
        "global_batch": 512,
        "head_dim": 64,
        "pp": 1,
    }
    assert config.gated_mlp is True


def test_nanotron_padding_uses_tp() -> None:
    text = SMOLLM2_135M.replace("tp: 1", "tp: 4").replace("divisible_by: 1", "divisible_by: 128")
    text = text.replace("vocab_size: 49152", "vocab_size: 50257")
    assert one(text).dims[Dim.PADDED_VOCAB].value == 50688  # multiple of 512


AXOLOTL = """base_model: NousResearch/Meta-Llama-3.1-8B
datasets:
  - path: tatsu-lab/alpaca
    type: alpaca
sequence_len: 8192
gradient_accumulation_steps: 8
micro_batch_size: 1
tensor_parallel_size: 2
bf16: auto
"""


def test_axolotl() -> None:
    config = one(AXOLOTL)
    assert config.dialect == "axolotl"
    assert config.shape_from_elsewhere and config.pretrained
    assert ints(config) == {"seq_len": 8192, "micro_batch": 1, "grad_accum": 8, "tp": 2}
    assert Dim.DTYPE not in config.dims  # "auto": decided at launch


DEEPSPEED = """{
  "zero_optimization": {"stage": 3},
  "bf16": {"enabled": true},
  "gradient_accumulation_steps": "auto",
  "train_batch_size": 256,
  "train_micro_batch_size_per_gpu": "auto"
}
"""


@pytest.mark.parametrize("fmt", ["json", "yaml"])
def test_deepspeed_auto_is_unknown(fmt: str) -> None:
    config = one(DEEPSPEED, fmt)
    assert config.dialect == "deepspeed" and config.shape_from_elsewhere
    assert not config.dims[Dim.MICRO_BATCH].known
    assert not config.dims[Dim.GRAD_ACCUM].known
    assert config.dims[Dim.GLOBAL_BATCH].value == 256
    assert config.dims[Dim.DTYPE].value == "bf16"


def test_hydra_target_batch_size_is_not_deepspeed() -> None:
    # NeMo-Framework-Launcher's training/nerf/model/data/data.yaml: the NeRF data module's
    # train_batch_size (camera poses per step) is an argument of the _target_ class.
    text = (
        "_target_: data.AggregatorDataModule\n\ntrain_batch_size: 1\ntrain_shuffle: false\n"
        "train_dataset:\n  internal_batch_size: 100\n  width: 64\n"
    )
    assert dialects.extract(doc_of(text)) == []
    assert not deepspeed.detect(doc_of(text).candidates[0])


TITAN = """[model]
name = "llama3"
flavor = "8B"

[training]
local_batch_size = 1
seq_len = 8192

[parallelism]
tensor_parallel_degree = 8
"""


def test_torchtitan() -> None:
    config = one(TITAN, "toml")
    assert config.dialect == "torchtitan" and config.shape_from_elsewhere
    assert config.name == "llama3 8B"
    assert ints(config) == {"micro_batch": 1, "seq_len": 8192, "tp": 8}
    seq = config.dims[Dim.SEQ_LEN]
    assert (seq.span.line, seq.span.column) == (7, 11)


SAMPLES: dict[str, tuple[str, str]] = {
    "gpt-neox": (PYTHIA_1_4B, "yaml"),
    "megatron-lm": (MEGATRON_LLAMA2, "yaml"),
    "nemo": (NEMO_LLAMA2_7B, "yaml"),
    "olmo": (OLMO_7B, "yaml"),
    "llm-foundry": (MPT_7B, "yaml"),
    "nanotron": (SMOLLM2_135M, "yaml"),
    "axolotl": (AXOLOTL, "yaml"),
    "deepspeed": (DEEPSPEED, "json"),
    "torchtitan": (TITAN, "toml"),
}


@pytest.mark.parametrize("name", sorted(SAMPLES))
def test_detection_is_specific(name: str) -> None:
    text, fmt = SAMPLES[name]
    candidate = doc_of(text, fmt).candidates[0]
    claimed = [m.NAME for m in MINE if m.detect(candidate)]
    if name == "gpt-neox":  # NeoX files carry DeepSpeed keys; NeoX comes first in DIALECTS
        assert claimed == ["gpt-neox", "deepspeed"]
    else:
        assert claimed == [name]


@pytest.mark.parametrize("name", sorted(SAMPLES))
def test_user_keys_work_in_every_dialect(name: str) -> None:
    text, fmt = SAMPLES[name]
    if fmt == "toml":
        text = "my_seq = 1234\n" + text
    elif fmt == "json":
        text = text.replace("{", '{\n  "my_seq": 1234,', 1)
    else:
        text = (
            text.replace("{", '{\n  "my_seq": 1234,', 1)
            if text.startswith("{")
            else ("my_seq: 1234\n" + text)
        )
    config = one(text, fmt, {Dim.SEQ_LEN: ("my_seq",)})
    assert config.dialect == name
    assert config.dims[Dim.SEQ_LEN].value == 1234
    assert config.dims[Dim.SEQ_LEN].key == "my_seq"


def test_user_keys_without_a_dialect_fall_back_to_hf() -> None:
    text = "base_emb_dim: 4096\nbase_num_query_heads: 32\nbase_num_decoder_layers: 32\n"
    extra = {
        Dim.HIDDEN: ("base_emb_dim",),
        Dim.HEADS: ("base_num_query_heads",),
        Dim.LAYERS: ("base_num_decoder_layers",),
    }
    config = one(text, "yaml", extra)
    assert ints(config)["hidden"] == 4096 and ints(config)["head_dim"] == 128


def test_torchtune_ppo_recipe_has_two_models() -> None:
    # torchtune recipes/configs/llama2/1B_full_ppo_low_memory_single_device.yaml: a policy and
    # a reward model, each built by a torchtune component with its own keywords.
    text = (
        "policy_model:\n  _component_: torchtune.models.llama2.llama2\n  vocab_size: 32000\n"
        "  num_layers: 22\n  num_heads: 32\n  num_kv_heads: 4\n  embed_dim: 2048\n"
        "  intermediate_dim: 5632\n"
        "reward_and_value_model:\n  _component_: torchtune.models.llama2.llama2_classifier\n"
        "  num_classes: 1\n  vocab_size: 32000\n  num_layers: 16\n  num_heads: 16\n"
        "  num_kv_heads: 4\n  embed_dim: 1024\n  intermediate_dim: 2816\n"
        "batch_size: 64\n"
    )
    found = dialects.extract(doc_of(text, "yaml"))
    by_name = {c.name: ints(c) for c in found}
    assert set(by_name) == {"policy_model", "reward_and_value_model"}
    assert by_name["policy_model"]["hidden"] == 2048 and by_name["policy_model"]["kv_heads"] == 4
    assert by_name["reward_and_value_model"]["hidden"] == 1024
    assert by_name["reward_and_value_model"]["ffn"] == 2816
