"""Dialects: which keys mean which `Dim`, per framework, and the framework's own formulas.

Each dialect module has ``NAME``, ``detect(candidate) -> bool`` and
``extract(doc, candidate, extra_keys) -> list[ModelConfig]``. It may also declare what its
framework implies, so that no reader, rule or engine names a framework:

- ``READER_HOOKS`` (`shapelint.readers.hooks.ReaderHooks`): what the readers need to know of
  it (its launch scripts' flags, Python loops that build configs, base classes to skip),
  registered when this package is imported;
- ``ENGINES``, or ``engines(config)`` when it depends on the config: the engines its configs
  run on (`shapelint.dialects.engines`);
- ``TRAITS`` (`shapelint.core.model.Traits`): what the rules should know of its configs
  (which keys hold the maximum context, whether it runs its own MLP activation), given to
  every config it names.

Dialects contribute, they do not claim. For each candidate mapping:

1. every dialect in `DIALECTS` whose ``detect`` accepts it contributes the config it reads,
   with its own formulas; `DIALECTS` is ordered from the most specific evidence to the least,
   so the first contributor wins each dim it reads and later ones only fill dims it lacks
   (DeepSpeed's or a trainer block's batch keys join the model's config this way). A dialect
   that fills framework defaults (LitGPT, nanoGPT, gpt-fast) only ever contributes first;
2. the framework-neutral key families (`neutral`: Hugging Face, Llama ``params.json``,
   Megatron/NeMo-2 ``TransformerConfig``, nanoGPT/LitGPT names) are read from the mapping and
   from every mapping nested in it that holds a model's shape keys; they fill what no dialect
   read (a key some dialect read is never read a second way), and a stated value replaces a
   head dim or KV-head count that was only derived for want of it;
3. what the neutral reading finds elsewhere in the file (a nested model, ``text_config``)
   becomes a config of its own.

A dialect may also define ``per_stack(candidate, config) -> ModelConfig``: when its
settings join several stacks it cannot tell apart itself (T5's ``model.encoder`` and
``model.decoder``), it adjusts each stack's config (NeMo: the decoder's sequence length).

The dialect of a list or section of Python configs (LitGPT's ``configs = [dict(…), …]``) is
decided once for the whole list: the most specific dialect that detects any entry reads every
entry that uses its key names. `ModelConfig.sources` records which reader supplied each dim.
"""

from __future__ import annotations

from dataclasses import replace

from shapelint.core.model import Derivation, Dim, Formula, ModelConfig, Traits, Value
from shapelint.core.source import Candidate, Document, Mapping, Scalar
from shapelint.dialects import (
    axolotl,
    deepspeed,
    easylm,
    fairseq,
    foundry,
    gptfast,
    hf,
    internlm,
    levanter,
    lexicon,
    lingua,
    litgpt,
    llama,
    maxtext,
    megatron,
    nanogpt,
    nanotron,
    nemo,
    neox,
    neutral,
    olmo,
    openlm,
    tensor2tensor,
    titan_models,
    torchtitan,
    torchtune,
)
from shapelint.dialects.common import Dialect, KeyAliases, head_dim_split, looks_like_model
from shapelint.dialects.lookup import resolve as resolve_key
from shapelint.readers import hooks as reader_hooks

# Ordered: most specific evidence first.
DIALECTS: list[Dialect] = [
    maxtext,
    levanter,
    lingua,
    openlm,
    internlm,
    titan_models,
    llama,
    litgpt,
    gptfast,
    nanogpt,
    # Training configs: NeoX before DeepSpeed (NeoX files carry DeepSpeed keys too), nanotron
    # before NeMo (both have model.make_vocab_size_divisible_by), OLMo before llm-foundry.
    neox,
    megatron,
    nanotron,
    nemo,
    olmo,
    foundry,
    axolotl,
    torchtitan,
    torchtune,
    deepspeed,
]

# Every dialect module. Each may declare what it teaches the readers (``READER_HOOKS``, a
# `shapelint.readers.hooks.ReaderHooks`), registered here, before any file is read, and what
# its framework implies for the rules (``TRAITS``, given to every config it names).
# tensor2tensor, fairseq and EasyLM only teach the Python reader their helpers (their keys are
# the key lexicon's).
MODULES: tuple[object, ...] = (*DIALECTS, hf, neutral, tensor2tensor, fairseq, easylm)
_TRAITS: dict[str, Traits] = {}
for _module in MODULES:
    _hooks = getattr(_module, "READER_HOOKS", None)
    if isinstance(_hooks, reader_hooks.ReaderHooks):
        reader_hooks.register(_hooks)
    _traits = getattr(_module, "TRAITS", None)
    if isinstance(_traits, Traits):
        _TRAITS.setdefault(getattr(_module, "NAME", ""), _traits)

