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

import functools
import itertools
import re
from collections.abc import Callable, Iterable, Iterator
from collections.abc import Mapping as AbcMapping
from dataclasses import dataclass, field, replace
from typing import Literal

from shapelint.core.model import Derivation, Dim, ModelConfig, Value
from shapelint.core.source import Candidate, Document, Mapping, Node, Scalar, Sequence
from shapelint.dialects import hf
from shapelint.dialects.common import (
    PYTHON_KINDS,
    Builder,
    KeyAliases,
    derived,
    looks_like_model,
    normalize_key,
    resolve,
)

NAME = "lexicon"

# Roles a key can have besides a `Dim`: flax's total attention width (``qkv_dim``), from which
# the head dim is derived.
ATTENTION_WIDTH: Literal["attention_width"] = "attention_width"
Role = Dim | Literal["attention_width"]

# Canonical spelling of a word (plurals, abbreviations, synonyms).
SYNONYMS: dict[str, str] = {
    # Not "number": ``layer_number`` is which layer (Megatron's TransformerLayer), not how many.
    **dict.fromkeys(("n", "num", "nb", "count", "cnt"), "num"),
    **dict.fromkeys(("head", "heads"), "head"),
    **dict.fromkeys(("layer", "layers"), "layer"),
    **dict.fromkeys(("block", "blocks"), "block"),
    **dict.fromkeys(("dim", "dims", "dimension", "dimensions", "dimensionality"), "dim"),
    **dict.fromkeys(("emb", "embd", "embed", "embeds", "embedding", "embeddings"), "emb"),
    **dict.fromkeys(("ff", "ffn", "ffw", "mlp", "feedforward"), "ffn"),
    **dict.fromkeys(("inner", "intermediate", "interm", "inter"), "inner"),
    **dict.fromkeys(("vocab", "vocabulary"), "vocab"),
    **dict.fromkeys(("attn", "attention", "att", "atten"), "attn"),
    **dict.fromkeys(("q", "query", "queries"), "q"),
    **dict.fromkeys(("seq", "sequence"), "seq"),
    **dict.fromkeys(("len", "length"), "len"),
    **dict.fromkeys(("ctx", "context"), "ctx"),
    **dict.fromkeys(("pos", "position", "positions", "positional"), "pos"),
    **dict.fromkeys(("max", "maximum"), "max"),
    **dict.fromkeys(("expert", "experts"), "expert"),
    **dict.fromkeys(("tok", "token", "tokens"), "token"),
    **dict.fromkeys(("channel", "channels"), "channel"),
    **dict.fromkeys(("group", "groups"), "group"),
    **dict.fromkeys(("batch", "batches"), "batch"),
}
# One written word that is two words (``microbatch``, ``percore``), and two written words that
# are one (``key_value``).
COMPOUNDS: dict[str, tuple[str, ...]] = {
    "microbatch": ("micro", "batch"),
    "minibatch": ("mini", "batch"),
    "percore": ("per", "core"),
    "kvheads": ("kv", "head"),
    "qkv": ("qkv",),
}
BIGRAMS: dict[tuple[str, str], str] = {
    ("key", "value"): "kv",
    ("feed", "forward"): "ffn",
    ("p", "tuning"): "ptuning",
}

# Words that do not change what a model key means.
NEUTRAL = frozenset({"decoder", "dec", "base", "transformer", "total", "hparams", "cfg"})
# Words that put a key in another stack or module than the language model's.
FOREIGN = frozenset(
    {
        "encoder",
        "enc",
        "vision",
        "visual",
        "image",
        "img",
        "audio",
        "speech",
        "patch",
        "vit",
        "clip",
        "cross",
        "adapter",
        "lora",
        "draft",
        "aux",
        "auxiliary",
        "teacher",
        "student",
        "critic",
        "reward",
        "projector",
        "connector",
        "perceiver",
        "resampler",
        "retriever",
        "mm",
        "multimodal",
        "router",
        "classifier",
        "pooler",
        # diffusion models' U-Nets and autoencoders, prompt and parameter-efficient tuning
        "unet",
        "vae",
        "autoencoder",
        "ptuning",
        "peft",
        "prompt",
    }
)
# Words naming a multimodal model's text stack: the model's own keys in a text model's
# section (torchchat's ``text: {embed_dim: …}``), another model's beside keys of the same
# meaning without them (``text_hidden_size`` in a vision encoder's config next to its ``dim``,
# torchtitan/models/kimi_k2_7/vision_encoder.py).
QUALIFIERS = frozenset({"text", "language", "lm", "llm"})


@dataclass(frozen=True)
class Meaning:
    """What a key means: one role when ``sure``; otherwise the roles it may have, of which the
    values must confirm one. ``max_context`` marks a sequence key that is a model's maximum
    context rather than a training length; ``pattern`` is the matched word pattern;
    ``qualified`` that the key names the text stack (`QUALIFIERS`)."""

    roles: tuple[Role, ...]
    sure: bool
    pattern: str
    max_context: bool = False
    qualified: bool = False


