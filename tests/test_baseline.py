"""Baselines (issue 14): record today's findings, hide them, match without lines, report stale."""

from __future__ import annotations

import io
import json
import os
from pathlib import Path

import pytest

from shapelint.cli.main import main

GPT2 = '{\n  "n_embd": 768,\n  "n_head": 12,\n  "n_layer": 12,\n  "vocab_size": 50257\n}\n'
HEADS80 = '{"hidden_size": 2560, "num_attention_heads": 32, "num_hidden_layers": 32, "vocab_size": 50304}\n'


def run(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = main(list(argv), out, err)
    return code, out.getvalue(), err.getvalue()


@pytest.fixture
def repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / ".git").mkdir()  # the settings search stops here
    (tmp_path / "models" / "gpt2").mkdir(parents=True)
    (tmp_path / "models" / "gpt2" / "config.json").write_text(GPT2, encoding="utf-8")
    (tmp_path / "models" / "heads.json").write_text(HEADS80, encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_write_then_apply(repo: Path) -> None:
    # h/a = 80 costs <1% on H100 with FA3's figures: every finding counts here.
    code, out, err = run(
        "models", "--min-slowdown", "0", "--write-baseline", "shapelint-baseline.json"
    )
    assert code == 0 and out == ""
    assert "recorded 2 findings in shapelint-baseline.json" in err
    data = json.loads((repo / "shapelint-baseline.json").read_text(encoding="utf-8"))
    assert data["version"] == 1
    assert {(e["path"], e["code"], e["key"], e["value"]) for e in data["findings"]} == {
        ("models/gpt2/config.json", "SL101", "vocab_size", 50257),
        ("models/heads.json", "SL102", "hidden_size", 80),
    }
    code, out, _ = run("models", "--min-slowdown", "0", "--baseline", "shapelint-baseline.json")
    assert code == 0 and "All checks passed" in out
    assert run("models")[0] == 1  # without the baseline, the findings are back


def test_edits_elsewhere_keep_the_match_a_new_value_does_not(repo: Path) -> None:
    run("models", "--write-baseline", "base.json")
    gpt2 = repo / "models" / "gpt2" / "config.json"
    gpt2.write_text(GPT2.replace("{\n", '{\n  "model_type": "gpt2",\n  "n_ctx": 1024,\n'), "utf-8")
    assert run("models", "--baseline", "base.json")[0] == 0  # the finding moved two lines
    gpt2.write_text(GPT2.replace("50257", "50258"), encoding="utf-8")
    code, out, _ = run("models", "--baseline", "base.json")
    assert code == 1 and "vocab_size (50258)" in out and "SL008" not in out
    code, out, _ = run("models", "--baseline", "base.json", "--report-unused-ignores")
    stale = [ln for ln in out.splitlines() if "SL008" in ln]
    lines = (repo / "base.json").read_text(encoding="utf-8").splitlines()
    row = next(i for i, ln in enumerate(lines, 1) if "50257" in ln)
    assert len(stale) == 1 and stale[0].startswith(
        f"base.json:{row}:5: SL008 [warning] baseline entry"
    )
    assert "models/gpt2/config.json" in stale[0]


def test_linting_a_subset_does_not_call_other_entries_stale(repo: Path) -> None:
    run("models", "--write-baseline", "base.json")
    code, out, _ = run("models/heads.json", "--baseline", "base.json", "--report-unused-ignores")
    assert code == 0 and "SL008" not in out


def test_each_entry_hides_one_finding(repo: Path) -> None:
    run("models", "--min-slowdown", "0", "--write-baseline", "base.json")
    data = json.loads((repo / "base.json").read_text(encoding="utf-8"))
    data["findings"] = [e for e in data["findings"] if e["code"] == "SL101"]
    (repo / "base.json").write_text(json.dumps(data), encoding="utf-8")
    code, out, _ = run("models", "--min-slowdown", "0", "--baseline", "base.json")
    assert code == 1 and "SL102" in out and "SL101" not in out


def test_settings_baseline_is_relative_to_the_settings_file(repo: Path) -> None:
    (repo / "ci").mkdir()
    run("models", "--write-baseline", "ci/base.json")
    entry = json.loads((repo / "ci" / "base.json").read_text(encoding="utf-8"))["findings"][0]
    assert entry["path"].startswith("../models/")  # relative to the baseline's own folder
    (repo / "pyproject.toml").write_text('[tool.shapelint]\nbaseline = "ci/base.json"\n', "utf-8")
    os.chdir(repo / "models")
    assert run(".")[0] == 0
    assert run(".", "--baseline", str(repo / "missing.json"))[0] == 2


@pytest.mark.parametrize(
    ("text", "says"),
    [
        (None, "does not exist"),
        ("{not json", "invalid JSON"),
        ('{"version": 1}', "not a shapelint baseline"),
        ('{"version": 7, "findings": []}', "unsupported baseline version"),
        ('{"version": 1, "findings": [{"path": 1}]}', "findings[0]"),
    ],
)
def test_a_bad_baseline_is_a_one_line_usage_error(repo: Path, text: str | None, says: str) -> None:
    if text is not None:
        (repo / "base.json").write_text(text, encoding="utf-8")
    code, out, err = run("models", "--baseline", "base.json")
    assert code == 2 and out == "" and err.count("\n") == 1
    assert says in err and "base.json" in err and "Traceback" not in err


def test_settings_naming_a_missing_baseline_names_the_settings_file(repo: Path) -> None:
    (repo / ".shapelint.toml").write_text('baseline = "nope.json"\n', encoding="utf-8")
    code, _, err = run("models")
    assert code == 2 and ".shapelint.toml" in err and "nope.json" in err


def test_write_baseline_refuses_diff(repo: Path) -> None:
    assert run("models", "--write-baseline", "b.json", "--diff")[0] == 2
    assert not (repo / "b.json").exists()


def test_fix_reports_what_remains_through_the_baseline(repo: Path) -> None:
    """--fix re-lints the files it wrote: the baseline applies to that report too (the
    baselined SL003 of a file whose vocab was fixed came back as a new error)."""
    bad = repo / "models" / "bad.json"
    bad.write_text(
        '{"hidden_size": 3000, "num_attention_heads": 32, "num_hidden_layers": 12,'
        ' "vocab_size": 32000}\n',
        encoding="utf-8",
    )
    run("models/bad.json", "--write-baseline", "b.json")
    bad.write_text(bad.read_text(encoding="utf-8").replace("32000", "50257"), encoding="utf-8")
    code, out, _ = run("models/bad.json", "--baseline", "b.json")
    assert code == 1 and "SL101" in out and "SL003" not in out
    code, out, _ = run("models/bad.json", "--baseline", "b.json", "--fix")
    assert '"vocab_size": 50304' in bad.read_text(encoding="utf-8")
    assert code == 0, out
    assert "SL003" not in out and "SL103" not in out


def _stale_baseline(repo: Path, count: int) -> None:
    """A baseline of ``count`` entries for models/heads.json that match no finding."""
    rows = [
        json.dumps(
            {"path": "models/heads.json", "code": "SL101", "config": "", "key": "vocab_size"}
            | {"value": 60_000 + i}
        )
        for i in range(count)
    ]
    text = '{\n  "version": 1,\n  "findings": [\n    ' + ",\n    ".join(rows) + "\n  ]\n}\n"
    (repo / "base.json").write_text(text, encoding="utf-8")


def test_stale_entries_read_the_baseline_once(repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Issue 26, failure 12: each stale entry read and indexed the whole baseline again, so a
    # baseline of n stale entries cost n² (30,000 took 254 s).
    from shapelint.engine.baseline import Baseline

    reads = []
    text = Baseline._text
    monkeypatch.setattr(Baseline, "_text", lambda self: reads.append(1) or text(self))
    _stale_baseline(repo, 300)
    argv = ("models/heads.json", "--jobs", "1", "--no-cache", "--baseline", "base.json")
    code, out, _ = run(*argv, "--report-unused-ignores")
    assert code == 1 and out.count("baseline entry matches no finding") == 300
    assert len(reads) == 1
    # Each stale finding still points at its own entry's line.
    assert "base.json:4:" in out and "base.json:303:" in out


def test_thirty_thousand_stale_entries_take_seconds(repo: Path) -> None:
    import time

    from shapelint.engine.baseline import load
    from shapelint.rules import get

    rule = get("SL008")
    assert rule is not None
    _stale_baseline(repo, 30_000)
    start = time.process_time()
    baseline = load(str(repo / "base.json"))
    stale = baseline.apply(str(repo / "models" / "heads.json"), [], rule.RULE)
    assert len(stale) == 30_000 and stale[-1].span.line == 30_003
    assert time.process_time() - start < 10  # CPU seconds; n² took minutes
