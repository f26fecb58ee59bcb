"""A file names a model's shape keys but yields no complete model config.

Guideline: a linter that reads nothing must not look like a linter that found nothing. When a
file holds at least two model-shape keys — from the key families the dialects read
(``hidden_size``, ``num_attention_heads``, ``base_emb_dim`` …), common names no built-in dialect
reads (``model_dim``, ``mlp_dim``, ``num_query_heads`` …) or keys mapped in
``[tool.shapelint.keys]`` — but no config with a width and heads or layers comes out of it,
shapelint says so, names the keys it saw and prints the settings line that would map them
(dotted key paths from the top of the file). It is information, not a defect in the config.

A file that names its model's preset instead (``model_name: "OpenELM-270M"``; which keys name
one: `shapelint.dialects.presets`) is read through it when a Python module of the same project
defines it; when none does (or more than one, differently), SL009 names the preset and the key
(a file that also holds the shape keys above gets their message instead).

Source: shapelint's own contract ("noticed, not silent"); the settings key map (`[tool.shapelint.keys]`, docs/reading.md).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING

from shapelint.core.model import Finding, ModelConfig
from shapelint.rules.base import Example, Expect, Rule

if TYPE_CHECKING:
    from shapelint.core.source import Document
    from shapelint.dialects.common import KeyAliases

RULE = Rule(
    code="SL009",
    name="config-not-understood",
    severity="info",
    summary="model-shape keys but no complete model config; shows the settings line to map them",
    source="shapelint contract: noticed, not silent",
    family="model",
    scope="document",
)

EXAMPLES = [
    Example('{"hidden_size": 4096, "num_attention_heads": 32, "num_hidden_layers": 32}\n', True),
    Example(
        '{"model": {"embed_dim": 4096, "num_heads": 32, "n_blocks": 32}}\n',
        False,
        expect=(Expect(1, '"embed_dim"', "model config not understood"),),
    ),
    Example(
        "network:\n  width: 1024\n  mlp_dim: 4096\n  num_query_heads: 16\n",
        False,
        format="yaml",
        note='the settings line it prints: [tool.shapelint.keys] ffn = ["network.mlp_dim"]; '
        'heads = ["network.num_query_heads"]',
        expect=(Expect(3, "mlp_dim", "model config not understood"),),
    ),
    Example(
        "cfg = GPTConfig(n_embd=width, n_head=heads, n_layer=12)\n",
        False,
        format="python",
        note="values computed at run time: the message names them instead of a settings line",
        expect=(Expect(1, "n_embd", "cannot know without running the file (n_embd = width"),),
    ),
    Example(
        "model:\n  model_name: my-270m\n  vocab_size: 32000\n",
        False,
        format="yaml",
        note="no Python module of the project defines the preset my-270m",
        expect=(Expect(2, "my-270m", "names the preset my-270m (model.model_name)"),),
    ),
]

MAX_LISTED = 6


def message(paths: list[str], settings: str, unknown: Sequence[tuple[str, str]] = ()) -> str:
    """The finding's text: the key paths seen and the settings line that would map them; when
    the keys are read but their values are not known statically (``unknown``: path and source
    text, e.g. ``--hidden-size`` = ``$H``), that instead of the settings line."""
    listed = ", ".join(paths[:MAX_LISTED])
    more = f" and {len(paths) - MAX_LISTED} more" if len(paths) > MAX_LISTED else ""
    if unknown:
        shown = ", ".join(f"{p} = {text}" for p, text in unknown[:MAX_LISTED])
        return (
            f"model config not understood: model-shape keys {listed}{more} hold values "
            f"shapelint cannot know without running the file ({shown}); write them as "
            "literals or lint the config they come from"
        )
    return (
        f"model config not understood: model-shape keys {listed}{more} but no complete config "
        f"(a width and heads or layers); to map them: {settings}"
    )


def check_document(
    doc: Document, configs: Sequence[ModelConfig], keys: KeyAliases
) -> Iterator[Finding]:
    """SL009 when ``doc`` names two or more model-shape keys (``keys``: the settings' key
    map) but none of ``configs`` is complete."""
    from shapelint.dialects.common import looks_like_model
    from shapelint.dialects.shape_keys import (
        CORE,
        enough_shape_keys,
        settings_line,
        shape_keys,
    )

    if any(looks_like_model({d: v for d, v in c.dims.items() if v.known}) for c in configs):
        return
    found = shape_keys(doc, keys)
    if not enough_shape_keys(found):
        named = _unread_preset(doc)
        if named is not None:
            yield named
        return
    first = found[0]
    paths = [k.path for k in found]
    unknown = {k.path: k.unknown for k in found if k.unknown is not None and k.dim in CORE}
    for config in configs:  # values a dialect knows to be unknown (a conversion's template)
        for dim in CORE:
            v = config.get(dim)
            if v is not None and not v.known and v.expression and v.key not in unknown:
                unknown[v.key] = v.expression
    yield Finding(
        code=RULE.code,
        name=RULE.name,
        severity=RULE.severity,
        message=message(
            paths,
            settings_line(found),
            sorted(
                unknown.items(),
                key=lambda item: paths.index(item[0]) if item[0] in paths else len(paths),
            ),
        ),
        path=doc.path,
        span=first.span,
        key=first.path,
    )


def preset_message(key: str, name: str) -> str:
    """The text for a file that names its model's preset ``name`` (at ``key``) that shapelint
    could not read: no Python module of the project defines it once."""
    return (
        f"model config not understood: the file names the preset {name} ({key}) instead of "
        "stating the model's shape, and no Python module of this project defines it in a form "
        "shapelint reads (a dict entry, a function or classmethod, a name= entry; one "
        "definition); lint the module that defines it, or state the shape here"
    )


def _unread_preset(doc: Document) -> Finding | None:
    """SL009 at the first key of ``doc`` that names a preset (the engine found none to read
    through, since no complete config came out)."""
    from shapelint.dialects.presets import references

    # a value built inside a Python function body is code, not a config (as in `shape_keys`)
    configs = [c for c in doc.candidates if not (doc.format == "python" and " (in " in c.name)]
    ref = next(references(configs), None)
    if ref is None:
        return None
    return Finding(
        code=RULE.code,
        name=RULE.name,
        severity=RULE.severity,
        message=preset_message(ref.key, ref.name),
        path=doc.path,
        span=ref.value.span,
        key=ref.key,
    )
