"""The key lexicon: what a model key means, read from its words and checked by its values.

A person who opens a config of a framework they have never seen reads ``dims_per_head``,
``numHeads``, ``NUM_Q_HEADS`` or ``hidden-size`` by their words, then checks the numbers
against each other: the heads times the head dim make the width, the KV heads divide the heads,
the FFN is at least as wide as the model, the vocabulary is larger than the width, a layer
count is a small positive integer. This module does the same, as the reader of last resort:
framework dialects and the neutral key families (`shapelint.dialects.neutral`) read a mapping
first, and the lexicon only fills the dims none of them read (`fill`) or, where no reader found
a model at all, reads one itself (`standalone`), naming ``lexicon`` as the source of each dim
it gives (`ModelConfig.sources`); each value keeps the key it came from.

**Words.** A key's last dotted segment is split into lower-case words at underscores, dashes,
camelCase and UPPER_CASE boundaries (`words`), and each word is put in a canonical spelling
(`SYNONYMS`: ``n``/``num``/``number`` → ``num``; ``embd``/``embed``/``embedding`` → ``emb``;
``mlp``/``ff``/``ffw``/``feedforward`` → ``ffn``; ``intermediate`` → ``inner``; plurals to the
singular). Words that do not change what a model key means (`NEUTRAL`: ``decoder`` in a
decoder-only model, ``base``, ``text``, ``transformer``, ``total``) are dropped; a word naming
another stack (`FOREIGN`: ``encoder``, ``vision``, ``audio``, ``lora`` …) makes the key
none of the model's. The remaining set of words is looked up in `PATTERNS` (and a few exact
names in `EXACT`); a key whose words are not a pattern means nothing here — the lexicon never
guesses from a single word inside a longer name.

**Confidence.** A pattern is *sure* (``head_dim``, ``num_kv_heads``, ``ffn_inner_dim``,
``model_dims``) or *ambiguous*, with the dims it may mean (`Meaning.roles`):

- ``dim`` alone, ``width``, ``hidden``, ``model_size``: the width, if the values confirm it;
- ``hidden_dim``: the FFN in Llama's ``ModelArgs`` and torchchat's ``TransformerArgs``
  (``hidden_dim`` is the FeedForward width, torchchat/model.py:269, 299-308 at a1a7f370) and
  in Gemma (``FeedForward.hidden_dim``, gemma/gm/nn/_modules.py:345-369 at 7691fd4e: 9216
  beside ``embed_dim`` 2304 in ``Gemma2_2B``), the width in others;
- ``num_embed`` / ``num_embeddings``: the vocabulary in Gemma (gemma/gm/nn/_config.py:62 at
  7691fd4e: "Rename to `vocab_size`") and in ``torch.nn.Embedding``, while GPT-2's ``n_embd``
  (an exact name, `EXACT`) is the width;
- ``key_size``: Haiku's per-head size of queries and keys (grok-1 model.py:712-714 at 7050ed20:
  ``model_size = key_size * num_q_heads`` when not given), but a generic word pair elsewhere;
- ``filter_size``: tensor2tensor's FFN width (``dense_relu_dense(x, hparams.filter_size,
  hparams.hidden_size)``, tensor2tensor/layers/transformer_layers.py:331-334 at bafdc1b6), a
  convolution's kernel elsewhere;
- ``num_blocks``: the layers in some codebases, KV-cache blocks in serving engines.

An ambiguous key is placed only when exactly one reading of the mapping's ambiguous keys
places the most of them with every value check passed *and* each placed key confirmed by
another dim (`_confirms`): a width by the heads dividing it (a head dim of 16-256, a multiple
of 8) or by heads × head dim; for a key whose only reading is the width, also by a larger
vocabulary or FFN; an FFN by a width it is at least as wide as (at most 32 times); a vocabulary
by a smaller width; a head size by heads × head size = width. Otherwise the key stays unplaced:
its dim is unknown and SL009 names it with the settings line that would map it.

**Value checks** (`_checks`), on every reading, sure or not: integers above zero; 1-1000
layers; the KV heads divide the heads; heads × head dim = the width when all three are stated;
the FFN at least as wide as the width; the vocabulary larger than the width. A reading that
fails a check leaves the dim it was about unknown (stated as unknown, so no derivation such as
head dim = width / heads or KV heads = heads stands in for it); the width itself is never
dropped for a check of another dim.

**Totals and ratios.** Flax's ``qkv_dim`` is the total attention width, not a head dim
(``MultiHeadDotProductAttention``: ``head_dim = qkv_features // num_heads``,
flax/linen/attention.py:526-531 at 18f8f311): the head dim is derived from it when the heads
divide it. A multiplier of the width (``widening_factor``, ``mlp_ratio``) is read by no
formula here, because frameworks apply it differently (grok-1's ``ffn_size`` takes two thirds
of ``widening_factor · emb_size`` and rounds it to a multiple of 8, model.py:85-89 at 7050ed20;
Haiku's example transformer multiplies without the two thirds): that is dialect knowledge.

**Batches** (`batch_keys`): a key with the word ``batch`` (``per_replica_batch``,
``PERCORE_BATCH_SIZE``, ``global_batch_size``, ``tokens_per_batch`` …) other than evaluation,
inference or maximum batches is batch-like. When a config states such keys that no reader
mapped, or a micro-batch whose value cannot be known, and no micro-batch is read, the
micro-batch the estimates would use is only shapelint's default: `ModelConfig.unread_batch`
lists them, the engine does not raise the micro-batch-dependent rules on that default, and
SL009 says which keys were not understood.

Dialect-specific formulas and defaults (torchchat's ``TransformerArgs`` defaults, grok's FFN
rounding, a framework's own head-dim rule) do not belong here: they are dialects.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from collections.abc import Mapping as AbcMapping
from dataclasses import replace

from shapelint.core.model import Derivation, Dim, ModelConfig, Value
from shapelint.core.source import Candidate, Document, Mapping, Node, Sequence
from shapelint.dialects import hf
from shapelint.dialects.common import PYTHON_KINDS, Builder, KeyAliases, looks_like_model
from shapelint.dialects.lexicon_reading import (
    Reading,
    Scope,
    positive_int,
    read_scope,
    scope_entries,
    unknown_value,
)
from shapelint.dialects.lexicon_words import foreign, is_batch_key, meaning
from shapelint.dialects.lookup import normalize_key, resolve

NAME = "lexicon"


# --- What the dialect registry calls -------------------------------------------------------


def scopes(candidate: Candidate, max_depth: int = 8) -> list[Scope]:
    """The candidate's root mapping and every mapping nested in it, each a scope."""
    out = [Scope(candidate.root, candidate.key_prefix, candidate.name)]
    _nested(candidate.root, candidate.key_prefix, candidate.name, 0, max_depth, out)
    return out


