"""Position embeddings of Megatron launch scripts, ``MODEL_ARGS`` blocks and NeMo configs, as the
step model times them: the ops ``shapelint explain --format json`` lists.

Expected values come from the frameworks' parsers, not from shapelint:

- Megatron-LM (NVIDIA/Megatron-LM at d98e8a64): ``--position-embedding-type`` defaults to
  ``learned_absolute`` (megatron/training/arguments.py:2397), whose embedding adds a position
  table (megatron/core/models/common/embeddings/language_model_embedding.py:47); only ``rope``
  (and yarn, mrope) builds a rotary embedding (megatron/core/models/gpt/gpt_model.py:183-215).
  ``--use-rotary-position-embeddings`` sets rope (arguments.py:1626-1627).
- Megatron-DeepSpeed (microsoft/Megatron-DeepSpeed at f4157bea): no type flag; positions are
  learned unless ``--no-position-embedding`` (arguments.py:640-643, model/language_model.py:
  163-164), and ``--use-rotary-position-embeddings`` adds rotary and drops them (316-317).
- MegaBlocks' fork (stanford-futuredata/Megatron-LM at 3a9e3d8d) always adds learned positions
  (megatron/model/language_model.py:159-160, 215-216).

Learned positions are timed as ``position_add`` (word plus position rows), rotary as
``rotary``. A setting that is unknown (a branch, another program) keeps the model's convention
for a config that says nothing: timed with rotary.
"""

from __future__ import annotations

import io
import json
import shlex
from pathlib import Path

from shapelint.cli.main import main

# examples/gpt3/train_gpt3_175b_distributed.sh at d98e8a64 (structure and values; cut down).
GPT3_175B = """\
#!/bin/bash
GPUS_PER_NODE=8
CHECKPOINT_PATH=$1 #<Specify path>
DISTRIBUTED_ARGS=(
    --nproc_per_node $GPUS_PER_NODE
)
GPT_MODEL_ARGS=(
    --num-layers 96
    --hidden-size 12288
    --num-attention-heads 96
    --seq-length 2048
    --max-position-embeddings 2048
    --attention-backend auto # Can use (flash/fused/unfused/local)
)
TRAINING_ARGS=(
    --micro-batch-size 1
    --global-batch-size 1536
    --fp16
)
MODEL_PARALLEL_ARGS=(
	--tensor-model-parallel-size 8
	--pipeline-model-parallel-size 16
)
torchrun ${DISTRIBUTED_ARGS[@]} pretrain_gpt.py \\
    ${GPT_MODEL_ARGS[@]} \\
    ${TRAINING_ARGS[@]} \\
    ${MODEL_PARALLEL_ARGS[@]}
"""

# examples/llama/train_llama3_8b_h100_fp8.sh at d98e8a64: the program through a variable,
# rope stated.
LLAMA3_8B = """\
PRETRAIN_SCRIPT_PATH="pretrain_gpt.py"
NUM_LAYERS=32
MODEL_ARGS=(
    --use-mcore-models
    --num-layers $NUM_LAYERS
    --hidden-size 4096
    --ffn-hidden-size 14336
    --num-attention-heads 32
    --group-query-attention
    --num-query-groups 8
    --kv-channels 128
    --seq-length 8192
    --max-position-embeddings 8192
    --position-embedding-type rope
    --rotary-base 1000000
    --rotary-percent 1.0
    --swiglu
)
TRAINING_ARGS=(
    --micro-batch-size 1
    --bf16
)
torchrun ${DISTRIBUTED_ARGS[@]} \\
    "$PRETRAIN_SCRIPT_PATH" \\
    ${MODEL_ARGS[@]} \\
    ${TRAINING_ARGS[@]}
"""

