"""A YAML file uses a tag that would construct arbitrary Python objects (``!!python/...``).

Guideline: a config must be data. Loading such a file with ``yaml.load`` (the full loader)
runs code; shapelint reads YAML with the safe composer only, reports the tag, and never
constructs it.

Source: PyYAML documentation, "Loading YAML" (``yaml.load`` is unsafe on untrusted input).
"""

from __future__ import annotations

from shapelint.rules.base import Example, Expect, Rule

RULE = Rule(
    code="SL006",
    name="unsafe-yaml-tag",
    severity="error",
    summary="a YAML tag that constructs Python objects; the file must be plain data",
    source="PyYAML documentation: yaml.load is unsafe on untrusted input",
    family="model",
    scope="reader",
)

EXAMPLES = [
    Example("hidden_size: 4096\nnum_attention_heads: 32\n", valid=True, format="yaml"),
    Example(
        "hidden_size: !!python/object/apply:os.system ['true']\nnum_attention_heads: 32\n",
        valid=False,
        format="yaml",
        expect=(Expect(1, "!!python/object/apply:os.system", "unsafe or unknown YAML tag"),),
    ),
]
