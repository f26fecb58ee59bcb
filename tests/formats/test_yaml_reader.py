"""The YAML reader: exact spans, aliases and anchors, safety, problems, suppressions."""

from __future__ import annotations

import math
import time
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from shapelint.core.source import Document, Mapping, Node, Scalar, Sequence
from shapelint.readers import parse
from shapelint.readers.yaml import MAX_ALIAS_NODES, parse_yaml


def node_at(doc: Document, dotted: str, candidate: int = 0) -> Node:
    node: Node = doc.candidates[candidate].root
    for part in dotted.split("."):
        assert isinstance(node, Mapping), part
        found = node.get(part)
        assert found is not None, part
        node = found
    return node


def scalar_at(doc: Document, dotted: str, candidate: int = 0) -> Scalar:
    node = node_at(doc, dotted, candidate)
    assert isinstance(node, Scalar)
    return node


def written(doc: Document, node: Scalar) -> str:
    return doc.text[node.span.start : node.span.end]


def position(node: Scalar) -> tuple[int, int, int, int]:
    s = node.span
    return s.line, s.column, s.end_line, s.end_column


def to_python(node: Node) -> object:
    if isinstance(node, Mapping):
        return {e.key: to_python(e.value) for e in node.entries}
    if isinstance(node, Sequence):
        return [to_python(i) for i in node.items]
    return node.value


# GPT-NeoX writes its configs as flow mappings with comments and trailing commas (Pythia-1.4B).
NEOX_FLOW = """# GPT-NeoX Pythia-1.4B
{
  "pipe_parallel_size": 1,
  "model_parallel_size": 1,

  "num_layers": 24,
  "hidden_size": 2048, # width
  "num_attention_heads": 16,
  "seq_length": 2048,
  "attention_config": [[["flash"], 24]],
  "fp16": {
    "enabled": true,
  },
}
"""


def test_flow_style_positions() -> None:
    doc = parse_yaml("1-4B.yml", NEOX_FLOW)
    assert doc.ok and not doc.problems
    hidden = scalar_at(doc, "hidden_size")
    assert hidden.value == 2048
    assert written(doc, hidden) == "2048"
    assert position(hidden) == (7, 18, 7, 22)
    layers = scalar_at(doc, "num_layers")
    assert position(layers) == (6, 17, 6, 19)
    assert scalar_at(doc, "fp16.enabled").value is True
    root = doc.candidates[0].root
    entry = next(e for e in root.entries if e.key == "num_attention_heads")
    assert doc.text[entry.key_span.start : entry.key_span.end] == '"num_attention_heads"'
    assert (entry.key_span.line, entry.key_span.column) == (8, 3)


QUOTED = """vocab_plain: 50257
vocab_double: "50257"
vocab_single: '50257'
tagged: !!int "50304"
anchored: &v 50432
both: &w !!int '64'
block: |
  4096
after: 1
"""


@pytest.mark.parametrize(
    ("key", "value", "text", "pos"),
    [
        ("vocab_plain", 50257, "50257", (1, 14, 1, 19)),
        ("vocab_double", "50257", '"50257"', (2, 15, 2, 22)),
        ("vocab_single", "50257", "'50257'", (3, 15, 3, 22)),
        ("tagged", 50304, '"50304"', (4, 15, 4, 22)),
        ("anchored", 50432, "50432", (5, 14, 5, 19)),
        ("both", 64, "'64'", (6, 16, 6, 20)),
        ("block", "4096\n", "|\n  4096", (7, 8, 8, 7)),
    ],
)
def test_scalar_spans_cover_only_the_value(
    key: str, value: object, text: str, pos: tuple[int, int, int, int]
) -> None:
    doc = parse_yaml("q.yaml", QUOTED)
    node = scalar_at(doc, key)
    assert node.value == value
    assert written(doc, node) == text
    assert position(node) == pos


ALIASES = """base: &base
  hidden_size: 4096
  num_attention_heads: 32
seq: &seq 2048
small:
  <<: *base
  num_attention_heads: 16
copy: *base
seq_length: *seq
max_position_embeddings: 4096
"""


def test_alias_values_point_at_the_anchor_and_are_shared() -> None:
    doc = parse_yaml("a.yaml", ALIASES)
    assert not doc.problems
    anchored = scalar_at(doc, "seq")
    through_alias = scalar_at(doc, "seq_length")
    assert through_alias.value == 2048
    assert through_alias.span == anchored.span
    assert position(through_alias) == (4, 11, 4, 15)
    assert through_alias.shared and anchored.shared
    assert not scalar_at(doc, "max_position_embeddings").shared
    # a mapping reached through an alias: its scalars are the anchor's, shared
    copied = scalar_at(doc, "copy.hidden_size")
    assert copied.shared and position(copied) == (2, 16, 2, 20)
    assert scalar_at(doc, "base.hidden_size").shared