# microsoft/Megatron-DeepSpeed examples_deepspeed/pretrain_llama2_distributed.sh at f4157bea:
# rotary in the run, and the same switch in a commented-out block.
DS_LLAMA2 = """\
HIDDEN_SIZE=2048 # e.g. llama-13b: 5120
NUM_LAYERS=24 # e.g. llama-13b: 40
# --use-rotary-position-embeddings \\
torchrun $DISTRIBUTED_ARGS \\
       pretrain_gpt.py \\
       --num-layers $NUM_LAYERS \\
       --hidden-size $HIDDEN_SIZE \\
       --ffn-hidden-size 5504 \\
       --num-attention-heads 16 \\
       --micro-batch-size 4 \\
       --seq-length 2048 \\
       --max-position-embeddings 2048 \\
       --bf16 \\
       --use-rotary-position-embeddings \\
       --untie-embeddings-and-output-weights \\
       --swiglu
"""

# databricks/megablocks exp/gpt2/gpt2_125m_1gpu.sh at 78eea65f (MegaBlocks' fork).
MEGABLOCKS_GPT2 = """\
MODEL_ARGUMENTS="\\
--num-layers 12 \\
--hidden-size 768 \\
--num-attention-heads 12 \\
--seq-length 1024 \\
--max-position-embeddings 1024"
TRAINING_ARGUMENTS="\\
--micro-batch-size 32 \\
--global-batch-size 512"
COMPUTE_ARGUMENTS="\\
--fp16 \\
--DDP-impl local"
torchrun ${DISTRIBUTED_ARGUMENTS} \\
       third_party/Megatron-LM/pretrain_gpt.py \\
       ${MODEL_ARGUMENTS} \\
       ${TRAINING_ARGUMENTS} \\
       ${COMPUTE_ARGUMENTS} |& tee ./${EXP_DIR}/train.log
"""

POSITION_FLAGS = {
    "--position-embedding-type",
    "--use-rotary-position-embeddings",
    "--no-position-embedding",
}
SHAPE = (
    "--num-layers 24 --hidden-size 2048 --num-attention-heads 16 --seq-length 2048 "
    "--micro-batch-size 4 --bf16"
)


def ops(tmp_path: Path, text: str, name: str = "run.sh") -> set[str]:
    path = tmp_path / name
    path.write_text(text)
    out, err = io.StringIO(), io.StringIO()
    code = main(["explain", "--format", "json", str(path)], out, err)
    assert code == 0, err.getvalue()
    return {op["name"] for op in json.loads(out.getvalue())["ops"]}


def words(text: str) -> list[str]:
    """The script's words as a shell splits them (comments dropped: a comment line's ``\\``
    continues nothing)."""
    lines = [line for line in text.splitlines() if not line.lstrip().startswith("#")]
    return shlex.split("\n".join(lines).replace("\\\n", " "), comments=True)


def positions(found: set[str]) -> tuple[bool, bool]:
    """(learned positions timed, rotary timed)."""
    return "position_add" in found, "rotary" in found


def test_gpt3_175b_without_a_type_is_learned_absolute(tmp_path: Path) -> None:
    said = words(GPT3_175B)
    assert "pretrain_gpt.py" in said
    assert not POSITION_FLAGS & set(said)
    # Megatron-LM's default: learned_absolute (arguments.py:2397): no rotary op.
    assert positions(ops(tmp_path, GPT3_175B)) == (True, False)


def test_llama3_states_rope(tmp_path: Path) -> None:
    said = words(LLAMA3_8B)
    assert said[said.index("--position-embedding-type") + 1] == "rope"
    assert positions(ops(tmp_path, LLAMA3_8B)) == (False, True)


def test_deepspeed_rotary_switch(tmp_path: Path) -> None:
    assert "--use-rotary-position-embeddings" in words(DS_LLAMA2)
    assert positions(ops(tmp_path, DS_LLAMA2)) == (False, True)
    commented_only = DS_LLAMA2.replace("       --use-rotary-position-embeddings \\\n", "")
    assert "--use-rotary-position-embeddings" not in words(commented_only)
    assert positions(ops(tmp_path, commented_only)) == (True, False)


def test_megablocks_fork_is_learned(tmp_path: Path) -> None:
    assert positions(ops(tmp_path, MEGABLOCKS_GPT2)) == (True, False)


