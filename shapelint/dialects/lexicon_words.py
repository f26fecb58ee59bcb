"""The key lexicon's words: how a key name is split into words and put in canonical spelling,
and which sets of words mean which dim (`PATTERNS`, `EXACT`, `Meaning`).

The tables and the word functions of the key lexicon (`shapelint.dialects.lexicon`, whose
docstring describes the whole): `words`, `canonical` and `meaning` read one key name, with no
mapping and no values; `foreign`, `stack_word` and `is_batch_key` answer the same from a
key's words.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass, replace
from typing import Literal

from shapelint.core.model import Dim
from shapelint.dialects.lookup import normalize_key

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


__all__ = [
    "ATTENTION_WIDTH",
    "EXACT",
    "PATTERNS",
    "Meaning",
    "canonical",
    "is_batch_key",
    "meaning",
    "words",
]
