"""``--num-experts`` routing by fork: Megatron-LM and Megatron-DeepSpeed differ in defaults.

Megatron-DeepSpeed (microsoft/Megatron-DeepSpeed at f4157bea): ``--topk`` default 1,
``--expert-interval`` default 2 (megatron/arguments.py:612-615), layer n (from 1) MoE when
n % interval == 0 (megatron/model/transformer.py:1650-1658); scripts shaped like
``examples_deepspeed/MoE/ds_pretrain_gpt_125M_MoE64.sh``. Megatron-LM (NVIDIA/Megatron-LM at
d98e8a64): ``moe_router_topk`` default 2 (megatron/core/transformer/transformer_config.py:760),
``--moe-layer-freq`` an int or a list expression (megatron/training/arguments.py:327-347),
as Pai-Megatron-Patch's Qwen3/DeepSeek-V3 scripts pass it (``"'([0]*3+[1]*58)'"``).
Expected values by hand from those rules.
"""

from __future__ import annotations

from shapelint.core.model import Dim, ModelConfig
from shapelint.dialects import extract
from shapelint.perf.workload import layer_plan
from shapelint.readers import parse

DEEPSPEED = """\
NUM_LAYERS={layers}
EP_SIZE=64
EP_PARALLEL_SIZE=8
megatron_options=" \\
        --moe-expert-parallel-size ${{EP_PARALLEL_SIZE}} \\
        --num-experts ${{EP_SIZE}} \\
        --moe-loss-coeff 0.01 \\
        --moe-train-capacity-factor 1.0 \\
        --num-layers ${{NUM_LAYERS}} \\
        --hidden-size 768 \\
        --num-attention-heads 12 \\
        --seq-length 2048 \\
        --micro-batch-size 4 {extra}"
run_cmd="deepspeed ${{DIR}}/../../pretrain_gpt.py ${{megatron_options}}"
eval ${{run_cmd}}
"""


def one(text: str) -> ModelConfig:
    (config,) = extract(parse("run.sh", text.encode(), "shell"))
    return config


def deepspeed(layers: int = 12, extra: str = "") -> ModelConfig:
    return one(DEEPSPEED.format(layers=layers, extra=extra))


def megatron(flags: str, layers: int = 12) -> ModelConfig:
    return one(
        f"torchrun pretrain_gpt.py --num-layers {layers} --hidden-size 2048 "
        f"--num-attention-heads 16 --seq-length 4096 --num-experts 8 {flags}\n"
    )


def test_megatron_deepspeed_moe_is_every_other_layer_top_1() -> None:
    config = deepspeed()
    assert (config.int(Dim.EXPERTS), config.int(Dim.EXPERTS_PER_TOKEN)) == (64, 1)
    plan = layer_plan(config)
    assert plan is not None and (plan.dense_layers, plan.moe_layers, plan.top_k) == (6, 6, 1)


def test_megatron_deepspeed_topk_and_interval_are_read() -> None:
    plan = layer_plan(deepspeed(extra="--topk 2 --expert-interval 1"))
    assert plan is not None and (plan.dense_layers, plan.moe_layers, plan.top_k) == (0, 12, 2)


def test_layers_not_a_multiple_of_the_interval_are_not_timed() -> None:
    config = deepspeed(layers=21)  # layers 2, 4, … 20: 10 MoE, which a frequency cannot say
    assert config.untimed and layer_plan(config) is None


def test_residual_moe_is_not_timed() -> None:
    config = deepspeed(extra="--mlp-type residual")
    assert "residual" in config.untimed and layer_plan(config) is None


def test_megatron_lm_defaults_to_top_2() -> None:
    config = megatron("--expert-model-parallel-size 4")
    assert config.int(Dim.EXPERTS_PER_TOKEN) == 2
    plan = layer_plan(config)
    assert plan is not None and (plan.moe_layers, plan.top_k) == (12, 2)


def test_a_layer_pattern_of_leading_dense_layers_is_read() -> None:
    config = megatron("--moe-router-topk 8 --moe-layer-freq \"'([0]*3+[1]*58)'\"", layers=61)
    plan = layer_plan(config)
    assert plan is not None and (plan.dense_layers, plan.moe_layers, plan.top_k) == (3, 58, 8)
    every = megatron("--moe-router-topk 2 --moe-layer-freq 2")
    assert every.int(Dim.MOE_LAYER_FREQ) == 2


def test_a_layer_pattern_no_frequency_describes_is_unknown() -> None:
    config = megatron("--moe-router-topk 2 --moe-layer-freq '([1]*3+[0]*1)*3'")
    freq = config.get(Dim.MOE_LAYER_FREQ)
    assert freq is not None and not freq.known
    assert layer_plan(config) is None  # not every layer MoE


def test_no_forks_flag_leaves_the_top_k_unknown() -> None:
    top_k = megatron("").get(Dim.EXPERTS_PER_TOKEN)
    assert top_k is not None and not top_k.known
