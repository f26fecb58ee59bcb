"""The README's set-up commands stay in step with CI and the code."""

from __future__ import annotations

import re

from conftest import REPO


def setup_blocks() -> list[str]:
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    section = readme.split("## Set-up", 1)[1].split("\n## ", 1)[0]
    return [b.strip() for b in re.findall(r"```sh\n(.*?)```", section, flags=re.S)]


def test_two_setup_commands() -> None:
    install, tests = setup_blocks()
    assert "pip install -e '.[test]'" in install and "shapelint examples/" in install
    assert tests.startswith(".venv/bin/ruff check .")


def test_ci_runs_exactly_the_readme_test_command() -> None:
    _, tests = setup_blocks()
    ci = (REPO / ".ci" / "run").read_text(encoding="utf-8").strip().splitlines()
    assert ci[-1] == tests.replace(".venv/bin/", "")
