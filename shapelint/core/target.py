"""What a config is run on (`Target`), and the one declaration of each field a user chooses.

Each field of `Target` that a user may choose is declared once, in the class body, with
`declared`: its default, what values it takes, the help of its flag, the config dim it may be
read from and how the "Estimated for:" line shows it. Everything else comes from that
declaration (`TARGET_FIELDS`):

- `TargetOptions`, the fields a flag or a setting chose, takes exactly these names;
- the settings key (``micro-batch``), its JSON-schema entry and its parsing
  (`shapelint.engine.settings`);
- the command-line flag (``--micro-batch``; `shapelint.cli.flags.add_target_flags`);
- each config's value in the order flag, the config's own value, settings, default, and where
  each value came from (`shapelint.engine.target`);
- the JSON target and the "Estimated for:" text (`shapelint.engine.assumed`).

Adding a field is one declaration here (and the code that reads ``target.NAME``). A field of a
new `Kind` also needs its schema entry (settings), its flag (cli) and its config reading
(engine target), one branch each.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, fields, replace
from typing import TYPE_CHECKING, Any, Literal, get_args

from shapelint.core.dtypes import FP8_RECIPES

if TYPE_CHECKING:
    from shapelint.hardware.gpus import GPU

Mode = Literal["train", "prefill", "decode"]
MODES: tuple[str, ...] = get_args(Mode)
# "flash" is the GPU's default fused kernel (FlashAttention-3 on Hopper, FlashAttention-2
# elsewhere); the others name one kernel (shapelint.perf.attention).
Attention = Literal["flash", "flash2", "flash3", "cudnn", "sdpa", "flash1", "triton", "unfused"]
ATTENTION_KERNELS: tuple[str, ...] = get_args(Attention)
# What activation recomputation reruns in the backward (shapelint.perf.workload): nothing; the
# attention core (Megatron's selective recompute, Korthikanti et al. 2022); every other matmul
# and the elementwise ops (torchtitan's per-op selective checkpointing); every other layer
# (torchtitan's per-layer selective checkpointing at its default frequency); every layer.
Recompute = Literal["none", "selective", "op", "layer", "full"]
RECOMPUTE_MODES: tuple[str, ...] = get_args(Recompute)
# The frameworks whose whole-step efficiency is calibrated (shapelint.perf.estimate): Megatron-LM
# and NeMo, PyTorch eager (FSDP/DDP or one GPU, torchtitan without compile), torch.compile,
# llm-foundry/Composer, JAX/XLA (MaxText, Levanter).
Framework = Literal["megatron", "pytorch", "compile", "foundry", "jax"]
FRAMEWORKS: tuple[str, ...] = get_args(Framework)
# A model's maximum context (HF max_position_embeddings) is not the length it is trained at;
# estimates for such configs use at most this many tokens per sequence unless told otherwise.
DEFAULT_SEQ_LEN = 4096

# What values a field takes. Each kind has one schema entry (engine.settings), one flag type
# (cli.flags) and one way to read it from a config (engine.target):
#   positive  an integer >= 1                 choice  one of ``choices``
#   bool      true/false (``--x``/``--no-x``)   dtype   a dtype name, torch spellings accepted
#   engines   engine names (``--engine`` repeatable, canonical names; hardware.engines)
#   fused     a fusion spec (shapelint.perf.fusion)
Kind = Literal["positive", "choice", "bool", "dtype", "engines", "fused"]


def one_of(choices: Iterable[str]) -> str:
    """``one of "a", "b"``: what a choice field's settings error says was expected."""
    return "one of " + ", ".join(f'"{c}"' for c in choices)


