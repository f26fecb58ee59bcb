"""Presets a config names instead of stating its shape (issue 23, deliverable 3).

Many trainers size the model from a name: a YAML says ``model_name: "OpenELM-270M"`` and the
trainer looks the name up in a dict of presets of one of its Python modules; a dataclass
config says ``transformer_name: str = "gemma3_1b"`` and a classmethod of that name builds the
model. A person reading such a config reads the preset. This module is the reading's
knowledge, free of any framework's names: which keys name a preset (`references`), which
Python candidate a name means (`names_preset`), and the mapping the config then describes
(`through`). Finding the module is file-system work, the engine's (`shapelint.engine.presets`).

A key names a preset when its words (``model_name``, ``transformerName``, ``arch-variant``)
end in a naming word (`NAMING_WORDS`) right after a word for the model (`MODEL_WORDS`), or are one
bare preset word (``preset``, ``arch``); its value is a string that reads as a name
(letters, digits, ``_ . -``; not a number, not a path or a hub id with ``/``). A Python
candidate names the preset when its name is the value, ends in ``.value`` (a function or
classmethod, ``TransformerConfig.gemma3_1b``), in ``["value"]`` (a dict entry,
``gpt_configs["OpenELM-270M"]``) or in `` value`` (an entry's ``name=``).

Read through the preset, the config is the preset's entries followed by the entries of the
mapping that names it (its other keys, ``vocab_size`` beside ``model_name``, override the
preset's as a ``from_name(…)`` that copies them in would); every value keeps its own span,
so a finding on a preset value points at the module, in the config named by the reference.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

from shapelint.core.source import Candidate, Entry, Mapping, Scalar

# The last word of a key that names a preset, after a word for the model.
NAMING_WORDS = frozenset({"name", "preset", "arch", "architecture", "variant", "flavor", "flavour"})
# Words that say the named thing is the model (``model_name``, ``transformer_name``).
MODEL_WORDS = frozenset(
    {"model", "transformer", "arch", "architecture", "network", "net", "backbone", "lm", "llm"}
)
# Keys that are a preset's name on their own.
BARE = frozenset({("preset",), ("arch",), ("architecture",), ("model", "preset")})
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.\-]{0,79}\Z")
_WORD = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|[0-9]+")
# Nested mappings followed from a candidate's root, and references kept from one file.
MAX_DEPTH = 16
MAX_REFERENCES = 16


@dataclass(frozen=True)
class Reference:
    """A key naming a preset: the candidate and the mapping it sits in (its key path
    ``prefix``), the key, and the name as written."""

    candidate: Candidate
    mapping: Mapping
    prefix: str
    entry: Entry
    name: str

    @property
    def value(self) -> Scalar:
        """The name's scalar (its span is the reference's place in the file)."""
        assert isinstance(self.entry.value, Scalar)
        return self.entry.value

    @property
    def key(self) -> str:
        """The key's full path (``model.language_modeling.general_gpt.model_name``)."""
        return f"{self.prefix}.{self.entry.key}" if self.prefix else self.entry.key


def key_words(key: str) -> tuple[str, ...]:
    """The lower-case words of a key (snake, camel, UPPER, dash and dotted forms)."""
    return tuple(w.lower() for w in _WORD.findall(key.rsplit(".", 1)[-1]))


def names_a_preset(key: str) -> bool:
    """Whether ``key``'s words say its value is the model's preset name."""
    words = key_words(key)
    if words in BARE:
        return True
    # the naming word right after the model word: ``model_train_name`` names a run
    return len(words) >= 2 and words[-1] in NAMING_WORDS and words[-2] in MODEL_WORDS


def preset_name(value: object) -> str | None:
    """The value as a preset's name, or None when it cannot be one."""
    if not isinstance(value, str) or not _NAME.match(value):
        return None
    if re.fullmatch(r"[0-9._\-]+", value):
        return None  # a number or a version
    return value


def references(candidates: list[Candidate]) -> Iterator[Reference]:
    """Every key of the candidates (at any depth) whose known string value names a preset."""
    found = 0

    def walk(
        candidate: Candidate, mapping: Mapping, prefix: str, depth: int
    ) -> Iterator[Reference]:
        nonlocal found
        if depth > MAX_DEPTH:
            return
        for entry in mapping.entries:
            value = entry.value
            if isinstance(value, Mapping):
                inner = f"{prefix}.{entry.key}" if prefix else entry.key
                yield from walk(candidate, value, inner, depth + 1)
            elif (
                isinstance(value, Scalar)
                and value.known
                and names_a_preset(entry.key)
                and (name := preset_name(value.value)) is not None
                and found < MAX_REFERENCES
            ):
                found += 1
                yield Reference(candidate, mapping, prefix, entry, name)

    for candidate in candidates:
        yield from walk(candidate, candidate.root, candidate.key_prefix, 0)


def names_preset(candidate_name: str, preset: str) -> bool:
    """Whether a Python candidate named ``candidate_name`` is the preset ``preset``."""
    return candidate_name == preset or candidate_name.endswith(
        (f".{preset}", f" {preset}", f'["{preset}"]', f"['{preset}']")
    )


def through(reference: Reference, preset: Candidate) -> Candidate:
    """The candidate ``reference``'s mapping describes when its preset is ``preset``: the
    preset's entries, then the mapping's own (the reference itself left out)."""
    own = tuple(e for e in reference.mapping.entries if e is not reference.entry)
    root = Mapping(preset.root.entries + own, reference.mapping.span, reference.mapping.shared)
    name = f"{reference.entry.key}={reference.name}"
    # Keys are shown as written in their own file (``hidden_size`` of the preset,
    # ``vocab_size`` beside the reference), not under the reference's path.
    return Candidate(
        name=name,
        root=root,
        kind=preset.kind,
        open_bases=preset.open_bases,
        callee=preset.callee,
    )


__all__ = [
    "BARE",
    "MODEL_WORDS",
    "NAMING_WORDS",
    "Reference",
    "key_words",
    "names_a_preset",
    "names_preset",
    "preset_name",
    "references",
    "through",
]