def _p(words: str, *roles: Role, sure: bool = True, ctx: bool = False) -> tuple[str, Meaning]:
    return words, Meaning(tuple(roles), sure and len(roles) == 1, words, ctx)


# The word patterns: the canonical words of a key (order free) and what they mean.
_PATTERN_LIST: list[tuple[str, Meaning]] = [
    # The width.
    _p("hidden size", Dim.HIDDEN),
    _p("d model", Dim.HIDDEN),
    _p("model dim", Dim.HIDDEN),
    _p("emb dim", Dim.HIDDEN),
    _p("emb size", Dim.HIDDEN),
    _p("model emb dim", Dim.HIDDEN),
    _p("dim", Dim.HIDDEN, sure=False),
    _p("width", Dim.HIDDEN, sure=False),
    _p("hidden", Dim.HIDDEN, sure=False),
    _p("model size", Dim.HIDDEN, sure=False),
    _p("d emb", Dim.HIDDEN, sure=False),  # Transformer-XL's d_embed may differ from d_model
    _p("hidden dim", Dim.FFN, Dim.HIDDEN),
    _p("num emb", Dim.VOCAB, Dim.HIDDEN),
    # Heads.
    _p("num head", Dim.HEADS),
    _p("head", Dim.HEADS),
    _p("num attn head", Dim.HEADS),
    _p("attn head", Dim.HEADS),
    _p("num q head", Dim.HEADS),
    _p("q head", Dim.HEADS),
    # KV heads.
    _p("num kv head", Dim.KV_HEADS),
    _p("kv head", Dim.KV_HEADS),
    _p("num kv attn head", Dim.KV_HEADS),
    _p("num q group", Dim.KV_HEADS),  # Megatron-core num_query_groups, LitGPT n_query_groups
    # The head dim.
    _p("head dim", Dim.HEAD_DIM),
    _p("head size", Dim.HEAD_DIM),
    _p("dim per head", Dim.HEAD_DIM),
    _p("size per head", Dim.HEAD_DIM),
    _p("d head", Dim.HEAD_DIM),
    _p("attn head dim", Dim.HEAD_DIM),
    _p("attn head size", Dim.HEAD_DIM),
    _p("kv channel", Dim.HEAD_DIM),  # Megatron's kv_channels: the projection size per head
    _p("d kv", Dim.HEAD_DIM),  # T5
    _p("key size", Dim.HEAD_DIM, sure=False),
    _p("qkv dim", ATTENTION_WIDTH),
    # tensor2tensor's attention_key_channels / total_key_depth: the keys' width over all heads
    # (``total_key_depth = hparams.attention_key_channels or hparams.hidden_size``,
    # tensor2tensor/models/transformer.py:1436-1440 and layers/common_attention.py at bafdc1b6).
    _p("attn key channel", ATTENTION_WIDTH),
    _p("key depth", ATTENTION_WIDTH),
    # The FFN.
    _p("ffn dim", Dim.FFN),
    _p("ffn size", Dim.FFN),
    _p("ffn hidden size", Dim.FFN),
    _p("ffn hidden dim", Dim.FFN),
    _p("ffn inner dim", Dim.FFN),
    _p("ffn inner size", Dim.FFN),
    _p("ffn emb dim", Dim.FFN),  # fairseq's decoder_ffn_embed_dim
    _p("ffn hidden", Dim.FFN),
    _p("inner size", Dim.FFN),
    _p("inner dim", Dim.FFN),
    _p("d ffn", Dim.FFN),
    _p("d inner", Dim.FFN),
    _p("num inner", Dim.FFN),
    _p("ffn", Dim.FFN, sure=False),
    _p("filter size", Dim.FFN, sure=False),
    # The vocabulary.
    _p("vocab size", Dim.VOCAB),
    _p("vocab", Dim.VOCAB),
    _p("num vocab", Dim.VOCAB),
    _p("padded vocab size", Dim.PADDED_VOCAB),
    # Layers.
    _p("num layer", Dim.LAYERS),
    _p("layer", Dim.LAYERS),
    _p("num hidden layer", Dim.LAYERS),
    _p("depth", Dim.LAYERS),
    _p("num block", Dim.LAYERS, sure=False),
    # The sequence: a training length, or a model's maximum context.
    _p("seq len", Dim.SEQ_LEN),
    # The cutoff of a training example's target tokens (flax's lm1b and Gemma examples'
    # ``max_target_length``, examples/lm1b/configs/default.py:72-73 at 18f8f311): the
    # sequence a decoder-only model trains on. ``max_eval_target_length`` is another pattern.
    _p("max target len", Dim.SEQ_LEN),
    _p("seq", Dim.SEQ_LEN),
    _p("max seq len", Dim.SEQ_LEN, ctx=True),
    _p("max seq", Dim.SEQ_LEN, ctx=True),
    _p("max pos emb", Dim.SEQ_LEN, ctx=True),
    _p("max pos", Dim.SEQ_LEN, ctx=True),
    _p("num pos", Dim.SEQ_LEN, ctx=True),
    _p("block size", Dim.SEQ_LEN, ctx=True),  # nanoGPT
    _p("ctx len", Dim.SEQ_LEN, ctx=True),
    _p("max ctx len", Dim.SEQ_LEN, ctx=True),
    _p("max ctx", Dim.SEQ_LEN, ctx=True),
    _p("ctx size", Dim.SEQ_LEN, ctx=True),
    _p("num ctx", Dim.SEQ_LEN, ctx=True),
    # Mixture of experts: how many, and how many each token runs.
    _p("num expert", Dim.EXPERTS),
    _p("num local expert", Dim.EXPERTS),
    _p("num routed expert", Dim.EXPERTS),
    _p("moe num expert", Dim.EXPERTS),
    _p("num expert per token", Dim.EXPERTS_PER_TOKEN),
    _p("num selected expert", Dim.EXPERTS_PER_TOKEN),
    _p("num activated expert", Dim.EXPERTS_PER_TOKEN),
    _p("moe top k", Dim.EXPERTS_PER_TOKEN),
]
PATTERNS: dict[frozenset[str], Meaning] = {}
for _words, _meaning in _PATTERN_LIST:
    _key = frozenset(_words.split())
    assert _key not in PATTERNS, _words  # one meaning per word set
    PATTERNS[_key] = _meaning

