"""Shell scripts that keep their flags in option strings, and set shapes in branches.

Modelled on microsoft/Megatron-DeepSpeed's ``examples/pretrain_gpt.sh``,
``examples_deepspeed/MoE/ds_pretrain_gpt_125M_MoE64.sh``,
``examples_deepspeed/curriculum_learning/ds_pretrain_gpt2.sh`` and
``examples_deepspeed/universal_checkpointing/megatron_gpt/run_bf16.sh``, and on
bigscience-workshop/bigscience's ``train/tr11-176B-ml/tr11-176B-ml.slurm`` (structure and
values only). Expected values are written by hand from each script in the test.
"""

from __future__ import annotations

import io
from pathlib import Path

from shapelint import dialects
from shapelint.cli.main import main
from shapelint.core.model import Dim, ModelConfig
from shapelint.core.source import Mapping, Scalar
from shapelint.readers import parse


def flags(text: str) -> dict[str, Scalar]:
    doc = parse("train.sh", text.encode(), "shell")
    assert len(doc.candidates) == 1
    root = doc.candidates[0].root
    assert isinstance(root, Mapping)
    out = {}
    for entry in root.entries:
        assert isinstance(entry.value, Scalar)
        out[entry.key] = entry.value
    return out


def one(text: str) -> ModelConfig:
    found = dialects.extract(parse("train.sh", text.encode(), "shell"))
    assert len(found) == 1
    return found[0]


# Megatron-DeepSpeed examples/pretrain_gpt.sh: a newline inside the string, no backslash on
# its first line, then `\` continuations; the launcher gets $GPT_ARGS unquoted.
PRETRAIN_GPT = """\
#!/bin/bash
GPT_ARGS="
    --num-layers 24 \\
    --hidden-size 1024 \\
    --num-attention-heads 16 \\
    --seq-length 1024 \\
    --max-position-embeddings 1024 \\
    --micro-batch-size 4 \\
    --global-batch-size 8 \\
    --lr 0.00015 \\
    --fp16
"
DATA_ARGS="
    --data-path $DATA_PATH \\
    --split 949,50,1
"
torchrun pretrain_gpt.py \\
    $GPT_ARGS \\
    $DATA_ARGS \\
    --save $CHECKPOINT_PATH
"""


def test_flags_inside_a_double_quoted_option_string_are_read() -> None:
    config = one(PRETRAIN_GPT)
    assert config.dialect == "megatron-lm"
    assert config.int(Dim.LAYERS) == 24 and config.int(Dim.HIDDEN) == 1024
    assert config.int(Dim.HEADS) == 16 and config.int(Dim.SEQ_LEN) == 1024
    assert config.int(Dim.MICRO_BATCH) == 4 and config.int(Dim.GLOBAL_BATCH) == 8
    assert config.int(Dim.FFN) == 4 * 1024  # no --ffn-hidden-size, no --swiglu: 4·h
    assert config.int(Dim.HEAD_DIM) == 1024 // 16
    got = flags(PRETRAIN_GPT)
    assert got["--fp16"].value is True  # the last word of the string is a switch
    assert not got["--data-path"].known  # $DATA_PATH is set nowhere in the script
    hidden = got["--hidden-size"].span
    assert PRETRAIN_GPT[hidden.start : hidden.end] == "1024" and hidden.line == 4