def _nested(node: Node, prefix: str, name: str, depth: int, limit: int, out: list[Scope]) -> None:
    if depth >= limit:
        return
    children: list[tuple[str, Node]] = []
    if isinstance(node, Mapping):
        children = [(e.key, e.value) for e in node.entries]
    elif isinstance(node, Sequence):
        children = [(f"[{i}]", item) for i, item in enumerate(node.items)]
    for key, value in children:
        if not isinstance(value, Mapping | Sequence):
            continue
        index = key.startswith("[")
        path = f"{prefix}{key}" if index else (f"{prefix}.{key}" if prefix else key)
        label = f"{name}{key}" if index else (f"{name}.{key}" if name else key)
        if isinstance(value, Mapping):
            if foreign(key):
                continue  # a vision tower, an encoder: another model's keys
            out.append(Scope(value, path, label))
        _nested(value, path, label, depth + 1, limit, out)


def holder(candidate: Candidate, config: ModelConfig) -> Scope:
    """The scope that states ``config``'s width (the candidate's root when that is not known)."""
    hidden = config.get(Dim.HIDDEN)
    root = Scope(candidate.root, candidate.key_prefix, candidate.name)
    if hidden is None or hidden.derived or "." not in hidden.key:
        return root
    prefix = candidate.key_prefix
    key = hidden.key
    if prefix:
        if not key.startswith(prefix + "."):
            return root
        key = key[len(prefix) + 1 :]
    parent = key.rsplit(".", 1)[0] if "." in key else ""
    if not parent:
        return root
    hit = resolve(candidate.root, parent, prefix)
    if hit is None or not isinstance(hit[1], Mapping):
        return root
    return Scope(hit[1], hit[0], f"{candidate.name}.{parent}" if candidate.name else parent)


