"""The logic of benchmarks/general_reading.py on hand-written fixtures (no checkout needed).

The benchmark's independent reading decides what counts as right or wrong for shapelint, so
its subtle parts are pinned here: pairing shapelint's configs with units and classifying them,
Python class bodies (evaluated once, never from the bases), chained builders, fairseq-style
``getattr`` defaults, and the shell expansion.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent.parent / "benchmarks"
sys.path.insert(0, str(BENCH))

from general_reading.core import (  # noqa: E402
    Reading,
    Unit,
    classify,
    match,
    silent_files,
)
from general_reading.fairseq import _Args  # noqa: E402
from general_reading.pyeval import UNKNOWN, Builder, ClassWorld  # noqa: E402
from general_reading.shell import clean, expand, flag, variables  # noqa: E402


def config(path: str, name: str, origin: str = "default", **dims: int) -> dict[str, Any]:
    """A config as ``shapelint --format json`` reports it."""
    return {
        "path": path,
        "name": name,
        "dims": dims,
        "target": {"micro_batch": dims.get("micro_batch", 1), "origins": {"micro_batch": origin}},
    }


def test_match_pairs_by_name_then_the_single_unit_of_a_file() -> None:
    units = [
        Unit("a.py", ("Small",), 1, {"hidden": 512}),
        Unit("a.py", ("Big",), 9, {"hidden": 1024}),
        Unit("b.json", ("b",), 1, {"hidden": 64}),
        Unit("c.sh", ("c",), 1, {"hidden": 64, "layers": 2}),
    ]
    configs = [
        config("a.py", "Big", hidden=1024),
        config("a.py", "module.Small", hidden=512),
        config("./b.json", "", hidden=64),
        # Two arms read from a one-unit script: the one that agrees is paired.
        config("c.sh", "", hidden=32, layers=2),
        config("c.sh", "", hidden=64, layers=2),
    ]
    paired = match(units, configs)
    assert paired[0]["name"] == "module.Small"
    assert paired[1]["name"] == "Big"
    assert paired[2]["dims"] == {"hidden": 64}
    assert paired[3]["dims"]["hidden"] == 64


def test_match_reads_arm_and_subscript_names() -> None:
    units = [
        Unit("run.sh", ("1.7B",), 3, {"hidden": 2304}),
        Unit("run.sh", ("3.6B",), 9, {"hidden": 3072}),
        Unit("sizes.py", ("1.3b",), 1, {"hidden": 2048}),
        Unit("sizes.py", ("13b",), 2, {"hidden": 5120}),
    ]
    configs = [
        config("run.sh", "MODEL_SIZE=3.6B", hidden=3072),
        config("run.sh", "MODEL_SIZE=1.7B", hidden=2304),
        config("sizes.py", "MODEL_SIZES['13b']", hidden=5120),
        config("sizes.py", "MODEL_SIZES['1.3b']", hidden=2048),
    ]
    paired = match(units, configs)
    assert [paired[i]["dims"]["hidden"] for i in range(4)] == [2304, 3072, 2048, 5120]


def test_match_does_not_pair_an_unnamed_config_in_a_file_with_several_units() -> None:
    units = [Unit("a.py", ("A",), 1, {"hidden": 1}), Unit("a.py", ("B",), 2, {"hidden": 2})]
    assert match(units, [config("a.py", "C", hidden=1)]) == {}


def test_classify_right_unknown_wrong_and_the_default_micro_batch() -> None:
    unit = Unit("a.py", ("A",), 1, {"hidden": 512, "heads": 8, "ffn": None, "micro_batch": 4})
    # micro_batch 1 from shapelint's default is not a reading: missing, not wrong.
    got = classify(unit, config("a.py", "A", hidden=512, heads=8, ffn=999))
    assert got.status == "unknown" and got.missing == ("micro_batch",)
    got = classify(unit, config("a.py", "A", "config", hidden=512, heads=8, micro_batch=4))
    assert got.status == "right"
    got = classify(unit, config("a.py", "A", "config", hidden=512, heads=16, micro_batch=4))
    assert got.status == "wrong" and got.wrong == {"heads": (8, 16)}
    assert classify(unit, None).status == "missing"
    # Nothing known: never "right".
    assert classify(Unit("a.py", ("A",), 1, {"ffn": None}), config("a.py", "A")).status == (
        "unknown"
    )


def test_batch_assumed_when_the_source_states_a_batch_shapelint_did_not_read() -> None:
    unit = Unit("a.json", ("a",), 1, {"hidden": 64}, batch_stated=True)
    assert classify(unit, config("a.json", "", hidden=64)).batch_assumed
    assert not classify(unit, config("a.json", "", "config", hidden=64)).batch_assumed


def test_silent_files_need_a_config_or_an_sl009() -> None:
    units = [Unit(p, ("x",), 1, {"hidden": 1}) for p in ("a.py", "b.py", "c.py")]
    reading = Reading(
        [config("a.py", "x")],
        [{"code": "SL009", "path": "b.py"}, {"code": "SL101", "path": "c.py"}],
    )
    assert silent_files(units, reading) == ["c.py"]


def test_class_bodies_are_evaluated_once_and_inherited_across_modules(tmp_path: Path) -> None:
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "base.py").write_text(
        "class Base:\n  MODEL_DIMS = 1024\n  HIDDEN_DIMS = MODEL_DIMS * 4\n  NUM_HEADS = None\n"
    )
    (pkg / "models.py").write_text(
        "from pkg.base import Base\n"
        "from pkg import base\n"
        "W = 2048\n"
        "class Big(Base):\n  MODEL_DIMS = W\n"
        "class Bigger(base.Base):\n  MODEL_DIMS = 4096\n  HIDDEN_DIMS = MODEL_DIMS * 4\n"
        "class Odd(Big):\n  NUM_HEADS = cfg.heads\n"
    )
    world = ClassWorld(tmp_path, sorted(pkg.glob("*.py")))
    # A subclass's MODEL_DIMS does not change the HIDDEN_DIMS its base computed.
    assert world.attr("pkg.models:Big", "MODEL_DIMS") == 2048
    assert world.attr("pkg.models:Big", "HIDDEN_DIMS") == 4096
    assert world.attr("pkg.models:Bigger", "HIDDEN_DIMS") == 16384
    assert world.attr("pkg.models:Odd", "HIDDEN_DIMS") == 4096
    assert world.attr("pkg.models:Odd", "NUM_HEADS") is UNKNOWN
    assert world.attr("pkg.models:Big", "NUM_HEADS") is None


def test_builder_runs_chained_builders_and_helpers(tmp_path: Path) -> None:
    (tmp_path / "hp.py").write_text(
        "def basic():\n  return HParams(hidden_size=64, num_heads=2)\n"
        "def base():\n"
        "  hparams = basic()\n"
        "  hparams.hidden_size = 512\n"
        "  hparams.add_hparam('filter_size', hparams.hidden_size * 4)\n"
        "  return hparams\n"
        "def tpu(hparams):\n  hparams.num_heads = 8\n"
        "def big():\n"
        "  hparams = base()\n"
        "  tpu(hparams)\n"
        "  if flag:\n    hparams.filter_size = 1\n"
        "  return hparams\n"
    )
    world = ClassWorld(tmp_path, [tmp_path / "hp.py"])
    builder = Builder(world, frozenset({"HParams"}))
    assert builder.build("hp:base") == {"hidden_size": 512, "num_heads": 2, "filter_size": 2048}
    big = builder.build("hp:big")
    assert big is not None
    assert big["num_heads"] == 8 and big["filter_size"] is UNKNOWN


def test_fairseq_getattr_default_applies_only_when_unset() -> None:
    tree = ast.parse(
        "def base(args):\n"
        "  args.decoder_embed_dim = getattr(args, 'decoder_embed_dim', 512)\n"
        "  args.decoder_ffn_embed_dim = getattr(args, 'decoder_ffn_embed_dim', 2048)\n"
        "def gpt3(args):\n"
        "  args.decoder_ffn_embed_dim = safe_getattr(\n"
        "    args, 'decoder_ffn_embed_dim', args.decoder_embed_dim * 4)\n"
        "  base(args)\n"
        "def xl(args):\n"
        "  args.decoder_embed_dim = safe_getattr(args, 'decoder_embed_dim', 2048)\n"
        "  gpt3(args)\n"
    )
    funcs = {f.name: f for f in tree.body if isinstance(f, ast.FunctionDef)}
    args = _Args(funcs)
    args.run("xl")
    assert args.values == {"decoder_embed_dim": 2048, "decoder_ffn_embed_dim": 8192}


def test_shell_variables_defaults_arithmetic_and_conflicts() -> None:
    text = clean(
        "#!/bin/bash\n"
        "# --num-layers 99 in a comment\n"
        "PP=2\n"
        "NLS=$((3*PP))\n"
        "MBS=${10}\n"
        "if x; then HS=1024; else HS=2048; fi\n"
        'ARGS="--num-layers $NLS \\\n  --micro-batch-size ${MBS:-4} --seq-length ${SEQ:-2048}"\n'
    )
    env = variables(text)
    assert env["NLS"] == "6"
    assert env["HS"] is None  # two different values
    assert flag(text, "--num-layers", env) == "6"
    assert flag(text, "--micro-batch-size", env) is None  # a positional parameter
    assert flag(text, "--seq-length", env) == "2048"
    assert expand("${HS}", env) is None
