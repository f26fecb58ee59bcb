"""Property tests: random configs in every format, fixed, change only the values fixed.

Each example is a GPT-style config written with random key order, key names, quoting,
indentation, comments, line endings, BOM and final newline. After fixing: the file parses
again, its token stream differs from the original only in the fixed values (JSON by a regex
tokenizer, YAML by ``yaml.scan``, Python by ``tokenize``), every other character is the same,
the fixed findings are gone, and fixing again changes nothing.
"""

from __future__ import annotations

import io
import re
import tokenize
from collections import Counter
from dataclasses import dataclass

import yaml
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from shapelint.core.source import Document, encode
from shapelint.engine.fixer import fix_document, ident, render
from shapelint.engine.options import LintOptions
from shapelint.engine.pipeline import lint_document
from shapelint.hardware.gpus import lookup
from shapelint.readers import parse

OPTIONS = LintOptions(gpus=(lookup("H100-SXM"),), min_slowdown=0.0)
SETTINGS = settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@dataclass(frozen=True)
class Model:
    """The numbers of a GPT-style config (vocab often unpadded, head dim sometimes odd)."""

    hidden: int
    heads: int
    layers: int
    vocab: int


@st.composite
def models(draw: st.DrawFn) -> Model:
    head_dim = draw(st.sampled_from([64, 128, 80, 96]))
    heads = draw(st.one_of(st.integers(1, 40), st.sampled_from([8, 12, 16, 20, 32, 40])))
    vocab = draw(st.one_of(st.integers(1000, 260_000), st.sampled_from([50257, 32001, 51866])))
    return Model(heads * head_dim, heads, draw(st.integers(1, 96)), vocab)


HF_KEYS = {
    "hidden": ("hidden_size", "n_embd", "d_model"),
    "heads": ("num_attention_heads", "n_head"),
    "layers": ("num_hidden_layers", "n_layer"),
    "vocab": ("vocab_size",),
}
EXTRAS = [("layer_norm_epsilon", "1e-05"), ("tie_word_embeddings", "true"), ("n_positions", "1024")]
NUMBER = re.compile(r"(?<![\w.])[+-]?\d[\d_]*(?![\w.])")


def _entries(
    draw: st.DrawFn, model: Model, keys: dict[str, tuple[str, ...]]
) -> list[tuple[str, str]]:
    entries = [(draw(st.sampled_from(keys[dim])), str(getattr(model, dim))) for dim in keys]
    entries += draw(st.lists(st.sampled_from(EXTRAS), unique=True, max_size=3))
    return draw(st.permutations(entries))


@st.composite
def json_files(draw: st.DrawFn) -> tuple[str, str]:
    entries = _entries(draw, draw(models()), HF_KEYS)
    nl = draw(st.sampled_from(["\n", "\r\n"]))
    indent = draw(st.sampled_from(["", "  ", "    ", "\t"]))
    colon = draw(st.sampled_from([": ", ":", " : "]))
    sep = f",{nl}{indent}" if indent else ", "
    body = sep.join(f'"{k}"{colon}{v}' for k, v in entries)
    text = f"{{{nl}{indent}{body}{nl}}}" if indent else f"{{{body}}}"
    return text + draw(st.sampled_from(["", nl])), "json"


@st.composite
def yaml_files(draw: st.DrawFn) -> tuple[str, str]:
    entries = _entries(draw, draw(models()), HF_KEYS)
    nl = draw(st.sampled_from(["\n", "\r\n"]))
    lines = [f"# {draw(st.sampled_from(['model', 'GPT-2 style', 'from scratch']))}"]
    flow = draw(st.booleans())
    if flow:  # GPT-NeoX style: flow mapping, comments, trailing comma
        lines.append("{")
    for k, v in entries:
        quote = draw(st.sampled_from(["", "'", '"']))
        comment = draw(st.sampled_from(["", "  # note", "   # 64 · 12"]))
        key = f"{quote}{k}{quote}"
        lines.append(f"  {key}: {v},{comment}" if flow else f"{key}: {v}{comment}")
        if draw(st.booleans()):
            lines.append("" if draw(st.booleans()) else "# ---")
    if flow:
        lines.append("}")
    return nl.join(lines) + draw(st.sampled_from(["", nl])), "yaml"


@st.composite
def python_files(draw: st.DrawFn) -> tuple[str, str]:
    model = draw(models())
    keys = {
        "hidden": ("n_embd",),
        "heads": ("n_head",),
        "layers": ("n_layer",),
        "vocab": ("vocab_size",),
    }
    entries = [(keys[d][0], getattr(model, d)) for d in keys]
    entries = draw(st.permutations(entries))
    nl = draw(st.sampled_from(["\n", "\r\n"]))
    klass = draw(st.booleans())
    lines = ["# nanoGPT-style config", ""]
    if klass:
        lines += ["from dataclasses import dataclass", "", "", "@dataclass", "class GPTConfig:"]
    for k, v in entries:
        literal = f"{v:_d}" if draw(st.booleans()) else str(v)
        comment = draw(st.sampled_from(["", "  # tokens", "  # width"]))
        lines.append(f"    {k}: int = {literal}{comment}" if klass else f"{k} = {literal}{comment}")
    lines.append("    dropout: float = 0.0" if klass else "dropout = 0.0")
    return nl.join(lines) + nl, "python"


