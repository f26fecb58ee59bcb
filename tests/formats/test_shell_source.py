"""Launch scripts that leave their flags to a file they source (issue 23, shell reading).

Modelled on Megatron-LM's ``examples/sc21`` (bigcode-project/Megatron-LM at 7c325cd3, also in
NVIDIA/Megatron-LM's ``examples/academic_paper_scripts/sc21``): each ``run_*.sh`` sets the
model's variables (``NLS``, ``HS``, ``NAH``, ``MBS``…), directly or in ``if [ ${MODEL_SIZE} ==
… ]`` arms, then runs ``. `pwd`/CONFIG.sh``, whose ``MEGATRON_PARAMS`` string turns them into
flags, and ``. `pwd`/SBATCH.sh``. Structure and values kept, paths shortened; expected values
written by hand from the fixtures.
"""

from __future__ import annotations

import io
import json
import os
from pathlib import Path

from shapelint.cli.main import main
from shapelint.engine import tree as tree_mod
from shapelint.engine.tree import TreeFiles, parse_in_tree

CONFIG = """\
#!/bin/bash

# Data and tokenizer files.
MEGATRON_DATA=<path to megatron processed data>
BPE_VOCAB_FILE=<path to bpe vocab file>

# Megatron input parameters.
# `MEGATRON_EXTRA_PARAMS` can be used to provide any extra parameters
# that are not listed here.
export MEGATRON_PARAMS=" ${MEGATRON_EXTRA_PARAMS} \\
\t--tensor-model-parallel-size ${TP} \\
\t--pipeline-model-parallel-size ${PP} \\
\t--micro-batch-size ${MBS} \\
\t--global-batch-size ${GBS} \\
        --num-layers ${NLS} \\
        --hidden-size ${HS} \\
        --num-attention-heads ${NAH} \\
\t--DDP-impl ${DDP} \\
\t--data-path ${MEGATRON_DATA} \\
        --seq-length 2048 \\
        --max-position-embeddings 2048 \\
        --fp16 \\
\t--loss-scale 8192 "
"""

SBATCH = """\
#!/bin/bash

sbatch -p ${SLURM_PARTITION} \\
       --job-name=${JOB_NAME} \\
       --nodes=${NNODES} \\
       --export=MEGATRON_CODE_DIR,MEGATRON_PARAMS,DOCKER_MOUNT_DIR SRUN.sh

exit 0
"""

SRUN = """\
#!/bin/bash
CMD="python -u ${MEGATRON_CODE_DIR}/pretrain_gpt.py ${MEGATRON_PARAMS}"
srun -l sh -c "${CMD}"
"""

FIGURE = """\
#!/bin/bash

# Pipeline-parallel size options = [1, 2, 4, 8].
PP=1

# Batch size (global batch size) options = [8, 128].
GBS=8

# Set pipeline-parallel size options.
NLS=$((3*PP))
NNODES=${PP}

# Other params.
TP=8
MBS=1
HS=20480
NAH=128
DDP=local
MEGATRON_EXTRA_PARAMS="--activations-checkpoint-method uniform "

# Name of the job.
export JOB_NAME=results_figure_11_pipeline_parallel_size_${PP}_batch_size_${GBS}

# Import the configs.
. `pwd`/CONFIG.sh

# Submit the job.
. `pwd`/SBATCH.sh

exit 0
"""

TABLE = """\
#!/bin/bash

# model size options = [1.7B, 3.6B]
MODEL_SIZE=$1

if [ ${MODEL_SIZE} == "1.7B" ]; then
    TP=1
    PP=1
    MBS=16
    GBS=512
    NLS=24
    HS=2304
    NAH=24
    DDP=torch
elif [ ${MODEL_SIZE} == "3.6B" ]; then
    TP=2
    PP=1
    MBS=16
    GBS=512
    NLS=30
    HS=3072
    NAH=32
    DDP=torch
else
    echo "Invalid configuration"
    exit 1
fi

export JOB_NAME=results_table_1_model_size_${MODEL_SIZE}

# Import the configs.
. `pwd`/CONFIG.sh

# Submit the job.
. `pwd`/SBATCH.sh

exit 0
"""


