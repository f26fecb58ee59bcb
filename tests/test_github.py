"""--format github: workflow commands, the toolkit's escaping, the 10-per-level cap, the summary."""

from __future__ import annotations

import io
import json
import re
from pathlib import Path

import pytest

from shapelint.cli.main import main
from shapelint.core.model import Finding
from shapelint.core.source import Span
from shapelint.report.github import command, escape_data, escape_property

GPT2 = '{\n  "n_embd": 768,\n  "n_head": 12,\n  "n_layer": 12,\n  "vocab_size": 50257\n}\n'
COMMAND = re.compile(r"^::(error|warning|notice) ([^:]*)::(.*)$")


def run(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = main(list(argv), out, err)
    return code, out.getvalue(), err.getvalue()


def unescape(text: str, prop: bool) -> str:
    """The runner's decoding of a command (the inverse of @actions/core's escaping)."""
    if prop:
        text = text.replace("%3A", ":").replace("%2C", ",")
    return text.replace("%0D", "\r").replace("%0A", "\n").replace("%25", "%")


def parse_command(line: str) -> tuple[str, dict[str, str], str]:
    m = COMMAND.match(line)
    assert m, line
    props = dict(p.split("=", 1) for p in m.group(2).split(","))
    return m.group(1), {k: unescape(v, True) for k, v in props.items()}, unescape(m.group(3), False)


@pytest.fixture(autouse=True)
def no_github_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for var in ("GITHUB_ACTIONS", "GITHUB_STEP_SUMMARY", "GITHUB_WORKSPACE", "GITHUB_REPOSITORY"):
        monkeypatch.delenv(var, raising=False)


def test_escaping_matches_the_toolkit() -> None:
    assert escape_data("50% of a\r\nline: a,b") == "50%25 of a%0D%0Aline: a,b"
    assert escape_property("dir:a,b/100%.json\n") == "dir%3Aa%2Cb/100%25.json%0A"
    # %25 first: an already-escaped-looking text survives a round trip.
    assert unescape(escape_property("%3A literal"), True) == "%3A literal"


def test_command_properties_and_multiline_spans() -> None:
    one_line = Span("odd:name,1.json", 3, 5, 3, 9, 0, 0)
    f = Finding(
        "SL101", "vocab-padding", "warning", "pad it\nnow: 100%", "odd:name,1.json", one_line
    )
    level, props, message = parse_command(command(f, env={}))
    assert level == "warning"
    assert props == {
        "file": "odd:name,1.json",
        "line": "3",
        "endLine": "3",
        "col": "5",
        "endColumn": "9",
        "title": "shapelint SL101 vocab-padding",
    }
    assert message == "pad it\nnow: 100%"
    multi = Span("a.yaml", 2, 3, 4, 1, 0, 0)
    g = Finding("SL000", "parse-error", "error", "bad", "a.yaml", multi)
    level, props, _ = parse_command(command(g, env={}))
    assert level == "error" and "col" not in props and "endColumn" not in props
    assert (props["line"], props["endLine"]) == ("2", "4")
    info = Finding("SL999", "x", "info", "m", "a.yaml", one_line)
    assert command(info, env={}).startswith("::notice ")


def test_paths_relative_to_the_workspace(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "m").mkdir()
    (tmp_path / "m" / "config.json").write_text(GPT2)
    monkeypatch.setenv("GITHUB_WORKSPACE", str(tmp_path))
    code, out, _ = run(str(tmp_path / "m"), "--format", "github")
    assert code == 1
    (line,) = [ln for ln in out.splitlines() if ln.startswith("::")]
    _, props, message = parse_command(line)
    assert props["file"] == "m/config.json"
    assert "vocab_size 50257 → 50304" in message and "% step time on H100-SXM" in message


def test_auto_format_follows_github_actions(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "config.json").write_text(GPT2)
    _, out, _ = run(str(tmp_path))
    assert not out.startswith("::") and ": SL101 " in out
    monkeypatch.setenv("GITHUB_ACTIONS", "true")
    _, out, _ = run(str(tmp_path))
    assert out.startswith("::warning file=")
    _, out, _ = run(str(tmp_path), "--format", "text")
    assert not out.startswith("::")


def _many(tmp_path: Path) -> None:
    """13 configs with unpadded vocabs of different cost, and two shape errors."""
    for i in range(13):
        hidden = 512 * (i + 1)
        text = json.dumps(
            {
                "hidden_size": hidden,
                "num_attention_heads": hidden // 128,
                "num_hidden_layers": 2,
                "intermediate_size": 4 * hidden,
                "vocab_size": 32001 + 2 * i,
            },
            indent=2,
        )
        (tmp_path / f"m{i:02d}.json").write_text(text + "\n")
    for i in range(2):
        bad = {"hidden_size": 4096, "num_attention_heads": 30 + i, "vocab_size": 32000}
        (tmp_path / f"bad{i}.json").write_text(json.dumps(bad) + "\n")


def test_ten_per_level_costliest_first_and_step_summary(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _many(tmp_path)
    code, data, _ = run(str(tmp_path), "--format", "json", "--min-slowdown", "0")
    findings = json.loads(data)["findings"]
    warnings = [f for f in findings if f["severity"] == "warning"]
    errors = [f for f in findings if f["severity"] == "error"]
    assert len(warnings) == 13 and len(errors) >= 2

    def cost(f: dict[str, object]) -> float:
        return max((e["slowdown_pct"] for e in f["estimates"]), default=0.0)  # type: ignore[attr-defined]

    summary = tmp_path / "summary.md"
    summary.write_text("earlier step\n")
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    monkeypatch.setenv("GITHUB_WORKSPACE", str(tmp_path))
    code, out, _ = run(str(tmp_path), "--format", "github", "--statistics", "--min-slowdown", "0")
    assert code == 1
    commands = [parse_command(ln) for ln in out.splitlines() if COMMAND.match(ln)]
    levels = [c[0] for c in commands]
    assert levels == ["error"] * len(errors) + ["warning"] * 10
    shown = [(c[1]["file"], int(c[1]["line"])) for c in commands if c[0] == "warning"]
    ranked = sorted(warnings, key=cost, reverse=True)
    assert shown == [(Path(f["path"]).name, f["line"]) for f in ranked[:10]]
    assert "shapelint: 3 more findings not shown as annotations" in out
    assert "3 warnings" in out and "job summary" in out
    for f in ranked[10:]:
        assert f"{f['path']}:{f['line']}:{f['column']}: SL101" in out  # listed as plain text
    assert re.search(r"^\s+13  SL101  vocab-padding$", out, re.M)  # --statistics

    md = summary.read_text()
    assert md.startswith("earlier step\n## shapelint")  # appended, never overwritten
    rows = [ln for ln in md.splitlines() if ln.startswith("| ") and "`SL" in ln]
    assert len(rows) == len(findings)
    assert all("m" in r or "bad" in r for r in rows)


def test_clean_run_writes_summary_and_no_commands(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "c.json").write_text('{"hidden_size": 4096, "num_attention_heads": 32}\n')
    summary = tmp_path / "summary.md"
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    code, out, _ = run(str(tmp_path), "--format", "github")
    assert code == 0 and "::" not in out
    assert "All checks passed" in summary.read_text()


def test_text_statistics(tmp_path: Path) -> None:
    _many(tmp_path)
    code, out, _ = run(str(tmp_path), "--statistics", "--min-slowdown", "0")
    assert code == 1
    assert re.search(r"^\s+13  SL101  vocab-padding$", out, re.M)
    _, plain, _ = run(str(tmp_path), "--min-slowdown", "0")
    assert not re.search(r"^\s+13  SL101", plain, re.M)
