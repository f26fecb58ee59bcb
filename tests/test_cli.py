"""The CLI through main(argv), and once through a real subprocess."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from shapelint.cli.main import main

GPT2 = '{\n  "n_embd": 768,\n  "n_head": 12,\n  "n_layer": 12,\n  "vocab_size": 50257\n}\n'
CLEAN = '{"hidden_size": 4096, "num_attention_heads": 32, "num_hidden_layers": 32, "intermediate_size": 11008, "vocab_size": 32000}\n'


def run(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = main(list(argv), out, err)
    return code, out.getvalue(), err.getvalue()


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    (tmp_path / "gpt2").mkdir()
    (tmp_path / "gpt2" / "config.json").write_text(GPT2)
    (tmp_path / "clean.json").write_text(CLEAN)
    (tmp_path / "package.json").write_text('{"name": "x", "version": "1.0.0"}')
    (tmp_path / "node_modules").mkdir()
    (tmp_path / "node_modules" / "bad.json").write_text(GPT2)
    return tmp_path


def test_text_report_points_at_the_value(tree: Path) -> None:
    code, out, _ = run(str(tree))
    assert code == 1
    path = os.path.join(str(tree), "gpt2", "config.json")
    line = next(ln for ln in out.splitlines() if "SL101" in ln)
    assert line.startswith(f"{path}:5:17: SL101 ")
    assert "vocab_size 50257 → 50304" in line
    assert "step time on H100-SXM" in line
    assert "node_modules" not in out
    assert out.splitlines()[-1].startswith("Found 1 problem")


def test_json_contract(tree: Path) -> None:
    code, out, _ = run(str(tree), "--format", "json", "--gpu", "a100", "--gpu", "h100")
    assert code == 1
    data = json.loads(out)
    assert data["version"] == 1
    (f,) = data["findings"]
    assert set(f) == {
        "code",
        "name",
        "severity",
        "path",
        "line",
        "column",
        "end_line",
        "end_column",
        "config",
        "key",
        "value",
        "message",
        "estimates",
        "fix",
    }
    assert (f["code"], f["key"], f["value"], f["line"], f["column"], f["end_column"]) == (
        "SL101",
        "vocab_size",
        50257,
        5,
        17,
        22,
    )
    assert [e["gpu"] for e in f["estimates"]] == ["A100-SXM-80GB", "H100-SXM"]
    for e in f["estimates"]:
        assert e["slowdown_pct"] > 0
        assert e["step_time_s"] > e["fixed_step_time_s"] > 0
    assert f["fix"]["applicability"] == "safe"
    assert f["fix"]["edits"] == [
        {"key": "vocab_size", "old": 50257, "new": 50304, "line": 5, "column": 17}
    ]
    names = sorted(c["path"] for c in data["configs"])
    assert len(names) == 2
    gpt2 = next(
        c for c in data["configs"] if c["path"].endswith(os.path.join("gpt2", "config.json"))
    )
    assert gpt2["dims"]["ffn"] == 3072 and gpt2["dims"]["head_dim"] == 64
    assert gpt2["dialect"] == "hf"
    assert gpt2["sources"] == dict.fromkeys(gpt2["dims"], "hf")


def test_clean_file_exits_zero(tree: Path) -> None:
    code, out, _ = run(str(tree / "clean.json"))
    assert code == 0
    assert "All checks passed" in out


def test_select_ignore_and_exit_zero(tree: Path) -> None:
    assert run(str(tree), "--ignore", "SL1")[0] == 0
    assert run(str(tree), "--select", "SL0")[0] == 0
    assert run(str(tree), "--select", "SL101")[0] == 1
    assert run(str(tree), "--exit-zero")[0] == 0


def test_exclude(tree: Path) -> None:
    assert run(str(tree), "--exclude", "gpt2")[0] == 0


def test_verbose_names_explicit_files_without_config(tree: Path) -> None:
    _, _, err = run(str(tree / "package.json"), "-v")
    assert "no model config found" in err
    _, _, err = run(str(tree / "package.json"))
    assert err == ""


def test_usage_errors_exit_2(tree: Path) -> None:
    code, _, err = run(str(tree / "missing.json"))
    assert code == 2 and "no such file" in err
    code, _, err = run(str(tree), "--gpu", "h1000")
    assert code == 2 and "h1000" in err
    code, _, err = run(str(tree), "--format", "xml")
    assert code == 2 and "unknown format" in err
    assert run(str(tree), "--dtype", "int4")[0] == 2
    assert run(str(tree), "--tp", "0")[0] == 2


@pytest.mark.parametrize(
    ("argv", "said"),
    [
        (
            ["--tp", "0"],
            "shapelint check: error: argument --tp: expected a positive integer, got 0 "
            "(see 'shapelint check --help')",
        ),
        (
            ["--fixx"],
            "shapelint check: error: unrecognized argument: --fixx; did you mean --fix? "
            "(see 'shapelint check --help')",
        ),
        (
            ["suggest", "config.json", "--topp", "3"],
            "shapelint suggest: error: unrecognized arguments: --topp 3; did you mean --top? "
            "(see 'shapelint suggest --help')",
        ),
        (
            ["chek", "."],
            "shapelint: error: unknown command 'chek'; did you mean 'check'? "
            "(and no file or directory is named chek)",
        ),
        (
            ["explain"],
            "shapelint explain: error: the following arguments are required: CONFIG "
            "(see 'shapelint explain --help')",
        ),
    ],
)
def test_usage_errors_are_one_line_with_what_was_meant(
    argv: list[str],
    said: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """No 17 lines of usage before the error, and the closest command or flag suggested
    (``shapelint chek .`` said "no such file or directory: chek")."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "config.json").write_text(GPT2)
    code, out, err = run(*argv)
    assert (code, out, err) == (2, "", said + "\n")
    assert capsys.readouterr() == ("", "")  # nothing printed around the streams given