# Dialects that fill framework defaults for keys a mapping leaves out: reading a mapping with
# one of them is a decision about the whole mapping, so they never contribute second.
DEFAULTING: tuple[Dialect, ...] = (litgpt, nanogpt, gptfast)

# Derived values a stated value from another reader may replace: they were only ever a
# fallback for the stated value being absent.
_FALLBACKS = frozenset({Derivation.HEAD_DIM_SPLIT, Derivation.KV_FROM_HEADS})


def extract(doc: Document, extra_keys: KeyAliases | None = None) -> list[ModelConfig]:
    """Every model config in ``doc``, in file order."""
    keys: KeyAliases = extra_keys or {}
    configs: list[ModelConfig] = []
    checkpoint: bool | None = None  # a checkpoint file beside the config (looked up once)
    for group in _groups(doc.candidates):
        lead = _group_dialect(group) if len(group) > 1 else None
        for candidate in group:
            found = resolve(doc, candidate, keys, lead)
            if candidate.open_bases or forwards(candidate):
                found = [stated_only(c) for c in found]
            for config in found:
                traits = _TRAITS.get(config.dialect)
                if traits is not None:
                    config = replace(config, traits=traits)
                if not config.pretrained:
                    if checkpoint is None:
                        checkpoint = hf.weights_beside(doc.path)
                    config = replace(config, pretrained=checkpoint or restores(candidate))
                configs.append(config)
    return lexicon.without_fed(configs)


# Keys that load trained weights into the model a training config describes (NeMo, Megatron,
# nanotron, llm-foundry): its shape is then a checkpoint's, and fixes to it are unsafe.
RESTORE_KEYS = (
    "restore_from_path",
    "model.restore_from_path",
    "init_from_nemo_model",
    "model.init_from_nemo_model",
    "init_from_pretrained_model",
    "model.init_from_pretrained_model",
    "pretrained_checkpoint.restore_from_path",
    "model.pretrained_checkpoint.restore_from_path",
    "load_checkpoint_path",
    "model.init_from_checkpoint",
    "checkpoints.resume_checkpoint_path",
    "load_path",
)


def restores(candidate: Candidate) -> bool:
    """True when ``candidate`` names trained weights to start from (a non-empty path)."""
    for name in RESTORE_KEYS:
        hit = resolve_key(candidate.root, name, candidate.key_prefix)
        if hit is not None and isinstance(hit[1], Scalar):
            value = hit[1].value
            if isinstance(value, str) and value.strip() and value.strip().lower() != "null":
                return True
    return False


def forwards(candidate: Candidate) -> bool:
    """A call to a builder method of the enclosing class (``cls.v1(d_model=640, …)``,
    ``self.llama_like(…)``): its body may set what the call leaves out (OLMo-core's ``v1``
    fixes ``head_dim=128``), so, as for an unreadable base class, only stated values are known."""
    callee = candidate.callee.replace(" ", "")
    return candidate.kind == "call" and callee.startswith(("cls.", "self.", "super()."))


def stated_only(config: ModelConfig) -> ModelConfig:
    """``config`` of a Python class with a base that could not be read: a derived value or a
    framework default might be overridden there, so only stated values stay known."""
    dims = {d: replace(v, known=False) if v.derived else v for d, v in config.dims.items()}
    heads = dims.get(Dim.HEADS)
    if heads is not None and Dim.HEAD_DIM not in dims and config.has_attention:
        # Not derivable here (heads may not divide hidden), and possibly stated out of sight.
        dims[Dim.HEAD_DIM] = Value(
            None, "head_dim", heads.span, (heads,), "not stated here", known=False
        )
    return replace(config, dims=dims)


def claims(candidate: Candidate, lead: Dialect | None = None) -> list[Dialect]:
    """The dialects that contribute to ``candidate``, most specific first."""
    found = [m for m in DIALECTS if m.detect(candidate)]
    if lead is not None and lead not in found and _uses_keys_of(lead, candidate):
        found.insert(0, lead)
    if lead is not None and lead in found:
        found.remove(lead)
        found.insert(0, lead)
    return found


def resolve(
    doc: Document, candidate: Candidate, keys: KeyAliases, lead: Dialect | None = None
) -> list[ModelConfig]:
    """The configs one candidate holds, every contributing reader merged, then completed by
    the key lexicon (`lexicon.complete`: dims no reader read, mappings no reader read)."""
    return lexicon.complete(doc, candidate, _read(doc, candidate, keys, lead), keys, _fill)


