"""What the step model reads from training configs besides the shape: recomputation,
interleaved pipeline stages, tensor-parallel overlap and the framework that runs the step.

Expected values come from the frameworks' own parsers and documentation, not from shapelint:

- torchrun: ``--nproc_per_node`` (also spelt ``--nproc-per-node``), the processes (GPUs) per
  node; Lightning's ``trainer.devices`` (NeMo), the devices per node.
- Megatron-LM (megatron/training/arguments.py): ``--recompute-granularity`` full|selective;
  ``--recompute-activations`` sets ``recompute_granularity = 'selective'``;
  ``--num-layers-per-virtual-pipeline-stage n`` sets ``virtual_pipeline_model_parallel_size =
  (num_layers // pipeline_model_parallel_size) // n``.
- NeMo 1 (examples/nlp/language_modeling/conf/megatron_gpt_config.yaml):
  ``model.activations_checkpoint_granularity`` (null, selective, full),
  ``model.virtual_pipeline_model_parallel_size``, ``model.ub_tp_comm_overlap``.
- torchtitan (docs/debugging.md, torchtitan/config/job_config.py ``ActivationCheckpoint``):
  ``mode`` none|selective|full; under selective, ``selective_ac_option`` "op" (per-op) or an
  integer N (every N-th layer checkpointed, so 1 is every layer); ``compile`` runs
  torch.compile; ``enable_async_tensor_parallel``.
- llm-foundry / Composer (scripts/train/yamls/pretrain/*.yaml):
  ``fsdp_config.activation_checkpointing`` wraps every block.
"""

from __future__ import annotations

from shapelint import dialects
from shapelint.core.model import Dim, ModelConfig
from shapelint.readers import parse

MEGATRON = """\
#!/bin/bash
torchrun --nproc_per_node 4 pretrain_gpt.py \\
    --num-layers 32 \\
    --hidden-size 4096 \\
    --num-attention-heads 32 \\
    --seq-length 4096 \\
    --max-position-embeddings 4096 \\
    --micro-batch-size 1 \\
    --global-batch-size 256 \\
    --tensor-model-parallel-size 2 \\
    --pipeline-model-parallel-size 4 \\
    --num-layers-per-virtual-pipeline-stage 2 \\
    --tp-comm-overlap \\
    --recompute-activations \\
    --bf16
"""

NEMO = """\
trainer:
  devices: 8
  num_nodes: 2
  precision: bf16
model:
  micro_batch_size: 1
  global_batch_size: 128
  tensor_model_parallel_size: 4
  pipeline_model_parallel_size: 2
  virtual_pipeline_model_parallel_size: 4
  encoder_seq_length: 4096
  max_position_embeddings: 4096
  num_layers: 32
  hidden_size: 4096
  ffn_hidden_size: 11008
  num_attention_heads: 32
  activations_checkpoint_granularity: full
  ub_tp_comm_overlap: true
"""

TITAN = """\
[model]
name = "llama3"
flavor = "8B"

[training]
local_batch_size = 1
seq_len = 8192
compile = true
mixed_precision_param = "bfloat16"

[parallelism]
tensor_parallel_degree = 2
enable_async_tensor_parallel = true

[activation_checkpoint]
mode = "selective"
selective_ac_option = "op"
"""

FOUNDRY = """\
max_seq_len: 2048
model:
  name: mpt_causal_lm
  d_model: 2048
  n_heads: 16
  n_layers: 24
  expansion_ratio: 4
  max_seq_len: ${max_seq_len}
  vocab_size: 50368
global_train_batch_size: 512
device_train_microbatch_size: 8
precision: amp_bf16
fsdp_config:
  sharding_strategy: FULL_SHARD
  activation_checkpointing: true
"""


def read(name: str, text: str, kind: str) -> list[ModelConfig]:
    return list(dialects.extract(parse(name, text.encode(), kind)))


def value(configs: list[ModelConfig], dim: Dim) -> object:
    (found,) = {c.dims[dim].value for c in configs if dim in c.dims}
    return found