# BigScience tr11-176B-ml.slurm: variables set above, expanded inside the string where it is
# assigned; the parallel sizes on the launch line.
BLOOM = """\
TP_SIZE=4
PP_SIZE=12
MICRO_BATCH_SIZE=2  # was MBS=1 till GBS=784
NHIDDEN=14336
NLAYERS=70
NHEADS=112
SEQ_LEN=2048
GPT_ARGS=" \\
    --pp-partition-method 'type:transformer|embedding' \\
    --num-layers $NLAYERS \\
    --hidden-size $NHIDDEN \\
    --num-attention-heads $NHEADS \\
    --seq-length $SEQ_LEN \\
    --micro-batch-size $MICRO_BATCH_SIZE \\
    --rampup-batch-size 192 16 9_765_625 \\
    --bf16 \\
    "
export LAUNCHER="python -u -m torch.distributed.run --nproc_per_node 8"
export CMD=" \\
    `pwd`/pretrain_gpt.py \\
    --tensor-model-parallel-size $TP_SIZE \\
    --pipeline-model-parallel-size $PP_SIZE \\
    $GPT_ARGS \\
    "
"""


def test_variables_in_an_option_string_resolve_where_it_is_assigned() -> None:
    config = one(BLOOM)
    assert (config.int(Dim.HIDDEN), config.int(Dim.LAYERS), config.int(Dim.HEADS)) == (
        14336,
        70,
        112,
    )
    assert config.int(Dim.HEAD_DIM) == 128  # 14336 / 112, by hand
    assert config.int(Dim.SEQ_LEN) == 2048 and config.int(Dim.MICRO_BATCH) == 2
    assert config.int(Dim.TP) == 4 and config.int(Dim.PP) == 12
    hidden = flags(BLOOM)["--hidden-size"]
    assert hidden.shared and BLOOM[hidden.span.start : hidden.span.end] == "14336"


def test_an_appended_option_string_adds_its_flags() -> None:
    # MoE/ds_pretrain_gpt_125M_MoE64.sh grows megatron_options in steps.
    text = """\
NUM_LAYERS=12
HIDDEN_SIZE=768
NUM_ATTN_HEADS=12
EP_SIZE=64
megatron_options=" \\
        --num-layers ${NUM_LAYERS} \\
        --hidden-size ${HIDDEN_SIZE} \\
        --num-attention-heads ${NUM_ATTN_HEADS}"
megatron_options="${megatron_options} \\
        --num-experts ${EP_SIZE}"
run_cmd="deepspeed pretrain_gpt.py ${megatron_options} &> log.txt"
"""
    config = one(text)
    assert (config.int(Dim.LAYERS), config.int(Dim.HIDDEN)) == (12, 768)
    assert config.int(Dim.EXPERTS) == 64


def test_a_single_quoted_option_string_leaves_its_variables_unknown() -> None:
    # '…' expands $H where the string is used, which a reader in order cannot see.
    got = flags("H=1024\nARGS='--hidden-size $H --num-layers 24'\nH=2048\npython t.py $ARGS\n")
    assert not got["--hidden-size"].known
    assert got["--num-layers"].value == 24


def test_sizes_chosen_in_branches_are_unknown() -> None:
    # curriculum_learning/ds_pretrain_gpt2.sh: the size comes from MODEL_SIZE, set elsewhere.
    text = """\
if [[ $MODEL_SIZE -eq 117 ]]; then
        NUM_LAYERS=12
        HIDDEN_SIZE=768
        NUM_ATTN_HEADS=12
elif [[ $MODEL_SIZE -eq 1558 ]]; then
        NUM_LAYERS=48
        HIDDEN_SIZE=1600
        NUM_ATTN_HEADS=25
else
        echo "Model size not supported."
        exit 1
fi
SEQ=1024
gpt_options=" \\
        --num-layers $NUM_LAYERS \\
        --hidden-size $HIDDEN_SIZE \\
        --num-attention-heads $NUM_ATTN_HEADS \\
        --seq-length $SEQ"
deepspeed pretrain_gpt2.py $gpt_options
"""
    got = flags(text)
    assert not got["--num-layers"].known and not got["--hidden-size"].known
    assert not got["--num-attention-heads"].known
    assert got["--seq-length"].value == 1024


