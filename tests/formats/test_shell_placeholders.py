"""Sizes of 1 that a Megatron program requires but builds no model from are placeholders.

Megatron's parser insists on --num-layers, --hidden-size and --num-attention-heads
(megatron/arguments.py:279-283 in microsoft/Megatron-DeepSpeed at f4157bea), so a data tool
(``examples_deepspeed/data_efficiency/gpt/ds_analyze_gpt_data_map.sh`` running
``analyze_data.py``, which builds no model) and a checkpoint converter
(alibaba/Pai-Megatron-Patch ``toolkits/model_checkpoints_convertor/llama/hf2mcore_convertor.sh``
at a098ca5a; ``hf2mcore.py:209-219`` takes the sizes from the HF config) pass 1s. Both scripts
below keep those files' structure and values; expected readings are by hand.
"""

from __future__ import annotations

import io
import json
from pathlib import Path

from shapelint.cli.main import main
from shapelint.core.model import Dim
from shapelint.dialects import extract
from shapelint.readers import parse

ANALYZE = """\
#!/bin/bash
num_workers=1
num_threads=40
worker_id=$1
seq_len=2048
batch_size=10000
options=" \\
    --analyzing-task map \\
    --analyzing-num-workers ${num_workers} \\
    --analyzing-worker-id ${worker_id} \\
    --tokenizer-type GPT2BPETokenizer \\
    --micro-batch-size ${batch_size} \\
    --global-batch-size ${batch_size} \\
    --seq-length ${seq_len} \\
    --max-position-embeddings ${seq_len} \\
    --num-layers 1 \\
    --hidden-size 1 \\
    --num-attention-heads 1 \\
    --split 949,50,1"

python ../analyze_data.py ${options} &> ${jobname}.log
"""

CONVERT = """\
torchrun ${DISTRIBUTED_ARGS} hf2mcore.py \\
    --load_path ${SOURCE_CKPT_PATH} \\
    --target_tensor_model_parallel_size ${TP} \\
    --micro-batch-size 1 \\
    --fp16 \\
    --swiglu \\
    --num-layers 1 \\
    --hidden-size 1 \\
    --ffn-hidden-size 1 \\
    --num-attention-heads 1 \\
    --max-position-embeddings 1 \\
    --seq-length 1 \\
    --use-rotary-position-embeddings
"""


def findings(tmp_path: Path, text: str) -> list[str]:
    path = tmp_path / "run.sh"
    path.write_text(text)
    out, err = io.StringIO(), io.StringIO()
    main([str(path), "--no-cache", "--format", "json"], out, err)
    return [f["code"] for f in json.loads(out.getvalue())["findings"]]


def test_a_data_tools_dummy_sizes_are_noticed_not_linted(tmp_path: Path) -> None:
    assert findings(tmp_path, ANALYZE) == ["SL009"]  # not SL102/SL103/SL104 on width 1
    (config,) = extract(parse("run.sh", ANALYZE.encode(), "shell"))
    assert config.int(Dim.HIDDEN) is None and config.int(Dim.HEAD_DIM) is None
    assert config.int(Dim.SEQ_LEN) == 2048  # written as a real value, kept


def test_a_converters_dummy_sizes_are_noticed_not_linted(tmp_path: Path) -> None:
    assert findings(tmp_path, CONVERT) == ["SL009"]
    (config,) = extract(parse("run.sh", CONVERT.encode(), "shell"))
    assert config.int(Dim.FFN) is None and config.int(Dim.SEQ_LEN) is None
    assert config.int(Dim.MICRO_BATCH) is None  # a converter's: it runs no training step


def test_one_layer_of_a_real_width_is_a_real_size() -> None:
    text = "torchrun pretrain_gpt.py --num-layers 1 --hidden-size 4096 --num-attention-heads 32\n"
    (config,) = extract(parse("run.sh", text.encode(), "shell"))
    assert (config.int(Dim.LAYERS), config.int(Dim.HIDDEN)) == (1, 4096)


# The structure of Pai-Megatron-Patch's toolkits/distributed_checkpoints_convertor/scripts/
# qwen3/run_8xH20.sh at a098ca5a: real sizes, a converter's dummy batch and sequence.
CONVERTER = """\
MODEL_PARALLEL_ARGS=(
    --tensor-model-parallel-size 1
)
MODEL_ARGS=(
    --num-layers 36
    --hidden-size 4096
    --ffn-hidden-size 12288
    --num-attention-heads 32
    --seq-length 1
    --max-position-embeddings 40960
)
TRAINING_ARGS=(
    --micro-batch-size 1
    --global-batch-size 1
)
cmd="torchrun ${DISTRIBUTED_ARGS[@]} impl/convert.py \\
    ${MODEL_ARGS[@]} ${TRAINING_ARGS[@]} ${MODEL_PARALLEL_ARGS[@]}"
eval $cmd
"""


def test_a_converters_run_sizes_are_unknown_its_shape_is_read() -> None:
    (config,) = extract(parse("run.sh", CONVERTER.encode(), "shell"))
    assert (config.int(Dim.HIDDEN), config.int(Dim.LAYERS), config.int(Dim.FFN)) == (
        4096,
        36,
        12288,
    )
    assert config.int(Dim.SEQ_LEN) is None and config.int(Dim.MICRO_BATCH) is None


def test_a_training_script_beside_a_converter_keeps_its_run_sizes() -> None:
    text = CONVERTER.replace("impl/convert.py", "pretrain_qwen.py")
    (config,) = extract(parse("run.sh", text.encode(), "shell"))
    assert config.int(Dim.SEQ_LEN) == 1 and config.int(Dim.MICRO_BATCH) == 1
