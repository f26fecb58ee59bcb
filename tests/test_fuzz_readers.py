"""Fuzz each reader with mutated real configs: never a raise, never slow (issue 12, item 3).

Inputs are files of ``../shared/corpus`` (skipped when it is absent) with random byte-level
mutations — bit flips, inserted and deleted runs, duplicated slices, truncation, splices of
two files. Every input is read, its configs extracted and every rule run; any exception is a
failure, and so is an input that takes longer than `TIME_BOUND` seconds. The JSON reader is
also checked against ``json.loads``: the same texts accepted, the same values read.

The atheris harnesses under ``fuzz/`` run the same body for as long as one likes.
"""

from __future__ import annotations

import json
import math
import time
from pathlib import Path

import pytest
from conftest import corpus_dir
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from shapelint.core.source import Mapping, Node, Scalar, Sequence
from shapelint.engine.options import LintOptions
from shapelint.engine.pipeline import lint_document
from shapelint.hardware.gpus import load_table
from shapelint.readers import parse
from shapelint.readers.json import parse_json

# Seconds one input may take, read and linted (generous: the test machine is shared).
TIME_BOUND = 20.0
# Seed files larger than this are left out: mutating them costs time, not coverage.
MAX_SEED_BYTES = 64 * 1024
SUFFIXES = {
    "json": (".json",),
    "yaml": (".yaml", ".yml"),
    "toml": (".toml",),
    "python": (".py",),
    "shell": (".sh",),
}
NAMES = {
    "json": "config.json",
    "yaml": "config.yaml",
    "toml": "config.toml",
    "python": "model.py",
    "shell": "train.sh",
}
# Small seeds every run has, so a reader with no corpus files of its kind is still fuzzed.
BUILT_IN = {
    "json": b'{"hidden_size": 4096, "num_attention_heads": 32, "vocab_size": 50257}\n',
    "yaml": b"model:\n  hidden_size: &h 4096\n  num_attention_heads: 32\n  ffn: *h\n",
    "toml": b'[model]\nname = "llama3"\ndim = 4096\nn_heads = 32\nvocab_size = 128256\n',
    "python": b"from dataclasses import dataclass\n\n@dataclass\nclass Config:\n"
    b"    n_embd: int = 768\n    n_head: int = 12\n    vocab_size: int = 50257\n",
    "shell": b'H=${H:-"${PWD}/x"}\nARGS=(\n  --hidden-size 4096 # w\n  --swiglu\n)\n'
    b'torchrun pretrain_gpt.py "${ARGS[@]}" --num-attention-heads=32 \\\n  --num-layers $L\n',
}


def seeds(kind: str) -> list[bytes]:
    """The corpus files of ``kind`` (small ones), plus the built-in seed."""
    found = [BUILT_IN[kind]]
    root = corpus_dir()
    if root is not None:
        for path in sorted(root.rglob("*")):
            if path.suffix in SUFFIXES[kind] and path.is_file():
                data = path.read_bytes()
                if len(data) <= MAX_SEED_BYTES:
                    found.append(data)
    return found


@st.composite
def mutated(draw: st.DrawFn, pool: list[bytes]) -> bytes:
    """A seed with a few random byte-level mutations."""
    data = bytearray(draw(st.sampled_from(pool)))
    for _ in range(draw(st.integers(1, 6))):
        op = draw(st.sampled_from(["flip", "insert", "delete", "dup", "truncate", "splice"]))
        n = len(data)
        at = draw(st.integers(0, n))
        if op == "flip" and n:
            i = min(at, n - 1)
            data[i] ^= 1 << draw(st.integers(0, 7))
        elif op == "insert":
            data[at:at] = draw(
                st.one_of(
                    st.binary(max_size=16),
                    st.sampled_from(
                        [
                            b"{",
                            b"[",
                            b"(",
                            b"}",
                            b"]",
                            b'"',
                            b"&a ",
                            b"*a",
                            b"\n  ",
                            b"1e400",
                            b"9" * 5000,
                            b"\xff",
                            b"\x00",
                            b"\r",
                            b"<<: ",
                            b"!!python/object ",
                        ]
                    ),
                )
            )
        elif op == "delete":
            del data[at : at + draw(st.integers(1, 64))]
        elif op == "dup" and n:
            end = min(n, at + draw(st.integers(1, 256)))
            data[at:at] = data[at:end] * draw(st.integers(1, 50))
        elif op == "truncate":
            del data[at:]
        elif op == "splice":
            other = draw(st.sampled_from(pool))
            data[at:] = other[draw(st.integers(0, len(other))) :]
    return bytes(data)