def test_a_switch_the_script_sets_picks_its_branch(tmp_path: Path) -> None:
    # universal_checkpointing/megatron_gpt/run_bf16.sh: a debug switch, set to 1 in the
    # script, picks the size. The script as written runs the DEBUG_MODE == 1 arm; HEADS,
    # changed under a test that is not a plain string test (-gt), stays unknown.
    text = """\
DEBUG_MODE={mode}
if [[ $DEBUG_MODE == 1 ]]; then
        LAYERS=4
        HIDDEN=512
        SEQ=512
else
        HIDDEN=1024
        LAYERS=24
        SEQ=1024
fi
HEADS=16
TP=1
if [ $TP -gt 1 ]; then HEADS=32; fi
options=" \\
        --tensor-model-parallel-size $TP \\
        --num-layers $LAYERS \\
        --hidden-size $HIDDEN \\
        --num-attention-heads $HEADS \\
        --seq-length $SEQ"
deepspeed pretrain_gpt.py ${{options}}
"""
    debug = flags(text.format(mode=1))
    assert [debug[f].value for f in ("--num-layers", "--hidden-size", "--seq-length")] == [
        4,
        512,
        512,
    ]
    assert not debug["--num-attention-heads"].known
    assert debug["--tensor-model-parallel-size"].value == 1  # set once, outside any branch
    big = flags(text.format(mode=0))
    assert [big[f].value for f in ("--num-layers", "--hidden-size", "--seq-length")] == [
        24,
        1024,
        1024,
    ]
    # The value's span is the assignment in the arm that runs.
    assert big["--hidden-size"].span.line == 7
    path = tmp_path / "run_bf16.sh"
    path.write_text(text.format(mode=1))
    out, err = io.StringIO(), io.StringIO()
    main(["check", "--no-cache", str(path)], out, err)
    assert "SL102" not in out.getvalue()  # no head dim from an unknown head count


def test_a_top_level_reassignment_still_counts_and_a_loop_variable_does_not() -> None:
    text = """\
HIDDEN=1024
HIDDEN=2048
LAYERS=12
for LAYERS in 24 48; do echo $LAYERS; done
SEQ=$1
python pretrain_gpt.py --hidden-size $HIDDEN --num-layers $LAYERS \\
    --num-attention-heads 16 --seq-length ${SEQ:-2048}
"""
    got = flags(text)
    assert got["--hidden-size"].value == 2048  # the script runs both lines, in order
    assert not got["--num-layers"].known  # whatever the loop left
    assert not got["--seq-length"].known  # $1, not the default


def test_megatron_deepspeeds_kv_heads_flag_is_read() -> None:
    # examples_deepspeed/pretrain_llama2_distributed.sh: GQA with --num-key-value-heads and no
    # --group-query-attention (Megatron-DeepSpeed's arguments.py:623); it was read as 16.
    text = """\
HIDDEN_SIZE=2048 # e.g. llama-13b: 5120
FFN_HIDDEN_SIZE=5504 # e.g. llama-13b: 13824
NUM_LAYERS=24 # e.g. llama-13b: 40
NUM_HEADS=16 # e.g. llama-13b: 40
NUM_KV_HEADS=4 # llama2 70B uses GQA
torchrun $DISTRIBUTED_ARGS \\
       pretrain_gpt.py \\
       --num-layers $NUM_LAYERS \\
       --hidden-size $HIDDEN_SIZE \\
       --ffn-hidden-size $FFN_HIDDEN_SIZE \\
       --num-attention-heads $NUM_HEADS \\
       --swiglu \\
       --num-key-value-heads $NUM_KV_HEADS \\
       $ds_args
"""
    config = one(text)
    assert config.int(Dim.KV_HEADS) == 4
    assert config.int(Dim.HEADS) == 16 and config.int(Dim.HEAD_DIM) == 2048 // 16
    assert config.int(Dim.FFN) == 5504
    # Without the flag Megatron-DeepSpeed uses one KV head per head (arguments.py:444-445).
    plain = one(text.replace("       --num-key-value-heads $NUM_KV_HEADS \\\n", ""))
    assert plain.get(Dim.KV_HEADS) is None or plain.int(Dim.KV_HEADS) == 16


