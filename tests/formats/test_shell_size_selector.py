"""A launch script that picks its model size by a variable it is given is read once per size.

The fixtures have the structure and values of alibaba/Pai-Megatron-Patch's scripts at
a098ca5a (``examples/baichuan/run_ds_train_huggingface_baichuan.sh``: ``MODEL_SIZE=$2``, then
``if [ $MODEL_SIZE = 7B ]; then … elif [ $MODEL_SIZE = 13B ]; then … fi``; ``examples/gpt3/
run_pretrain_megatron_gpt3.sh``, whose 13B arm states ``HIDDEN_SIZE=5140`` with 40 heads;
``examples/deepspeed/run_ds_train_huggingface_finetune.sh``, whose argument parser sets
``MODEL_SIZE=$1`` after ``MODEL_SIZE=""``). Expected values are the literals of each arm,
written here.
"""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

from shapelint.cli.main import main
from shapelint.core.model import Dim, ModelConfig
from shapelint.dialects import extract
from shapelint.readers import parse

BAICHUAN = """\
#!/bin/bash
MODEL_SIZE=$2
MICRO_BATCH_SIZE=$3
SEQ_LEN=$6

if [ $MODEL_SIZE = 7B ]; then

NUM_LAYERS=32
HIDDEN_SIZE=4096
NUM_ATTN_HEADS=32
INTERMEDIATE_SIZE=11008

elif [ $MODEL_SIZE = 13B ]; then

NUM_LAYERS=40
HIDDEN_SIZE=5120
NUM_ATTN_HEADS=40
INTERMEDIATE_SIZE=13696

fi

if [ $PR = fp16 ]; then
    pr_options="--fp16"
elif [ $PR = bf16 ]; then
    pr_options="--bf16"
fi

megatron_options="  \\
        --num-layers ${NUM_LAYERS} \\
        --hidden-size ${HIDDEN_SIZE} \\
        --num-attention-heads ${NUM_ATTN_HEADS} \\
        --intermediate-size ${INTERMEDIATE_SIZE} \\
        --seq-length ${SEQ_LEN} \\
        --micro-batch-size ${MICRO_BATCH_SIZE}"

run_cmd="torchrun pretrain_megatron_baichuan.py ${megatron_options} ${pr_options}"
eval ${run_cmd}
"""


def configs(text: str, path: str = "run.sh") -> dict[str, ModelConfig]:
    doc = parse(path, text.encode(), "shell")
    return {c.name: c for c in extract(doc)}


def dims(config: ModelConfig) -> tuple[int | None, ...]:
    return tuple(config.int(d) for d in (Dim.LAYERS, Dim.HIDDEN, Dim.HEADS, Dim.FFN))


def check(tmp_path: Path, text: str) -> dict[str, Any]:
    path = tmp_path / "run.sh"
    path.write_text(text)
    out, err = io.StringIO(), io.StringIO()
    main(["check", str(path), "--no-cache", "--exit-zero", "--format", "json"], out, err)
    return dict(json.loads(out.getvalue()))


def test_one_config_per_size_the_script_tests() -> None:
    got = configs(BAICHUAN)
    assert sorted(got) == ["MODEL_SIZE=13B", "MODEL_SIZE=7B"]
    assert dims(got["MODEL_SIZE=7B"]) == (32, 4096, 32, 11008)
    assert dims(got["MODEL_SIZE=13B"]) == (40, 5120, 40, 13696)
    # Pai's --intermediate-size is the MLP width; gated or not is the model file's.
    assert got["MODEL_SIZE=7B"].gated_mlp is None
    # A precision picked by another variable ($PR) is still unknown, not the last one written.
    assert (
        got["MODEL_SIZE=7B"].get(Dim.DTYPE) is None
        or not got["MODEL_SIZE=7B"].dims[Dim.DTYPE].known
    )


