"""Shell values as the shell gives them: option strings written as several quoted parts, and
defaults of variables a run is given (issue 23, shell reading).

``MODEL_ARGS="--tokenizer-model "$TOK" --num-layers 24"`` is one string: the shell joins the
quoted parts and the unquoted ``$TOK`` between them into one assignment (no word splitting in
an assignment), so every flag of it counts. ``--micro-batch-size ${MBS:-4}`` after
``MBS=${10}`` is the tenth argument of the run: unknown, neither 4 nor a built-in default
(bigcode-project/Megatron-LM ``tests/functional_tests/test_scripts/gpt3/
pretrain_gpt3_distributed_test.sh`` at 7c325cd3, structure kept).
"""

from __future__ import annotations

from shapelint import dialects
from shapelint.core.model import Dim, ModelConfig
from shapelint.core.source import Mapping, Scalar
from shapelint.readers import parse


def flags(text: str) -> dict[str, Scalar]:
    doc = parse("train.sh", text.encode(), "shell")
    assert len(doc.candidates) == 1
    root = doc.candidates[0].root
    assert isinstance(root, Mapping)
    return {e.key: e.value for e in root.entries if isinstance(e.value, Scalar)}


def one(text: str) -> ModelConfig:
    found = dialects.extract(parse("train.sh", text.encode(), "shell"))
    assert len(found) == 1
    return found[0]


NESTED = """\
#!/bin/bash
TOKENIZER_MODEL=/data/tokenizer.model
NUM_LAYERS=32
MODEL_ARGS="--num-layers ${NUM_LAYERS} \\
    --tokenizer-type SentencePieceTokenizer --tokenizer-model "$TOKENIZER_MODEL" \\
    --hidden-size 4096 --num-attention-heads 32 \\
    --data-path "${DATA_ROOT}"/pile_text_document \\
    --seq-length 4096 --swiglu"
torchrun pretrain_gpt.py $MODEL_ARGS --micro-batch-size 1
"""


def test_an_option_string_with_a_quoted_variable_inside_keeps_its_flags() -> None:
    got = flags(NESTED)
    # flags after the inner "$TOKENIZER_MODEL" were lost before: the string was not one
    # quoted string, so none of its flags counted
    assert got["--hidden-size"].value == 4096 and got["--num-attention-heads"].value == 32
    assert got["--seq-length"].value == 4096 and got["--swiglu"].value is True
    assert got["--num-layers"].value == 32
    assert got["--tokenizer-model"].value == "/data/tokenizer.model"
    assert not got["--data-path"].known  # $DATA_ROOT is set nowhere
    hidden = got["--hidden-size"].span
    assert NESTED[hidden.start : hidden.end] == "4096" and hidden.line == 6
    config = one(NESTED)
    assert config.int(Dim.FFN) == int((4 * 4096 * 2 / 3) / 64) * 64  # --swiglu's width


def test_single_quoted_parts_expand_where_the_string_is_used() -> None:
    text = """\
HIDDEN=1024
ARGS='--num-layers $LAYERS --hidden-size '"$HIDDEN"' --num-attention-heads 16'
torchrun pretrain_gpt.py $ARGS
"""
    got = flags(text)
    assert not got["--num-layers"].known  # $LAYERS stays literal in single quotes
    assert got["--hidden-size"].value == 1024  # "$HIDDEN" expands at the assignment
    assert got["--num-attention-heads"].value == 16


POSITIONAL = """\
#! /bin/bash

DATA_PATH=$1
CHECKPOINT_PATH=$2
TP_SIZE=$5
PP_SIZE=$6
MAX_STEPS=$8
VP_SIZE=$9
MBS=${10}
GBS=${11}
GPUS_PER_NODE=8

torchrun $DISTRIBUTED_ARGS \\
       pretrain_gpt.py \\
       --num-layers 12 \\
       --hidden-size 512 \\
       --num-attention-heads 8 \\
       --micro-batch-size ${MBS:-4} \\
       --global-batch-size ${GBS:-32} \\
       --seq-length 1024 \\
       --max-position-embeddings 1024 \\
       --train-iters $MAX_STEPS \\
       --tensor-model-parallel-size $TP_SIZE \\
       --pipeline-model-parallel-size $PP_SIZE \\
       ${VP_SIZE:+--num-layers-per-virtual-pipeline-stage "$VP_SIZE"}
"""


def test_a_default_of_a_positional_parameter_is_unknown() -> None:
    got = flags(POSITIONAL)
    micro, global_batch = got["--micro-batch-size"], got["--global-batch-size"]
    assert not micro.known and micro.value is None  # ${10}: the run's, not 4
    assert micro.expression == "${MBS:-4}"
    assert not global_batch.known
    config = one(POSITIONAL)
    stated = config.get(Dim.MICRO_BATCH)
    assert stated is not None and not stated.known  # stated, so no default stands in for it
    assert config.int(Dim.MICRO_BATCH) is None


def test_a_default_of_an_unset_variable_is_the_default() -> None:
    # with no assignment at all, the script runs with the default unless the environment
    # sets it (the reader's rule since the option strings were read)
    text = POSITIONAL.replace("MBS=${10}\n", "")
    assert flags(text)["--micro-batch-size"].value == 4