def tokens(text: str, fmt: str) -> list[str]:
    """The file's tokens, without whitespace (and, for JSON and YAML, comments)."""
    if fmt == "json":
        return re.findall(r'"(?:[^"\\]|\\.)*"|[-+\w.]+|[{}\[\]:,]', text)
    if fmt == "yaml":
        return [f"{type(t).__name__}:{getattr(t, 'value', '')}" for t in yaml.scan(text)]
    return [f"{t.type}:{t.string}" for t in tokenize.generate_tokens(io.StringIO(text).readline)]


def _number_token(token: str, fmt: str) -> str:
    return token if fmt == "json" else token.split(":", 1)[1]


def check_fix(text: str, fmt: str, bom: bool, unsafe: bool) -> None:
    path = {"json": "config.json", "yaml": "config.yaml", "python": "config.py"}[fmt]
    data = encode(text, "utf-8", bom)
    doc = parse(path, data, fmt)
    assert doc.ok, doc.problems
    result = fix_document(doc, OPTIONS, unsafe=unsafe)
    event(
        f"{fmt}: {len(result.applied)} fixed, {len(result.failed)} rejected, {result.passes} passes"
    )

    new_doc: Document = parse(path, encode(result.text, doc.encoding, doc.bom), fmt)
    assert new_doc.ok and new_doc.bom == bom

    # Every character but the digits of numbers is unchanged (comments, quotes, whitespace,
    # line endings, key order) ...
    assert NUMBER.sub("#", result.text) == NUMBER.sub("#", text)
    # ... and the tokens that differ are exactly the fixed values, old → new.
    old_tokens, new_tokens = tokens(text, fmt), tokens(result.text, fmt)
    assert len(old_tokens) == len(new_tokens)
    changed = Counter(
        (_number_token(o, fmt), _number_token(n, fmt))
        for o, n in zip(old_tokens, new_tokens, strict=True)
        if o != n
    )
    expected: Counter[tuple[str, str]] = Counter()
    seen: set[tuple[int, object]] = set()
    for f in result.applied:
        assert f.fix is not None
        assert unsafe or f.fix.applicability == "safe"
        for e in f.fix.edits:
            if (e.span.start, e.new) in seen:
                continue
            seen.add((e.span.start, e.new))
            old_literal = text[e.span.start : e.span.end] if result.passes == 1 else str(e.old)
            expected[(old_literal, render(old_literal, e.new))] += 1
    if result.passes == 1:
        assert changed == expected
    else:  # a value fixed twice shows only its first and last text
        assert sum(changed.values()) <= sum(expected.values())

    # The fixed findings are gone, and fixing again changes nothing.
    _, after = lint_document(new_doc, OPTIONS)
    assert not {ident(f) for f in result.applied} & {ident(f) for f in after}
    again = fix_document(new_doc, OPTIONS, unsafe=unsafe)
    assert not again.changed, again.applied


@SETTINGS
@given(json_files(), st.booleans(), st.booleans())
def test_json_fix_properties(file: tuple[str, str], bom: bool, unsafe: bool) -> None:
    check_fix(*file, bom, unsafe)


@SETTINGS
@given(yaml_files(), st.booleans(), st.booleans())
def test_yaml_fix_properties(file: tuple[str, str], bom: bool, unsafe: bool) -> None:
    check_fix(*file, bom, unsafe)


@SETTINGS
@given(python_files(), st.booleans(), st.booleans())
def test_python_fix_properties(file: tuple[str, str], bom: bool, unsafe: bool) -> None:
    check_fix(*file, bom, unsafe)


def test_generators_produce_fixable_configs() -> None:
    # The properties above would pass vacuously if nothing were ever fixed.
    fixed = 0
    for text, fmt in (
        ('{"n_embd": 768, "n_head": 12, "n_layer": 12, "vocab_size": 50257}', "json"),
        ("# m\r\nn_embd: 768\r\n'n_head': 12  # x\r\nn_layer: 12\r\nvocab_size: 50257", "yaml"),
        ("n_embd = 768\nn_head = 12\nn_layer = 12\nvocab_size = 50_257  # gpt2\n", "python"),
    ):
        doc = parse(f"c.{fmt}", text.encode(), fmt)
        fixed += len(fix_document(doc, OPTIONS).applied)
    assert fixed == 3
