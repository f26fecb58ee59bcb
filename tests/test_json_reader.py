"""The JSON reader: values equal json.loads, exact spans, duplicate keys, syntax errors."""

from __future__ import annotations

import json

from hypothesis import given, settings
from hypothesis import strategies as st

from shapelint.core.source import Mapping, Node, Scalar, Sequence
from shapelint.readers.json import parse_json


def plain(node: Node) -> object:
    if isinstance(node, Scalar):
        return node.value
    if isinstance(node, Sequence):
        return [plain(i) for i in node.items]
    return {e.key: plain(e.value) for e in node.entries}


def test_spans_cover_values_exactly() -> None:
    text = '{\n  "hidden_size": 4096,\n  "name": "llama",\n  "rope": {"theta": 1e4}\n}\n'
    doc = parse_json("c.json", text)
    root = doc.candidates[0].root
    hidden = root.get("hidden_size")
    assert isinstance(hidden, Scalar)
    assert hidden.value == 4096
    assert (hidden.span.line, hidden.span.column, hidden.span.end_column) == (2, 18, 22)
    assert text[hidden.span.start : hidden.span.end] == "4096"
    name = root.get("name")
    assert isinstance(name, Scalar) and text[name.span.start : name.span.end] == '"llama"'
    rope = root.get("rope")
    assert isinstance(rope, Mapping)
    theta = rope.get("theta")
    assert isinstance(theta, Scalar) and theta.value == 1e4 and theta.span.line == 4


def test_non_ascii_columns_count_characters() -> None:
    text = '{"név": "ő", "vocab_size": 50257}'
    doc = parse_json("c.json", text)
    v = doc.candidates[0].root.get("vocab_size")
    assert isinstance(v, Scalar)
    assert text[v.span.start : v.span.end] == "50257"
    assert v.span.column == text.index("50257") + 1


def test_duplicate_key_is_a_problem_at_the_second_key() -> None:
    doc = parse_json("c.json", '{"vocab_size": 1,\n "vocab_size": 2}')
    assert [p.code for p in doc.problems] == ["SL001"]
    assert doc.problems[0].span.line == 2
    v = doc.candidates[0].root.get("vocab_size")
    assert isinstance(v, Scalar) and v.value == 2  # what json.loads keeps


def test_invalid_json_reports_decoder_position() -> None:
    text = '{\n  "a": 1,\n}'
    doc = parse_json("c.json", text)
    assert not doc.ok
    (problem,) = doc.problems
    try:
        json.loads(text)
    except json.JSONDecodeError as exc:
        assert (problem.span.line, problem.span.column) == (exc.lineno, exc.colno)
    assert problem.code == "SL000"


def test_non_object_root_has_no_candidate() -> None:
    assert parse_json("c.json", "[1, 2]").candidates == []
    assert parse_json("c.json", "").problems[0].code == "SL000"


def test_deep_nesting_does_not_crash() -> None:
    doc = parse_json("c.json", "[" * 100_000 + "]" * 100_000)
    assert doc.problems and doc.problems[0].code == "SL000"


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4)
    ),
    max_leaves=20,
)


@settings(max_examples=200, deadline=None)
@given(json_values, st.sampled_from([None, 0, 2]))
def test_values_equal_json_loads(value: object, indent: int | None) -> None:
    text = json.dumps({"root": value}, indent=indent, ensure_ascii=False)
    doc = parse_json("c.json", text)
    assert not doc.problems
    assert plain(doc.candidates[0].root) == json.loads(text)


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=60))
def test_any_text_gives_a_document(text: str) -> None:
    doc = parse_json("c.json", text)
    try:
        json.loads(text)
    except (json.JSONDecodeError, RecursionError):
        assert not doc.ok
    else:
        assert doc.ok