def nested_model(candidate: Candidate) -> Candidate | None:
    """The one mapping nested in ``candidate`` that a dialect reads, for a candidate that no
    dialect reads (the caller knows) and that names no width of its own: a model's shape kept
    in one field of a larger record (llama-models' ``Model(…, arch_args={"dim": 4096, …})``),
    read as a person reads it — that field is the model, under the record's name. Dialects that fill
    framework defaults are not asked: a field is not evidence enough for a framework's
    defaults. None when there is no such mapping or more than one."""
    if neutral.has_width(candidate.root):
        return None
    found: list[Candidate] = []
    for entry in candidate.root.entries:
        if not isinstance(entry.value, Mapping):
            continue
        prefix = f"{candidate.key_prefix}.{entry.key}" if candidate.key_prefix else entry.key
        # Named as the record (a Python call's preset name); a file's root has no name of its
        # own, and the field's key names the model there (torchchat's ``"decoder"``).
        sub = Candidate(candidate.name or prefix, entry.value, prefix)
        if any(m not in DEFAULTING for m in claims(sub)):
            found.append(sub)
    return found[0] if len(found) == 1 else None


def _read(
    doc: Document, candidate: Candidate, keys: KeyAliases, lead: Dialect | None = None
) -> list[ModelConfig]:
    """The configs the dialects and the neutral key families read from one candidate."""
    primary: ModelConfig | None = None
    first: Dialect | None = None  # the reader whose config ``primary`` started as
    readers = claims(candidate, lead)
    inner = nested_model(candidate) if lead is None and not readers else None
    if inner is not None:
        candidate, readers = inner, claims(inner)
    for i, module in enumerate(readers):
        if i and module in DEFAULTING:
            continue
        found = module.extract(doc, candidate, keys)
        first = first or (module if found else None)
        if primary is None and len(found) > 1:
            # Several models in one mapping (a torchtune PPO recipe's policy and reward
            # models): each is its own config; what else reads the mapping is not merged in.
            read = frozenset().union(*(c.read_keys for c in found))
            others = neutral.extract(doc, candidate, keys)
            return found + [r for r in others if not {v.key for v in r.dims.values()} <= read]
        for config in found:
            primary = config if primary is None else _fill(primary, config, module.NAME)
    readings = neutral.extract(doc, candidate, keys)
    if primary is None:
        return readings
    if primary.shape_from_elsewhere and not looks_like_model(primary.dims) and len(readings) > 1:
        # Batch and parallel settings beside several models (T5's model.encoder and
        # model.decoder): they join each of them, as the reader says a stack sees them.
        stacks = [replace(_fill(primary, r, None), name=r.name) for r in readings]
        per_stack = getattr(first, "per_stack", None)
        return [per_stack(candidate, c) for c in stacks] if per_stack is not None else stacks
    out = [primary]
    for reading in readings:
        joined = out[0]
        if _joins(joined, reading, candidate):
            out[0] = _fill(joined, reading, None)
        elif not _covered(joined, reading):
            out.append(reading)
    return out


def _joins(primary: ModelConfig, reading: ModelConfig, candidate: Candidate) -> bool:
    """Whether a neutral reading describes the same model as the dialect's config."""
    stated = {v.key for v in reading.dims.values() if not v.derived}
    if stated & primary.read_keys:
        return True
    at_root = reading.name == candidate.name
    return at_root or (primary.shape_from_elsewhere and not looks_like_model(primary.dims))


def _covered(primary: ModelConfig, reading: ModelConfig) -> bool:
    stated = {v.key for v in reading.dims.values() if not v.derived}
    return stated <= primary.read_keys


