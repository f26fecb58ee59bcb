"""nanoGPT (karpathy): ``GPTConfig`` (class, call or dict) and the ``config/*.py`` training scripts.

Model keys: ``n_embd`` hidden, ``n_head`` heads (no GQA: KV heads = heads), ``n_layer`` layers,
``block_size`` context length (= training sequence length), ``vocab_size``. Training scripts
add ``batch_size`` (the micro-batch per GPU), ``gradient_accumulation_steps``, ``dtype`` and
``init_from``. The MLP is ``c_fc``/``c_proj`` with GELU: FFN = 4 · n_embd, not gated.

A script is executed over ``train.py``'s globals, so a key it leaves out keeps train.py's
default; ``GPTConfig`` has the same model defaults::

    n_layer = 12, n_head = 12, n_embd = 768, block_size = 1024, vocab_size = 50304
    batch_size = 12, gradient_accumulation_steps = 5 * 8             (scripts only)
    ffn = 4 * n_embd
    head_dim = n_embd // n_head

A fork that keeps the class name but not nanoGPT's fields is read for what it states. When
the file defines ``class GPTConfig`` without ``block_size`` (modded-nanogpt's records:
``vocab_size``, ``n_layer``, ``n_head``, ``n_embd`` and rotary positions; nanochat's
``nanochat/gpt.py``: ``sequence_len``, ``n_kv_head``, ``window_pattern``), that class's fields,
not nanoGPT's, are the defaults of a ``GPTConfig(…)`` call in the file, a key neither states
is unknown (no ``block_size`` 1024, no learned position table), and nanochat's
``sequence_len`` (gpt.py:30 at 92d63d4) and ``n_kv_head`` are the context and KV heads:
``scripts/base_train.py`` builds ``GPTConfig(sequence_len=args.max_seq_len, …)`` and trains
on ``args.max_seq_len`` tokens per row (base_train.py:136-140, 331).

``vocab_size`` 50304 is GPT-2's 50257 padded to a multiple of 64; a script that trains a
character-level dataset (``dataset = "shakespeare_char"``) takes its vocab from the dataset's
``meta.pkl``, which is not read here. ``init_from = "gpt2-xl"`` (etc.) loads OpenAI's GPT-2
shape with vocab 50257; ``init_from = "resume"`` takes the shape from a checkpoint.
"""

from __future__ import annotations

from shapelint.core.model import Derivation, Dim, ModelConfig, Value
from shapelint.core.source import Candidate, Document, Mapping
from shapelint.dialects.common import Builder, KeyAliases, looks_like_model
from shapelint.dialects.defaults import anchor, default, take_or_default
from shapelint.dialects.lookup import child, derived, find

NAME = "nanogpt"
FRAMEWORK = "nanoGPT"
MODEL_DEFAULTS: dict[str, int] = {
    "n_layer": 12,
    "n_head": 12,
    "n_embd": 768,
    "block_size": 1024,
    "vocab_size": 50304,
}
SCRIPT_DEFAULTS: dict[str, int] = {"batch_size": 12, "gradient_accumulation_steps": 5 * 8}
# OpenAI GPT-2 checkpoints nanoGPT can start from: (n_layer, n_head, n_embd); vocab 50257.
GPT2_SHAPES: dict[str, tuple[int, int, int]] = {
    "gpt2": (12, 12, 768),
    "gpt2-medium": (24, 16, 1024),
    "gpt2-large": (36, 20, 1280),
    "gpt2-xl": (48, 25, 1600),
}
GPT2_VOCAB = 50257
MODEL_KEYS = frozenset({"n_layer", "n_head", "n_embd"})
SCRIPT_KEYS = frozenset({"gradient_accumulation_steps", "init_from"})
# nanoGPT's train.py has no ``micro_batch_size`` (its ``batch_size`` is the micro-batch);
# lit-gpt-era pretrain scripts (TinyLlama's ``pretrain/tinyllama.py`` at bf12224) set it beside
# ``batch_size = global_batch_size // num_of_devices`` and ``gradient_accumulation_steps``, and
# take the model from ``Config.from_name(model_name)``: not a nanoGPT script.
LITGPT_SCRIPT_KEY = "micro_batch_size"
# HF GPT-2 (config.json / GPT2Config) says n_embd too; these keys are HF's alone.
HF_KEYS = frozenset(
    {
        "model_type",
        "architectures",
        "n_positions",
        "n_ctx",
        "n_inner",
        "activation_function",
        "resid_pdrop",
        "layer_norm_epsilon",
    }
)
PYTHON_KINDS = frozenset({"call", "class", "init"})
# The class whose defaults are filled in: nanoGPT's ``GPTConfig`` (and its forks', which keep
# the name: modded-nanogpt, nanochat). Another class with nanoGPT's key names (lit-llama's
# ``LLaMAConfig``: SwiGLU, block_size 2048, vocab 32000) or a dict of them (nanoGPT's own
# ``config_args``, whose vocab is set to 50257 afterwards) has other defaults: not read here.
CLASS = "GPTConfig"
# A fork's GPTConfig fields (nanochat's names beside nanoGPT's), by dim.
FORK_KEYS: tuple[tuple[Dim, str], ...] = (
    (Dim.HIDDEN, "n_embd"),
    (Dim.HEADS, "n_head"),
    (Dim.KV_HEADS, "n_kv_head"),
    (Dim.LAYERS, "n_layer"),
    (Dim.SEQ_LEN, "sequence_len"),
    (Dim.VOCAB, "vocab_size"),
)