def fill(candidate: Candidate, config: ModelConfig) -> tuple[ModelConfig | None, tuple[Value, ...]]:
    """A reading of the dims ``config`` lacks from the keys of the mapping that states its
    width which no reader read (None when there is nothing to add), and the keys there the
    lexicon recognised for a dim the config lacks but could not place. Derived fallbacks (head
    dim = width / heads, KV heads = heads) count as lacking: a stated value replaces them."""
    if not config.has_attention or config.untimed:
        return None, ()
    context = {
        d: v
        for d, v in config.dims.items()
        if not (v.derived and v.kind in (Derivation.HEAD_DIM_SPLIT, Derivation.KV_FROM_HEADS))
    }
    reading = read_scope(holder(candidate, config), context, config.read_keys)
    dims: dict[Dim, Value] = {}
    for role, value in reading.placed.items():
        if isinstance(role, Dim):
            dims[role] = value
    for dim, value in reading.blocked.items():
        if dim not in context:
            dims.setdefault(dim, unknown_value(value))
    unplaced = tuple(v for v in reading.unplaced if _lacks(config, dims, v))
    if not dims:
        return None, unplaced
    found = ModelConfig(
        name=config.name,
        path=config.path,
        dialect=NAME,
        seq_is_max_context=reading.max_context,
        dims=dims,
        sources=dict.fromkeys(dims, NAME),
        read_keys=frozenset(v.key for v in dims.values() if not v.derived),
    )
    return found, unplaced


def _lacks(config: ModelConfig, filled: AbcMapping[Dim, Value], value: Value) -> bool:
    """Whether ``value``'s key could mean a dim that ``config`` (with ``filled``) lacks."""
    found = meaning(value.key)
    if found is None:
        return False
    for role in found.roles:
        if not isinstance(role, Dim):
            continue
        have = filled.get(role) or config.get(role)
        if have is None or not have.known:
            return True
    return False


Merge = Callable[[ModelConfig, ModelConfig, "str | None"], ModelConfig]


def complete(
    doc: Document,
    candidate: Candidate,
    configs: list[ModelConfig],
    keys: KeyAliases,
    merge: Merge,
) -> list[ModelConfig]:
    """``configs`` (what the dialects and the neutral families read from ``candidate``) with
    the lexicon's readings: each config's missing dims filled (``merge`` is the registry's
    fill, which never replaces what a reader stated), new configs from mappings no reader
    read, and the batch keys no reader understood."""
    out: list[ModelConfig] = []
    for config in configs:
        found, unplaced = fill(candidate, config)
        if found is not None:
            lacked_seq = Dim.SEQ_LEN not in config.dims
            config = merge(config, found, None)
            if lacked_seq and config.sources.get(Dim.SEQ_LEN) == NAME:
                # The other readers' flag was about their own sequence keys.
                config = replace(config, seq_is_max_context=found.seq_is_max_context)
        if unplaced:
            config = replace(config, unplaced=config.unplaced + unplaced)
        out.append(config)
    for new in standalone(doc, candidate, out, keys):
        host = next(
            (
                i
                for i, c in enumerate(out)
                if c.shape_from_elsewhere and not looks_like_model(c.dims)
            ),
            None,
        )
        if host is not None:
            # Batch and trainer settings beside the model: they join it, as with the dialects.
            joined = merge(out[host], new, None)
            out[host] = replace(joined, unplaced=out[host].unplaced + new.unplaced)
        else:
            out.append(new)
    if candidate.kind in PYTHON_KINDS:
        out = [_padded_in_code(doc, c) for c in out]
    stated = batch_keys(candidate)
    if stated:
        read = frozenset().union(*(c.read_keys for c in out)) if out else frozenset()
        out = [replace(c, unread_batch=unread_batch(c, stated, read)) for c in out]
    return out


