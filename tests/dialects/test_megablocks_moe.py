"""MegaBlocks' Megatron-LM fork: MoE models from ``--moe-num-experts`` and its companions.

The scripts have the structure of databricks/megablocks ``exp/dmoe/dmoe_125m_8gpu.sh`` and
``exp/moe/moe_46m_8gpu.sh`` at 78eea65f (sizes with a default a positional argument may
override, the MoE flags in a ``MOE_ARGUMENTS`` string, ``torchrun … pretrain_gpt.py``).
Expected values by hand, with the fork's defaults (stanford-futuredata/Megatron-LM at
3a9e3d8d, the submodule megablocks pins): ``--moe-top-k`` 1 (megatron/arguments.py:479),
``--moe-capacity-factor`` 0 = dropless dMoE (arguments.py:476, model/transformer.py:711-717),
each expert ``--ffn-hidden-size`` wide, 4 · hidden unset (arguments.py:245-246, copied by
megablocks/layers/arguments.py:95-99), and SwitchMLP's one expert a token
(transformer.py:150-151).
"""

from __future__ import annotations

from shapelint.core.model import Dim, ModelConfig
from shapelint.dialects import extract
from shapelint.perf.workload import layer_plan
from shapelint.readers import parse


def one(text: str) -> ModelConfig:
    (config,) = extract(parse("run.sh", text.encode(), "shell"))
    return config


def script(
    moe: str, compute: str = "--bf16 --DDP-impl local --moe-expert-model-parallelism"
) -> str:
    return f"""\
#!/bin/bash
EXP_DIR=$1
BATCH_SIZE=32
MOE_ARGUMENTS="\\
{moe}"
MODEL_ARGUMENTS="\\
--num-layers 12 \\
--hidden-size 768 \\
--num-attention-heads 12 \\
--seq-length 1024 \\
--max-position-embeddings 1024"
COMPUTE_ARGUMENTS="\\
{compute}"
torchrun --nproc_per_node 8 --nnodes 1 \\
       third_party/Megatron-LM/pretrain_gpt.py \\
       ${{MOE_ARGUMENTS}} \\
       ${{MODEL_ARGUMENTS}} \\
       --micro-batch-size ${{BATCH_SIZE}} --global-batch-size 512 \\
       ${{COMPUTE_ARGUMENTS}} |& tee ./${{EXP_DIR}}/train.log
"""


def test_a_dmoe_script_is_read_as_moe_with_the_forks_defaults() -> None:
    config = one(script("--moe-num-experts=64 \\\n--moe-loss-weight=0.1"))
    assert config.int(Dim.EXPERTS) == 64
    assert config.int(Dim.EXPERTS_PER_TOKEN) == 1  # --moe-top-k's default
    assert config.int(Dim.FFN) == 4 * 768  # the experts' width
    assert config.int(Dim.EP) is None  # the data-parallel size, which no flag states
    plan = layer_plan(config)
    assert plan is not None
    assert (plan.experts, plan.top_k, plan.moe_layers, plan.moe_ffn) == (64, 1, 12, 3072)


def test_the_top_k_is_read() -> None:
    config = one(script("--moe-num-experts=8 \\\n--moe-top-k=2"))
    assert (config.int(Dim.EXPERTS), config.int(Dim.EXPERTS_PER_TOKEN)) == (8, 2)


def test_sizes_a_positional_argument_may_override_are_unknown_and_not_timed() -> None:
    text = script("--moe-num-experts=${NUM_EXPERTS} \\\n--moe-top-k=${TOP_K}").replace(
        "BATCH_SIZE=32\n",
        'BATCH_SIZE=32\nNUM_EXPERTS=64\nif [ -n "${3}" ]; then\n    NUM_EXPERTS=$3;\nfi\n'
        'TOP_K=1\nif [ -n "${4}" ]; then\n    TOP_K=$4;\nfi\n',
    )
    config = one(text)
    experts = config.get(Dim.EXPERTS)
    assert experts is not None and not experts.known  # a MoE, not a dense model
    top_k = config.get(Dim.EXPERTS_PER_TOKEN)
    assert top_k is not None and not top_k.known  # not the default 1
    assert layer_plan(config) is None  # not timed as the dense model it is not


def test_a_capacity_factor_is_token_dropping_and_not_timed() -> None:
    dropping = one(script("--moe-num-experts=64 \\\n--moe-capacity-factor=2"))
    assert dropping.int(Dim.EXPERTS) == 64
    assert "capacity" in dropping.untimed
    assert layer_plan(dropping) is None
    dropless = one(script("--moe-num-experts=64 \\\n--moe-capacity-factor=0"))
    assert not dropless.untimed and layer_plan(dropless) is not None


def test_the_megatron_switch_routes_one_expert() -> None:
    config = one(script("--moe-num-experts=8 --moe-top-k=4 --moe-use-megatron-switch True"))
    assert config.int(Dim.EXPERTS_PER_TOKEN) == 1


def test_glu_experts_are_gated() -> None:
    assert one(script("--moe-num-experts=8", "--bf16 --glu")).gated_mlp is True
    assert one(script("--moe-num-experts=8")).gated_mlp is False


def test_a_dense_script_has_no_experts() -> None:
    config = one(script("--lr 0.0006", "--fp16"))
    assert config.get(Dim.EXPERTS) is None and config.int(Dim.FFN) == 3072
