"""docs/rules.md is generated from the rule modules and must be current."""

from __future__ import annotations

from conftest import REPO

from shapelint.rules.render import render_all


def test_rules_doc_is_current() -> None:
    current = (REPO / "docs" / "rules.md").read_text(encoding="utf-8")
    assert current == render_all(), "docs/rules.md is stale: run python scripts/gen_rules_doc.py"
