"""What the commands share: the usage error, the GPUs and target fields the flags choose."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, TextIO

if TYPE_CHECKING:
    import argparse

    from shapelint.engine.options import LintOptions, TargetOptions
    from shapelint.engine.settings import Settings
    from shapelint.hardware.gpus import GPU

DEFAULT_GPU = "H100-SXM"
BUG_URL = "https://github.com/shapelint/shapelint/issues"


class UsageError(Exception):
    """A problem with the command line or settings: reported in one line, exit 2."""


def _gpus(names: Sequence[str] | None, gpu_file: str | None) -> tuple[GPU, ...]:
    from shapelint.engine.gpu_file import load_table
    from shapelint.hardware.gpus import GPUTableError, UnknownGPUError

    try:
        table = load_table(gpu_file)
        return tuple(table.lookup(n) for n in (names or [DEFAULT_GPU]))
    except (UnknownGPUError, GPUTableError) as exc:
        raise UsageError(str(exc)) from None


def write_gpu_notes(gpus: Iterable[GPU], err: TextIO) -> None:
    """One ``shapelint: note:`` line for each GPU from a GPU file that took a family's
    constants (or the defaults) for fields its entry leaves out; nothing for built-in GPUs."""
    seen: set[str] = set()
    for gpu in gpus:
        if gpu.family_note and gpu.family_note not in seen:
            seen.add(gpu.family_note)
            err.write(f"shapelint: note: {gpu.family_note}\n")


def one_file_options(
    settings: Settings,
    gpu: Sequence[str] | None,
    gpu_file: str | None,
    flags: TargetOptions,
    min_slowdown: float = 1.0,
) -> LintOptions:
    """The options ``explain`` and ``suggest`` read their one file with: the GPUs named (else
    the settings'), the target fields ``flags`` chose over the settings' defaults, the
    settings' key map and work limits."""
    from shapelint.core.limits import Budget
    from shapelint.engine.options import LintOptions

    return LintOptions(
        gpus=_gpus(gpu or settings.gpu, gpu_file or settings.gpu_file),
        flags=flags,
        defaults=settings.target,
        extra_keys=settings.keys,
        min_slowdown=min_slowdown,
        budget=Budget(**settings.budget),
    )


def _targets(args: argparse.Namespace, settings: Settings) -> tuple[TargetOptions, TargetOptions]:
    """The target the flags choose, and the defaults the settings give."""
    from shapelint.core.target import TARGET_FIELDS, TargetOptions

    flags = TargetOptions(**{f.name: getattr(args, f.name) for f in TARGET_FIELDS})
    return flags, settings.target
