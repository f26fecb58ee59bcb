"""Shell launch scripts: Megatron-LM flags read as a shell splits them, never run.

Expected values are written by hand from each script in the test.
"""

from __future__ import annotations

import io
from pathlib import Path

from shapelint import dialects
from shapelint.cli.main import main
from shapelint.core.model import Dim, ModelConfig
from shapelint.core.source import Mapping, Scalar
from shapelint.readers import parse

SCRIPT = """\
#!/bin/bash
# GPT-3 175B as Megatron-LM's example writes it
export CUDA_DEVICE_MAX_CONNECTIONS=1
HIDDEN=${HIDDEN:-12288}
TP=8

GPT_MODEL_ARGS=(
    --num-layers 96
    --hidden-size $HIDDEN
    --num-attention-heads "96"
    --seq-length 2048  # tokens
    --swiglu
)

torchrun --nproc_per_node 8 pretrain_gpt.py \\
    ${GPT_MODEL_ARGS[@]} \\
    --tensor-model-parallel-size ${TP} \\
    --micro-batch-size=2 --bf16 \\
    --vocab-size 50257
"""


def doc(text: str):  # type: ignore[no-untyped-def]
    return parse("train.sh", text.encode(), "shell")


def flags(text: str) -> dict[str, Scalar]:
    d = doc(text)
    assert len(d.candidates) == 1
    root = d.candidates[0].root
    assert isinstance(root, Mapping)
    out = {}
    for entry in root.entries:
        assert isinstance(entry.value, Scalar)
        out[entry.key] = entry.value
    return out


def one(text: str) -> ModelConfig:
    found = dialects.extract(doc(text))
    assert len(found) == 1
    return found[0]


def test_flags_values_switches_and_variables() -> None:
    got = flags(SCRIPT)
    assert got["--num-layers"].value == 96
    assert got["--num-attention-heads"].value == 96  # quotes removed
    assert got["--seq-length"].value == 2048  # the comment is not a value
    assert got["--swiglu"].value is True and got["--bf16"].value is True
    assert got["--micro-batch-size"].value == 2  # --flag=value
    assert got["--nproc_per_node"].value == 8
    # $HIDDEN: the default of HIDDEN=${HIDDEN:-12288}, at the assignment, shared by its uses.
    hidden = got["--hidden-size"]
    assert hidden.value == 12288 and hidden.shared
    assert SCRIPT[hidden.span.start : hidden.span.end] == "12288"
    assert hidden.span.line == 4
    assert got["--tensor-model-parallel-size"].value == 8  # ${TP}


def test_megatron_reads_the_script() -> None:
    config = one(SCRIPT)
    assert config.dialect == "megatron-lm"
    values = {d: config.int(d) for d in config.dims if config.int(d) is not None}
    assert values[Dim.HIDDEN] == 12288 and values[Dim.LAYERS] == 96
    assert values[Dim.HEADS] == 96 and values[Dim.TP] == 8 and values[Dim.MICRO_BATCH] == 2
    # Megatron's SwiGLU width: int((4 · 12288 · 2/3) / 64) · 64 = 32768 (by hand).
    assert values[Dim.FFN] == 32768 and config.gated_mlp
    assert values[Dim.SEQ_LEN] == 2048 and values[Dim.VOCAB] == 50257


def test_what_a_reader_cannot_follow_is_unknown() -> None:
    text = (
        "for L in 24 48; do\n"
        "  python pretrain_gpt.py --num-layers $L --hidden-size $((64 * L)) \\\n"
        "     --num-attention-heads 16 --seq-length 1024\n"
        "done\n"
        "python pretrain_gpt.py --num-attention-heads 32\n"
    )
    got = flags(text)
    assert not got["--num-layers"].known  # a loop variable
    assert not got["--hidden-size"].known  # arithmetic on a loop variable
    assert not got["--num-attention-heads"].known  # 16 in one run, 32 in another
    assert got["--seq-length"].value == 1024


def test_a_script_without_shape_flags_is_no_config() -> None:
    assert doc("pip install --upgrade pip\npython train.py --lr 3e-4\n").candidates == []


