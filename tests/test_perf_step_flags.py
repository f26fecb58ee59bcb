"""``--fused``, ``--data-parallel``, ``--sharded``, ``--recompute`` and their settings keys:
they reach the step model, show in the "Estimated for" line and the JSON target, and bad
values are usage or settings errors (exit 2)."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from shapelint.cli.main import main

LLAMA = json.dumps(
    {
        "hidden_size": 2048,
        "num_attention_heads": 16,
        "num_key_value_heads": 8,
        "num_hidden_layers": 4,
        "intermediate_size": 5632,
        "vocab_size": 32001,
        "hidden_act": "silu",
        "model_type": "llama",
    }
)


def run(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = main(list(argv), out, err)
    return code, out.getvalue(), err.getvalue()


@pytest.fixture
def config(tmp_path: Path) -> Path:
    path = tmp_path / "config.json"
    path.write_text(LLAMA, encoding="utf-8")
    return path


def estimated_for(out: str) -> str:
    (line,) = [ln for ln in out.splitlines() if ln.startswith("Estimated for")]
    return line


def test_defaults_are_not_shown_and_chosen_values_are(config: Path) -> None:
    line = estimated_for(run(str(config))[1])
    assert "fused" not in line and "data-parallel" not in line
    assert "sharded" not in line and "recompute" not in line
    code, out, _ = run(
        str(config), "--fused", "none,+norm", "--data-parallel", "8", "--sharded", "--recompute"
    )
    assert code == 1
    # --recompute alone is full recomputation.
    assert "tp 1*, fused norm, data-parallel 8, sharded, recompute full (" in estimated_for(out)
    # --no-… says the default explicitly: nothing to show.
    line = estimated_for(run(str(config), "--no-sharded", "--no-recompute")[1])
    assert "sharded" not in line and "recompute" not in line


def test_json_target_carries_values_and_origins(config: Path) -> None:
    (config.parent / ".shapelint.toml").write_text(
        'fused = "default,+cross_entropy"\nrecompute = true\n', encoding="utf-8"
    )
    _, out, _ = run(str(config), "--format", "json", "--data-parallel", "4")
    (c,) = json.loads(out)["configs"]
    target = c["target"]
    assert target["fused"] == "all"  # default plus cross-entropy is every fusion
    assert target["data_parallel"] == 4 and target["sharded"] is False
    # JSON version 1's boolean, and the mode: the older boolean spelling true is full.
    assert target["recompute"] is True and target["recompute_mode"] == "full"
    assert target["origins"]["fused"] == "settings"
    assert target["origins"]["data_parallel"] == "flag"
    assert target["origins"]["recompute"] == "settings"
    assert "sharded" in target["defaults"] and "fused" not in target["defaults"]
    # The flag wins over the settings.
    _, out, _ = run(str(config), "--format", "json", "--no-recompute", "--fused", "none")
    (c,) = json.loads(out)["configs"]
    assert c["target"]["recompute"] is False and c["target"]["fused"] == "none"
    assert c["target"]["recompute_mode"] == "none"
    assert c["target"]["origins"]["recompute"] == "flag"


def test_explain_uses_the_flags(config: Path) -> None:
    def explain(*flags: str) -> dict[str, object]:
        code, out, _ = run("explain", str(config), "--format", "json", *flags)
        assert code == 0
        data: dict[str, object] = json.loads(out)
        return data

    base = explain()
    assert (base["fused"], base["data_parallel"], base["sharded"], base["recompute"]) == (
        "default",
        1,
        False,
        False,
    )
    slower = explain("--recompute", "--fused", "none")
    assert slower["recompute"] is True and slower["fused"] == "none"
    assert slower["recompute_mode"] == "full"
    assert float(str(slower["step_time_s"])) > float(str(base["step_time_s"]))
    ops = slower["ops"]
    assert isinstance(ops, list)
    assert any(o["pass"] == "recompute" for o in ops)
    # The gradients' reduction is a collective of the step (perf/communication.py).
    reduced = explain("--data-parallel", "8")
    comms = {c["name"]: c for c in reduced["comms"]}  # type: ignore[union-attr]
    assert comms["dp_reduce"]["collective"] == "all-reduce" and comms["dp_reduce"]["group"] == 8
    sharded = explain("--data-parallel", "8", "--sharded")
    comms = {c["name"]: c for c in sharded["comms"]}  # type: ignore[union-attr]
    assert comms["dp_reduce"]["collective"] == "reduce-scatter"
    assert comms["dp_gather"]["collective"] == "all-gather"
    _, text, _ = run("explain", str(config), "--fused", "none", "--data-parallel", "2")
    assert text.splitlines()[0].endswith("tp 1, fused none, data-parallel 2, pytorch step")


@pytest.mark.parametrize(
    ("argv", "says"),
    [
        (["--fused", "norm,fast"], "argument --fused: unknown fusion 'fast'"),
        (["--data-parallel", "0"], "argument --data-parallel: expected a positive integer"),
        (["--data-parallel", "two"], "argument --data-parallel: expected a positive integer"),
    ],
)
def test_bad_flags_are_usage_errors(config: Path, argv: list[str], says: str) -> None:
    for command in (["check"], ["explain"]):
        code, _, err = run(*command, str(config), *argv)
        assert code == 2
        assert says in err and "Traceback" not in err


@pytest.mark.parametrize(
    ("line", "says"),
    [
        ('fused = "norm,fast"', "fused: unknown fusion 'fast'"),
        ("fused = 3", "fused"),
        ("data-parallel = 0", "data-parallel"),
        ('sharded = "yes"', "sharded"),
        ("recompute = 1", "recompute"),
    ],
)
def test_bad_settings_name_the_file_and_key(config: Path, line: str, says: str) -> None:
    (config.parent / ".shapelint.toml").write_text(line + "\n", encoding="utf-8")
    code, _, err = run(str(config))
    assert code == 2
    assert ".shapelint.toml" in err and says in err and "Traceback" not in err
