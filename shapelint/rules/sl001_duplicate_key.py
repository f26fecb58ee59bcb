"""A key appears twice in the same mapping.

Guideline: JSON and YAML readers silently keep the last value (Python's ``json`` and PyYAML
both do), so the file says two things and the framework picks one without telling. Remove the
duplicate so the file means one thing.

Source: RFC 8259 §4 ("names within an object SHOULD be unique"); YAML 1.2 §3.2.1.1 (keys
must be unique).
"""

from __future__ import annotations

from shapelint.rules.base import Example, Expect, Rule

RULE = Rule(
    code="SL001",
    name="duplicate-key",
    severity="error",
    summary="a key appears twice in one mapping; readers keep only the last",
    source="RFC 8259 §4; YAML 1.2 §3.2.1.1",
    family="model",
    scope="reader",
)

EXAMPLES = [
    Example('{"hidden_size": 4096, "num_attention_heads": 32}\n', valid=True),
    Example(
        '{"hidden_size": 4096, "num_attention_heads": 32, "hidden_size": 4096}\n',
        valid=False,
        expect=(Expect(1, '"hidden_size"', "duplicate key 'hidden_size' (first at line 1)"),),
    ),
    Example(
        "hidden_size: 4096\nnum_attention_heads: 32\nhidden_size: 5120\n",
        valid=False,
        format="yaml",
        expect=(Expect(3, "hidden_size", "duplicate key 'hidden_size' (first at line 1)"),),
    ),
]