def project(root: Path, **scripts: str) -> Path:
    """A project tree (``setup.py`` at its root) with examples/sc21 holding ``scripts``."""
    root.mkdir(parents=True, exist_ok=True)
    (root / "setup.py").write_text("")
    sc21 = root / "examples" / "sc21"
    sc21.mkdir(parents=True)
    for name, text in {"CONFIG": CONFIG, "SBATCH": SBATCH, "SRUN": SRUN, **scripts}.items():
        (sc21 / f"{name}.sh").write_text(text)
    return sc21


def check(path: Path) -> dict[str, object]:
    out, err = io.StringIO(), io.StringIO()
    main(["check", "--format", "json", "--min-slowdown", "0", "--no-cache", str(path)], out, err)
    result = json.loads(out.getvalue())
    assert isinstance(result, dict)
    return result


def configs(path: Path) -> dict[str, dict[str, object]]:
    found = check(path)["configs"]
    assert isinstance(found, list)
    return {c["name"]: c["dims"] for c in found}


def test_a_sourced_file_turns_the_scripts_variables_into_flags(tmp_path: Path) -> None:
    sc21 = project(tmp_path, run_figure_11=FIGURE)
    script = sc21 / "run_figure_11.sh"
    doc = parse_in_tree(str(script), FIGURE.encode(), "shell")
    assert len(doc.candidates) == 1
    got = configs(script)
    assert list(got) == [""]
    dims = got[""]
    assert (dims["hidden"], dims["heads"], dims["tp"], dims["micro_batch"]) == (20480, 128, 8, 1)
    assert dims["seq_len"] == 2048 and dims["global_batch"] == 8  # CONFIG.sh's, and GBS
    assert "layers" not in dims  # NLS=$((3*PP)): arithmetic, not read
    # the file it rested on is recorded (the lint cache checks it)
    assert [Path(p).name for p, _, _ in doc.depends_on] == ["CONFIG.sh", "SBATCH.sh"]


def test_values_point_at_the_file_that_writes_them(tmp_path: Path) -> None:
    sc21 = project(tmp_path, run_figure_11=FIGURE)
    doc = parse_in_tree(str(sc21 / "run_figure_11.sh"), FIGURE.encode(), "shell")
    entries = {e.key: e.value for e in doc.candidates[0].root.entries}
    hidden, seq = entries["--hidden-size"], entries["--seq-length"]
    assert Path(hidden.span.path).name == "run_figure_11.sh"  # HS=20480, the script's
    assert FIGURE[hidden.span.start : hidden.span.end] == "20480" and hidden.shared
    assert Path(seq.span.path).name == "CONFIG.sh"
    assert CONFIG[seq.span.start : seq.span.end] == "2048"
    assert entries["--num-layers"].known is False


def test_each_size_arm_reads_the_sourced_file_with_its_values(tmp_path: Path) -> None:
    sc21 = project(tmp_path, run_table_1=TABLE)
    got = configs(sc21 / "run_table_1.sh")
    assert sorted(got) == ["MODEL_SIZE=1.7B", "MODEL_SIZE=3.6B"]
    small, large = got["MODEL_SIZE=1.7B"], got["MODEL_SIZE=3.6B"]
    assert (small["layers"], small["hidden"], small["heads"], small["tp"]) == (24, 2304, 24, 1)
    assert (large["layers"], large["hidden"], large["heads"], large["tp"]) == (30, 3072, 32, 2)
    assert small["micro_batch"] == large["micro_batch"] == 16