@dataclass(frozen=True)
class TargetField:
    """One target field a user may choose, declared once (see the module docstring).

    ``name`` and ``default`` are the `Target` attribute's; the rest says how the field is
    chosen, read and shown. ``shown`` formats the value (``{}``; a tuple is joined with
    ``/``) for the "Estimated for:" line, or computes the text; the line shows a field when
    ``always_shown`` or when its value is not the default, and, with ``shown_with`` =
    (other field, value), only while that field has that value.
    """

    kind: Kind
    help: str
    choices: tuple[str, ...] = ()
    metavar: str | None = None
    # The flag when it is not ``--`` + the settings key (``--engine`` for ``engines``).
    flag: str | None = None
    # What a valid value is, quoted in settings errors; None: the kind's own wording.
    description: str | None = None
    # The `shapelint.core.model.Dim` (by value) whose value a config may state for it.
    dim: str | None = None
    shown: str | Callable[[Any], str] | None = None
    always_shown: bool = False
    shown_with: tuple[str, object] | None = None
    # Older spellings a choice field still takes, as settings values and as flags: value →
    # choice (``recompute = true`` is "full"); ``negation`` is the choice of ``--no-FLAG``.
    aliases: tuple[tuple[object, str], ...] = ()
    negation: str | None = None
    # Part of the JSON target (value, origin, listed among the defaults).
    json: bool = True
    name: str = ""
    default: object = None

    @property
    def key(self) -> str:
        """The settings key: ``micro_batch`` → ``micro-batch``."""
        return self.name.replace("_", "-")

    @property
    def option(self) -> str:
        """The command-line flag: ``--micro-batch``."""
        return self.flag or f"--{self.key}"

    @property
    def expected(self) -> str:
        """What a valid settings value is (the schema's description)."""
        if self.description is not None:
            return self.description
        if self.kind == "choice":
            return one_of(self.choices)
        return {"positive": "a positive integer", "bool": "true or false"}.get(self.kind, "")

    def text(self, value: object, values: Mapping[str, object]) -> str | None:
        """How the "Estimated for:" line shows ``value`` (all resolved ``values`` given for
        ``shown_with``); None when it does not."""
        if self.shown is None or not (self.always_shown or value != self.default):
            return None
        if self.shown_with is not None and values.get(self.shown_with[0]) != self.shown_with[1]:
            return None
        if callable(self.shown):
            return self.shown(value)
        return self.shown.format("/".join(value) if isinstance(value, tuple) else value)


_DECLARED = "shapelint.target_field"


def declared(default: object, spec: TargetField) -> Any:
    """A `Target` dataclass field with ``default`` that a user may choose as ``spec`` says."""
    return field(default=default, metadata={_DECLARED: spec})


def _fp8_recipe_text(recipe: str) -> str:
    # NVFP4 has no rate of its own in the GPU table: say what the estimate assumed.
    return f"fp8-recipe {recipe}" + (" (timed at FP8 rates)" if recipe == "nvfp4" else "")