def test_fix_edits_the_value_in_place(tmp_path: Path) -> None:
    # Megatron pads the vocab itself (50257 → 51200 at tp 8), so SL101 has nothing to say;
    # an FFN of 30000 is SL104's, fixed in place (an architecture change: unsafe).
    path = tmp_path / "train.sh"
    script = SCRIPT.replace("    --swiglu\n", "    --swiglu\n    --ffn-hidden-size 30000\n")
    path.write_text(script)
    out, err = io.StringIO(), io.StringIO()
    code = main(["check", "--unsafe-fixes", "--select", "SL104", "--no-cache", str(path)], out, err)
    assert code == 0, out.getvalue() + err.getvalue()
    text = path.read_text()
    assert "--ffn-hidden-size 30208" in text  # 30000 up to a multiple of 64·8 = 512 (by hand)
    assert text.replace("30208", "30000") == script


def test_a_walk_reads_sh_files(tmp_path: Path) -> None:
    (tmp_path / "train.sh").write_text(
        SCRIPT.replace('--num-attention-heads "96"', "--num-attention-heads 80")
    )
    (tmp_path / "setup.sh").write_text("pip install -e .\n")
    out, err = io.StringIO(), io.StringIO()
    main(["check", "--no-cache", "--select", "SL003", str(tmp_path)], out, err)
    assert "train.sh" in out.getvalue() and "SL003" in out.getvalue()  # 12288 / 80 heads
    assert "setup.sh" not in out.getvalue()


def test_nested_expansions_and_quotes_do_not_desynchronise() -> None:
    text = (
        'LOG=${LOG:-"${PWD}/logs/run-$(date +%Y%m%d)-$$"}\n'
        'mkdir -p "${LOG}"\n'
        "python pretrain_gpt.py --hidden-size 2048 --num-attention-heads 16 --num-layers 24\n"
    )
    got = flags(text)
    assert (got["--hidden-size"].value, got["--num-layers"].value) == (2048, 24)


def test_hostile_nesting_is_bounded() -> None:
    text = "X=" + "$(" * 5000 + "\n--hidden-size 64\n"
    parse("evil.sh", text.encode(), "shell")  # no RecursionError; nothing more to assert


def test_a_script_whose_shape_is_only_known_at_run_time_is_noticed(tmp_path: Path) -> None:
    path = tmp_path / "sweep.sh"
    path.write_text(
        "for H in 1024 2048; do\n"
        "  torchrun pretrain_gpt.py --hidden-size $H --num-attention-heads 16 --num-layers $L\n"
        "done\n"
    )
    out, err = io.StringIO(), io.StringIO()
    assert main(["check", "--no-cache", str(path)], out, err) == 1
    text = out.getvalue()
    assert "SL009" in text and "--hidden-size = $H" in text and "--num-layers = $L" in text


def test_engine_and_rotary_flags_of_a_script() -> None:
    text = SCRIPT.replace(
        "    --swiglu\n",
        "    --swiglu\n    --transformer-impl local\n"
        "    --position-embedding-type rope\n    --rotary-percent 0.5\n",
    )
    config = one(text)
    impl = config.get(Dim.TRANSFORMER_IMPL)
    assert impl is not None and impl.value == "local"
    # head dim 12288 / 96 = 128; rotary on half of it (by hand).
    assert config.int(Dim.ROTARY_DIM) == 64


def test_case_patterns_of_a_scripts_own_parser_are_not_flags() -> None:
    # DeepSpeedExamples benchmarks/deepcompile/run.sh parses its own options with a case; the
    # patterns (`--seq-length)`) were read as switches, and SL002 said "got a boolean".
    script = (
        "while [[ $# -gt 0 ]]; do\n"
        "    case $1 in\n"
        "        --seq-length)\n"
        '            SEQ_LENGTH="$2"\n'
        "            shift 2\n"
        "            ;;\n"
        "        -l|--num-layers)\n"
        '            EXTRA_OPTS="${EXTRA_OPTS} --num_layers $2"\n'
        "            shift 2\n"
        "            ;;\n"
        "    esac\n"
        "done\n"
        "torchrun pretrain_gpt.py --num-layers 24 --hidden-size 2048 --num-attention-heads 16"
        " --seq-length 4096 --swiglu\n"
    )
    got = flags(script)
    assert got["--num-layers"].value == 24 and got["--seq-length"].value == 4096
    assert got["--swiglu"].value is True  # a switch outside the case stays a switch
    only_case = script.split("torchrun")[0]
    assert doc(only_case).candidates == []