def _padded_in_code(doc: Document, config: ModelConfig) -> ModelConfig:
    """``config`` with its padded vocabulary stated unknown when the lexicon read its vocab
    from a Python file whose code pads that argument (modded-nanogpt's ``GPT.__init__``:
    ``vocab_size = next_multiple_of_n(vocab_size, n=128)``, train_gpt_medium.py:1041): the
    GEMMs see the padded vocabulary, which is computed at run time, so the stated one is not
    what a vocab rule would check."""
    vocab = config.get(Dim.VOCAB)
    if (
        vocab is None
        or config.sources.get(Dim.VOCAB) != NAME
        or Dim.PADDED_VOCAB in config.dims
        or not _pads(doc.text, vocab.key.rsplit(".", 1)[-1])
    ):
        return config
    padded = replace(unknown_value(vocab), formula="padded in the model code")
    return replace(
        config,
        dims={**config.dims, Dim.PADDED_VOCAB: padded},
        sources={**config.sources, Dim.PADDED_VOCAB: NAME},
    )


def _pads(text: str, name: str) -> bool:
    """Whether ``text`` passes ``name`` (or an attribute of that name) to a function that pads
    or rounds it up (``next_multiple_of_n(vocab_size, n=128)``, ``pad_vocab(cfg.vocab)``)."""
    if not _IDENTIFIER.fullmatch(name):
        return False
    call = re.compile(
        rf"\b\w*(?:multiple|pad|round_?up)\w*\(\s*(?:\w+\.)*{re.escape(name)}\b", re.IGNORECASE
    )
    return call.search(text) is not None


def standalone(
    doc: Document, candidate: Candidate, configs: Iterable[ModelConfig], keys: KeyAliases
) -> list[ModelConfig]:
    """Configs the lexicon reads by itself from the candidate's mappings that no reader read:
    each needs a width and heads or layers that pass the checks, and at least one key that
    only the lexicon places (a mapping of the neutral families' keys alone was already
    read by them, and what they left out they left out on purpose)."""
    configs = list(configs)
    read = frozenset().union(*(c.read_keys for c in configs)) if configs else frozenset()
    held = {holder(candidate, c).path for c in configs if Dim.HIDDEN in c.dims}
    out: list[ModelConfig] = []
    for scope in scopes(candidate):
        if scope.path in held or any(v.key in read for _, v in scope_entries(scope)):
            continue
        reading = read_scope(scope)
        placed = {r: v for r, v in reading.placed.items() if isinstance(r, Dim)}
        if not looks_like_model(placed) or not any(_lexicon_only(v.key) for v in placed.values()):
            continue
        layers = _layers_stated(scope)
        if layers == 0:
            continue  # a stack switched off (``num_layers: 0``)
        config = _build(doc, candidate, scope, reading, keys)
        lacking = tuple(v for v in reading.unplaced if _lacks(config, {}, v))
        out.append(replace(config, unplaced=lacking))
    if len(out) == 1 and candidate.kind in PYTHON_KINDS:
        # A class or call whose one model sits in an attribute (``config = Config(…)``): the
        # model is the class's.
        out[0] = replace(out[0], name=candidate.name)
    return out


def _layers_stated(scope: Scope) -> int | None:
    for key, value in scope_entries(scope):
        found = meaning(key)
        if found is not None and found.sure and found.roles == (Dim.LAYERS,):
            return value.as_int
    return None


def _lexicon_only(key: str) -> bool:
    """Whether no neutral key family names ``key`` (the lexicon's own contribution)."""
    return normalize_key(key.rsplit(".", 1)[-1].lstrip("-")) not in _NEUTRAL_NAMES