# Names whose words would read otherwise, where the framework that uses the name says what it
# is: GPT-2's ``n_embd`` and BLOOM's ``n_embed`` are the width (not a count of embeddings);
# gpt-fast's and torchchat's ``n_local_heads`` are the KV heads of the whole model (torchchat
# ``TransformerArgs.from_params`` renames ``n_kv_heads`` to it and ``Attention`` builds its
# key and value projections ``n_local_heads * head_dim`` wide, torchchat/model.py:315, 825,
# 830, 938-939 at a1a7f370; the per-rank split happens later, model.py:848).
EXACT: dict[str, Meaning] = {
    "n_embd": Meaning((Dim.HIDDEN,), True, "n_embd"),
    "n_embed": Meaning((Dim.HIDDEN,), True, "n_embed"),
    "n_local_heads": Meaning((Dim.KV_HEADS,), True, "n_local_heads"),
    # ChatGLM's KV heads (with multi_query_attention; the hf dialect reads the switch).
    "multi_query_group_num": Meaning((Dim.KV_HEADS,), True, "multi_query_group_num"),
}

# Words that make a ``batch`` key something other than the batch a training step runs.
NOT_TRAINING_BATCH = frozenset(
    {
        "eval",
        "evaluation",
        "val",
        "valid",
        "validation",
        "test",
        "predict",
        "prediction",
        "infer",
        "inference",
        "generation",
        "generate",
        "decode",
        "sample",
        "log",
        "skip",
        "max",
        "first",
        "norm",
        "bn",
        # A kernel's tile over the batch·sequence dim (maxtext's ``wi_tile_fwd_batch_seq``),
        # a switch to reuse one batch (``reuse_example_batch``), a factor a batch is split by.
        "tile",
        "reuse",
        "split",
        "factor",
        # How many micro-batches (``num_microbatches``) and how a pipeline groups them
        # (Megatron-core's ``microbatch_group_size_per_vp_stage``): counts, not batch sizes.
        "num",
        "group",
        "stage",
    }
)

# Dims the lexicon places.
DIMS: tuple[Dim, ...] = (
    Dim.HIDDEN,
    Dim.HEADS,
    Dim.KV_HEADS,
    Dim.HEAD_DIM,
    Dim.FFN,
    Dim.VOCAB,
    Dim.LAYERS,
    Dim.SEQ_LEN,
    Dim.EXPERTS,
    Dim.EXPERTS_PER_TOKEN,
)
# The batch one device runs per forward pass, when nothing accumulates gradients
# (``per_device_batch_size``: flax examples/lm1b/configs/default.py:39-40 at 18f8f311).
MICRO_BATCH_PATTERNS = frozenset(
    {
        frozenset({"per", "device", "batch", "size"}),
        frozenset({"per", "device", "train", "batch", "size"}),
        frozenset({"per", "gpu", "batch", "size"}),
    }
)
# Not ``micro_batch_size`` alone: paxml's ``MICROBATCH_SIZE`` is a pipeline's micro-batch of
# the whole batch (``pipeline_microbatch_size``, paxml/tasks/lm/model_params.py:937 at
# b397693f), not one device's; the frameworks whose ``micro_batch_size`` is per GPU
# (Megatron, NeMo, axolotl) are read by their dialects.
# Words of a key that says gradients accumulate over several micro-batches.
ACCUMULATION_WORDS = frozenset({"accum", "accumulate", "accumulation", "accumulated"})
# Words of a per-layer list (gemma's ``attention_types``, transformers' ``layer_types``).
PER_LAYER_LISTS = frozenset(frozenset({w, t}) for w in ("attn", "layer") for t in ("type", "types"))
# Bounds a person holds a reading to.
MAX_LAYERS = 1000
# A head dim derived from an ambiguous width (width / heads) must look like one.
HEAD_DIM_RANGE = (16, 256)
# An ambiguous FFN reading is at most this many times the width.
MAX_FFN_RATIO = 32

