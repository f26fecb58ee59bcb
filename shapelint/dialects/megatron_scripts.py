"""Megatron's launch scripts, for the shell reader: which flags make a script a model's config,
which programs read them, and which of their values are dummies.

Megatron-LM and its forks (Megatron-DeepSpeed, Pai-Megatron-Patch, MegaBlocks' fork) are most
often configured by a script that passes the shape as flags (``torchrun pretrain_gpt.py
--hidden-size 4096 …``). The shell reader (`shapelint.readers.shell`) reads the script's
grammar; `SCRIPTS` is what the Megatron dialect registers with it (`shapelint.readers.hooks`).
"""

from __future__ import annotations

import re

from shapelint.core.source import Entry, Scalar
from shapelint.readers.hooks import ShellFlags

# A script that passes one of these is a model's config.
SHAPE_FLAGS = frozenset({"--hidden-size", "--num-layers", "--num-attention-heads"})

# Sizes a Megatron program must be given even when it builds no model from them: its parser
# requires --num-layers, --hidden-size, --num-attention-heads and --max-position-embeddings
# (megatron/arguments.py:279-283 in microsoft/Megatron-DeepSpeed at f4157bea), so data tools
# (examples_deepspeed/data_efficiency/analyze_data.py) and checkpoint converters, which take the
# shape from the checkpoint (Pai-Megatron-Patch's hf2mcore.py:209-219 at a098ca5a), pass 1s.
PLACEHOLDER_FLAGS = frozenset(
    {
        "--hidden-size",
        "--num-attention-heads",
        "--num-layers",
        "--ffn-hidden-size",
        "--num-query-groups",
        "--kv-channels",
        "--max-position-embeddings",
        "--seq-length",
        "--vocab-size",
        "--make-vocab-size-divisible-by",
    }
)


def _placeholders(entries: list[Entry]) -> list[Entry]:
    """A hidden size of 1 is no model's: the script's sizes of 1 are placeholders (unknown),
    the real shape comes from elsewhere. Other values stay as written."""
    hidden = next((e.value for e in entries if e.key == "--hidden-size"), None)
    if not isinstance(hidden, Scalar) or not hidden.known or hidden.value != 1:
        return entries
    out = []
    for entry in entries:
        value = entry.value
        if (
            entry.key in PLACEHOLDER_FLAGS
            and isinstance(value, Scalar)
            and value.known
            and value.value == 1
        ):
            placeholder = Scalar(None, value.span, expression="1 (a placeholder)", known=False)
            entry = Entry(entry.key, entry.key_span, placeholder)
        out.append(entry)
    return out


# A checkpoint converter builds the model its flags describe to copy weights into it, but runs
# no training step: its batch and sequence flags are dummies (Pai-Megatron-Patch's converters
# pass ``--micro-batch-size 1 --seq-length 1``, toolkits/model_checkpoints_convertor and
# distributed_checkpoints_convertor at a098ca5a). Recognised by the Python program the script
# runs, when it runs no training or inference one.
# (Patterns, compiled when a script is read: start-up pays nothing for them.)
_CONVERTER = (
    r"(?:^|[/\s])(?:hf2mcore|mcore2hf|hf2megatron|megatron2hf|hf2megablocks|convert|checkpoint_util)"
    r"[\w.-]*\.py\b"
)
_RUNNER = r"(?:^|[/\s])[\w.-]*(?:pretrain|finetune|train|generat|infer|eval)[\w.-]*\.py\b"
RUN_FLAGS = frozenset(
    {"--seq-length", "--decoder-seq-length", "--micro-batch-size", "--global-batch-size"}
)


def _converts_checkpoints(text: str) -> bool:
    return bool(re.search(_CONVERTER, text)) and not re.search(_RUNNER, text)


def _not_a_run(entries: list[Entry]) -> list[Entry]:
    """A converter's batch and sequence flags: unknown (the model shape stays)."""
    out = []
    for entry in entries:
        value = entry.value
        if entry.key in RUN_FLAGS and isinstance(value, Scalar) and value.known:
            text = f"{value.value} (a checkpoint converter's: it runs no training step)"
            entry = Entry(
                entry.key, entry.key_span, Scalar(None, value.span, expression=text, known=False)
            )
        out.append(entry)
    return out


def finish(text: str, entries: list[Entry]) -> list[Entry]:
    """The script's entries as a Megatron program reads them: placeholder sizes and a
    checkpoint converter's batch and sequence flags unknown."""
    entries = _placeholders(entries)
    return _not_a_run(entries) if _converts_checkpoints(text) else entries


# The training, inference and evaluation programs a script runs (``pretrain_gpt.py``), also
# where a variable is assigned one (``PRETRAIN_SCRIPT_PATH="pretrain_gpt.py"``): the dialect
# takes the defaults of flags left out from the program (`megatron.GPT_TRAINER`).
PROGRAM = r"(?:^|[/\s=])([\w.-]*(?:pretrain|finetune|train|generat|infer|eval)[\w.-]*\.py)\b"

SCRIPTS = ShellFlags(shape_flags=SHAPE_FLAGS, programs=PROGRAM, finish=finish)