def test_a_size_the_script_assigns_reads_that_arm(tmp_path: Path) -> None:
    # The real run_table_1.sh assigns MODEL_SIZE=1.7B: the script runs that arm (a value the
    # script assigns picks its arm, as for a debug switch), read through CONFIG.sh.
    sc21 = project(tmp_path, run_table_1=TABLE.replace("MODEL_SIZE=$1", "MODEL_SIZE=1.7B"))
    got = configs(sc21 / "run_table_1.sh")
    assert list(got) == [""] and got[""]["hidden"] == 2304


def test_without_the_sourced_file_the_script_holds_no_flags(tmp_path: Path) -> None:
    sc21 = project(tmp_path, run_figure_11=FIGURE)
    (sc21 / "CONFIG.sh").unlink()
    assert configs(sc21 / "run_figure_11.sh") == {}


def test_nothing_outside_the_project_is_sourced(tmp_path: Path) -> None:
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    (outside / "CONFIG.sh").write_text(CONFIG)
    sc21 = project(
        tmp_path / "repo", run=FIGURE.replace("`pwd`/CONFIG.sh", "../../../elsewhere/CONFIG.sh")
    )
    assert configs(sc21 / "run.sh") == {}
    absolute = FIGURE.replace("`pwd`/CONFIG.sh", str(outside / "CONFIG.sh"))
    (sc21 / "abs.sh").write_text(absolute)
    assert configs(sc21 / "abs.sh") == {}
    # a symlink in the project to a file outside it is outside too
    os.symlink(outside / "CONFIG.sh", sc21 / "LINK.sh")
    (sc21 / "link.sh").write_text(FIGURE.replace("`pwd`/CONFIG.sh", "LINK.sh"))
    assert configs(sc21 / "link.sh") == {}


def test_a_file_sourcing_itself_is_read_once(tmp_path: Path) -> None:
    looped = CONFIG + ". `pwd`/CONFIG.sh\nsource ./LOOP.sh\n"
    sc21 = project(tmp_path, run=FIGURE)
    (sc21 / "CONFIG.sh").write_text(looped)
    (sc21 / "LOOP.sh").write_text("source CONFIG.sh\n. ./LOOP.sh\n")
    assert configs(sc21 / "run.sh")[""]["hidden"] == 20480


def test_the_number_of_files_read_is_bounded(tmp_path: Path) -> None:
    sc21 = project(tmp_path, run=FIGURE)
    files = TreeFiles(str(sc21 / "run.sh"))
    for k in range(tree_mod.MAX_FILES + 5):
        (sc21 / f"f{k}.sh").write_text("X=1\n")
        files.read(f"f{k}.sh", str(sc21 / "run.sh"))
    assert len(files.consulted) == tree_mod.MAX_FILES


def test_a_file_sourced_in_a_branch_sets_nothing_for_sure(tmp_path: Path) -> None:
    text = FIGURE.replace(
        ". `pwd`/CONFIG.sh", 'if [ "$USE_CONFIG" = 1 ]; then\n  . `pwd`/CONFIG.sh\nfi'
    )
    sc21 = project(tmp_path, run=text)
    dims = configs(sc21 / "run.sh")[""]
    assert "hidden" not in dims and "seq_len" not in dims  # the flags may not be passed


def test_a_changed_sourced_file_is_read_again_by_the_cache(tmp_path: Path) -> None:
    sc21 = project(tmp_path, run=FIGURE)
    script = str(sc21 / "run.sh")
    out = io.StringIO()
    main(["check", "--format", "json", script], out, io.StringIO())
    first = json.loads(out.getvalue())["configs"][0]["dims"]["seq_len"]
    config = sc21 / "CONFIG.sh"
    config.write_text(CONFIG.replace("--seq-length 2048", "--seq-length 4096"))
    st = config.stat()
    os.utime(config, ns=(st.st_atime_ns, st.st_mtime_ns + 10**9))
    out = io.StringIO()
    main(["check", "--format", "json", script], out, io.StringIO())
    assert (first, json.loads(out.getvalue())["configs"][0]["dims"]["seq_len"]) == (2048, 4096)