_CAMEL = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|\d+")
_SEPARATORS = re.compile(r"[_\-\s.]+")


def words(key: str) -> tuple[str, ...]:
    """The lower-case words of a key's last dotted segment (``--num-q-heads``,
    ``numHeads``, ``NUM_Q_HEADS``, ``model.n_local_heads``), compounds split."""
    last = key.rsplit(".", 1)[-1].lstrip("-")
    out: list[str] = []
    for part in _SEPARATORS.split(last):
        for match in _CAMEL.finditer(part):
            word = match.group(0).lower()
            out.extend(COMPOUNDS.get(word, (word,)))
    return tuple(out)


@functools.lru_cache(maxsize=8192)
def canonical(key: str) -> tuple[str, ...]:
    """`words` in canonical spelling, bigrams joined, neutral words kept (in order)."""
    raw = list(words(key))
    out: list[str] = []
    i = 0
    while i < len(raw):
        pair = (raw[i], raw[i + 1]) if i + 1 < len(raw) else None
        if pair is not None and pair in BIGRAMS:
            out.append(BIGRAMS[pair])
            i += 2
            continue
        out.append(SYNONYMS.get(raw[i], raw[i]))
        i += 1
    return tuple(out)


@functools.lru_cache(maxsize=8192)
def meaning(key: str, exact: bool = True) -> Meaning | None:
    """What ``key`` means as a model key, or None (not a model key, or another stack's).

    ``exact`` consults `EXACT` first; without it only the word patterns answer (the test
    that the lexicon agrees with every key a dialect maps reads them so)."""
    if exact:
        hit = EXACT.get(normalize_key(key.rsplit(".", 1)[-1].lstrip("-")).lower())
        if hit is not None:
            return hit
    found = canonical(key)
    if not found or any(w in FOREIGN for w in found):
        return None
    core = frozenset(w for w in found if w not in NEUTRAL and w not in QUALIFIERS)
    hit = PATTERNS.get(core)
    if hit is not None and any(w in QUALIFIERS for w in found):
        return replace(hit, qualified=True)
    return hit


# Sections named for another model of the same kind, whose keys are read as a model of their
# own (a distillation's ``student_overrides``, a draft model): only a key named with one of
# these words inside another model's section is foreign.
OTHER_MODELS = frozenset({"teacher", "student", "critic", "reward", "draft", "aux", "auxiliary"})


def foreign(key: str) -> bool:
    """Whether a section named ``key`` holds another kind of module than a language model
    (``vision_config``, ``unet_config``, ``p_tuning``): its keys are not read at all."""
    return any(w in FOREIGN and w not in OTHER_MODELS for w in canonical(key))


def stack_word(key: str) -> str | None:
    """``encoder`` or ``decoder`` when a key names that stack (``decoder_layers``)."""
    found = canonical(key)
    for word in ("encoder", "enc", "decoder", "dec"):
        if word in found:
            return "encoder" if word.startswith("enc") else "decoder"
    return None


def is_batch_key(key: str) -> bool:
    """Whether ``key`` states a training batch (``per_replica_batch``,
    ``PERCORE_BATCH_SIZE``, ``train_micro_batch_size_per_gpu``, ``tokens_per_batch``)."""
    found = canonical(key)
    return "batch" in found and not any(w in NOT_TRAINING_BATCH for w in found)


def lexicon_size() -> tuple[int, int]:
    """(word patterns, exact names) in the lexicon."""
    return len(PATTERNS), len(EXACT)


# --- Reading a mapping -------------------------------------------------------------------


@dataclass(frozen=True)
class Scope:
    """A mapping the lexicon reads as one model: its key path from the candidate's root
    (``""`` for the root) and the name a config from it is reported under."""

    mapping: Mapping
    path: str
    name: str


