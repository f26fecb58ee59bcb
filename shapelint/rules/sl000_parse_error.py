"""The file cannot be read: invalid JSON, YAML, TOML or Python syntax, or undecodable bytes.

Guideline: a config that no tool can load describes no model. shapelint reports the
parser's own message at the parser's line and column instead of crashing, and lints nothing
else in that file.

Source: the format's specification (RFC 8259 for JSON, YAML 1.1/1.2, TOML 1.0, Python grammar).
"""

from __future__ import annotations

from shapelint.rules.base import Example, Expect, Rule

RULE = Rule(
    code="SL000",
    name="parse-error",
    severity="error",
    summary="the file is not valid JSON/YAML/TOML/Python",
    source="format specifications (RFC 8259, YAML, TOML, Python grammar)",
    family="model",
    scope="reader",
)

EXAMPLES = [
    Example('{"hidden_size": 4096, "num_attention_heads": 32}\n', valid=True),
    Example(
        '{"hidden_size": 4096, "num_attention_heads": 32,}\n',
        valid=False,
        expect=(Expect(1, "", "invalid JSON"),),
    ),
]