def test_megatron_recompute_interleaving_and_overlap() -> None:
    configs = read("train.sh", MEGATRON, "shell")
    assert {c.dialect for c in configs} == {"megatron-lm"}
    assert value(configs, Dim.RECOMPUTE) == "selective"
    assert value(configs, Dim.VP) == 32 // 4 // 2
    assert value(configs, Dim.TP_COMM_OVERLAP) is True
    assert value(configs, Dim.GPUS_PER_NODE) == 4
    assert all(c.traits.framework == "megatron" for c in configs)
    full = MEGATRON.replace("--recompute-activations", "--recompute-granularity full")
    assert value(read("train.sh", full, "shell"), Dim.RECOMPUTE) == "full"
    stated = MEGATRON.replace(
        "--num-layers-per-virtual-pipeline-stage 2", "--virtual-pipeline-model-parallel-size 3"
    )
    assert value(read("train.sh", stated, "shell"), Dim.VP) == 3


def test_megatron_layers_that_do_not_split_leave_interleaving_unknown() -> None:
    # 32 layers / 4 stages = 8, not a multiple of 3: Megatron-LM refuses it; nothing is read.
    text = MEGATRON.replace(
        "--num-layers-per-virtual-pipeline-stage 2", "--num-layers-per-virtual-pipeline-stage 3"
    )
    assert all(Dim.VP not in c.dims for c in read("train.sh", text, "shell"))


def test_nemo_recompute_interleaving_and_overlap() -> None:
    configs = read("megatron_llama.yaml", NEMO, "yaml")
    assert {c.dialect for c in configs} == {"nemo"}
    assert value(configs, Dim.RECOMPUTE) == "full"
    assert value(configs, Dim.VP) == 4
    assert value(configs, Dim.TP_COMM_OVERLAP) is True
    assert value(configs, Dim.GPUS_PER_NODE) == 8
    assert all(c.traits.framework == "megatron" for c in configs)
    selective = NEMO.replace("granularity: full", "granularity: selective")
    assert value(read("megatron_llama.yaml", selective, "yaml"), Dim.RECOMPUTE) == "selective"
    # null: no recomputation (NeMo's default).
    unset = NEMO.replace("granularity: full", "granularity: null")
    assert value(read("megatron_llama.yaml", unset, "yaml"), Dim.RECOMPUTE) == "none"


def test_torchtitan_compile_checkpointing_and_async_tp() -> None:
    configs = read("llama3_8b.toml", TITAN, "toml")
    assert {c.dialect for c in configs} == {"torchtitan"}
    assert value(configs, Dim.FRAMEWORK) == "compile"
    assert value(configs, Dim.RECOMPUTE) == "op"
    assert value(configs, Dim.TP_COMM_OVERLAP) is True
    every_layer = TITAN.replace('selective_ac_option = "op"', 'selective_ac_option = "1"')
    assert value(read("llama3_8b.toml", every_layer, "toml"), Dim.RECOMPUTE) == "full"
    every_other = TITAN.replace('selective_ac_option = "op"', 'selective_ac_option = "2"')
    assert value(read("llama3_8b.toml", every_other, "toml"), Dim.RECOMPUTE) == "layer"
    # Every third layer is not one of the modes the step model has: nothing is read.
    third = TITAN.replace('selective_ac_option = "op"', 'selective_ac_option = "3"')
    assert all(Dim.RECOMPUTE not in c.dims for c in read("llama3_8b.toml", third, "toml"))
    eager = read("llama3_8b.toml", TITAN.replace("compile = true", "compile = false"), "toml")
    assert all(Dim.FRAMEWORK not in c.dims for c in eager)
    assert all(c.traits.framework == "pytorch" for c in eager)


def test_foundry_activation_checkpointing_is_full_recompute() -> None:
    configs = read("mpt-1b.yaml", FOUNDRY, "yaml")
    assert {c.dialect for c in configs} == {"llm-foundry"}
    assert value(configs, Dim.RECOMPUTE) == "full"
    assert all(c.traits.framework == "foundry" for c in configs)
    off = FOUNDRY.replace("activation_checkpointing: true", "activation_checkpointing: false")
    assert value(read("mpt-1b.yaml", off, "yaml"), Dim.RECOMPUTE) == "none"