@dataclass
class Reading:
    """What the lexicon made of one scope: placed values by role, dims a failed check left
    unknown (with the value that failed), and ambiguous keys left unplaced."""

    placed: dict[Role, Value] = field(default_factory=dict)
    blocked: dict[Dim, Value] = field(default_factory=dict)
    unplaced: list[Value] = field(default_factory=list)
    max_context: bool = False

    def dim(self, dim: Dim) -> Value | None:
        value = self.placed.get(dim)
        return value if isinstance(value, Value) else None


def _entries(scope: Scope) -> Iterator[tuple[str, Value]]:
    """The scalar entries of a scope as values with full key paths."""
    for entry in scope.mapping.entries:
        if isinstance(entry.value, Scalar):
            path = f"{scope.path}.{entry.key}" if scope.path else entry.key
            node = entry.value
            yield (
                entry.key,
                Value(
                    node.value,
                    path,
                    node.span,
                    shared=node.shared,
                    expression=node.expression,
                    known=node.known,
                ),
            )


def _count(value: Value) -> int | None:
    """A known integer above zero (a count or a size), else None."""
    n = value.as_int
    return n if n is not None and n > 0 else None


def read_scope(
    scope: Scope,
    context: AbcMapping[Dim, Value] | None = None,
    exclude: frozenset[str] = frozenset(),
) -> Reading:
    """The lexicon's reading of one mapping. ``context`` holds dims another reader already
    gave the same model (the lexicon does not place them again, and checks its readings
    against them); keys in ``exclude`` were read by another reader and are skipped."""
    context = context or {}
    reading = Reading()
    sure: dict[Role, list[Value]] = {}
    ambiguous: list[tuple[Value, tuple[Role, ...]]] = []
    contexts: set[str] = set()  # keys of a model's maximum context, not a training length
    entries = list(_entries(scope))
    stacks = {stack_word(k) for k, _ in entries if meaning(k) is not None or _foreign_shape(k)}
    two_stacks = {"encoder", "decoder"} <= stacks
    plain = {
        r for k, _ in entries if (m := meaning(k)) is not None and not m.qualified for r in m.roles
    }
    for key, value in entries:
        if value.key in exclude:
            continue
        found = meaning(key)
        if found is None or (two_stacks and stack_word(key) == "decoder"):
            continue
        if found.qualified and plain & set(found.roles):
            continue  # the text model's size beside this model's own
        if _count(value) is None:
            continue
        if found.sure:
            sure.setdefault(found.roles[0], []).append(value)
            if found.max_context:
                contexts.add(value.key)
        else:
            ambiguous.append((value, found.roles))
    known: dict[Role, Value] = {d: v for d, v in context.items() if _count(v) is not None}
    present = set(context)
    seq = sure.get(Dim.SEQ_LEN, [])
    trained = [v for v in seq if v.key not in contexts]
    if trained and len(trained) < len(seq):
        # A training length beside a maximum context (``--seq-length`` and
        # ``--max-position-embeddings``): the sequence a step runs is the training length.
        sure[Dim.SEQ_LEN] = seq = trained
    reading.max_context = bool(seq) and all(v.key in contexts for v in seq)
    for role, values in sure.items():
        if role in present:
            continue
        if len({v.as_int for v in values}) > 1:
            reading.unplaced.extend(values)  # two keys, two values: which one holds?
            continue
        reading.placed[role] = values[0]
    # A head dim a key states by its name (``head_dim: 256``) stands even where heads × head
    # dim is not the width (Gemma 7B: 16 × 256 beside 3072); only a head dim the lexicon
    # placed from an ambiguous key or derived is checked against that product.
    stated = frozenset(
        [r for r in sure if r in reading.placed]
        + [d for d, v in known.items() if isinstance(v, Value) and not v.derived]
    )
    _checks(reading, known, stated)
    _place_ambiguous(reading, ambiguous, known, present | set(reading.blocked), stated)
    _checks(reading, known, stated)
    _attention_width(reading, known)
    _heads_from_head_dim(reading, known, scope)
    selector = _layer_selector(scope)
    if selector is not None and Dim.LAYERS in reading.placed:
        # ``select_layers: [0, 4, 8]``, ``layers_to_keep``: the model runs a subset of them.
        reading.placed.pop(Dim.LAYERS)
        reading.blocked[Dim.LAYERS] = selector
    if dense_ffn(scope) is not None:
        for dim in (Dim.EXPERTS, Dim.EXPERTS_PER_TOKEN):
            reading.placed.pop(dim, None)
    if Dim.LAYERS not in reading.placed and Dim.LAYERS not in present | set(reading.blocked):
        listed = per_layer_list(scope)
        if listed is not None:
            reading.placed[Dim.LAYERS] = listed
    micro = micro_batch(scope)
    if micro is not None and Dim.MICRO_BATCH not in present:
        reading.placed[Dim.MICRO_BATCH] = micro
    experts = reading.dim(Dim.EXPERTS) or known.get(Dim.EXPERTS)
    if experts is not None and (_count(experts) or 0) > 1 and Dim.FFN in reading.placed:
        # Dense or per expert? The framework decides how its FFN width applies to experts.
        ffn = reading.placed.pop(Dim.FFN)
        assert isinstance(ffn, Value)
        reading.blocked[Dim.FFN] = ffn
    return reading


