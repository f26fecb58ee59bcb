"""Reading a mapping's keys, shared by the dialects: key look-up, references and
placeholders, and what kind of layers a mapping's keys describe.

Key look-up treats ``-`` and ``_`` as the same character (GPT-NeoX writes ``hidden-size`` and
``hidden_size`` interchangeably), and a dotted name (``attn_config.kv_n_heads``) walks into
nested mappings. An OmegaConf reference (``${model.hidden_size}``) is settled to the value it
names where the candidate holds it (`settle`). Nothing here needs a `Builder`
(`shapelint.dialects.common`), which uses all of it.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import replace

from shapelint.core.model import Derivation, Dim, Value
from shapelint.core.source import Candidate, Mapping, Node, Scalar, Sequence


def normalize_key(key: str) -> str:
    """The form keys are compared in: dashes and underscores alike, case kept."""
    return key.replace("-", "_")


# Each mapping's entries by normalized key, built on its first lookup: dialects look up many
# names in the same mappings (a scan per lookup was a fifth of the CPU time of a 1,000-file
# tree, profiled). An entry keeps its mapping, so the id in the key cannot be reused by another
# object while it lives.
_CHILDREN_LIMIT = 4096
_CHILDREN: dict[int, tuple[Mapping, dict[str, tuple[str, Node]]]] = {}


def child(mapping: Mapping, name: str) -> tuple[str, Node] | None:
    """The last entry whose key equals ``name`` up to dash/underscore, as (key, node)."""
    known = _CHILDREN.get(id(mapping))
    if known is None or known[0] is not mapping:
        index = {normalize_key(e.key): (e.key, e.value) for e in mapping.entries}  # last wins
        if len(_CHILDREN) >= _CHILDREN_LIMIT:
            _CHILDREN.clear()
        known = _CHILDREN[id(mapping)] = (mapping, index)
    return known[1].get(normalize_key(name))


def resolve(mapping: Mapping, dotted: str, prefix: str) -> tuple[str, Node] | None:
    """Follow a dotted name from ``mapping``; return (full key path, node) or None."""
    node: Node = mapping
    path = prefix
    for part in dotted.split("."):
        if not isinstance(node, Mapping):
            return None
        hit = child(node, part)
        if hit is None:
            return None
        key, node = hit
        path = f"{path}.{key}" if path else key
    return path, node


def scalar_value(node: Node, key: str) -> Value | None:
    """Wrap a scalar node as a `Value`; None for mappings and lists."""
    if not isinstance(node, Scalar):
        return None
    return Value(
        node.value,
        key,
        node.span,
        shared=node.shared,
        expression=node.expression,
        known=node.known,
    )


def find(mapping: Mapping, names: Iterable[str], prefix: str = "") -> Value | None:
    """The first of ``names`` present in ``mapping`` with a scalar value."""
    for name in names:
        hit = resolve(mapping, name, prefix)
        if hit is not None:
            value = scalar_value(hit[1], hit[0])
            if value is not None:
                return value
    return None


def derived(
    value: object,
    sources: tuple[Value, ...],
    formula: str,
    key: str = "",
    kind: Derivation = Derivation.FORMULA,
) -> Value:
    """A value computed from others (``kind`` says how); it points at the first source."""
    first = sources[0]
    return Value(
        value, key or first.key, first.span, derived_from=sources, formula=formula, kind=kind
    )


# Dims that only exist in attention layers (dropped for attention-free stacks such as Mamba).
ATTENTION_DIMS = (Dim.HEADS, Dim.KV_HEADS, Dim.HEAD_DIM, Dim.V_HEAD_DIM, Dim.GLOBAL_HEAD_DIM)

# Keys of recurrent and state-space layers: Mamba/Mamba-2 (transformers' ``state_size``,
# ``conv_kernel``, ``time_step_rank``; mamba_ssm's ``d_state``, ``d_conv``; Meta lingua's
# ``state_dim``, ``ssm_chunk_size``), Griffin/Hawk's RG-LRU (``lru_dim_multiplier``,
# ``lru_width``) and lingua's minGRU/minLSTM (``conv_size``). Their ``n_heads``/``num_heads``
# split the recurrence, not attention. The state keys alone, beside attention keys, make a
# hybrid (`hybrid_mixers`); the convolution sizes do not, convolutional encoders share them.
STATE_KEYS = frozenset(
    normalize_key(k)
    for k in (
        "state_size",
        "state_dim",
        "d_state",
        "ssm_state_size",
        "ssm_chunk_size",
        "time_step_rank",
        "lru_width",
        "lru_dim_multiplier",
    )
)
RECURRENT_KEYS = STATE_KEYS | frozenset(
    normalize_key(k) for k in ("conv_kernel", "conv_size", "d_conv")
)
# A block that replaces attention in every layer: NeMo's Hyena GPT (``model.hyena:`` with
# ``name: te_gpt_hyena``) keeps the GPT template's attention keys, which it does not use.
MIXER_BLOCKS = frozenset({"hyena"})
# model_type values of transformers' attention-free models.
ATTENTION_FREE_MODEL_TYPES = frozenset({"mamba", "mamba2", "falcon_mamba", "rwkv", "xlstm"})


# Layer kinds of softmax attention in ``layer_types`` lists (transformers' configs, ExecuTorch's
# params.json); any other kind (linear_attention, conv, mamba …) is a mixer with no cost here.
ATTENTION_LAYER_KINDS = frozenset(
    {"full_attention", "sliding_attention", "attention", "global_attention", "local_attention"}
)


def hybrid_mixers(mapping: Mapping) -> str:
    """Why a model with attention layers is not timed: some of its layers are other mixers.

    Read from ``layer_types`` (Qwen3-Next/Qwen3.5 ``linear_attention``, LFM2 ``conv``, Granite
    4.0 ``mamba``), ``layers_block_type`` (Zamba2, Jamba), a Mamba-hybrid
    ``hybrid_override_pattern`` / ``--hybrid-override-pattern`` (``M`` a Mamba layer:
    Nemotron-H, Megatron-LM and NeMo hybrids) and Jamba's ``attn_layer_period``. "" when none
    of these says so."""
    for key in ("layer_types", "layers_block_type"):
        found = child(mapping, key)
        if found is not None and isinstance(found[1], Sequence):
            kinds = [str(i.value) for i in found[1].items if isinstance(i, Scalar)]
            other = [k for k in kinds if k not in ATTENTION_LAYER_KINDS]
            if other:
                names = "/".join(sorted(set(other)))
                return f"{len(other)} of {len(kinds)} layers are {names} ({key})"
    for key in ("hybrid_override_pattern", "--hybrid-override-pattern"):
        found = child(mapping, key)
        if found is not None and isinstance(found[1], Scalar) and "M" in str(found[1].value):
            pattern = str(found[1].value)
            return f"{pattern.count('M')} of {len(pattern)} layers are Mamba ({key})"
    period = child(mapping, "attn_layer_period")
    if period is not None and isinstance(period[1], Scalar) and period[1].value not in (None, 1):
        return f"one layer in {period[1].value} has attention, the others Mamba (attn_layer_period)"
    for entry in mapping.entries:
        key = normalize_key(entry.key).lower()
        if key in STATE_KEYS or key.startswith("mamba_"):
            # Falcon-H1 (Mamba beside attention in every layer), Zamba2, RecurrentGemma.
            return f"state-space or recurrent layers ({entry.key})"
    return ""


def recurrent_only(mapping: Mapping) -> bool:
    """True when ``mapping`` describes a model without attention: an attention-free HF
    ``model_type``, or a recurrent/state-space key (`RECURRENT_KEYS`) and no key that names
    attention (hybrids — Jamba, Zamba, Nemotron-H, RecurrentGemma — state their attention
    layers as ``num_attention_heads``, ``attn_layer_period``, ``attention_window_size`` …)."""
    model_type = child(mapping, "model_type")
    if (
        model_type is not None
        and isinstance(model_type[1], Scalar)
        and str(model_type[1].value).lower() in ATTENTION_FREE_MODEL_TYPES
    ):
        return True
    keys = [normalize_key(e.key).lower() for e in mapping.entries]
    if any(k in MIXER_BLOCKS for k in keys):
        return True
    if not any(k in RECURRENT_KEYS for k in keys):
        return False
    return not any("attn" in k or "attention" in k for k in keys)


# Hydra ``_target_`` prefixes of NeMo's speech collections (ASR, TTS, audio): their encoders
# and decoders (Conformer, FastPitch's FFTransformer, the speech-translation TransformerDecoder)
# are NeMo's own attention and MLP modules, which no serving or training engine in
# `shapelint.hardware.engines` runs; NeMo's LLMs live in ``nemo.collections.llm``/``nlp`` instead.
SPEECH_TARGETS = ("nemo.collections.asr.", "nemo.collections.tts.", "nemo.collections.audio.")


def speech_module(mapping: Mapping) -> bool:
    """True when ``mapping`` names a NeMo speech module as its Hydra ``_target_``."""
    target = child(mapping, "_target_")
    return (
        target is not None
        and isinstance(target[1], Scalar)
        and isinstance(target[1].value, str)
        and target[1].value.strip().startswith(SPEECH_TARGETS)
    )


# Strings that stand for "set at run time" in YAML configs read by OmegaConf/Hydra: MISSING
# ("???") and a Python-style None (a YAML ``None`` is the string "None", not null).
PLACEHOLDERS = frozenset({"???", "none", "null"})


def unsettled(value: Value) -> bool:
    v = value.value
    if not isinstance(v, str) or value.derived or not value.known:
        return False
    text = v.strip()
    return "${" in text or text.lower() in PLACEHOLDERS or text.lower() == "auto"


_REFERENCE = re.compile(r"\$\{([^${}]*)\}")


def _reference_target(candidate: Candidate, key: str, ref: str) -> Value | None:
    """The value an OmegaConf reference (``a.b`` or relative ``.b``) written at ``key`` names."""
    prefix = candidate.key_prefix
    local = key[len(prefix) + 1 :] if prefix and key.startswith(prefix + ".") else key
    name = ref.lstrip(".")
    dots = len(ref) - len(name)
    if dots:
        parts = local.split(".")[:-1]  # the mapping that holds ``key``
        up = dots - 1
        if up > len(parts) or not name:
            return None
        name = ".".join([*parts[: len(parts) - up], name])
    hit = resolve(candidate.root, name, prefix)
    return scalar_value(hit[1], hit[0]) if hit is not None else None


def settle(candidate: Candidate, value: Value, depth: int = 0) -> Value:
    """Resolve ``${a.b}`` references to the node they name (marked shared: editing it
    changes every key that refers to it) and NeMo's ``${multiply:x, y}`` resolver of numbers
    and references (a derived value); values that cannot be known statically — ``auto``,
    other resolver calls (``${oc.env:X}``), references outside the file — become unknown."""
    raw = value.value
    if not isinstance(raw, str) or value.derived or not value.known:
        return value
    text = raw.strip()
    if text.lower() == "auto" or text.lower() in PLACEHOLDERS:
        return replace(value, known=False)
    if "${" not in text:
        return value
    product = _multiply(candidate, value, text, depth)
    if product is not None:
        return product
    m = _REFERENCE.fullmatch(text)
    if m is None or ":" in m.group(1) or depth > 8:
        return replace(value, known=False)
    target = _reference_target(candidate, value.key, m.group(1).strip())
    if target is None:
        return replace(value, known=False)
    return settle(candidate, replace(target, shared=True), depth + 1)


_MULTIPLY = re.compile(r"\$\{multiply:(.*)\}")


def _multiply(candidate: Candidate, value: Value, text: str, depth: int) -> Value | None:
    """``${multiply:a, b, …}`` (NeMo's resolver: the product of its arguments) when every
    argument is an integer or a reference to one; None when ``text`` is anything else."""
    m = _MULTIPLY.fullmatch(text)
    if m is None or depth > 8:
        return None
    product = 1
    sources: list[Value] = []
    for arg in _split_args(m.group(1)):
        arg = arg.strip()
        if arg.lstrip("-").isdigit():
            product *= int(arg)
            continue
        part = settle(candidate, replace(value, value=arg, shared=False), depth + 1)
        n = part.as_int
        if n is None:
            return replace(value, known=False)
        product *= n
        sources.append(part)
    formula = f"{value.key}: {text}"
    return Value(
        product,
        value.key,
        value.span,
        derived_from=(value, *sources),
        formula=formula,
        kind=Derivation.FORMULA,
    )


def _split_args(text: str) -> list[str]:
    """Split resolver arguments on top-level commas (``${a.b}`` may hold none, but nested
    resolvers may)."""
    parts, depth, start = [], 0, 0
    for i, ch in enumerate(text):
        if ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
        elif ch == "," and depth == 0:
            parts.append(text[start:i])
            start = i + 1
    parts.append(text[start:])
    return parts
