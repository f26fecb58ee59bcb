"""The text report names each finding's severity after its code (issue 25, friction 6):
``path:line:col: SL301 [error] message``, and a severity changed in the settings shows."""

from __future__ import annotations

import io
import re
from pathlib import Path

import pytest

from shapelint.cli.main import main

# Qwen2-7B's shape: 28 heads, which tensor parallel 8 does not divide (SL301, an error), and
# GPT-2's odd vocab (SL101, a warning).
QWEN2_7B = (
    '{"architectures": ["Qwen2ForCausalLM"], "hidden_size": 3584, "num_attention_heads": 28,'
    ' "num_key_value_heads": 4, "intermediate_size": 18944, "num_hidden_layers": 28,'
    ' "vocab_size": 152064}\n'
)
GPT2 = '{"n_embd": 768, "n_head": 12, "n_layer": 12, "vocab_size": 50257}\n'
LINE = re.compile(r"^(?P<where>[^ ]+:\d+:\d+:) (?P<code>SL\d{3}) \[(?P<sev>error|warning|info)\] ")


def run(*argv: str) -> tuple[int, str]:
    out = io.StringIO()
    code = main(list(argv), out, io.StringIO())
    return code, out.getvalue()


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.delenv("GITHUB_ACTIONS", raising=False)
    (tmp_path / ".git").mkdir()
    (tmp_path / "qwen2.json").write_text(QWEN2_7B)
    (tmp_path / "gpt2.json").write_text(GPT2)
    monkeypatch.chdir(tmp_path)
    return tmp_path


def severities(out: str) -> dict[str, str]:
    found = {}
    for line in out.splitlines():
        m = LINE.match(line)
        if m:
            found[m["code"]] = m["sev"]
    return found


def both(*extra: str) -> dict[str, str]:
    """Severities shown for Qwen2-7B at tp 8 on vLLM (SL301) and GPT-2 at tp 1 (SL101)."""
    _, heads = run("check", "qwen2.json", "--tp", "8", "--engine", "vllm", "--select", "SL301")
    _, vocab = run("check", "gpt2.json", "--select", "SL101")
    return severities(heads + vocab)


def test_each_line_names_its_severity(project: Path) -> None:
    assert both() == {"SL301": "error", "SL101": "warning"}


def test_a_severity_set_in_the_settings_shows_in_the_line(project: Path) -> None:
    (project / "pyproject.toml").write_text(
        '[tool.shapelint.severity]\nSL3 = "warning"\nSL101 = "info"\n'
    )
    assert both() == {"SL301": "warning", "SL101": "info"}


def test_colour_marks_the_code_and_the_severity(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("NO_COLOR", raising=False)
    monkeypatch.setenv("FORCE_COLOR", "1")
    _, out = run("check", "gpt2.json", "--select", "SL101")
    assert "\x1b[33mSL101 [warning]\x1b[0m" in out, out
