"""`lookup.child` (indexed per mapping) finds what a scan of the entries finds."""

from __future__ import annotations

import itertools

from shapelint.core.source import Entry, Mapping, Scalar, Span
from shapelint.dialects.lookup import child, normalize_key

SPAN = Span("f", 1, 1, 1, 1, 0, 0)


def _mapping(keys: list[str]) -> Mapping:
    return Mapping(tuple(Entry(k, SPAN, Scalar(i, SPAN)) for i, k in enumerate(keys)), SPAN)


def _scan(mapping: Mapping, name: str) -> tuple[str, object] | None:
    found = None
    for e in mapping.entries:
        if normalize_key(e.key) == normalize_key(name):
            found = (e.key, e.value)
    return found


def test_child_equals_a_scan() -> None:
    keys = ["hidden_size", "hidden-size", "n_head", "vocab_size", "Vocab_Size", "a-b_c"]
    for n in range(len(keys) + 1):
        for combo in itertools.permutations(keys, n):
            mapping = _mapping(list(combo))
            for name in [*keys, "missing", "a_b-c", "hidden_size"]:
                assert child(mapping, name) == _scan(mapping, name)


def test_equal_mappings_are_indexed_apart() -> None:
    a, b = _mapping(["x"]), _mapping(["x"])
    assert child(a, "x") is not None and child(b, "x") is not None
    assert child(a, "x")[1] is a.entries[0].value  # type: ignore[index]
    assert child(b, "x")[1] is b.entries[0].value  # type: ignore[index]