def _neutral_names() -> frozenset[str]:
    """The last segments of the key names `hf`'s families read (``hidden_size`` …)."""
    tables = (hf.HIDDEN, hf.HEADS, hf.KV_HEADS, hf.HEAD_DIM, hf.FFN, hf.LAYERS, hf.SEQ)
    names = {normalize_key(n.rsplit(".", 1)[-1]) for t in tables for n in t}
    names |= {"vocab_size", "n_vocab"}
    names |= {normalize_key(n.rsplit(".", 1)[-1]) for t in (hf.EXPERTS, hf.TOP_K) for n in t}
    return frozenset(names)


_NEUTRAL_NAMES = _neutral_names()


def _build(
    doc: Document, candidate: Candidate, scope: Scope, reading: Reading, keys: KeyAliases
) -> ModelConfig:
    """A config of the lexicon's reading, with the derivations every reader shares."""
    sub = replace(candidate, name=scope.name, root=scope.mapping, key_prefix=scope.path)
    b = Builder(sub, doc.path, NAME, keys)
    b.seq_is_max_context = reading.max_context
    for role, value in reading.placed.items():
        if isinstance(role, Dim):
            if value.derived:
                b.derive(role, value)
            else:
                b.dims[role] = value
                b.read_keys.add(value.key)
    for dim, value in reading.blocked.items():
        b.dims.setdefault(dim, unknown_value(value))
    config = b.build()
    return replace(config, sources=dict.fromkeys(config.dims, NAME))


# --- Batches and keys not understood -----------------------------------------------------


def batch_keys(candidate: Candidate) -> list[Value]:
    """Every batch-like key of the candidate (any depth), with a value that is stated: a
    known positive integer, or an expression that cannot be known statically."""
    out: list[Value] = []
    for scope in [
        Scope(candidate.root, candidate.key_prefix, candidate.name),
        *_all_scopes(candidate),
    ]:
        for key, value in scope_entries(scope):
            if not is_batch_key(key):
                continue
            if value.known and positive_int(value) is None:
                continue  # null, a flag, a string: no batch stated
            out.append(value)
    return out


def _all_scopes(candidate: Candidate) -> list[Scope]:
    out: list[Scope] = []
    _nested(candidate.root, candidate.key_prefix, candidate.name, 0, 8, out)
    return out


def unread_batch(
    config: ModelConfig, stated: Iterable[Value], read: frozenset[str]
) -> tuple[Value, ...]:
    """The batch keys of ``stated`` no reader understood for ``config``: none when a known
    micro-batch was read; else the batch-like keys no reader read, and a micro-batch a reader
    read whose value cannot be known (``--micro-batch-size ${MBS:-4}``)."""
    micro = config.get(Dim.MICRO_BATCH)
    if micro is not None and micro.known and config.int(Dim.MICRO_BATCH) is not None:
        return ()
    out: list[Value] = []
    for value in stated:
        unknown_micro = not value.known and micro is not None and micro.key == value.key
        if value.key not in read or unknown_micro:
            out.append(value)
    return tuple(out)


__all__ = ["batch_keys", "fill", "standalone", "unread_batch"]


_IDENTIFIER = re.compile(r"[A-Za-z_]\w*")


def without_fed(configs: list[ModelConfig]) -> list[ModelConfig]:
    """``configs`` without the lexicon's own configs whose values feed another config of the
    same file: module constants (``HIDDEN_SIZE = 6144``) that a model's ``dict(hidden_size=
    HIDDEN_SIZE, …)`` reads are that model, not a second one."""
    names: set[str] = set()
    for config in configs:
        if config.dialect != NAME:
            for value in config.dims.values():
                if value.expression:
                    names.update(_IDENTIFIER.findall(value.expression))
    if not names:
        return configs
    return [
        c
        for c in configs
        if c.dialect != NAME
        or not any(v.key.rsplit(".", 1)[-1] in names for v in c.dims.values() if not v.derived)
    ]