# Words that, beside ``ffn``, name which kind of FFN a model runs (``ffn_layer``, ``mlp_type``),
# and words of such a value that name a mixture of experts.
FFN_KIND = frozenset({"layer", "type", "kind", "class", "cls", "impl", "variant"})
MOE_WORDS = frozenset({"moe", "expert", "sparse", "switch", "mixture", "routed"})


def dense_ffn(scope: Scope) -> Value | None:
    """The key that says ``scope``'s FFN is dense (tensor2tensor's ``ffn_layer =
    "dense_relu_dense"`` beside the ``moe_num_experts`` its MoE layers would use): a key of
    ``ffn`` and a kind word whose string value names no mixture of experts. The expert
    counts beside it then belong to a layer the model does not run."""
    for key, value in _entries(scope):
        found = set(canonical(key))
        if "ffn" not in found or not found - {"ffn"} or not found - {"ffn"} <= FFN_KIND:
            continue
        kind = value.value
        if isinstance(kind, str) and kind.strip() and not set(words(kind)) & MOE_WORDS:
            return value
    return None


def per_layer_list(scope: Scope) -> Value | None:
    """The layer count as the length of a list with one entry per layer (gemma's
    ``attention_types``, whose length is the model's ``num_layers``: gemma/gm/nn/_config.py:
    86-88 at 7691fd4e), when it is the one such list of scalars (enum members count: the
    length is known when the values are not)."""
    found: list[Value] = []
    for entry in scope.mapping.entries:
        if frozenset(canonical(entry.key)) not in PER_LAYER_LISTS:
            continue
        items = entry.value
        if not isinstance(items, Sequence) or not items.items:
            continue
        if not all(isinstance(i, Scalar) for i in items.items):
            continue
        path = f"{scope.path}.{entry.key}" if scope.path else entry.key
        listed = Value(None, path, items.span)
        found.append(derived(len(items.items), (listed,), f"len({entry.key})"))
    return found[0] if len(found) == 1 else None


def micro_batch(scope: Scope) -> Value | None:
    """The micro-batch a key states by its words (``per_device_batch_size``), when no key of
    the scope speaks of accumulating gradients (a per-device batch then spans several
    micro-batches, split as the framework decides)."""
    entries = list(_entries(scope))
    if any(set(canonical(k)) & ACCUMULATION_WORDS for k, _ in entries):
        return None
    found = [v for k, v in entries if frozenset(canonical(k)) in MICRO_BATCH_PATTERNS]
    values = {_count(v) for v in found}
    return found[0] if len(values) == 1 and None not in values else None


def _foreign_shape(key: str) -> bool:
    """A key of another stack that would otherwise be a model key (``encoder_layers``)."""
    found = canonical(key)
    core = frozenset(w for w in found if w not in NEUTRAL and w not in ("encoder", "enc"))
    return any(w in ("encoder", "enc") for w in found) and core in PATTERNS


def _all(reading: Reading, known: AbcMapping[Role, Value]) -> dict[Role, int]:
    """Every placed or known role as an integer."""
    out: dict[Role, int] = {}
    for role, value in {**known, **reading.placed}.items():
        n = _count(value)
        if n is not None:
            out[role] = n
    return out


def _place_ambiguous(
    reading: Reading,
    ambiguous: list[tuple[Value, tuple[Role, ...]]],
    known: AbcMapping[Role, Value],
    present: set[Dim],
    stated: frozenset[Role] = frozenset(),
) -> None:
    """Place the ambiguous keys by the one best assignment of roles the values confirm."""
    if not ambiguous:
        return
    if len(ambiguous) > 6:
        reading.unplaced.extend(v for v, _ in ambiguous)
        return
    taken = set(reading.placed) | present
    options = [(None, *[r for r in roles if r not in taken]) for _, roles in ambiguous]
    best: list[tuple[Role | None, ...]] = []
    best_score = 0
    for choice in itertools.product(*options):
        chosen = [r for r in choice if r is not None]
        if len(chosen) != len(set(chosen)) or len(chosen) < best_score:
            continue
        trial = Reading(placed=dict(reading.placed))
        for (value, _), role in zip(ambiguous, choice, strict=True):
            if role is not None:
                trial.placed[role] = value
        values = _all(trial, known)
        ok = all(
            role is None or _confirms(role, value, values, roles)
            for (value, roles), role in zip(ambiguous, choice, strict=True)
        )
        if not ok or not _passes(values, stated):
            continue
        if len(chosen) > best_score:
            best, best_score = [choice], len(chosen)
        elif len(chosen) == best_score:
            best.append(choice)
    if best_score and len(best) == 1:
        for (value, _), role in zip(ambiguous, best[0], strict=True):
            if role is not None:
                reading.placed[role] = value
            else:
                reading.unplaced.append(value)
        return
    reading.unplaced.extend(v for v, _ in ambiguous)


