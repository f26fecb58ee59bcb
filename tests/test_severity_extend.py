"""Per-rule severity, settings that extend others, reasons on suppressions, disable-file (issue 14)."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from shapelint.cli.main import main
from shapelint.core.source import file_disables, suppression_reason

# Head dim 80 (SL102 points at hidden_size) and an unpadded vocab (SL101).
YAML = "hidden_size: 2560\nnum_attention_heads: 32\nnum_hidden_layers: 32\nvocab_size: 50257\n"


def run(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    # The YAML's h/a = 80 costs <1% on H100 with FA3's figures: every finding counts here.
    code = main([*argv, "--min-slowdown", "0"], out, err)
    return code, out.getvalue(), err.getvalue()


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    (tmp_path / ".git").mkdir()
    (tmp_path / "model.yaml").write_text(YAML, encoding="utf-8")
    return tmp_path


def codes_by_severity(out: str) -> dict[str, str]:
    data = json.loads(out)
    return {f["code"]: f["severity"] for f in data["findings"]}


# --- severity ----------------------------------------------------------------------------


def test_severity_table_overrides_rule_severity(repo: Path) -> None:
    (repo / ".shapelint.toml").write_text(
        '[severity]\nSL1 = "info"\nSL101 = "error"\n', encoding="utf-8"
    )
    code, out, _ = run(str(repo / "model.yaml"), "--format", "json")
    assert code == 1
    # The longest matching code or prefix wins.
    assert codes_by_severity(out) == {"SL101": "error", "SL102": "info"}
    # --fail-on sees the new severities: only SL101 (now an error) fails the run.
    assert run(str(repo / "model.yaml"), "--fail-on", "error")[0] == 1
    (repo / ".shapelint.toml").write_text('[severity]\nSL101 = "info"\n', encoding="utf-8")
    assert run(str(repo / "model.yaml"), "--fail-on", "warning")[0] == 1  # SL102 still warns
    (repo / ".shapelint.toml").write_text(
        '[severity]\nSL101 = "info"\nSL102 = "info"\n', encoding="utf-8"
    )
    assert run(str(repo / "model.yaml"), "--fail-on", "warning")[0] == 0


def test_severity_off_drops_the_rule(repo: Path) -> None:
    (repo / ".shapelint.toml").write_text('[severity]\nSL102 = "off"\n', encoding="utf-8")
    _, out, _ = run(str(repo / "model.yaml"), "--format", "json")
    assert codes_by_severity(out) == {"SL101": "warning"}


@pytest.mark.parametrize(
    ("table", "says"),
    [
        ('[severity]\nSL102 = "fatal"', "severity.SL102"),
        ('[severity]\nSL9 = "error"', "unknown rule code or prefix 'SL9'"),
        ('[severity]\n"vocab" = "error"', "is not a rule code or prefix"),
    ],
)
def test_bad_severity_tables_are_refused(repo: Path, table: str, says: str) -> None:
    (repo / ".shapelint.toml").write_text(table + "\n", encoding="utf-8")
    code, _, err = run(str(repo / "model.yaml"))
    assert code == 2 and err.count("\n") == 1 and says in err, err


# --- extend ------------------------------------------------------------------------------


def test_extend_inherits_and_overrides(repo: Path) -> None:
    (repo / "team.toml").write_text(
        '[severity]\nSL101 = "error"\nSL102 = "error"\n', encoding="utf-8"
    )
    (repo / "project").mkdir()
    (repo / "project" / "model.yaml").write_text(YAML, encoding="utf-8")
    (repo / "project" / "pyproject.toml").write_text(
        '[tool.shapelint]\nextend = "../team.toml"\n[tool.shapelint.severity]\nSL102 = "info"\n',
        encoding="utf-8",
    )
    _, out, _ = run(str(repo / "project" / "model.yaml"), "--format", "json")
    assert codes_by_severity(out) == {"SL101": "error", "SL102": "info"}


def test_extended_paths_resolve_against_their_own_file(repo: Path) -> None:
    (repo / "shared").mkdir()
    (repo / "shared" / "base.toml").write_text('baseline = "base.json"\n', encoding="utf-8")
    (repo / ".shapelint.toml").write_text('extend = "shared/base.toml"\n', encoding="utf-8")
    code, _, err = run(str(repo / "model.yaml"))
    assert code == 2 and "shared/base.json" in err.replace("\\", "/")


def test_extend_cycles_are_refused(repo: Path) -> None:
    (repo / "a.toml").write_text('extend = "b.toml"\n', encoding="utf-8")
    (repo / "b.toml").write_text('extend = "a.toml"\n', encoding="utf-8")
    code, _, err = run(str(repo / "model.yaml"), "--config", str(repo / "a.toml"))
    assert code == 2 and err.count("\n") == 1 and "cycle" in err
    (repo / "c.toml").write_text('extend = "c.toml"\n', encoding="utf-8")
    code, _, err = run(str(repo / "model.yaml"), "--config", str(repo / "c.toml"))
    assert code == 2 and "cycle" in err


def test_extend_errors_name_the_files(repo: Path) -> None:
    (repo / "a.toml").write_text('extend = "missing.toml"\n', encoding="utf-8")
    code, _, err = run(str(repo / "model.yaml"), "--config", str(repo / "a.toml"))
    assert code == 2 and "a.toml" in err and "missing.toml" in err
    (repo / "b.toml").write_text('extend = "bad.toml"\n', encoding="utf-8")
    (repo / "bad.toml").write_text("tp = 0\n", encoding="utf-8")
    code, _, err = run(str(repo / "model.yaml"), "--config", str(repo / "b.toml"))
    assert code == 2 and "bad.toml" in err and "extended by" in err and "tp" in err


# --- reasons and disable-file --------------------------------------------------------------


def test_suppression_reason_parsing() -> None:
    assert suppression_reason("a: 1  # shapelint: ignore[SL102] -- checkpoint fixed\n", 1) == (
        "checkpoint fixed"
    )
    assert suppression_reason("a: 1  # shapelint: ignore -- why  # other comment", 1) == "why"
    assert suppression_reason("a: 1  # shapelint: ignore[SL102]\n", 1) == ""
    assert suppression_reason("a: 1\n", 5) == ""


def test_file_disable_parsing() -> None:
    assert file_disables("a: 1\n# shapelint: disable-file[SL101, sl102] -- vendored\n") == (
        frozenset({"SL101", "SL102"}),
        2,
        "vendored",
    )
    assert file_disables("# shapelint: disable-file\n") == (frozenset(), 1, "")
    # Only a comment on a line of its own counts, not text inside a value.
    assert file_disables('a: "# shapelint: disable-file"\n') is None
    assert file_disables("a: 1  # shapelint: disable-file\n") is None


def test_reasons_in_statistics_and_sarif(repo: Path) -> None:
    text = YAML.replace(
        "hidden_size: 2560", "hidden_size: 2560  # shapelint: ignore[SL102] -- checkpoint fixed"
    )
    (repo / "model.yaml").write_text(text, encoding="utf-8")
    code, out, _ = run(str(repo / "model.yaml"), "--statistics")
    assert code == 1
    assert "    1  SL102  head-dim-alignment  -- checkpoint fixed" in out.splitlines()
    assert "    1  SL101  vocab-padding" in out.splitlines()
    _, out, _ = run(str(repo / "model.yaml"), "--format", "sarif")
    results = json.loads(out)["runs"][0]["results"]
    hidden = [r for r in results if "suppressions" in r]
    assert [r["ruleId"] for r in hidden] == ["SL102"]
    assert hidden[0]["suppressions"] == [
        {"kind": "inSource", "status": "accepted", "justification": "checkpoint fixed"}
    ]
    assert [r["ruleId"] for r in results if "suppressions" not in r] == ["SL101"]


def test_disable_file(repo: Path) -> None:
    (repo / "model.yaml").write_text(
        "# shapelint: disable-file -- vendored from upstream\n" + YAML, encoding="utf-8"
    )
    code, out, _ = run(str(repo / "model.yaml"), "--statistics")
    assert code == 0
    assert "    1  SL101  vocab-padding  -- vendored from upstream" in out.splitlines()
    (repo / "model.yaml").write_text(YAML + "# shapelint: disable-file[SL101]\n", encoding="utf-8")
    code, out, _ = run(str(repo / "model.yaml"))
    assert code == 1 and "SL102" in out and "SL101" not in out.split("Estimated")[0]
    (repo / "bad.yaml").write_text(
        "# shapelint: disable-file\nhidden_size: [1,\n", encoding="utf-8"
    )
    code, out, _ = run(str(repo / "bad.yaml"))
    assert code == 1 and "SL000" in out  # a file that does not parse is always reported