def test_a_walk_reads_slurm_batch_scripts(tmp_path: Path) -> None:
    # BigScience's train/tr*/ scripts are SLURM batch files (#SBATCH lines, then bash); a
    # walk skipped them all, silently.
    (tmp_path / "tr11-176B-ml.slurm").write_text(
        "#!/bin/bash\n#SBATCH --job-name=tr11-176B-ml\n#SBATCH --nodes=24\n"
        + BLOOM.replace("NHEADS=112", "NHEADS=100")
    )
    out, err = io.StringIO(), io.StringIO()
    main(["check", "--no-cache", "--select", "SL003", str(tmp_path)], out, err)
    assert "tr11-176B-ml.slurm" in out.getvalue() and "SL003" in out.getvalue()  # 14336 % 100


def test_a_per_layer_expert_list_is_unknown_not_a_string() -> None:
    # MoE/ds_pretrain_gpt_1.3B_PR-MoE64or128.sh: --num-experts takes one count per layer
    # group (nargs='+', Megatron-DeepSpeed arguments.py:608); $EP_SIZE splits into 12 words.
    text = """\
NUM_LAYERS=24
HIDDEN_SIZE=2048
NUM_ATTN_HEADS=16
EP_SIZE="64 64 64 64 64 64 64 64 64 64 128 128"
megatron_options=" \\
        --num-layers ${NUM_LAYERS} \\
        --hidden-size ${HIDDEN_SIZE} \\
        --num-attention-heads ${NUM_ATTN_HEADS} \\
        --num-experts ${EP_SIZE}"
deepspeed pretrain_gpt.py ${megatron_options}
"""
    got = flags(text)
    assert not got["--num-experts"].known
    config = one(text)
    experts = config.get(Dim.EXPERTS)
    assert config.int(Dim.HIDDEN) == 2048 and experts is not None and not experts.known
    # Quoted, the list is one argument: still a value (a string SL002 can name).
    quoted = 'EP_SIZE="64 128"\npython pretrain_gpt.py --num-layers 24 --num-experts "$EP_SIZE"\n'
    assert flags(quoted)["--num-experts"].value == "64 128"


def test_dummy_sizes_of_an_eval_harness_script_are_unknown(tmp_path: Path) -> None:
    # MoE/ds_evalharness.sh: "Dummy arguments to make megatron happy ... the eval framework
    # will read the arguments from checkpoint file"; they were four SL002 errors.
    text = """\
MEGATRON_REQUIRED_ARGS="\\
    --num-layers -1\\
    --hidden-size -1\\
    --num-attention-heads -1\\
    --seq-length -1 \\
    --max-position-embeddings -1
"
CMD="../../tasks/eval_harness/evaluate.py \\
    --load $CHECKPOINT_PATH\\
    --tensor-model-parallel-size 1 \\
    --micro-batch-size 12\\
    $MEGATRON_REQUIRED_ARGS\\
    "
deepspeed --num_gpus 1 $CMD
"""
    assert flags(text)["--hidden-size"].value == -1  # the reader keeps what is written
    path = tmp_path / "ds_evalharness.sh"
    path.write_text(text)
    out, err = io.StringIO(), io.StringIO()
    main(["check", "--no-cache", str(path)], out, err)
    report = out.getvalue()
    assert "SL002" not in report
    assert "SL009" in report and "--hidden-size = -1" in report


def _codes(tmp_path: Path, text: str) -> list[str]:
    path = tmp_path / "tr11-176B-ml.slurm"
    path.write_text(text)
    out, err = io.StringIO(), io.StringIO()
    main(["check", "--no-cache", "--select", "SL303", str(path)], out, err)
    return [line.split()[1] for line in out.getvalue().splitlines() if ": SL" in line]


