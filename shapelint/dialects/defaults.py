"""Framework defaults: the value a framework uses when a config leaves a key out.

LitGPT, nanoGPT and gpt-fast configs are Python dataclasses whose entries in a file override
class defaults (``dict(name="Llama-2-7b{}-hf", vocab_size=32000, …)`` keeps LitGPT's
``n_embd=4096``). A default is reported as a derived `Value` whose source is the config's
*anchor* — its ``name`` entry when it has one, else the whole config — so a finding on it points
where a user would add the key, and the fixer never edits it in place.

A key that is present but not statically known (``n_embd=width``) is neither defaulted nor
guessed: the dim stays absent.
"""

from __future__ import annotations

from shapelint.core.model import Derivation, Dim, Value
from shapelint.dialects.common import Builder
from shapelint.dialects.lookup import derived


def anchor(b: Builder, *keys: str) -> Value:
    """The value framework defaults point at: the first of ``keys`` present, else the config."""
    for key in keys:
        found = b.lookup(key)
        if found is not None:
            return found
    candidate = b.candidate
    return Value(candidate.name, candidate.key_prefix, candidate.root.span)


def default(source: Value, key: str, value: object, framework: str, prefix: str = "") -> Value:
    """A framework default for ``key`` (under key path ``prefix``), derived from ``source``."""
    path = f"{prefix}.{key}" if prefix else key
    return derived(
        value, (source,), f"{framework} default {key}={value!r}", key=path, kind=Derivation.DEFAULT
    )


def take_or_default(
    b: Builder,
    dim: Dim,
    names: tuple[str, ...],
    fallback: object,
    source: Value,
    framework: str,
) -> Value | None:
    """Set ``dim`` from the first of ``names`` present; when none is (or it is ``None``), from
    ``fallback``. A present but unknown value leaves the dim unset."""
    if dim in b.dims:
        return b.dims[dim]
    value = b.lookup(*b.extra_keys.get(dim, ()), *names)
    if value is not None and not value.known:
        return None
    if value is not None and value.value is not None:
        b.dims[dim] = value
        return value
    if fallback is None:
        return None
    made = default(source, names[0], fallback, framework, b.candidate.key_prefix)
    b.dims[dim] = made
    return made
