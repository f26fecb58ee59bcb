"""A file names a model's shape keys but yields no complete model config, or states keys no
reader understood.

Guideline: a linter that reads nothing must not look like a linter that found nothing. When a
file holds at least two model-shape keys — keys the key lexicon (`shapelint.dialects.lexicon`)
recognises by their words (``hidden_size``, ``num_attention_heads``, ``model_dims``,
``dims_per_head`` …) or keys mapped in ``[tool.shapelint.keys]`` — but no config with a width
and heads or layers comes out of it, shapelint says so, names the keys it saw (marking those
whose words may mean several dims) and prints the settings line that would map them (dotted
key paths from the top of the file). For a config it did read, it names the keys the lexicon
recognised but could not place (``hidden_dim``: the FFN or the width?), whose dims stay
unknown, and the batch keys no reader turned into a micro-batch per GPU (``per_replica_batch``,
``--micro-batch-size ${MBS}``): the rules that depend on the micro-batch are then not checked
at the built-in micro-batch. It is information, not a defect in the config.

A file that names its model's preset instead (``model_name: "OpenELM-270M"``; which keys name
one: `shapelint.dialects.presets`) is read through it when a Python module of the same project
defines it; when none does (or more than one, differently), SL009 names the preset and the key
if the key's path has a word for the model (``model_name``, ``model.arch``; a bare ``arch`` is
as often data), and a file that also holds the shape keys above gets their message instead.

Source: shapelint's own contract ("noticed, not silent"); the settings key map (`[tool.shapelint.keys]`, docs/reading.md).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING

from shapelint.core.model import Dim, Finding, ModelConfig
from shapelint.rules.base import Example, Expect, Rule

if TYPE_CHECKING:
    from shapelint.core.source import Document, Span
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
        '{"model": {"embed_dim": 4096, "num_heads": 32, "n_blocks": 24}}\n',
        False,
        note="read by the key lexicon (embed_dim the width, num_heads the heads); n_blocks is "
        "layers in some codebases and KV-cache blocks in others, so the layers stay unknown",
        expect=(Expect(1, "24", "model keys not understood: model.n_blocks (layers?)"),),
    ),
    Example(
        '{"model": {"hidden_dim": 4096, "num_layers": 32, "vocab_size": 32000}}\n',
        False,
        note="hidden_dim is an FFN width in Llama-style code and the model width elsewhere, and "
        "nothing here settles which: the message marks it (ffn or hidden?)",
        expect=(Expect(1, '"hidden_dim"', "model config not understood"),),
    ),
    Example(
        "network:\n  width: 1000\n  mlp_dim: 4096\n  num_query_heads: 16\n",
        False,
        format="yaml",
        note="16 heads do not divide a width of 1000, so the width is not confirmed; the "
        'settings line it prints: [tool.shapelint.keys] hidden = ["network.width"]; '
        'ffn = ["network.mlp_dim"]; heads = ["network.num_query_heads"]',
        expect=(Expect(2, "width", "model config not understood"),),
    ),
    Example(
        "cfg = GPTConfig(n_embd=width, n_head=heads, n_layer=12)\n",
        False,
        format="python",
        note="values computed at run time: the message names them instead of a settings line",
        expect=(Expect(1, "n_embd", "cannot know without running the file (n_embd = width"),),
    ),
    Example(
        '{"dim": 4096, "hidden_dim": 11008, "n_layers": 32, "vocab_size": 32000}\n',
        True,
        note="read by the key lexicon: dim is the width (the vocabulary is larger), so "
        "hidden_dim is the FFN (at least as wide)",
    ),
    Example(
        '{"d_model": 4096, "n_heads": 32, "layers": 28, "seq": 2048, "per_replica_batch": 8}\n',
        False,
        note="a batch per model replica is no micro-batch per GPU without the mesh: "
        "micro-batch-dependent rules are not run on the built-in micro-batch",
        expect=(Expect(1, "8", "batch not understood: per_replica_batch = 8"),),
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
    map) but none of ``configs`` is complete; otherwise, for each config, the keys the key
    lexicon could not place and the batch keys no reader understood."""
    from shapelint.dialects.common import looks_like_model
    from shapelint.dialects.shape_keys import (
        CORE,
        enough_shape_keys,
        settings_line,
        shape_keys,
    )

    if any(looks_like_model({d: v for d, v in c.dims.items() if v.known}) for c in configs):
        yield from _not_understood_keys(doc, configs, keys)
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
    yield _finding(
        doc,
        first.path,
        first.span,
        message(
            [k.path + alternatives(k.alternatives) for k in found],
            settings_line(found),
            sorted(
                unknown.items(),
                key=lambda item: paths.index(item[0]) if item[0] in paths else len(paths),
            ),
        ),
    )