def _confirms(
    role: Role, value: Value, values: AbcMapping[Role, int], roles: tuple[Role, ...]
) -> bool:
    """Whether the other dims confirm reading ``value`` as ``role`` (see the module doc)."""
    n = _count(value) or 0
    h = values.get(Dim.HIDDEN)
    a = values.get(Dim.HEADS)
    d = values.get(Dim.HEAD_DIM)
    if role == Dim.HIDDEN:
        if a is not None:  # the heads must split it: heads × head dim, or a plausible head dim
            if d is not None:
                return a * d == n
            lo, hi = HEAD_DIM_RANGE
            return n % a == 0 and lo <= n // a <= hi and (n // a) % 8 == 0
        if len(roles) == 1:
            larger = [values.get(Dim.VOCAB), values.get(Dim.FFN)]
            return any(x is not None and x > n for x in larger)
        return False
    if role == Dim.FFN:
        return h is not None and h <= n <= MAX_FFN_RATIO * h
    if role == Dim.VOCAB:
        return h is not None and n > h
    if role == Dim.HEAD_DIM:
        return h is not None and a is not None and a * n == h
    return False


def _passes(values: AbcMapping[Role, int], stated: frozenset[Role] = frozenset()) -> bool:
    """Whether a set of readings passes every value check (`_failures` is empty)."""
    return not _failures(values, stated)


def _failures(values: AbcMapping[Role, int], stated: frozenset[Role] = frozenset()) -> list[Dim]:
    """The dims whose reading fails a value check against the others; a head dim in
    ``stated`` (named by its key) is not checked against heads × head dim = width."""
    out: list[Dim] = []
    h, a = values.get(Dim.HIDDEN), values.get(Dim.HEADS)
    kv, d = values.get(Dim.KV_HEADS), values.get(Dim.HEAD_DIM)
    layers = values.get(Dim.LAYERS)
    if layers is not None and layers > MAX_LAYERS:
        out.append(Dim.LAYERS)
    if a is not None and h is not None and a > h:
        out.append(Dim.HEADS)
    if kv is not None and a is not None and (kv > a or a % kv):
        out.append(Dim.KV_HEADS)
    if (
        d is not None
        and a is not None
        and h is not None
        and a * d != h
        and Dim.HEAD_DIM not in stated
    ):
        out.append(Dim.HEAD_DIM)
    ffn = values.get(Dim.FFN)
    if ffn is not None and h is not None and ffn < h:
        out.append(Dim.FFN)
    vocab = values.get(Dim.VOCAB)
    if vocab is not None and h is not None and vocab <= h:
        out.append(Dim.VOCAB)
    top_k, experts = values.get(Dim.EXPERTS_PER_TOKEN), values.get(Dim.EXPERTS)
    if top_k is not None and experts is not None and top_k > experts:
        out.append(Dim.EXPERTS_PER_TOKEN)
    return out


def _checks(
    reading: Reading, known: AbcMapping[Role, Value], stated: frozenset[Role] = frozenset()
) -> None:
    """Leave unknown each dim the lexicon placed whose value fails a check."""
    for _ in range(len(DIMS)):
        failed = [d for d in _failures(_all(reading, known), stated) if d in reading.placed]
        if not failed:
            break
        dim = failed[0]
        value = reading.placed.pop(dim)
        assert isinstance(value, Value)
        reading.blocked[dim] = value
        if dim == Dim.HEADS:  # KV heads and the head dim cannot be checked without heads
            for other in (Dim.KV_HEADS, Dim.HEAD_DIM):
                if other in reading.placed:
                    kept = reading.placed.pop(other)
                    assert isinstance(kept, Value)
                    reading.blocked[other] = kept


def _attention_width(reading: Reading, known: AbcMapping[Role, Value]) -> None:
    """The head dim from a total attention width (flax's ``qkv_dim``) the heads divide."""
    width = reading.placed.pop(ATTENTION_WIDTH, None)
    values = _all(reading, known)
    a = values.get(Dim.HEADS)
    if width is None or Dim.HEAD_DIM in values or a is None:
        return
    w = _count(width) or 0
    if w % a == 0 and 8 <= w // a <= 1024:
        heads = reading.dim(Dim.HEADS) or known[Dim.HEADS]
        reading.placed[Dim.HEAD_DIM] = derived(
            w // a,
            (width, heads),
            f"{width.key.rsplit('.', 1)[-1]} / heads (total attention width)",
        )
    else:
        reading.blocked[Dim.HEAD_DIM] = width


