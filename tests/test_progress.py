"""The progress line of long runs: on a terminal's stderr only, after the delay, never under
CI or ``-q``, and gone before the report (4,000 files took 23 s with nothing on the screen)."""

from __future__ import annotations

import io
import json
import re
from pathlib import Path

import pytest

from shapelint.cli import progress
from shapelint.cli.main import main
from shapelint.cli.progress import ProgressLine, files_text, in_ci
from shapelint.engine import parallel

GPT2 = {"n_embd": 768, "n_head": 12, "n_layer": 12, "vocab_size": 50257}


class Tty(io.StringIO):
    """A terminal's stderr, as far as the progress line can tell."""

    def isatty(self) -> bool:
        return True


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    root = tmp_path / "tree"
    root.mkdir()
    (tmp_path / ".git").mkdir()  # no settings from above
    for i in range(12):
        (root / f"c{i:02d}.json").write_text(json.dumps({**GPT2, "n_embd": 768 + 64 * i}))
    return root


@pytest.fixture
def terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    """No CI, no delay: a run of a few files shows its line."""
    monkeypatch.delenv("CI", raising=False)
    monkeypatch.delenv("GITHUB_ACTIONS", raising=False)
    monkeypatch.setattr(progress, "DELAY_S", 0.0)
    monkeypatch.setattr(progress, "INTERVAL_S", 0.0)


def check(*argv: str, err: io.StringIO) -> tuple[int, str]:
    out = io.StringIO()
    code = main(["check", "--no-cache", *argv], out, err)
    return code, out.getvalue()


@pytest.mark.usefixtures("terminal")
@pytest.mark.parametrize("jobs", ["1", "2"])
def test_a_terminal_sees_files_done_of_total_then_a_clean_line(tree: Path, jobs: str) -> None:
    if jobs == "2" and not parallel.can_fork():
        pytest.skip("workers are forked")
    err = Tty()
    code, out = check(str(tree), "--jobs", jobs, err=err)
    assert code == 1
    shown = err.getvalue()
    lines = shown.split("\r")[1:]
    assert lines[0].startswith("shapelint: 1/12 files (")
    # the seconds are wall time: a loaded machine may take more than one
    assert any(re.fullmatch(r"shapelint: 12/12 files \(\d+ s\)\x1b\[K", line) for line in lines)
    assert lines[-1] == "\x1b[K"  # erased: the report starts on a clean line
    assert out.startswith(str(tree))  # the report itself is on stdout, unchanged
    plain_out = io.StringIO()
    assert main(["check", "--no-cache", str(tree)], plain_out, io.StringIO()) == code
    assert plain_out.getvalue() == out


@pytest.mark.usefixtures("terminal")
def test_nothing_with_q_in_ci_or_off_a_terminal(
    tree: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    err = Tty()
    check(str(tree), "-q", err=err)
    assert err.getvalue() == ""
    plain = io.StringIO()
    check(str(tree), err=plain)
    assert plain.getvalue() == ""
    monkeypatch.setenv("CI", "true")
    check(str(tree), err=err)
    assert err.getvalue() == ""


def test_a_short_run_shows_nothing(tree: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CI", raising=False)
    err = Tty()
    check(str(tree), err=err)  # well under the second
    assert err.getvalue() == ""


def test_the_line_waits_for_the_delay_and_redraws_at_most_ten_times_a_second() -> None:
    err = Tty()
    line = ProgressLine(err, files_text, delay_s=3600.0, env={})
    line(1, 2)
    assert err.getvalue() == ""
    line = ProgressLine(err, files_text, delay_s=0.0, env={})
    for done in range(1, 1001):
        line(done, 2000)
    assert err.getvalue().count("\r") == 1  # one draw within the first 0.1 s
    line(2000, 2000)  # the last one is always drawn
    assert err.getvalue().endswith("shapelint: 2000/2000 files (0 s)\x1b[K")


@pytest.mark.parametrize(
    ("env", "ci"),
    [({}, False), ({"CI": "true"}, True), ({"CI": "1"}, True), ({"CI": "false"}, False)],
)
def test_ci_is_the_ci_variable(env: dict[str, str], ci: bool) -> None:
    assert in_ci(env) is ci
