"""The TOML reader: values equal tomllib's, exact spans, problems, suppressions."""

from __future__ import annotations

import sys

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from shapelint.core.source import Document, Mapping, Node, Scalar, Sequence
from shapelint.readers.toml import parse_suppression, parse_toml

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib


def node_at(doc: Document, dotted: str) -> Node:
    node: Node = doc.candidates[0].root
    for part in dotted.split("."):
        assert isinstance(node, Mapping), part
        found = node.get(part)
        assert found is not None, part
        node = found
    return node


def scalar_at(doc: Document, dotted: str) -> Scalar:
    node = node_at(doc, dotted)
    assert isinstance(node, Scalar)
    return node


def to_python(node: Node) -> object:
    if isinstance(node, Mapping):
        return {e.key: to_python(e.value) for e in node.entries}
    if isinstance(node, Sequence):
        return [to_python(i) for i in node.items]
    return node.value


# torchtitan's Llama-3-8B preset, trimmed.
TITAN = """# NOTE: this toml config is a preset for 64 A100 GPUs.

[model]
name = "llama3"
flavor = "8B"

[training]
local_batch_size = 1
seq_len = 8192  # tokens per sample
max_norm = 1.0
dataset = "c4"

[parallelism]
data_parallel_shard_degree = -1
tensor_parallel_degree = 1 # shapelint: ignore[SL204]

[quantize.linear.float8]
filter_fqns = ["output", "router.gate"]
"""


def test_spans_and_values() -> None:
    doc = parse_toml("llama3_8b.toml", TITAN)
    assert doc.ok and not doc.problems
    assert to_python(doc.candidates[0].root) == tomllib.loads(TITAN)
    seq = scalar_at(doc, "training.seq_len")
    assert seq.value == 8192
    assert (seq.span.line, seq.span.column, seq.span.end_column) == (9, 11, 15)
    assert TITAN[seq.span.start : seq.span.end] == "8192"
    flavor = scalar_at(doc, "model.flavor")
    assert TITAN[flavor.span.start : flavor.span.end] == '"8B"'
    assert (flavor.span.line, flavor.span.column) == (5, 10)
    shard = scalar_at(doc, "parallelism.data_parallel_shard_degree")
    assert shard.value == -1 and TITAN[shard.span.start : shard.span.end] == "-1"
    fqns = node_at(doc, "quantize.linear.float8.filter_fqns")
    assert isinstance(fqns, Sequence)
    second = fqns.items[1]
    assert isinstance(second, Scalar)
    assert TITAN[second.span.start : second.span.end] == '"router.gate"'
    assert doc.suppressions == {15: frozenset({"SL204"})}


RICH = """title = "x # not a comment"
"quoted.key" = 1
dotted.inner = 2
int_us = 1_024
hex = 0xff
flt = 6.0e-4
when = 1979-05-27 07:32:00Z
multi = \"\"\"
line "one"
line two\"\"\"
literal = '''C:\\path'''
inline = { a = 1, b.c = "d" }
nested = [
  [1, 2],  # comment inside an array
  [3],
]

[table.sub]
k = true

[[layer]]
width = 64
[[layer]]
width = 128

[table]
defined_later = 'yes'
"""


def test_every_toml_construct_matches_tomllib() -> None:
    doc = parse_toml("rich.toml", RICH)
    assert not doc.problems
    assert to_python(doc.candidates[0].root) == tomllib.loads(RICH)
    assert doc.suppressions == {}
    multi = scalar_at(doc, "multi")
    assert RICH[multi.span.start : multi.span.end].startswith('"""\nline')
    assert RICH[multi.span.start : multi.span.end].endswith('two"""')
    inner = scalar_at(doc, "inline.b.c")
    assert RICH[inner.span.start : inner.span.end] == '"d"'
    key = next(e for e in doc.candidates[0].root.entries if e.key == "quoted.key")
    assert RICH[key.key_span.start : key.key_span.end] == '"quoted.key"'
    layers = node_at(doc, "layer")
    assert isinstance(layers, Sequence) and len(layers.items) == 2
    second = layers.items[1]
    assert isinstance(second, Mapping)
    width = second.get("width")
    assert isinstance(width, Scalar) and width.value == 128
    assert (width.span.line, width.span.column) == (24, 9)
    when = scalar_at(doc, "when")
    assert RICH[when.span.start : when.span.end] == "1979-05-27 07:32:00Z"


def test_crlf() -> None:
    text = "[training]\r\nseq_len = 4096\r\nlocal_batch_size = 2\r\n"
    doc = parse_toml("crlf.toml", text)
    batch = scalar_at(doc, "training.local_batch_size")
    assert text[batch.span.start : batch.span.end] == "2"
    assert (batch.span.line, batch.span.column) == (3, 20)


@pytest.mark.parametrize(
    ("text", "line", "column"),
    [
        ("a = 1\nb = [1,\nc = 2\n", 3, 1),
        ("[training\nseq_len = 1\n", 1, 10),
        ("a = 1\na = 2\n", 2, 6),
        ("x = \n", 1, 5),
    ],
)
def test_invalid_toml_is_sl000_at_tomllib_position(text: str, line: int, column: int) -> None:
    with pytest.raises(tomllib.TOMLDecodeError) as raised:
        tomllib.loads(text)
    assert f"line {line}, column {column}" in str(raised.value)
    doc = parse_toml("bad.toml", text)
    assert [p.code for p in doc.problems] == ["SL000"]
    assert (doc.problems[0].span.line, doc.problems[0].span.column) == (line, column)
    assert doc.candidates == []


def test_error_at_end_of_document() -> None:
    doc = parse_toml("bad.toml", 'a = "unterminated')
    assert [p.code for p in doc.problems] == ["SL000"]


def test_parse_suppression() -> None:
    assert parse_suppression("# shapelint: ignore") == frozenset()
    assert parse_suppression("#shapelint: ignore[sl101 , SL102]") == {"SL101", "SL102"}
    assert parse_suppression("# an ordinary comment") is None


TOML_PIECES = st.sampled_from(
    [*"ab=. \n\t#[]{},'\"1_0x+-:TZe", '"""', "'''", "true", "[[", "]]", "\r\n", "a = 1\n"]
)


@settings(max_examples=300, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.lists(TOML_PIECES, max_size=40).map("".join) | st.text(max_size=40))
def test_any_text_gives_a_document_and_valid_toml_is_located(text: str) -> None:
    doc = parse_toml("fuzz.toml", text)
    assert isinstance(doc, Document)
    try:
        expected = tomllib.loads(text)
    except tomllib.TOMLDecodeError:
        assert [p.code for p in doc.problems] == ["SL000"]
        return
    assert not doc.problems, doc.problems
    assert to_python(doc.candidates[0].root) == expected
