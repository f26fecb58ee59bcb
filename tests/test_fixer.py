"""The fix engine: rendering, splicing, choosing, verifying, looping, applicability."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import replace
from types import SimpleNamespace
from typing import cast

import pytest
from conftest import parse_text

from shapelint.core.model import Dim, Edit, Finding, Fix, ModelConfig, Target
from shapelint.core.source import LineIndex
from shapelint.engine import fixer, pipeline
from shapelint.engine.fixer import (
    OverlappingEditsError,
    apply_edits,
    choose,
    fix_document,
    render,
    splice,
    unified_diff,
)
from shapelint.engine.options import LintOptions
from shapelint.engine.pipeline import lint_document
from shapelint.hardware.gpus import lookup
from shapelint.rules.base import Rule, RuleModule, make_fix

OPTIONS = LintOptions(gpus=(lookup("H100-SXM"),))
GPT2 = '{\n  "n_embd": 768,\n  "n_head": 12,\n  "n_layer": 12,\n  "vocab_size": 50257\n}\n'


@pytest.mark.parametrize(
    ("old", "new", "text"),
    [
        ("50257", 50304, "50304"),
        ('"50257"', 50304, '"50304"'),
        ("'50257'", 50304, "'50304'"),
        ("50_257", 50304, "50_304"),
        ("1_024", 2048, "2_048"),
        ("0x1f", 32, "0x20"),
        ("0X1F", 32, "0X20"),
        ("50257.0", 50304, "50304.0"),
        ("4096 * 32", 131072, "131072"),
        ("8", 16, "16"),
    ],
)
def test_render_keeps_the_literal_style(old: str, new: int, text: str) -> None:
    assert render(old, new) == text


def _edit(text: str, literal: str, new: object, key: str = "k") -> Edit:
    start = text.index(literal)
    span = LineIndex(text).span("f", start, start + len(literal))
    return Edit(span, key, literal, new)


def test_splice_places_each_edit_after_earlier_shifts() -> None:
    text = "a: 8\nb: 50_257\nc: 3\n"
    edits = [
        _edit(text, "3", 4, "c"),
        _edit(text, "8", 1024, "a"),
        _edit(text, "50_257", 50304, "b"),
    ]
    new, placed = splice(text, edits)
    assert new == "a: 1024\nb: 50_304\nc: 4\n"
    for p in placed:
        assert new[p.start : p.end] == render(text[p.edit.span.start : p.edit.span.end], p.edit.new)


def test_identical_edits_apply_once_and_different_ones_overlap() -> None:
    text = '{"v": 50257}'
    e = _edit(text, "50257", 50304)
    assert apply_edits(text, [e, e]) == '{"v": 50304}'
    with pytest.raises(OverlappingEditsError):
        apply_edits(text, [e, replace(e, new=50432)])
    inner = _edit(text, "502", 1)
    with pytest.raises(OverlappingEditsError):
        apply_edits(text, [e, inner])


def _finding(
    code: str, edits: tuple[Edit, ...], applicability: str = "safe", key: str = "k"
) -> Finding:
    fix = Fix("d", applicability, edits)  # type: ignore[arg-type]
    return Finding(code, "n", "warning", "m", "f", edits[0].span, key=key, fix=fix)


def test_choose_keeps_the_first_by_rule_and_defers_a_conflict() -> None:
    text = '{"h": 2000, "a": 16}'
    h = _edit(text, "2000", 2048, "h")
    h2 = replace(h, new=2016)
    a = _edit(text, "16", 32, "a")
    sl103 = _finding("SL103", (h,), "unsafe", "h")
    sl102 = _finding("SL102", (a, h2), "unsafe", "a")
    assert choose([sl103, sl102], unsafe=True, rejected=set()) == [sl102]
    assert choose([sl103], unsafe=False, rejected=set()) == []
    assert choose([sl103], unsafe=True, rejected={fixer.ident(sl103)}) == []


# A stand-in rule module, for fixes the shipped rules do not make (yet).
def fake_rule(
    code: str, check: Callable[[ModelConfig, Target], Iterator[Finding]]
) -> SimpleNamespace:
    rule = Rule(code, "fake", "warning", "fake rule", "test", "alignment")
    return SimpleNamespace(RULE=rule, EXAMPLES=[], check=check)


@pytest.fixture
def with_rule() -> Callable[..., LintOptions]:
    """OPTIONS whose runner runs the shipped rules plus ``modules`` (no global patched)."""

    def install(*modules: SimpleNamespace) -> LintOptions:
        rules = (*pipeline.config_rules(), *(cast(RuleModule, m) for m in modules))
        return replace(OPTIONS, rules=rules)

    return install


# GPT-NeoX layout: the micro-batch and gradient accumulation in one file.
BATCH = (
    '{\n  "pipe_parallel_size": 1,\n  "model_parallel_size": 1,\n  "num_layers": 24,\n'
    '  "hidden_size": 2048,\n  "num_attention_heads": 16,\n  "seq_length": 2048,\n'
    '  "train_micro_batch_size_per_gpu": 3,  # per GPU\n'
    '  "gradient_accumulation_steps": 8,\n}\n'
)


def test_fix_with_two_edits_keeps_the_global_batch(
    with_rule: Callable[..., LintOptions],
) -> None:
    # The SL2xx batch rules change the micro-batch and keep the global batch by adjusting
    # gradient accumulation: one fix, two edits.
    def check(config: ModelConfig, target: Target) -> Iterator[Finding]:
        b, g = config.get(Dim.MICRO_BATCH), config.get(Dim.GRAD_ACCUM)
        if b is None or g is None or b.as_int is None or g.as_int is None:
            return
        if b.as_int & (b.as_int - 1) == 0:
            return
        new_b = 4
        new_g = b.as_int * g.as_int // new_b
        fix = make_fix(
            config, "keep the global batch", [(b, new_b), (g, new_g)], architecture=False
        )
        yield rule.finding(config, b, "micro-batch not a power of two", fix=fix)

    module = fake_rule("SL901", check)
    rule = module.RULE
    options = with_rule(module)
    doc = parse_text(BATCH, "yaml", "neox.yml")
    result = fix_document(doc, options)
    assert result.failed == []
    assert [f.code for f in result.applied] == ["SL901"]
    assert result.text == BATCH.replace(": 3,", ": 4,").replace(": 8,", ": 6,")


def test_fix_that_breaks_the_file_is_rejected(
    with_rule: Callable[..., LintOptions],
) -> None:
    def check(config: ModelConfig, target: Target) -> Iterator[Finding]:
        v = config.get(Dim.LAYERS)
        if v is None or v.as_int != 12:
            return
        edit = Edit(v.span, v.key, v.value, 24, text="24,,")
        yield rule.finding(config, v, "bad", fix=Fix("break it", "safe", (edit,)))

    module = fake_rule("SL902", check)
    rule = module.RULE
    options = with_rule(module)
    result = fix_document(parse_text(GPT2), options)
    assert [f.code for f in result.applied] == ["SL101"]  # the good fix still goes in
    (failed,) = result.failed
    assert failed.finding.code == "SL902"
    assert "would not parse" in failed.reason
    assert '"n_layer": 12' in result.text and "50304" in result.text


def test_fix_that_does_not_resolve_its_finding_is_rejected(
    with_rule: Callable[..., LintOptions],
) -> None:
    def check(config: ModelConfig, target: Target) -> Iterator[Finding]:
        v = config.get(Dim.LAYERS)
        if v is None:
            return
        fix = make_fix(config, "more layers", [(v, (v.as_int or 0) + 1)], architecture=False)
        yield rule.finding(config, v, "always fires", fix=fix)

    module = fake_rule("SL903", check)
    rule = module.RULE
    options = with_rule(module)
    result = fix_document(parse_text(GPT2), options)
    (failed,) = result.failed
    assert "still fires after the fix" in failed.reason
    assert '"n_layer": 12' in result.text


def test_fix_that_creates_a_finding_is_rejected(
    with_rule: Callable[..., LintOptions],
) -> None:
    def check(config: ModelConfig, target: Target) -> Iterator[Finding]:
        v = config.get(Dim.HEADS)
        if v is None or v.as_int != 12:
            return
        # 768 / 10 is not an integer: SL003 would appear.
        yield rule.finding(config, v, "x", fix=make_fix(config, "x", [(v, 10)], architecture=False))

    module = fake_rule("SL904", check)
    rule = module.RULE
    options = with_rule(module)
    result = fix_document(parse_text(GPT2), options)
    (failed,) = result.failed
    assert failed.reason.startswith("the fix would introduce SL003")


def test_fix_that_changes_a_number_into_a_string_is_rejected(
    with_rule: Callable[..., LintOptions],
) -> None:
    def check(config: ModelConfig, target: Target) -> Iterator[Finding]:
        v = config.get(Dim.LAYERS)
        if v is None or v.as_int != 12:
            return
        edit = Edit(v.span, v.key, v.value, 16, text='"16"')
        yield rule.finding(config, v, "x", fix=Fix("x", "safe", (edit,)))

    module = fake_rule("SL905", check)
    rule = module.RULE
    options = with_rule(module)
    (failed,) = fix_document(parse_text(GPT2), options).failed
    assert "reads '16' after the fix" in failed.reason


def test_conflicting_fix_waits_for_the_next_pass(
    with_rule: Callable[..., LintOptions],
) -> None:
    # SL906 wants a different edit of the vocab than SL101; SL101 (lower code) goes first and
    # SL906, re-checked on the fixed text, no longer fires.
    def check(config: ModelConfig, target: Target) -> Iterator[Finding]:
        v = config.get(Dim.VOCAB)
        if v is None or v.as_int != 50257:
            return
        yield rule.finding(
            config, v, "x", fix=make_fix(config, "x", [(v, 50432)], architecture=False)
        )

    module = fake_rule("SL906", check)
    rule = module.RULE
    options = with_rule(module)
    result = fix_document(parse_text(GPT2), options)
    assert [f.code for f in result.applied] == ["SL101"]
    assert result.failed == []
    assert '"vocab_size": 50304' in result.text


def test_loop_stops_after_max_passes(with_rule: Callable[..., LintOptions]) -> None:
    # Four rules want four different vocab sizes: each pass applies the lowest code's fix and
    # defers the others (same span); after MAX_PASSES passes the last one is left as found.
    def floor_rule(code: str, floor: int, new: int) -> SimpleNamespace:
        def check(config: ModelConfig, target: Target) -> Iterator[Finding]:
            v = config.get(Dim.VOCAB)
            if v is None or v.as_int is None or v.as_int >= floor:
                return
            fix = make_fix(config, "x", [(v, new)], architecture=False)
            yield module.RULE.finding(config, v, f"below {floor}", fix=fix)

        module = fake_rule(code, check)
        return module

    options = with_rule(
        *(
            floor_rule(code, floor, new)
            for code, floor, new in (
                ("SL911", 50400, 50432),
                ("SL912", 50500, 50560),
                ("SL913", 50600, 50624),
            )
        )
    )
    result = fix_document(parse_text(GPT2), options)
    assert fixer.MAX_PASSES == 3
    assert result.passes == 3
    assert [f.code for f in result.applied] == ["SL101", "SL911", "SL912"]
    assert result.failed == []
    assert '"vocab_size": 50560' in result.text
    _, remaining = lint_document(parse_text(result.text), options)
    assert [f.code for f in remaining] == ["SL913"]


def test_unparsed_document_is_never_fixed() -> None:
    doc = parse_text(GPT2.replace("12,", "12,,", 1))
    assert not doc.ok
    result = fix_document(doc, OPTIONS, unsafe=True)
    assert not result.changed and result.passes == 0


def test_safe_fix_only_without_unsafe() -> None:
    text = '{"hidden_size": 2560, "num_attention_heads": 32, "num_hidden_layers": 32, "intermediate_size": 10240, "vocab_size": 50257}\n'
    # h/a = 80 costs <1% on H100 with FA3's figures: every finding counts here.
    options = replace(OPTIONS, min_slowdown=0.0)
    safe = fix_document(parse_text(text), options)
    assert [f.code for f in safe.applied] == ["SL101"]
    both = fix_document(parse_text(text), options, unsafe=True)
    assert sorted(f.code for f in both.applied) == ["SL101", "SL102"]
    assert '"num_attention_heads": 20' in both.text and '"vocab_size": 50304' in both.text


@pytest.mark.parametrize(
    ("text", "fmt", "path"),
    [
        # A config that names a pretrained checkpoint.
        (GPT2.replace("{\n", '{\n  "_name_or_path": "gpt2",\n'), "json", "config.json"),
        (
            GPT2.replace("{\n", '{\n  "architectures": ["GPT2LMHeadModel"],\n'),
            "json",
            "config.json",
        ),
        # A value computed by an expression.
        (
            "n_layer = 12\nn_head = 12\nn_embd = 768\nvocab_size = 50_000 + 257\n",
            "python",
            "train.py",
        ),
        # A value reached through a YAML alias shared with other keys.
        (
            "vocab: &v 50257\nn_embd: 768\nn_head: 12\nn_layer: 12\nvocab_size: *v\n",
            "yaml",
            "c.yaml",
        ),
    ],
    ids=["name_or_path", "architectures", "expression", "yaml-alias"],
)
def test_unsafe_cases_are_unsafe(text: str, fmt: str, path: str) -> None:
    doc = parse_text(text, fmt, path)
    _, findings = lint_document(doc, OPTIONS)
    (f,) = [f for f in findings if f.code == "SL101"]
    assert f.fix is not None and f.fix.applicability == "unsafe"
    assert not fix_document(doc, OPTIONS).changed
    fixed = fix_document(doc, OPTIONS, unsafe=True)
    assert [x.code for x in fixed.applied] == ["SL101"]
    assert "50304" in fixed.text


def test_weights_beside_the_config_make_the_fix_unsafe(tmp_path: object) -> None:
    from pathlib import Path

    folder = Path(str(tmp_path))
    (folder / "model.safetensors").write_bytes(b"")
    doc = parse_text(GPT2, "json", str(folder / "config.json"))
    _, findings = lint_document(doc, OPTIONS)
    (f,) = findings
    assert f.fix is not None and f.fix.applicability == "unsafe"


def test_megatron_yaml_sets_the_padding_knob() -> None:
    text = (
        "language_model:\n  num_layers: 12\n  hidden_size: 768\n  num_attention_heads: 12\n"
        "model_parallel:\n  tensor_model_parallel_size: 2\n"
        "vocab_size: 50257\nmake_vocab_size_divisible_by: 1  # no padding\n"
    )
    doc = parse_text(text, "yaml", "megatron.yaml")
    result = fix_document(doc, OPTIONS)
    assert result.text == text.replace("divisible_by: 1 ", "divisible_by: 128 ")
    edits = [e for f in result.applied if f.fix for e in f.fix.edits]
    assert [(e.key, e.old, e.new) for e in edits] == [("make_vocab_size_divisible_by", 1, 128)]


def test_llama_params_sets_multiple_of() -> None:
    text = '{"dim": 4096, "n_heads": 32, "n_layers": 32, "multiple_of": 2, "vocab_size": 32000}\n'
    result = fix_document(parse_text(text, "json", "params.json"), OPTIONS, unsafe=True)
    assert result.text == text.replace('"multiple_of": 2', '"multiple_of": 64')


def test_unified_diff_headers() -> None:
    diff = unified_diff("a/config.json", "x\ny\n", "x\nz\n")
    assert diff.splitlines()[:2] == ["--- a/config.json", "+++ a/config.json"]
    assert unified_diff("p", "same", "same") == ""


def test_unified_diff_splits_lines_at_newlines_only() -> None:
    old = '{"a": "x\x0cy",\r\n "v": 50257}'
    diff = unified_diff("c.json", old, old.replace("50257", "50304"))
    assert diff == (
        "--- c.json\n+++ c.json\n@@ -1,2 +1,2 @@\n"
        ' {"a": "x\x0cy",\r\n'
        '- "v": 50257}\n\\ No newline at end of file\n'
        '+ "v": 50304}\n\\ No newline at end of file\n'
    )


def _example_cases() -> list[object]:
    from shapelint.rules import REGISTRY

    return [
        pytest.param(code, example, id=f"{code}-{i}")
        for code, module in sorted(REGISTRY.items())
        for i, example in enumerate(module.EXAMPLES, 1)
        if not example.valid and example.fixed is not None
    ]


@pytest.mark.parametrize(("code", "example"), _example_cases())
def test_every_rule_example_fixes_through_the_engine(code: str, example: object) -> None:
    # Each example's ``fixed`` is the file after ``--select CODE --unsafe-fixes``: the whole
    # engine (choose, splice, re-parse, re-lint, verify) must reproduce it.
    import math

    from shapelint.engine.options import TargetOptions
    from shapelint.rules.base import Example

    assert isinstance(example, Example)
    options = LintOptions(
        gpus=(lookup("H100-SXM"),),
        flags=TargetOptions(**example.target),  # type: ignore[arg-type]
        select=(code,),
        min_slowdown=-math.inf,
    )
    path = "config.json" if example.format == "json" else f"config.{example.format}"
    doc = parse_text(example.text, example.format, path)
    result = fix_document(doc, options, unsafe=True)
    assert result.failed == []
    assert result.text == example.fixed
    assert {f.code for f in result.applied} == {code}