def _fill(primary: ModelConfig, other: ModelConfig, name: str | None) -> ModelConfig:
    """``primary`` with the dims ``other`` states that it lacks (``name``: other's reader;
    None for a neutral reading, whose sources name each key's family)."""
    dims = dict(primary.dims)
    sources = dict(primary.sources)
    formulas = dict(primary.formulas)
    changed = False
    for dim, value in other.dims.items():
        if value.derived or value.key in primary.read_keys:
            continue
        current = dims.get(dim)
        if current is None or (current.derived and current.kind in _FALLBACKS):
            dims[dim] = value
            sources[dim] = name or other.sources.get(dim, other.dialect)
            formulas.pop(dim, None)
            changed = True
    if changed:
        _rederive_fallbacks(dims, sources, formulas, primary.dialect)
    for dim, value in other.dims.items():  # the other reader's own derivations, last
        current = dims.get(dim)
        fallback = current is not None and current.derived and current.kind in _FALLBACKS
        if not value.derived or not value.known:
            continue
        # A formula of stated values (a head dim from a total attention width) replaces a
        # head dim or KV-head count that was only a fallback; another fallback does not.
        if current is None or (fallback and value.kind not in _FALLBACKS):
            dims[dim] = value
            sources[dim] = name or other.sources.get(dim, other.dialect)
            formulas.pop(dim, None)
            if dim in other.formulas:
                formulas[dim] = other.formulas[dim]
    if not primary.has_attention or not other.has_attention:
        for dim in (Dim.HEADS, Dim.KV_HEADS, Dim.HEAD_DIM, Dim.V_HEAD_DIM):
            dims.pop(dim, None)
    model = looks_like_model(dims)
    return replace(
        primary,
        dims=dims,
        sources=sources,
        formulas=formulas,
        gated_mlp=primary.gated_mlp if primary.gated_mlp is not None else other.gated_mlp,
        pretrained=primary.pretrained or other.pretrained,
        shape_from_elsewhere=primary.shape_from_elsewhere and not model,
        has_lm_head=primary.has_lm_head if primary.has_lm_head is not None else other.has_lm_head,
        has_attention=primary.has_attention and other.has_attention,
        runs_on_engines=primary.runs_on_engines and other.runs_on_engines,
        untimed=(
            (primary.untimed or other.untimed)
            if primary.has_attention and other.has_attention
            else ""
        ),
        read_keys=primary.read_keys | other.read_keys,
        dropout=primary.dropout or other.dropout,
        position_embedding=primary.position_embedding or other.position_embedding,
    )


def _rederive_fallbacks(
    dims: dict[Dim, Value], sources: dict[Dim, str], formulas: dict[Dim, Formula], dialect: str
) -> None:
    """Recompute head dim and KV heads that were only derived for want of stated values."""
    for dim in (Dim.HEAD_DIM, Dim.KV_HEADS):
        current = dims.get(dim)
        if current is not None and current.derived and current.kind in _FALLBACKS:
            del dims[dim]
    hidden, heads = dims.get(Dim.HIDDEN), dims.get(Dim.HEADS)
    h = hidden.as_int if hidden is not None else None
    a = heads.as_int if heads is not None else None
    if Dim.HEAD_DIM not in dims and hidden and heads and h and a and a > 0 and h % a == 0:
        dims[Dim.HEAD_DIM] = Value(
            h // a,
            hidden.key,
            hidden.span,
            derived_from=(hidden, heads),
            formula="hidden / heads",
            kind=Derivation.HEAD_DIM_SPLIT,
        )
        sources[Dim.HEAD_DIM] = dialect
        formulas[Dim.HEAD_DIM] = head_dim_split
    if Dim.KV_HEADS not in dims and heads is not None and a and a > 0:
        dims[Dim.KV_HEADS] = Value(
            a,
            heads.key,
            heads.span,
            derived_from=(heads,),
            formula="= heads (no KV heads stated)",
            kind=Derivation.KV_FROM_HEADS,
        )
        sources[Dim.KV_HEADS] = dialect
        formulas[Dim.KV_HEADS] = lambda get: get(Dim.HEADS)


def _groups(candidates: list[Candidate]) -> list[list[Candidate]]:
    """Candidates in file order, those of one Python list (``configs[0] …``, ``configs[1] …``)
    or one dict of configs together."""
    groups: list[list[Candidate]] = []
    index: dict[str, int] = {}
    for candidate in candidates:
        section = _section(candidate)
        if section is None:
            groups.append([candidate])
            continue
        if section not in index:
            index[section] = len(groups)
            groups.append([])
        groups[index[section]].append(candidate)
    return groups


def _section(candidate: Candidate) -> str | None:
    if candidate.kind not in ("call", "dict") or "[" not in candidate.name:
        return None
    head = candidate.name.split("[", 1)[0]
    return head or None


def _group_dialect(group: list[Candidate]) -> Dialect | None:
    """The most specific dialect that detects any entry of the group."""
    for module in DIALECTS:
        if any(module.detect(c) for c in group):
            return module
    return None


def _uses_keys_of(module: Dialect, candidate: Candidate) -> bool:
    """Whether ``candidate`` is written in ``module``'s key names (without its markers)."""
    uses = getattr(module, "uses_keys", None)
    return bool(uses(candidate)) if uses is not None else False


__all__ = ["DIALECTS", "claims", "extract", "hf", "resolve"]
