"""Flags a launch script passes only in some branch, or with a value from ``$1``, are unknown:
no default (4 · hidden, KV heads = heads, the last precision written) stands in for them.

The scripts have the shape of alibaba/Pai-Megatron-Patch's ``examples/*/run_mcore_*.sh``:
precision options by ``$PR``, MoE options only for the ``8x7B`` ``$MODEL_SIZE``, sizes from
positional arguments. Expected values by hand: what the script does not fix is unknown.
"""

from __future__ import annotations

from shapelint.core.model import Dim, ModelConfig
from shapelint.dialects import extract
from shapelint.readers import parse

MODEL = "--hidden-size 4096 --num-attention-heads 32 --num-layers 32"


def one(text: str) -> ModelConfig:
    (config,) = extract(parse("run.sh", text.encode(), "shell"))
    return config


def test_a_precision_picked_by_branch_is_unknown() -> None:
    text = f"""\
if [ $PR = fp16 ]; then
    pr_options="--fp16"
elif [ $PR = bf16 ]; then
    pr_options="--bf16"
elif [ $PR = fp8 ]; then
    pr_options="--bf16 --fp8-format hybrid"
fi
torchrun pretrain_gpt.py {MODEL} --ffn-hidden-size 11008 ${{pr_options}}
"""
    dtype = one(text).get(Dim.DTYPE)
    assert dtype is not None and not dtype.known  # not "fp8", the last branch written
    assert one(text).int(Dim.FFN) == 11008


def test_moe_options_of_one_model_size_are_unknown() -> None:
    text = f"""\
if [ $MODEL_SIZE = 8x7B ]; then
    moe_options="--num-experts 8 --moe-router-topk 2"
fi
torchrun pretrain_gpt.py {MODEL} --ffn-hidden-size 14336 --swiglu ${{moe_options}}
"""
    config = one(text)
    assert config.int(Dim.EXPERTS) is None  # not 8: a 7B run has no experts
    assert config.int(Dim.FFN) == 14336


def test_sizes_from_arguments_are_not_replaced_by_defaults() -> None:
    text = f"""\
FFN=$1
torchrun pretrain_gpt.py {MODEL} --ffn-hidden-size $FFN --num-query-groups $3 \\
    --group-query-attention --bf16
"""
    config = one(text)
    assert config.int(Dim.FFN) is None  # not 4 · 4096
    assert config.int(Dim.KV_HEADS) is None  # not the 32 heads
    assert config.int(Dim.HIDDEN) == 4096


def test_moe_options_of_one_model_size_are_not_timed_as_dense() -> None:
    from shapelint.perf.workload import layer_plan

    text = f"""\
if [ $MODEL_SIZE = 8x7B ]; then
    moe_options="--num-experts 8 --moe-router-topk 2"
fi
torchrun pretrain_gpt.py {MODEL} --ffn-hidden-size 14336 --swiglu ${{moe_options}}
"""
    assert layer_plan(one(text)) is None  # 8 experts or none: either timing is a guess
