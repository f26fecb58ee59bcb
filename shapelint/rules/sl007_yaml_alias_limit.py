"""A YAML file's aliases expand to more nodes than shapelint will build ("billion laughs").

Guideline: aliases that refer to aliases grow exponentially; a few lines can expand to
billions of nodes and exhaust memory in any tool that loads the file. shapelint stops
expanding at a fixed bound and reports the file instead.

Source: the "billion laughs" entity-expansion attack (CVE-2003-1564 for XML; the same
construction works with YAML anchors and aliases).
"""

from __future__ import annotations

from shapelint.rules.base import Example, Expect, Rule

RULE = Rule(
    code="SL007",
    name="yaml-alias-limit",
    severity="error",
    summary="YAML aliases expand past shapelint's bound (a 'billion laughs' file)",
    source="billion-laughs expansion (CVE-2003-1564), applied to YAML aliases",
    family="model",
    scope="reader",
)

_LAUGHS = "a: &a [1, 1, 1, 1, 1, 1, 1, 1, 1, 1]\n" + "".join(
    f"{chr(98 + i)}: &{chr(98 + i)} [{', '.join(['*' + chr(97 + i)] * 10)}]\n" for i in range(8)
)

EXAMPLES = [
    Example("base: &base {hidden_size: 4096}\nmodel: *base\n", valid=True, format="yaml"),
    Example(
        _LAUGHS,
        valid=False,
        format="yaml",
        expect=(Expect(5, "*d", "YAML aliases expand to more than 100000 nodes"),),
    ),
]