def _heads_from_head_dim(reading: Reading, known: AbcMapping[Role, Value], scope: Scope) -> None:
    """The heads as width / head dim when a config states both and sets its heads key to
    null (paxml's ``NUM_HEADS = None`` beside ``DIMS_PER_HEAD`` and ``MODEL_DIMS``, for
    "computed from the others": paxml/tasks/lm/model_params.py:620-624 at b397693f): the
    relation every reader uses the other way round (head dim = width / heads). Without a
    heads key saying so, no heads are derived: a model whose heads vary by layer (OpenELM's
    ``qkv_multipliers`` beside ``head_dim``) states no heads either."""
    if Dim.HEADS in reading.placed or Dim.HEADS in known or Dim.HEADS in reading.blocked:
        return
    nulls = [
        v for k, v in _entries(scope) if (m := meaning(k)) is not None and m.roles == (Dim.HEADS,)
    ]
    if not nulls or any(not v.known or v.value is not None for v in nulls):
        return
    width = reading.dim(Dim.HIDDEN) or known.get(Dim.HIDDEN)
    head = reading.dim(Dim.HEAD_DIM) or known.get(Dim.HEAD_DIM)
    if not isinstance(width, Value) or not isinstance(head, Value) or head.derived:
        return
    h, d = _count(width), _count(head)
    if h is None or d is None or h % d or not 1 <= h // d <= h:
        return
    heads = derived(h // d, (width, head), "hidden / head_dim (no heads stated)")
    reading.placed[Dim.HEADS] = heads
    if Dim.KV_HEADS not in reading.placed and Dim.KV_HEADS not in known:
        reading.placed[Dim.KV_HEADS] = derived(
            h // d, (heads,), "= heads (no KV heads stated)", kind=Derivation.KV_FROM_HEADS
        )


# Words that, beside ``layer``, say a model runs only some of its layers.
LAYER_SELECTORS = frozenset({"select", "selected", "keep", "kept", "prune", "pruned", "subset"})


# Words that, beside ``layer``, ``block`` or ``depth``, name a second kind of layer whose count
# the model adds (Flux's ``depth`` double-stream and ``depth_single_blocks`` single-stream
# blocks, torchtitan/models/flux/__init__.py:215-216 at the corpus commit).
OTHER_LAYERS = frozenset({"single", "double", "extra"})


def _layer_selector(scope: Scope) -> Value | None:
    """A stated key that selects which layers run (``select_layers``, ``layers_to_keep``) or
    counts layers of a second kind (``depth_single_blocks``): the layer count is not one key."""
    for entry in scope.mapping.entries:
        found = canonical(entry.key)
        selects = "layer" in found and any(w in LAYER_SELECTORS for w in found)
        stacks = {"layer", "block", "depth"} & set(found) and any(w in OTHER_LAYERS for w in found)
        if not (selects or stacks):
            continue
        node = entry.value
        if isinstance(node, Scalar) and node.known and node.value in (None, "", False):
            continue
        path = f"{scope.path}.{entry.key}" if scope.path else entry.key
        value = node.value if isinstance(node, Scalar) else None
        return Value(value, path, node.span, known=False, expression=entry.key)
    return None


def unknown_value(value: Value) -> Value:
    """``value``'s key and place, its dim unknown: the lexicon read it, and a value check (or
    a key that changes what it means) left it unknown."""
    return replace(value, value=None, known=False, expression=None, formula="not settled")


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
        config = _dense(candidate, config)
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


def _dense(candidate: Candidate, config: ModelConfig) -> ModelConfig:
    """``config`` without the expert counts the key families read beside a key that says its
    FFN is dense (`dense_ffn`); a framework dialect's reading is the framework's and stays."""
    moe = [d for d in (Dim.EXPERTS, Dim.EXPERTS_PER_TOKEN) if d in config.dims]
    if not moe or config.dialect not in (NAME, hf.NAME):
        return config
    if dense_ffn(holder(candidate, config)) is None:
        return config
    dims = {d: v for d, v in config.dims.items() if d not in moe}
    sources = {d: s for d, s in config.sources.items() if d not in moe}
    return replace(config, dims=dims, sources=sources)


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
        if scope.path in held or any(v.key in read for _, v in _entries(scope)):
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
    for key, value in _entries(scope):
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
        for key, value in _entries(scope):
            if not is_batch_key(key):
                continue
            if value.known and _count(value) is None:
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


__all__ = [
    "ATTENTION_WIDTH",
    "EXACT",
    "PATTERNS",
    "Meaning",
    "batch_keys",
    "canonical",
    "fill",
    "is_batch_key",
    "meaning",
    "standalone",
    "unread_batch",
    "words",
]


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