def _not_understood_keys(
    doc: Document, configs: Sequence[ModelConfig], keys: KeyAliases
) -> Iterator[Finding]:
    """For configs that were read: keys the key lexicon recognises but cannot place, and batch
    keys no reader turned into a micro-batch (`ModelConfig.unread_batch`, which the engine
    keeps only where the micro-batch is the built-in default)."""
    from shapelint.core.target import TARGET_FIELDS
    from shapelint.dialects.shape_keys import ShapeKey, key_dims, settings_line

    default = next(f.default for f in TARGET_FIELDS if f.name == "micro_batch")
    said: set[str] = set()
    for config in configs:
        unplaced = [v for v in config.unplaced if v.key not in said and v.span.path == doc.path]
        said.update(v.key for v in unplaced)
        placed = [(v, key_dims(v.key, keys)) for v in unplaced]
        placed = [(v, dims) for v, dims in placed if dims]
        if placed:
            first = placed[0][0]
            line = settings_line(ShapeKey(v.key, dims[0], v.span, None, dims) for v, dims in placed)
            shown = [(v.key, [d.value for d in dims]) for v, dims in placed]
            yield _finding(doc, first.key, first.span, unplaced_message(shown, line))
        batch = [v for v in config.unread_batch if v.key not in said and v.span.path == doc.path]
        said.update(v.key for v in batch)
        if batch:
            written = [(v.key, v.expression or str(v.value), v.known) for v in batch]
            message_text = batch_message(written, int(str(default)))
            yield _finding(doc, batch[0].key, batch[0].span, message_text)


def _finding(doc: Document, key: str, span: Span, text: str) -> Finding:
    return Finding(
        code=RULE.code,
        name=RULE.name,
        severity=RULE.severity,
        message=text,
        path=doc.path,
        span=span,
        key=key,
    )


def alternatives(dims: Sequence[Dim]) -> str:
    """`` (ffn or hidden?)`` after a key whose words may mean several dims, else ``""``."""
    return f" ({' or '.join(d.value for d in dims)}?)" if len(dims) > 1 else ""


def unplaced_message(keys: Sequence[tuple[str, Sequence[str]]], settings: str) -> str:
    """The text for keys a config's mapping states that the key lexicon recognises but cannot
    place (``keys``: path and the dims it may mean): those dims stay unknown."""
    listed = ", ".join(f"{path} ({' or '.join(dims)}?)" for path, dims in keys[:MAX_LISTED])
    more = f" and {len(keys) - MAX_LISTED} more" if len(keys) > MAX_LISTED else ""
    return (
        f"model keys not understood: {listed}{more}: their words or values do not say which "
        f"dim they are, so it stays unknown; to map them: {settings}"
    )


def batch_message(keys: Sequence[tuple[str, str, bool]], default: int) -> str:
    """The text for batch keys a config states that no reader understood (``keys``: path,
    value as written, whether the value is known): the rules that depend on the micro-batch
    are not checked at the built-in micro-batch ``default``."""
    listed = ", ".join(
        f"{path} = {text}" + ("" if known else " (not known without running the file)")
        for path, text, known in keys[:MAX_LISTED]
    )
    more = f" and {len(keys) - MAX_LISTED} more" if len(keys) > MAX_LISTED else ""
    mappable = [path for path, _, known in keys if known]
    how = "pass --micro-batch"
    if mappable:
        how += f' or map the key: [tool.shapelint.keys] micro_batch = ["{mappable[0]}"]'
    return (
        f"batch not understood: {listed}{more}: shapelint cannot tell the micro-batch per GPU "
        f"from {'it' if len(keys) == 1 else 'them'}, so the rules that depend on the "
        f"micro-batch (tokens per micro-batch, attention's batch of heads, memory-bound GEMMs) "
        f"are not checked at the built-in micro-batch {default}; to check them, {how}"
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


def _says_model(key: str) -> bool:
    """Whether a preset key's path has a word for the model (``model_name``, ``model.arch``):
    a bare ``arch`` or ``preset`` elsewhere is read through a preset when one is defined, but
    without one it is as likely data (``{"arch": "Architecture_and_Engineering"}``) as a
    model's name, and the notice would be noise."""
    from shapelint.dialects.presets import MODEL_WORDS, key_words

    return any(
        w in MODEL_WORDS - {"arch", "architecture"} for p in key.split(".") for w in key_words(p)
    )


def _unread_preset(doc: Document) -> Finding | None:
    """SL009 at the first key of ``doc`` that names a preset (the engine found none to read
    through, since no complete config came out)."""
    from shapelint.dialects.presets import references

    # a value built inside a Python function body is code, not a config (as in `shape_keys`)
    configs = [c for c in doc.candidates if not (doc.format == "python" and " (in " in c.name)]
    ref = next((r for r in references(configs) if _says_model(r.key)), None)
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