def test_merge_keys_follow_pyyaml_precedence() -> None:
    doc = parse_yaml("a.yaml", ALIASES)
    merged_hidden = scalar_at(doc, "small.hidden_size")
    assert merged_hidden.value == 4096 and merged_hidden.shared
    own_heads = scalar_at(doc, "small.num_attention_heads")
    assert own_heads.value == 16 and not own_heads.shared
    assert position(own_heads) == (7, 24, 7, 26)
    small = node_at(doc, "small")
    assert isinstance(small, Mapping)
    assert list(small.keys()) == ["hidden_size", "num_attention_heads"]
    assert to_python(doc.candidates[0].root) == yaml.safe_load(ALIASES)


def test_merge_list_earlier_source_wins() -> None:
    text = "a: &a {x: 1, y: 1}\nb: &b {x: 2, z: 2}\nc:\n  <<: [*a, *b]\n  z: 3\n"
    doc = parse_yaml("m.yaml", text)
    assert to_python(node_at(doc, "c")) == yaml.safe_load(text)["c"] == {"x": 1, "y": 1, "z": 3}


def test_crlf_offsets_are_characters() -> None:
    text = "model:\r\n  d_model: 4096\r\n  n_heads: 32 # shapelint: ignore[SL102]\r\n"
    doc = parse_yaml("crlf.yaml", text)
    heads = scalar_at(doc, "model.n_heads")
    assert written(doc, heads) == "32"
    assert position(heads) == (3, 12, 3, 14)
    assert doc.suppressions == {3: frozenset({"SL102"})}


def test_bom_is_stripped_and_offsets_index_the_decoded_text() -> None:
    data = "\ufeffhidden_size: 2048\nnum_layers: 24\n".encode()
    doc = parse("bom.yaml", data, "yaml")
    assert doc.bom and doc.ok
    layers = scalar_at(doc, "num_layers")
    assert written(doc, layers) == "24"
    assert position(layers) == (2, 13, 2, 15)


def test_duplicate_key_is_sl001_at_the_second_key() -> None:
    doc = parse_yaml("d.yaml", "hidden_size: 2048\nnum_layers: 24\nhidden_size: 4096\n")
    assert [p.code for p in doc.problems] == ["SL001"]
    problem = doc.problems[0]
    assert (problem.span.line, problem.span.column) == (3, 1)
    assert problem.key == "hidden_size"
    assert scalar_at(doc, "hidden_size").value == 4096  # what PyYAML keeps


def test_unsafe_tag_is_reported_never_constructed(tmp_path: Path) -> None:
    marker = tmp_path / "pwned"
    text = f'a: 1\nb: !!python/object/apply:os.system ["touch {marker}"]\nc: !custom 5\n'
    doc = parse_yaml("evil.yaml", text)
    assert not marker.exists()
    codes = [(p.code, p.span.line, p.span.column) for p in doc.problems]
    # Only the global (!!python) tag is a problem; a local tag is an application's own.
    assert codes == [("SL006", 2, 4)]
    first = doc.problems[0]
    assert text[first.span.start : first.span.end] == "!!python/object/apply:os.system"
    custom = scalar_at(doc, "c")
    assert not custom.known and written(doc, custom) == "5"
    assert scalar_at(doc, "a").value == 1


def test_billion_laughs_is_reported_not_expanded() -> None:
    lines = ['a0: &a0 ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]']
    for i in range(1, 10):
        refs = ", ".join([f"*a{i - 1}"] * 9)
        lines.append(f"a{i}: &a{i} [{refs}]")
    started = time.perf_counter()
    doc = parse_yaml("lol.yaml", "\n".join(lines) + "\n")
    assert time.perf_counter() - started < 5
    assert [p.code for p in doc.problems] == ["SL007"]
    assert str(MAX_ALIAS_NODES) in doc.problems[0].message
    assert doc.candidates == []
    assert doc.ok  # the file parsed; it is reported, not a syntax error


def test_modest_alias_use_is_expanded() -> None:
    text = "a: &a [1, 2, 3]\n" + "".join(f"k{i}: *a\n" for i in range(100))
    doc = parse_yaml("ok.yaml", text)
    assert not doc.problems and len(doc.candidates[0].root.entries) == 101


def test_recursive_alias_is_sl007() -> None:
    doc = parse_yaml("r.yaml", "a: &a\n  b: *a\n")
    assert [p.code for p in doc.problems] == ["SL007"]


