"""The flags several commands share: the target (``check``, ``explain``, ``suggest``; one flag
per field declared in `shapelint.core.target`) and the settings, output and exit-code flags of
``check``."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from shapelint.cli.common import DEFAULT_GPU

if TYPE_CHECKING:
    import argparse

    from shapelint.core.target import TargetField


def dtype_arg(text: str) -> str:
    """A dtype name (torch names accepted), or a usage error listing the known ones."""
    import argparse

    from shapelint.core.dtypes import DTYPES, normalize_dtype

    dtype = normalize_dtype(text)
    if dtype is None:
        raise argparse.ArgumentTypeError(
            f"unknown dtype {text!r} (choose from {', '.join(DTYPES)})"
        )
    return dtype


def codes_arg(values: list[str] | None) -> tuple[str, ...]:
    """The rule codes or prefixes of repeated, comma-separated ``--select``/``--ignore``."""
    return tuple(c.strip().upper() for v in values or () for c in v.split(",") if c.strip())


# The target flags in the order the help listed them before they were declared in one place
# (shapelint.core.target); a new field's flag follows them.
_HELP_ORDER = (
    "dtype",
    "tp",
    "micro_batch",
    "seq_len",
    "mode",
    "attention",
    "engines",
    "pp",
    "ep",
    "cp",
    "sp",
    "fp8_recipe",
    "fused",
    "data_parallel",
    "sharded",
    "recompute",
)


def fused_arg(text: str) -> str:
    """A fusion spec written the one way (`shapelint.perf.fusion.fused_spec`), or a usage
    error naming the unknown fusion."""
    import argparse

    # Imported here: `--version` and commands without --fused load no part of perf.
    from shapelint.perf.fusion import fused_spec

    try:
        return fused_spec(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def target_argument(spec: TargetField) -> dict[str, Any]:
    """``add_argument`` keywords of the target field ``spec``'s flag, by its kind."""
    import argparse

    from shapelint.cli.argtypes import positive_int
    from shapelint.cli.engines import EngineAction

    kw: dict[str, Any] = {"dest": spec.name, "help": spec.help}
    if spec.metavar is not None:
        kw["metavar"] = spec.metavar
    if spec.kind == "positive":
        kw["type"] = positive_int
    elif spec.kind == "choice":
        kw["choices"] = spec.choices
        alias = dict(spec.aliases).get(True)
        if alias is not None:  # ``--recompute`` alone keeps its old meaning
            kw.update(nargs="?", const=alias)
    elif spec.kind == "bool":
        kw.update(action=argparse.BooleanOptionalAction, default=None)
    elif spec.kind == "dtype":
        kw["type"] = dtype_arg
    elif spec.kind == "engines":
        kw["action"] = EngineAction
    elif spec.kind == "fused":
        kw["type"] = fused_arg
    return kw


def add_target_flags(p: argparse.ArgumentParser) -> None:
    """Flags shared by ``check``, ``explain`` and ``suggest`` that choose the target: the GPUs,
    and one flag per target field (`shapelint.core.target`)."""
    from shapelint.core.target import in_order

    p.add_argument(
        "--gpu",
        action="append",
        metavar="NAME",
        help=f"target GPU (repeatable; default {DEFAULT_GPU})",
    )
    p.add_argument("--gpu-file", metavar="FILE", help="YAML file with extra GPU entries")
    for spec in in_order(_HELP_ORDER):
        p.add_argument(spec.option, **target_argument(spec))
        if spec.negation is not None:  # ``--no-recompute``: the old boolean flag's negation
            p.add_argument(
                f"--no-{spec.key}",
                dest=spec.name,
                action="store_const",
                const=spec.negation,
                help=f"same as {spec.option} {spec.negation}",
            )


def add_output_flags(p: argparse.ArgumentParser) -> None:
    """Flags of ``check`` for settings, output and the exit code."""
    p.add_argument("--config", metavar="FILE", help="settings file to use instead of searching")
    p.add_argument("--statistics", action="store_true", help="count findings per rule")
    p.add_argument("--output-file", metavar="FILE", help="write the report to FILE")
    p.add_argument(
        "--fail-on",
        choices=("error", "warning", "info"),
        help="lowest severity that makes the exit code 1 (default info)",
    )
    p.add_argument(
        "--report-unused-ignores",
        action="store_true",
        help="report `# shapelint: ignore` comments and baseline entries that hide nothing (SL008)",
    )
    p.add_argument("--baseline", metavar="FILE", help="hide the findings recorded in FILE")
    p.add_argument(
        "--write-baseline", metavar="FILE", help="record today's findings in FILE; exit 0"
    )