OPTIONS = LintOptions(gpus=(load_table().lookup("H100-SXM"),))


def read_and_lint(kind: str, data: bytes) -> None:
    start = time.perf_counter()
    doc = parse(NAMES[kind], data, kind)
    lint_document(doc, OPTIONS)
    elapsed = time.perf_counter() - start
    assert elapsed < TIME_BOUND, f"{kind} input of {len(data)} bytes took {elapsed:.1f} s"


def _fuzz(kind: str) -> None:
    pool = seeds(kind)
    if corpus_dir() is None:
        pytest.skip(
            "shared corpus not found (set SHAPELINT_CORPUS or place it at ../shared/corpus)"
        )

    @settings(
        max_examples=60,
        deadline=None,
        database=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )
    @given(mutated(pool))
    def check(data: bytes) -> None:
        read_and_lint(kind, data)

    check()


@pytest.mark.corpus
@pytest.mark.parametrize("kind", ["json", "yaml", "toml", "python", "shell"])
def test_reader_survives_mutated_real_configs(kind: str) -> None:
    _fuzz(kind)


def plain(node: Node) -> object:
    """The value json.loads would give for a tree node (the last of duplicate keys wins)."""
    if isinstance(node, Mapping):
        return {e.key: plain(e.value) for e in node.entries}
    if isinstance(node, Sequence):
        return [plain(item) for item in node.items]
    assert isinstance(node, Scalar)
    return node.value


def same(a: object, b: object) -> bool:
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    return json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True)


@pytest.mark.corpus
def test_json_reader_accepts_exactly_what_json_loads_accepts() -> None:
    pool = seeds("json")
    if corpus_dir() is None:
        pytest.skip(
            "shared corpus not found (set SHAPELINT_CORPUS or place it at ../shared/corpus)"
        )

    @settings(
        max_examples=150,
        deadline=None,
        database=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )
    @given(mutated(pool))
    def check(data: bytes) -> None:
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            return
        doc = parse_json("config.json", text)
        try:
            expected = json.loads(text)
        except (ValueError, RecursionError):
            assert not doc.ok
            return
        assert doc.ok, doc.problems
        if doc.candidates:
            assert same(plain(doc.candidates[0].root), expected)
        else:
            assert not isinstance(expected, dict)

    check()


def test_json_bulk_containers_keep_their_values_and_spans() -> None:
    big = list(range(5000))
    labels = {str(i): f"L{i}" for i in range(3000)}
    text = json.dumps({"hidden_size": 4096, "ids": big, "id2label": labels, "small": [1, 2]})
    doc = parse_json("config.json", text)
    root = doc.candidates[0].root
    ids, table, small = root.get("ids"), root.get("id2label"), root.get("small")
    assert isinstance(ids, Scalar) and ids.value == big
    assert text[ids.span.start : ids.span.end] == json.dumps(big)
    assert isinstance(table, Scalar) and table.value == labels
    assert isinstance(small, Sequence)  # small containers keep a span per item
    assert same(plain(root), json.loads(text))


def test_json_syntax_error_positions_are_json_loads_positions() -> None:
    for text in ('{"a": 1,}', '{"a": [1, 2}', "", "  ", '{"a": 1} x', "[01]", '{"a": "\x01"}'):
        doc = parse_json("config.json", text)
        (problem,) = doc.problems
        try:
            json.loads(text)
        except json.JSONDecodeError as err:
            assert problem.message == f"invalid JSON: {err.msg}"
            assert (problem.span.line, problem.span.column) == (err.lineno, err.colno)
        else:
            raise AssertionError(f"json.loads accepted {text!r}")


def test_seed_pool_reads_real_files(corpus: Path) -> None:
    assert len(seeds("json")) > 10 and len(seeds("yaml")) > 10