def test_a_missing_path_like_a_command_is_still_a_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    assert run("chek.json")[2] == "shapelint: error: no such file or directory: chek.json\n"
    (tmp_path / "chek").mkdir()
    assert run("chek")[0] == 0  # a directory of that name is linted


def test_nothing_read_is_not_all_checks_passed(tmp_path: Path) -> None:
    """A tree without a model config said "All checks passed (0 configs in 1 file)"."""
    (tmp_path / "package.json").write_text('{"name": "x", "version": "1.0.0"}')
    assert run(str(tmp_path)) == (0, "No model configs found in 1 file.\n", "")
    (tmp_path / "notes.json").write_text('{"a": 1,,}')  # skipped: no model keys, no parse
    out = run(str(tmp_path))[1]
    assert out == "No model configs found in 1 file; 1 file skipped (-v lists them).\n"
    (tmp_path / "notes.json").unlink()
    (tmp_path / "config.json").write_text(CLEAN)
    assert run(str(tmp_path)) == (0, "All checks passed (1 config in 2 files).\n", "")


def test_server_without_pygls_says_how_to_install_it_from_a_clone(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """``pip install 'shapelint[lsp]'`` works only once shapelint is on an index."""
    monkeypatch.setitem(sys.modules, "lsprotocol", None)
    monkeypatch.setitem(sys.modules, "pygls", None)
    code, out, err = run("server")
    assert (code, out) == (2, "")
    assert err.startswith("shapelint: error: shapelint server needs pygls (the lsp extra): ")
    assert "in a clone of shapelint, pip install '.[lsp]'" in err
    assert "pip install 'shapelint[lsp] @ git+https://github.com/shapelint/shapelint@v" in err
    assert err.count("\n") == 1


def test_invalid_json_is_sl000_not_a_crash(tmp_path: Path) -> None:
    bad = tmp_path / "config.json"
    bad.write_text('{"hidden_size": 4096,,}')
    code, out, err = run(str(bad))
    assert code == 1 and "SL000" in out and "Traceback" not in err
    bad.write_bytes(b'{"a": "\xff\xfe\x00"}')
    code, out, _ = run(str(bad))
    assert code == 1 and "SL000" in out


def test_tp_flag_and_dtype_aliases(tree: Path) -> None:
    code, out, _ = run(str(tree / "clean.json"), "--tp", "3")
    assert code == 1 and "SL005" in out
    assert run(str(tree / "clean.json"), "--dtype", "bfloat16")[0] == 0


def test_rules_and_rule(tree: Path) -> None:
    code, out, _ = run("rules")
    assert code == 0 and "SL101" in out and "vocab-padding" in out
    code, out, _ = run("rule", "sl102")
    assert code == 0 and "Anthony et al. 2024" in out and "Example" in out
    assert run("rule", "SL999")[0] == 2


def test_gpus_table() -> None:
    code, out, _ = run("gpus")
    assert code == 0 and "H100-SXM" in out and "MI300X" in out


def test_no_color_unless_forced(tree: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FORCE_COLOR", "1")
    assert "\x1b[" in run(str(tree))[1]
    monkeypatch.setenv("NO_COLOR", "1")
    assert "\x1b[" not in run(str(tree))[1]


def test_real_subprocess(tree: Path) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "shapelint", str(tree), "--format", "json"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 1, proc.stderr
    assert json.loads(proc.stdout)["findings"][0]["code"] == "SL101"
    proc = subprocess.run(
        [sys.executable, "-m", "shapelint", "--version"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 0 and proc.stdout.startswith("shapelint ")


def test_a_named_file_of_no_config_format_is_skipped_not_parsed_as_json(tmp_path: Path) -> None:
    readme = tmp_path / "README.md"
    readme.write_text("# Title\n\nSome prose with hidden_size: 4096 in it.\n")
    code, out, err = run("-v", str(readme))
    assert code == 0, out
    assert "SL000" not in out and "All checks passed" not in out
    assert "1 file skipped" in out
    assert f"{readme}: skipped: not a config format shapelint reads" in err
    # A named file without an extension is still read when its text is JSON.
    params = tmp_path / "params"
    params.write_text('{"dim": 4096, "n_heads": 32, "n_layers": 2, "vocab_size": 50257}\n')
    code, out, _ = run(str(params))
    assert code == 1 and "SL101" in out, out
