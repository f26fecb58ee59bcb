"""`# shapelint: ignore[...]` comments end to end (YAML, Python), per-file-ignores for
JSON, and SL008 (--report-unused-ignores)."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest

from shapelint.cli.main import main
from shapelint.rules import REGISTRY

LLAMA_YAML = (
    "hidden_size: 4096\nnum_attention_heads: 32\nnum_hidden_layers: 32\n"
    "intermediate_size: 11008\nvocab_size: 50257{comment}\n"
)
LLAMA_PY = (
    "class LlamaConfig:\n    hidden_size = 4096\n    num_attention_heads = 32\n"
    "    num_hidden_layers = 32\n    intermediate_size = 11008\n    vocab_size = 50257{comment}\n"
)
GPT2 = '{\n  "n_embd": 768,\n  "n_head": 12,\n  "n_layer": 12,\n  "vocab_size": 50257\n}\n'


@pytest.fixture(autouse=True)
def in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("GITHUB_ACTIONS", raising=False)
    (tmp_path / ".git").mkdir()
    monkeypatch.chdir(tmp_path)


def findings(*argv: str) -> list[dict[str, Any]]:
    out, err = io.StringIO(), io.StringIO()
    code = main([*argv, "--format", "json", "--min-slowdown", "0"], out, err)
    assert code in (0, 1), err.getvalue()
    result: list[dict[str, Any]] = json.loads(out.getvalue())["findings"]
    return result


@pytest.mark.parametrize(("template", "name"), [(LLAMA_YAML, "c.yaml"), (LLAMA_PY, "c.py")])
@pytest.mark.parametrize(
    ("comment", "suppressed"),
    [
        ("", False),
        ("  # shapelint: ignore[SL101]", True),
        ("  # shapelint: ignore[sl102, SL101]", True),
        ("  # shapelint: ignore", True),
        ("  # shapelint: ignore[SL102]", False),
        ("  # vocab as released", False),
    ],
)
def test_comment_suppresses_on_its_line(
    template: str, name: str, comment: str, suppressed: bool
) -> None:
    Path(name).write_text(template.format(comment=comment))
    found = [f for f in findings(name) if f["code"] == "SL101"]
    assert (found == []) is suppressed, found
    if not suppressed:
        assert found[0]["line"] == template.count("\n")


def test_comment_on_another_line_does_not_suppress() -> None:
    text = LLAMA_YAML.format(comment="").replace(
        "hidden_size: 4096", "hidden_size: 4096  # shapelint: ignore[SL101]"
    )
    Path("c.yaml").write_text(text)
    assert [f["code"] for f in findings("c.yaml") if f["code"] == "SL101"] == ["SL101"]


def test_hash_inside_a_string_is_not_a_comment() -> None:
    text = LLAMA_PY.format(comment='; note = "# shapelint: ignore"')
    Path("c.py").write_text(text)
    assert "SL101" in [f["code"] for f in findings("c.py")]
    Path("c.py").write_text(LLAMA_PY.format(comment='; note = "x"  # shapelint: ignore'))
    assert "SL101" not in [f["code"] for f in findings("c.py")]


def test_json_uses_per_file_ignores() -> None:
    Path("gpt2").mkdir()
    Path("gpt2/config.json").write_text(GPT2)
    assert [f["code"] for f in findings(".")] == ["SL101"]
    Path(".shapelint.toml").write_text('[per-file-ignores]\n"gpt2/config.json" = ["SL101"]\n')
    assert findings(".") == []


def test_unused_ignores_are_reported_only_when_asked() -> None:
    text = (
        "hidden_size: 4096  # shapelint: ignore[SL101]\n"
        "num_attention_heads: 32  # shapelint: ignore\n"
        "num_hidden_layers: 32  # shapelint: ignore[SL999]\n"
        "intermediate_size: 11008\n"
        "vocab_size: 50257  # shapelint: ignore[SL101, SL104]\n"
    )
    Path("c.yaml").write_text(text)
    assert findings("c.yaml") == []
    got = findings("c.yaml", "--report-unused-ignores")
    assert all(f["code"] == "SL008" for f in got)
    by_line = {f["line"]: f for f in got}
    assert sorted(by_line) == [1, 2, 3, 5]
    assert "no SL101 finding" in by_line[1]["message"]
    assert "suppresses nothing" in by_line[2]["message"]
    assert "unknown code SL999" in by_line[3]["message"]
    assert "SL104" in by_line[5]["message"] and "SL101" not in by_line[5]["message"]
    first = by_line[1]
    assert (first["column"], first["end_column"]) == (20, 46)  # the comment itself
    assert text.splitlines()[0][first["column"] - 1 : first["end_column"] - 1] == (
        "# shapelint: ignore[SL101]"
    )
    assert first["severity"] == REGISTRY["SL008"].RULE.severity


def test_unused_ignore_respects_selection() -> None:
    Path("c.yaml").write_text("hidden_size: 4096  # shapelint: ignore[SL101]\n")
    assert [f["code"] for f in findings("c.yaml", "--report-unused-ignores")] == ["SL008"]
    # A code that is not selected in this run cannot be called unused.
    assert findings("c.yaml", "--report-unused-ignores", "--ignore", "SL101") == []
    assert findings("c.yaml", "--report-unused-ignores", "--ignore", "SL008") == []


def test_unused_ignore_in_python() -> None:
    Path("c.py").write_text(
        LLAMA_PY.format(comment="").replace(
            "hidden_size = 4096", "hidden_size = 4096  # shapelint: ignore[SL103]"
        )
    )
    got = findings("c.py", "--report-unused-ignores")
    assert [(f["code"], f["line"]) for f in got if f["code"] == "SL008"] == [("SL008", 2)]


@pytest.mark.parametrize(
    "example",
    REGISTRY["SL008"].EXAMPLES,
    ids=[f"{e.format}-{'valid' if e.valid else 'reported'}" for e in REGISTRY["SL008"].EXAMPLES],
)
def test_sl008_examples_through_the_cli(example: Any) -> None:
    """The rule's own examples (the generic example test reads parser problems only)."""
    name = "launch.sh" if example.format == "shell" else f"config.{example.format}"
    Path(name).write_text(example.text)
    got = [f["code"] for f in findings(name, "--report-unused-ignores")]
    assert ("SL008" in got) is (not example.valid), got