def _is_gptconfig(candidate: Candidate) -> bool:
    if candidate.kind == "call":
        return candidate.callee.rsplit(".", 1)[-1] == CLASS
    return candidate.name.rsplit(".", 1)[-1] == CLASS


def detect(candidate: Candidate) -> bool:
    """A nanoGPT training script (module namespace) or nanoGPT's ``GPTConfig`` in Python."""
    keys = set(candidate.root.keys())
    if keys & HF_KEYS or "dim" in keys:
        return False
    if candidate.kind == "module":
        if LITGPT_SCRIPT_KEY in keys:
            return False  # a lit-gpt pretrain script: its batch_size is not the micro-batch
        # train.py's own keys; or a batch and a context next to a model key (a script that
        # only sets batch_size and block_size — lit-llama's finetune/full.py — is no nanoGPT
        # config, and filling in nanoGPT's model would invent one).
        return bool(keys & SCRIPT_KEYS) or (
            {"batch_size", "block_size"} <= keys and bool(keys & MODEL_KEYS)
        )
    return candidate.kind in PYTHON_KINDS and bool(keys & MODEL_KEYS) and _is_gptconfig(candidate)


def extract(doc: Document, candidate: Candidate, extra_keys: KeyAliases) -> list[ModelConfig]:
    """One config: the model dims (defaults filled in) plus, for a script, batch dims."""
    b = Builder(candidate, doc.path, NAME, extra_keys)
    b.gated_mlp = False
    b.position_embedding = "learned"  # nanoGPT's GPT: token plus learned position (wpe)
    source = anchor(b)
    script = candidate.kind == "module"
    init_from = b.lookup("init_from")
    start = init_from.value if init_from is not None else "scratch"
    fork = None if script else _fork_class(doc)
    if fork is not None:
        b.position_embedding = None  # a fork without block_size has no wpe table of that size
        _fork_model(b, fork)
    elif (script and start == "resume") or not isinstance(start, str):
        b.shape_from_elsewhere = True
    elif script and init_from is not None and start in GPT2_SHAPES:
        _gpt2_shape(b, init_from, GPT2_SHAPES[start])
    else:
        _model(b, source, vocab=_default_vocab(b, script))
    if script:
        for dim, key in (
            (Dim.MICRO_BATCH, "batch_size"),
            (Dim.GRAD_ACCUM, "gradient_accumulation_steps"),
        ):
            take_or_default(b, dim, (key,), SCRIPT_DEFAULTS[key], source, FRAMEWORK)
        b.take(Dim.DTYPE, "dtype")
    hidden = b.dims.get(Dim.HIDDEN)
    h = b.int(Dim.HIDDEN)
    if hidden is not None and h:
        b.derive(
            Dim.FFN,
            derived(4 * h, (hidden,), "4 * n_embd (nanoGPT MLP)"),
            lambda get: 4 * x if (x := get(Dim.HIDDEN)) else None,
        )
    config = b.build()
    if script or looks_like_model(config.dims):
        return [config]
    return []


def _default_vocab(b: Builder, script: bool) -> int | None:
    """50304 unless a script trains a character-level dataset (vocab from its meta.pkl)."""
    dataset = b.lookup("dataset")
    if script and dataset is not None and (not dataset.known or "char" in str(dataset.value)):
        return None
    return MODEL_DEFAULTS["vocab_size"]


def _model(b: Builder, source: Value, vocab: int | None) -> None:
    for dim, key in (
        (Dim.HIDDEN, "n_embd"),
        (Dim.HEADS, "n_head"),
        (Dim.LAYERS, "n_layer"),
        (Dim.SEQ_LEN, "block_size"),
    ):
        take_or_default(b, dim, (key,), MODEL_DEFAULTS[key], source, FRAMEWORK)
    take_or_default(b, Dim.VOCAB, ("vocab_size",), vocab, source, FRAMEWORK)


def _gpt2_shape(b: Builder, init_from: Value, shape: tuple[int, int, int]) -> None:
    """``init_from = "gpt2-…"``: OpenAI's shape; ``block_size`` may only crop the context."""
    n_layer, n_head, n_embd = shape
    for dim, key, value in (
        (Dim.LAYERS, "n_layer", n_layer),
        (Dim.HEADS, "n_head", n_head),
        (Dim.HIDDEN, "n_embd", n_embd),
        (Dim.VOCAB, "vocab_size", GPT2_VOCAB),
    ):
        b.set(dim, default(init_from, key, value, f"nanoGPT init_from={init_from.value!r}"))
    take_or_default(b, Dim.SEQ_LEN, ("block_size",), 1024, init_from, FRAMEWORK)


def _fork_class(doc: Document) -> Mapping | None:
    """The fields of the ``GPTConfig`` class this file defines, when it is a fork's (it has no
    ``block_size``); None for nanoGPT's own class or a file that defines none."""
    for candidate in doc.candidates:
        if candidate.kind in ("class", "init") and _is_gptconfig(candidate):
            return candidate.root if child(candidate.root, "block_size") is None else None
    return None


def _fork_model(b: Builder, fork: Mapping) -> None:
    """A fork's config: what it states, else its own class's field (for a call)."""
    for dim, key in FORK_KEYS:
        if b.take(dim, key) is not None or b.candidate.kind != "call":
            continue
        field_value = find(fork, (key,))
        if field_value is not None and field_value.known and field_value.value is not None:
            made = derived(
                field_value.value,
                (field_value,),
                f"GPTConfig default {key}={field_value.value!r} (this file's class)",
                kind=Derivation.DEFAULT,
            )
            b.set(dim, made)