def test_deepspeed_pipelines_size_their_own_stages(tmp_path: Path) -> None:
    # BLOOM 176B trained 70 layers on 12 pipeline stages with --deepspeed: Megatron-DeepSpeed
    # hands the layers to DeepSpeed's PipelineModule (GPTModelPipe), which asserts no even
    # split; only its non-pipe ParallelTransformer does (transformer.py:1613-1614).
    launch = 'DEEPSPEED_ARGS=" \\\n    --deepspeed \\\n    --deepspeed_config ds.json \\\n    "\n'
    text = BLOOM + launch + "python pretrain_gpt.py $GPT_ARGS $DEEPSPEED_ARGS\n"
    assert 70 % 12 != 0
    assert _codes(tmp_path, text) == []
    assert _codes(tmp_path, BLOOM) == ["SL303"]  # no --deepspeed: Megatron's own split
    no_pipe = text.replace("--deepspeed \\", "--deepspeed --no-pipeline-parallel \\")
    assert _codes(tmp_path, no_pipe) == ["SL303"]  # GPTModel: the assert applies again


def test_bigscience_fork_padded_vocab_and_glu_flags() -> None:
    # BigScience's Megatron-DeepSpeed fork (8387ae17): --pad-vocab-size-to is the padded vocab
    # (tokenizer.py:72-82); --glu-activation makes the first MLP projection 2 · ffn wide
    # (transformer.py:73-76) while the width still defaults to 4 · hidden (arguments.py:243-244).
    # tr11-176B-ml.slurm pads to 250880; tr9-glu/tr9-1B3-modeling-swiglu.slurm sets 5456.
    config = one(
        BLOOM.replace("    --bf16 \\\n", "    --bf16 \\\n    --pad-vocab-size-to 250880 \\\n")
    )
    assert config.int(Dim.PADDED_VOCAB) == 250880
    assert config.int(Dim.FFN) == 4 * 14336 and not config.gated_mlp
    glu = BLOOM.replace("    --bf16 \\\n", "    --bf16 \\\n    --glu-activation swiglu \\\n")
    config = one(glu)
    assert config.gated_mlp is True
    assert config.int(Dim.FFN) == 4 * 14336  # not Megatron's --swiglu 2/3 formula (38208)
    stated = one(glu.replace("    --bf16 \\\n", "    --bf16 \\\n    --ffn-hidden-size 5456 \\\n"))
    assert stated.int(Dim.FFN) == 5456 and stated.gated_mlp is True


def test_a_flag_appended_in_a_branch_is_unknown(tmp_path: Path) -> None:
    # MoE/ds_pretrain_gpt_6.7B_dense.sh adds --no-pipeline-parallel only when EP_SIZE > 1;
    # whether Megatron-DeepSpeed runs DeepSpeed's pipeline (no even-split assert) is then
    # unknown, so SL303 does not claim a refusal for 70 layers on 12 stages.
    text = (
        BLOOM
        + 'deepspeed_options=" \\\n    --deepspeed \\\n    --deepspeed_config ds.json"\n'
        + "if [[ $EP_SIZE -gt 1 ]]; then\n"
        + 'deepspeed_options="${deepspeed_options} \\\n        --no-pipeline-parallel"\n'
        + "fi\n"
        + "python pretrain_gpt.py $GPT_ARGS $deepspeed_options\n"
    )
    got = flags(text)
    assert not got["--no-pipeline-parallel"].known
    assert got["--deepspeed"].value is True  # set outside the branch
    assert _codes(tmp_path, text) == []
    # Outside a branch the append is a plain flag: GPTModel, Megatron's even split.
    plain = text.replace("if [[ $EP_SIZE -gt 1 ]]; then\n", "").replace("fi\n", "")
    assert flags(plain)["--no-pipeline-parallel"].value is True
    assert _codes(tmp_path, plain) == ["SL303"]