@dataclass(frozen=True)
class Target:
    """What a config is run on: one GPU, a dtype, micro-batch b, sequence s, tensor parallel t.

    The fields a user may choose are declared in place (`declared`); their order is the
    order of the JSON target and the "Estimated for:" line.
    """

    gpu: GPU
    dtype: str = declared(
        "bf16",
        TargetField(
            "dtype",
            "bf16|fp16|fp8|tf32|fp32 (torch names accepted)",
            description="a dtype name: bf16, fp16, fp8, tf32 or fp32 (torch names accepted)",
            dim="dtype",
            shown="{}",
            always_shown=True,
        ),
    )
    mode: Mode = declared(
        "train",
        TargetField(
            "choice",
            "what a step is (default train)",
            choices=MODES,
            shown="{}",
            always_shown=True,
        ),
    )
    micro_batch: int = declared(
        1,
        TargetField(
            "positive",
            "micro-batch size per GPU",
            metavar="B",
            dim="micro_batch",
            shown="micro-batch {}",
            always_shown=True,
        ),
    )
    seq_len: int = declared(
        DEFAULT_SEQ_LEN,
        TargetField(
            "positive",
            "sequence length",
            metavar="S",
            dim="seq_len",
            shown="seq {}",
            always_shown=True,
        ),
    )
    tp: int = declared(
        1,
        TargetField(
            "positive",
            "tensor-parallel size",
            metavar="N",
            dim="tp",
            shown="tp {}",
            always_shown=True,
        ),
    )
    attention: Attention = declared(
        "flash",
        TargetField(
            "choice",
            "attention kernel (default flash: FA3 on Hopper, FA2 elsewhere)",
            choices=ATTENTION_KERNELS,
            shown="{} attention",
        ),
    )
    # How a training step is run (shapelint.perf.ops): the kernel fusions ("default" is what a
    # Megatron-LM run does; "none" is PyTorch eager; or a comma list), data-parallel GPUs (for
    # the gradient reduction), parameters, gradients and optimizer state sharded over them
    # (FSDP, ZeRO-3), and what activation recomputation reruns.
    fused: str = declared(
        "default",
        TargetField(
            "fused",
            "fused kernels: default (Megatron-LM), none (PyTorch eager), all, or a list such as "
            "default,+cross_entropy or none,norm (norm, swiglu, rope, softmax, dropout, adamw, "
            "cross_entropy, fp8_cast)",
            metavar="SPEC",
            description='fused kernels: "default", "none", "all" or a comma list such as '
            '"default,+cross_entropy" (norm, swiglu, rope, softmax, dropout, adamw, '
            "cross_entropy, fp8_cast)",
            shown="fused {}",
        ),
    )
    data_parallel: int = declared(
        1,
        TargetField(
            "positive",
            "data-parallel GPUs the gradients are reduced over (default 1)",
            metavar="N",
            shown="data-parallel {}",
        ),
    )
    sharded: bool = declared(
        False,
        TargetField(
            "bool",
            "parameters, gradients and optimizer state sharded over the data-parallel GPUs "
            "(FSDP, ZeRO-3: parameters all-gathered for the forward and the backward)",
            shown="sharded",
        ),
    )
    recompute: Recompute = declared(
        "none",
        TargetField(
            "choice",
            "activation recomputation in the backward: full (every layer's forward again), "
            "selective (the attention core, Megatron), op (every other matmul and the "
            "elementwise ops, torchtitan), layer (every other layer, torchtitan), none; "
            "--recompute alone is full, --no-recompute none",
            choices=RECOMPUTE_MODES,
            description=one_of(RECOMPUTE_MODES) + " (true: full, false: none)",
            dim="recompute",
            shown="recompute {}",
            aliases=((True, "full"), (False, "none")),
            negation="none",
        ),
    )
    # The FP8-family training recipe under ``dtype == "fp8"`` (None: the engine's default).
    # Read by the rules of engines whose checks differ by recipe (torchtitan's NVFP4
    # converter, SL327); the performance model times every recipe's GEMMs at FP8 rates.
    fp8_recipe: str | None = declared(
        None,
        TargetField(
            "choice",
            "FP8-family training recipe with --dtype fp8 (delayed|current|mxfp8|nvfp4)",
            choices=FP8_RECIPES,
            description=one_of(FP8_RECIPES) + " (the FP8-family recipe, with dtype fp8)",
            dim="fp8_recipe",
            shown=_fp8_recipe_text,
            shown_with=("dtype", "fp8"),
            json=False,
        ),
    )
    # Engines the config will run on (shapelint.hardware.engines names; without a flag or a
    # setting, the engines the config implies) and the other parallel sizes: pipeline stages,
    # expert parallel, context parallel, DeepSpeed Ulysses sequence parallel. Read by the
    # SL3xx rules.
    engines: tuple[str, ...] = declared(
        (),
        TargetField(
            "engines",
            "engine that will run the config (repeatable; `shapelint engines` lists them)",
            metavar="NAME[@VERSION]",
            flag="--engine",
            description='an engine or a list of them, such as "vllm" or '
            '["vllm", "megatron@core_v0.14"] (`shapelint engines` lists them)',
            shown="engines {}",
            json=False,
        ),
    )
    pp: int = declared(
        1,
        TargetField(
            "positive", "pipeline-parallel stages", metavar="N", dim="pp", shown="pp {}", json=False
        ),
    )
    ep: int = declared(
        1,
        TargetField(
            "positive", "expert-parallel size", metavar="N", dim="ep", shown="ep {}", json=False
        ),
    )
    cp: int = declared(
        1,
        TargetField(
            "positive", "context-parallel size", metavar="N", dim="cp", shown="cp {}", json=False
        ),
    )
    sp: int = declared(
        1,
        TargetField(
            "positive",
            "sequence-parallel size (DeepSpeed Ulysses)",
            metavar="N",
            dim="sp",
            shown="sp {}",
            json=False,
        ),
    )
    # The pipeline's interleaved stages per GPU (Megatron's virtual pipeline size), the global
    # batch in sequences (micro-batches per step: global / (micro-batch · data-parallel)), the
    # GPUs one node's NVLink joins (default: the GPU table's reference node), and whether the
    # tensor-parallel collectives overlap the GEMMs (Megatron --tp-comm-overlap, torchtitan's
    # async TP). Read by the step model (shapelint.perf.communication).
    vp: int = declared(
        1,
        TargetField(
            "positive",
            "interleaved pipeline stages per GPU (virtual pipeline size)",
            metavar="N",
            dim="vp",
            shown="vp {}",
            json=False,
        ),
    )
    global_batch: int | None = declared(
        None,
        TargetField(
            "positive",
            "global batch in sequences (micro-batches per step = global / (micro-batch · "
            "data-parallel); default: the config's gradient accumulation, else one)",
            metavar="N",
            dim="global_batch",
            shown="global batch {}",
            json=False,
        ),
    )
    gpus_per_node: int | None = declared(
        None,
        TargetField(
            "positive",
            "GPUs one node's NVLink joins (default: the GPU table's reference node)",
            metavar="N",
            dim="gpus_per_node",
            shown="{} GPUs per node",
            json=False,
        ),
    )
    tp_overlap: bool = declared(
        False,
        TargetField(
            "bool",
            "tensor-parallel collectives overlapped with the GEMMs (Megatron --tp-comm-overlap, "
            "torchtitan async TP)",
            dim="tp_comm_overlap",
            shown="tp overlap",
            json=False,
        ),
    )
    framework: Framework | None = declared(
        None,
        TargetField(
            "choice",
            "framework whose whole-step efficiency applies (megatron, pytorch, compile, "
            "foundry, jax; default: the one the config's dialect implies, else pytorch)",
            choices=FRAMEWORKS,
            dim="framework",
            shown="{}",
            json=False,
        ),
    )
    # False when no flag or setting chose the GPU and the built-in default stands in for it:
    # rules that refuse a config for the GPU itself rather than its shapes report only a GPU
    # the user chose (SL332).
    gpu_chosen: bool = True
    # The dtype the flags or the config asked for when the GPU has no Tensor Core rate for it
    # and ``dtype`` is the one it is timed in instead (fp8 on an A100 is timed as bf16); None
    # when ``dtype`` is what was asked.
    asked_dtype: str | None = None


