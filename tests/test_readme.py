"""The README's two set-up commands (install, tests) stay in step with CI, the contributing page
and the code; the README stays a door: small, with a table of contents."""

from __future__ import annotations

import re

from conftest import REPO

README = REPO / "README.md"
CONTRIBUTING = REPO / "docs" / "contributing.md"


def section(text: str, heading: str) -> str:
    return text.split(f"\n## {heading}\n", 1)[1].split("\n## ", 1)[0]


def sh_blocks(text: str) -> list[str]:
    return [b.strip() for b in re.findall(r"```sh\n(.*?)```", text, flags=re.S)]


def setup_commands() -> tuple[str, str]:
    """(the install command, the test command) as the README writes them."""
    readme = README.read_text(encoding="utf-8")
    (install,) = sh_blocks(section(readme, "Install"))
    (tests,) = sh_blocks(section(readme, "Development"))
    return install, tests


def test_two_setup_commands() -> None:
    install, tests = setup_commands()
    assert "pip install -e '.[test]'" in install and "shapelint examples/" in install
    assert tests.startswith(".venv/bin/ruff check .")
    # The docs site is built, links and anchors checked, as part of the tests.
    assert ".venv/bin/mkdocs build --strict" in tests.split(" && ")


def test_contributing_page_shows_the_same_commands() -> None:
    blocks = sh_blocks(section(CONTRIBUTING.read_text(encoding="utf-8"), "Set-up and the tests"))
    assert blocks == list(setup_commands())


def test_ci_runs_exactly_the_readme_test_command() -> None:
    _, tests = setup_commands()
    ci = (REPO / ".ci" / "run").read_text(encoding="utf-8").strip().splitlines()
    assert ci[-1] == tests.replace(".venv/bin/", "")
    # CI installs the test extra only: it must bring every tool the command runs.
    assert ".ci-venv/bin/python -m pip install -q -e '.[test]'" in ci
    assert "python scripts/release.py" in ci


def test_readme_is_a_door() -> None:
    """At most ~15 KB, with a table of contents linking every section."""
    readme = README.read_text(encoding="utf-8")
    assert len(readme.encode("utf-8")) <= 15_000
    headings = re.findall(r"^## (.+)$", readme, flags=re.M)
    contents = readme.split("**Contents:**", 1)[1].split("\n\n", 1)[0]
    linked = re.findall(r"\]\(#([a-z0-9-]+)\)", contents)
    assert linked == [re.sub(r"[^a-z0-9 -]", "", h.lower()).replace(" ", "-") for h in headings]