def test_type_values(tmp_path: Path) -> None:
    def run(flags: str) -> tuple[bool, bool]:
        return positions(ops(tmp_path, f"torchrun pretrain_gpt.py {SHAPE} {flags}\n"))

    assert run("--position-embedding-type learned_absolute") == (True, False)
    assert run("--position-embedding-type none") == (False, False)
    assert run("--position-embedding-type yarn") == (False, True)
    # the deprecated switch wins over the type (arguments.py:1626-1627)
    assert run("--position-embedding-type learned_absolute --use-rotary-position-embeddings") == (
        False,
        True,
    )
    # Megatron-DeepSpeed: no position embedding, no rotary
    assert run("--no-position-embedding") == (False, False)
    assert run("--no-position-embedding --use-rotary-position-embeddings") == (False, True)


def test_unknown_settings_keep_the_rotary_convention(tmp_path: Path) -> None:
    branch = (
        'if [ "$1" = rope ]; then POS="--position-embedding-type rope"; fi\n'
        f"torchrun pretrain_gpt.py {SHAPE} $POS\n"
    )
    assert positions(ops(tmp_path, branch)) == (False, True)
    switch = (
        'if [ -n "$2" ]; then EXTRA="--use-rotary-position-embeddings"; fi\n'
        f"torchrun pretrain_gpt.py {SHAPE} --position-embedding-type learned_absolute $EXTRA\n"
    )
    assert positions(ops(tmp_path, switch)) == (False, True)
    # Pai-Megatron-Patch's own trainers build models of their own: the default is not known.
    other = f"torchrun pretrain_mcore_llama.py {SHAPE}\n"
    assert positions(ops(tmp_path, other)) == (False, True)
    assert positions(ops(tmp_path, f"torchrun pretrain_gpt.py {SHAPE}\n")) == (True, False)


# tests/functional_tests/test_cases/gpt/*/model_config.yaml at d98e8a64: flags as keys.
MODEL_ARGS = """\
ENV_VARS:
  CUDA_DEVICE_MAX_CONNECTIONS: 1
MODEL_ARGS:
  --num-layers: 12
  --hidden-size: 512
  --num-attention-heads: 8
  --seq-length: 1024
  --max-position-embeddings: 1024
  --micro-batch-size: 4
  --global-batch-size: 32
  --bf16: true
{extra}"""


def test_model_args_blocks(tmp_path: Path) -> None:
    plain = MODEL_ARGS.format(extra="")
    assert positions(ops(tmp_path, plain, "model_config.yaml")) == (True, False)
    rope = MODEL_ARGS.format(extra="  --position-embedding-type: rope\n")
    assert positions(ops(tmp_path, rope, "model_config.yaml")) == (False, True)


# NVIDIA/NeMo-Framework-Launcher launcher_scripts/conf/training/gpt3/mlperf-24n.yaml at
# 26e42fa9 (model block cut down); baichuan2/baichuan2_13b.yaml states ALiBi.
NEMO = """\
trainer:
  precision: bf16
model:
  micro_batch_size: 1
  global_batch_size: 48
  tensor_model_parallel_size: 4
  encoder_seq_length: 2048
  max_position_embeddings: 2048
  num_layers: 96
  hidden_size: 12288
  ffn_hidden_size: 49152
  num_attention_heads: 96
  activation: gelu
  position_embedding_type: {position}
"""


def test_nemo_stated_type(tmp_path: Path) -> None:
    learned = ops(tmp_path, NEMO.format(position="learned_absolute"), "gpt3.yaml")
    assert positions(learned) == (True, False)
    assert positions(ops(tmp_path, NEMO.format(position="ALiBi"), "gpt3.yaml")) == (False, False)
    assert positions(ops(tmp_path, NEMO.format(position="rope"), "gpt3.yaml")) == (False, True)
    # NeMo's kerple/xpos/sandwich have no name here: unknown, the rotary convention
    assert positions(ops(tmp_path, NEMO.format(position="kerple"), "gpt3.yaml")) == (False, True)