# -- shell launch scripts ------------------------------------------------------------------------

# A Megatron-LM launch script: the FFN width 5461 (= 8/3·2048, unaligned) is SL104's finding,
# written in the model's array or, in COMMAND, on a continued line of the command.
ARRAY = """\
#!/bin/bash
GPT_MODEL_ARGS=(
    --num-layers 24
    --hidden-size 2048
    --num-attention-heads 16
    --ffn-hidden-size 5461{line}
    --seq-length 2048
)
torchrun pretrain_gpt.py ${{GPT_MODEL_ARGS[@]}} --micro-batch-size 4
"""
COMMAND = """\
#!/bin/bash
GPT_MODEL_ARGS=(--num-layers 24 --hidden-size 2048 --num-attention-heads 16 --seq-length 2048)
torchrun pretrain_gpt.py ${{GPT_MODEL_ARGS[@]}} \\
    --ffn-hidden-size 5461{line}
    --micro-batch-size 4
"""


def lint(template: str, line: str, *argv: str) -> list[dict[str, Any]]:
    Path("train.sh").write_text(template.format(line=line))
    return findings("train.sh", *argv)


def codes(found: list[dict[str, Any]]) -> list[str]:
    return [f["code"] for f in found]


def test_shell_scripts_have_the_finding_to_suppress() -> None:
    assert codes(lint(ARRAY, "")) == ["SL104"]
    assert codes(lint(COMMAND, " \\")) == ["SL104"]


@pytest.mark.parametrize(
    "line",
    [
        "  # shapelint: ignore[SL104]",
        "  # shapelint: ignore",
        # The line of the issue: `\ ` inside an array is an escaped space (a one-space element,
        # dropped when the array is expanded unquoted); the comment still stands.
        " \\  # shapelint: ignore[SL104] -- as trained",
        # A comment in backquotes: a command substitution that expands to nothing.
        " `# shapelint: ignore[SL104]`",
    ],
)
def test_shell_comment_suppresses_on_its_line(line: str) -> None:
    """A suppression in a launch script was never read: still reported, and
    --report-unused-ignores said nothing."""
    assert codes(lint(ARRAY, line, "--report-unused-ignores")) == []


def test_unused_shell_ignore_is_reported() -> None:
    found = lint(ARRAY, "  # shapelint: ignore[SL101]", "--report-unused-ignores")
    assert codes(found) == ["SL104", "SL008"]
    assert found[1]["line"] == 6 and "no SL101 finding on this line" in found[1]["message"]


def test_hash_inside_a_shell_word_or_quotes_is_no_comment() -> None:
    assert codes(lint(ARRAY, ' "#shapelint: ignore"', "--report-unused-ignores")) == ["SL104"]
    assert codes(lint(ARRAY, " x#shapelint:ignore", "--report-unused-ignores")) == ["SL104"]


@pytest.mark.parametrize(
    ("line", "why"),
    [
        # bash: `\ ` escapes the space; the comment runs to the end of the line; the next line
        # is a command of its own (`--micro-batch-size: command not found`).
        (" \\  # shapelint: ignore[SL104]", "after `\\ ` (an escaped space"),
        # The backslash after the comment is part of the comment.
        ("  # shapelint: ignore[SL104] \\", "the backslash at its end is part of the comment"),
    ],
)
def test_a_shell_comment_that_ends_a_continued_command_says_how_to_suppress_there(
    line: str, why: str
) -> None:
    """Where a comment cannot stand (it would end the command), it suppresses nothing and an
    SL008 finding, reported with or without --report-unused-ignores, says what to write."""
    found = lint(COMMAND, line)
    assert codes(found) == ["SL104", "SL008"]
    sl008 = found[1]
    assert (sl008["line"], sl008["column"]) == (4, line.index("#") + 27)
    assert why in sl008["message"]
    assert sl008["message"].endswith(
        "on a continued line, put it in backquotes before the backslash: "
        "`# shapelint: ignore[SL104]` \\"
    )
    # What it says to write works: the command goes on, and the comment suppresses.
    assert codes(lint(COMMAND, " `# shapelint: ignore[SL104]` \\", "--report-unused-ignores")) == []
