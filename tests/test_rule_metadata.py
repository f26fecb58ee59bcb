"""Rules declare what the engine needs (`shapelint.rules.base.Rule`): the registry lists each
rule module once, every rule has the hook its scope calls, its relations name real rules, and
the engine, the reports and the commands read that metadata instead of naming rule codes."""

from __future__ import annotations

import ast
import re
from dataclasses import replace
from pathlib import Path
from types import SimpleNamespace

from conftest import parse_text

import shapelint
from shapelint.core.model import Dim, Finding, ModelConfig, Target
from shapelint.engine.options import LintOptions
from shapelint.engine.pipeline import lint_document
from shapelint.hardware.gpus import lookup
from shapelint.rules import (
    REGISTRY,
    RULE_MODULES,
    SCOPES,
    code_of,
    config_rules,
    needs_engines,
    rules_of,
    scope_of,
)
from shapelint.rules.base import Rule

PACKAGE = Path(shapelint.__file__).parent
HOOKS = {"config": "check", "document": "check_document", "suppression": "check_suppressions"}


def test_the_registry_lists_every_rule_module_once() -> None:
    on_disk = sorted(p.stem for p in (PACKAGE / "rules").glob("sl[0-9][0-9][0-9]_*.py"))
    assert sorted(RULE_MODULES) == on_disk
    assert len(set(RULE_MODULES)) == len(RULE_MODULES) == len(REGISTRY)
    for name, module in zip(RULE_MODULES, REGISTRY.values(), strict=True):
        assert module.__name__ == f"shapelint.rules.{name}"


def test_what_picks_a_rule_without_importing_it_matches_its_rule() -> None:
    # The registry reads a rule's code from its module's name, and the engine picks the rules
    # it runs by `scope_of` and `needs_engines` before importing them.
    for name in RULE_MODULES:
        rule = REGISTRY[code_of(name)].RULE
        assert rule.code == code_of(name), name
        assert rule.scope == scope_of(rule.code), name
        assert rule.needs_engines == needs_engines(rule.code), name
    engine_free = {m.RULE.code for m in config_rules(engines=False)}
    assert engine_free == {m.RULE.code for m in config_rules() if not m.RULE.needs_engines}
    assert "SL101" in engine_free and "SL301" not in engine_free


def test_every_rule_has_the_hook_its_scope_calls() -> None:
    assert sorted(m.RULE.code for s in SCOPES for m in rules_of(s)) == sorted(REGISTRY)
    for code, module in REGISTRY.items():
        scope = module.RULE.scope
        if scope == "reader":  # its findings are the readers' problems
            assert not any(hasattr(module, hook) for hook in HOOKS.values()), code
        else:
            assert callable(getattr(module, HOOKS[scope], None)), code


def test_relations_name_config_rules_and_each_dim_is_padded_by_one_rule() -> None:
    configs = {m.RULE.code for m in config_rules()}
    for code, module in REGISTRY.items():
        assert set(module.RULE.defers_to) <= configs - {code}, code
    padded = [m.RULE.pads for m in REGISTRY.values() if m.RULE.pads is not None]
    assert len(padded) == len(set(padded))
    assert Dim.VOCAB in padded  # suggest pads a candidate's vocab with that rule's fix


def _fake(code: str, defers_to: tuple[str, ...] = ()) -> SimpleNamespace:
    rule = Rule(code, f"fake-{code}", "warning", "fake", "test", "model", defers_to=defers_to)

    def check(config: ModelConfig, target: Target) -> list[Finding]:
        heads = config.get(Dim.HEADS)
        return [] if heads is None else [rule.finding(config, heads, code)]

    return SimpleNamespace(RULE=rule, EXAMPLES=[], check=check)


def test_a_rule_that_defers_is_dropped_only_where_the_other_reports_the_same_value() -> None:
    doc = parse_text('{"hidden_size": 768, "num_attention_heads": 12, "num_hidden_layers": 2}\n')
    options = LintOptions(gpus=(lookup("H100-SXM"),), min_slowdown=float("-inf"))
    deferring, other = _fake("SL990", defers_to=("SL991",)), _fake("SL991")
    _, both = lint_document(doc, replace(options, rules=(deferring, other)))  # type: ignore[arg-type]
    assert [f.code for f in both] == ["SL991"]
    _, alone = lint_document(doc, replace(options, rules=(deferring,)))  # type: ignore[arg-type]
    assert [f.code for f in alone] == ["SL990"]


# The one code the engine may name: the reading problem a file that cannot be read is.
READ_PROBLEM = {("shapelint/engine/pipeline.py", "SL000")}
CODE = re.compile(r"SL\d{1,3}")


def test_engine_reports_and_commands_name_no_rule_code() -> None:
    named = set()
    for layer in ("engine", "report", "cli"):
        for path in sorted((PACKAGE / layer).rglob("*.py")):
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if (
                    isinstance(node, ast.Constant)
                    and isinstance(node.value, str)
                    and CODE.fullmatch(node.value)
                ):
                    named.add((path.relative_to(PACKAGE.parent).as_posix(), node.value))
    assert named == READ_PROBLEM