# The fields a user may choose, in declaration order.
TARGET_FIELDS: tuple[TargetField, ...] = tuple(
    replace(f.metadata[_DECLARED], name=f.name, default=f.default)
    for f in fields(Target)
    if _DECLARED in f.metadata
)
FIELD_NAMES = frozenset(f.name for f in TARGET_FIELDS)


def in_order(first: Iterable[str]) -> tuple[TargetField, ...]:
    """Every field: those named in ``first`` in that order, then the rest in declaration order
    (the help and the settings schema list fields in the order they had before they were
    declared here; a new field follows them)."""
    by_name = {f.name: f for f in TARGET_FIELDS}
    named = [by_name[n] for n in first]
    return (*named, *(f for f in TARGET_FIELDS if f not in named))


@dataclass(frozen=True, init=False)
class TargetOptions:
    """Target fields a user chose (CLI flags or settings), by `Target` field name; a field
    left out, or given as None, was not chosen."""

    chosen: Mapping[str, object]

    def __init__(self, **chosen: object) -> None:
        unknown = sorted(set(chosen) - FIELD_NAMES)
        if unknown:
            raise TypeError(f"{unknown[0]!r} is not a target field")
        # A field's older spelling (``recompute=True``) stands for its choice ("full").
        aliases = {f.name: f.aliases for f in TARGET_FIELDS if f.aliases}
        for name, old_spellings in aliases.items():
            value = chosen.get(name)
            for old, choice in old_spellings:
                if value is old:
                    chosen[name] = choice
        object.__setattr__(self, "chosen", {k: v for k, v in chosen.items() if v is not None})

    def get(self, name: str) -> object | None:
        """The value chosen for the field ``name``, or None."""
        return self.chosen.get(name)


__all__ = [
    "ATTENTION_KERNELS",
    "DEFAULT_SEQ_LEN",
    "FIELD_NAMES",
    "FP8_RECIPES",
    "FRAMEWORKS",
    "MODES",
    "RECOMPUTE_MODES",
    "TARGET_FIELDS",
    "Attention",
    "Framework",
    "Kind",
    "Mode",
    "Recompute",
    "Target",
    "TargetField",
    "TargetOptions",
    "declared",
    "in_order",
    "one_of",
]