def test_multi_document_candidates() -> None:
    text = "hidden_size: 1\n---\n- not a mapping\n---\nhidden_size: 3\n"
    doc = parse_yaml("multi.yaml", text)
    assert [c.name for c in doc.candidates] == ["doc[0]", "doc[2]"]
    assert scalar_at(doc, "hidden_size", 1).value == 3
    single = parse_yaml("one.yaml", "---\nhidden_size: 1\n")
    assert [c.name for c in single.candidates] == [""]


def test_syntax_error_uses_pyyaml_problem_mark() -> None:
    text = "model:\n  d_model: 4096\n   n_heads: 32\n"
    with pytest.raises(yaml.MarkedYAMLError) as raised:
        yaml.safe_load(text)
    mark = raised.value.problem_mark
    assert mark is not None
    doc = parse_yaml("bad.yaml", text)
    assert [p.code for p in doc.problems] == ["SL000"]
    assert (doc.problems[0].span.line, doc.problems[0].span.column) == (
        mark.line + 1,
        mark.column + 1,
    )
    assert not doc.ok and doc.candidates == []


@pytest.mark.parametrize("text", ["a: \x00", "a: [1, 2", "a: b: c", "%YAML 9.9\n--- 1", "*x"])
def test_invalid_input_is_sl000(text: str) -> None:
    doc = parse_yaml("bad.yaml", text)
    assert [p.code for p in doc.problems] == ["SL000"]


def test_values_equal_safe_load() -> None:
    text = "a: 1_000\nb: on\nc: 1e5\nd: 2.5e-4\ne: 0x10\nf: ~\ng: .inf\nh: 1.e-5\ni: '1'\n"
    doc = parse_yaml("v.yaml", text)
    assert to_python(doc.candidates[0].root) == yaml.safe_load(text)
    assert scalar_at(doc, "a").value == 1000
    assert scalar_at(doc, "c").value == "1e5"  # YAML 1.1: no dot, so a string


def test_suppressions() -> None:
    text = (
        "a: 1  # shapelint: ignore[SL101, sl102]\n"
        'b: "x # shapelint: ignore"\n'
        "c: x#y\n"
        "# shapelint: ignore\n"
        "d: 2 # shapelint: ignore[SL201] # shapelint: ignore\n"
        "e: |\n"
        "  # shapelint: ignore[SL999] is text\n"
    )
    doc = parse_yaml("s.yaml", text)
    assert doc.suppressions == {
        1: frozenset({"SL101", "SL102"}),
        4: frozenset(),
        5: frozenset(),
    }
    assert scalar_at(doc, "c").value == "x#y"


TEXTS = st.lists(
    st.sampled_from(
        [*"ab:- \n\t#&*!{}[],'\"|>%?1.0_\r\\~", "!!python/object:x", "<<", "&a", "*a", "---", "..."]
    ),
    max_size=40,
).map("".join) | st.text(max_size=60)


@settings(max_examples=300, deadline=None, suppress_health_check=list(HealthCheck))
@given(TEXTS)
def test_any_text_gives_a_document(text: str) -> None:
    doc = parse_yaml("fuzz.yaml", text)
    assert isinstance(doc, Document)
    for candidate in doc.candidates:
        stack: list[Node] = [candidate.root]
        while stack:
            node = stack.pop()
            assert 0 <= node.span.start <= node.span.end <= len(text)
            if isinstance(node, Mapping):
                stack.extend(e.value for e in node.entries)
            elif isinstance(node, Sequence):
                stack.extend(node.items)


def _normal(x: object) -> object:
    if isinstance(x, dict):
        return {str(k): _normal(v) for k, v in x.items()}
    if isinstance(x, list):
        return [_normal(v) for v in x]
    if isinstance(x, float) and math.isnan(x):
        return "nan"
    return x


LEAVES = st.one_of(st.integers(), st.floats(), st.booleans(), st.none(), st.text(max_size=6))
DATA = st.recursive(
    LEAVES,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner),
    max_leaves=8,
)


@settings(max_examples=200, deadline=None)
@given(st.dictionaries(st.text(max_size=5), DATA, max_size=4), st.booleans(), st.booleans())
def test_values_round_trip_like_safe_load(obj: dict[str, object], flow: bool, crlf: bool) -> None:
    text = yaml.safe_dump(obj, default_flow_style=flow, allow_unicode=True)
    if crlf:
        text = text.replace("\n", "\r\n")
    doc = parse_yaml("rt.yaml", text)
    assert doc.ok and not doc.problems
    assert _normal(to_python(doc.candidates[0].root)) == _normal(yaml.safe_load(text))