def test_a_finding_points_at_the_arm_of_its_size(tmp_path: Path) -> None:
    # Pai's gpt3 script: the 13B arm's 5140 is not divisible by its 40 heads (as upstream).
    text = BAICHUAN.replace("HIDDEN_SIZE=5120", "HIDDEN_SIZE=5140")
    found = check(tmp_path, text)
    sl003 = [f for f in found["findings"] if f["code"] == "SL003"]
    assert len(sl003) == 1
    line = text.splitlines()[sl003[0]["line"] - 1]
    assert line.startswith(("HIDDEN_SIZE=5140", "NUM_ATTN_HEADS=40"))
    assert {c["name"] for c in found["configs"]} == {"MODEL_SIZE=7B", "MODEL_SIZE=13B"}
    # Understood, but for the micro-batch, a positional parameter ($3): one notice says so.
    notices = [f["message"] for f in found["findings"] if f["code"] == "SL009"]
    assert len(notices) == 1 and notices[0].startswith("batch not understood")


def test_a_size_the_script_assigns_picks_one_arm() -> None:
    text = BAICHUAN.replace("MODEL_SIZE=$2", "MODEL_SIZE=13B")
    got = configs(text)
    assert list(got) == [""]  # no choice left to name
    assert dims(got[""]) == (40, 5120, 40, 13696)
    default = BAICHUAN.replace("MODEL_SIZE=$2", "MODEL_SIZE=${MODEL_SIZE:-7B}")
    assert dims(configs(default)[""]) == (32, 4096, 32, 11008)


def test_an_argument_parser_gives_the_size() -> None:
    parser = """\
MODEL_SIZE=""
while [[ "$1" != "" ]]; do
    case $1 in
        --model-size )
            shift
            MODEL_SIZE=$1
            ;;
    esac
    shift
done
"""
    got = configs(BAICHUAN.replace("MODEL_SIZE=$2\n", parser))
    assert sorted(got) == ["MODEL_SIZE=13B", "MODEL_SIZE=7B"]


def test_sizes_that_no_reader_can_pick_stay_unknown() -> None:
    # Set in a branch of another test, or twice: which value runs is not for a reader to say.
    twice = BAICHUAN.replace("MODEL_SIZE=$2", "MODEL_SIZE=7B\nMODEL_SIZE=13B")
    branch = BAICHUAN.replace("MODEL_SIZE=$2", "if [ $X = y ]; then MODEL_SIZE=7B; fi")
    # A chain whose tests are not plain string tests of one variable is not resolved.
    numeric = BAICHUAN.replace("[ $MODEL_SIZE = 7B ]", "[ $MODEL_SIZE -eq 7 ]")
    pattern = BAICHUAN.replace("[ $MODEL_SIZE = 13B ]", "[[ $MODEL_SIZE == 13* ]]")
    for text in (twice, branch, numeric, pattern):
        got = configs(text)
        assert list(got) == [""]
        assert got[""].int(Dim.HIDDEN) is None
        assert got[""].int(Dim.LAYERS) is None


def test_an_else_arm_runs_for_the_value_no_test_names() -> None:
    text = BAICHUAN.replace("elif [ $MODEL_SIZE = 13B ]; then", "else")
    got = configs(text.replace("MODEL_SIZE=$2", "MODEL_SIZE=13B"))
    assert dims(got[""]) == (40, 5120, 40, 13696)
    # Given by the run, only the tested value is read (the else arm has no name to give).
    assert list(configs(text)) == ["MODEL_SIZE=7B"]


def test_megatron_ffn_hidden_size_wins_over_the_fork_flag() -> None:
    text = BAICHUAN.replace(
        "--intermediate-size ${INTERMEDIATE_SIZE}",
        "--ffn-hidden-size 16384 --intermediate-size ${INTERMEDIATE_SIZE} --swiglu",
    )
    got = configs(text)["MODEL_SIZE=7B"]
    assert got.int(Dim.FFN) == 16384
    assert got.gated_mlp is True
