"""``shapelint suggest CONFIG``: the fastest shape near a config at the same parameter count.

This module is the command: it reads one config, builds the targets, runs
`shapelint.perf.search.search` with the rules as the validity check, prints the table or JSON,
and with ``--apply N`` rewrites the file to candidate N through the fixer (an unsafe fix,
verified by re-parsing and re-linting, written atomically).
"""

from __future__ import annotations

import argparse
import json
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, TextIO

from shapelint.cli.argtypes import positive_int as _count

if TYPE_CHECKING:
    from shapelint.core.model import Fix, ModelConfig, Target
    from shapelint.core.source import Document
    from shapelint.engine.options import LintOptions
    from shapelint.engine.reading import Snapshot
    from shapelint.perf.search import Candidate, Suggestions
    from shapelint.perf.space import Shape, SuggestOptions

SUGGEST_CODE = "suggest"


def _tolerance(text: str) -> float:
    raw = text.strip()
    try:
        value = float(raw.removesuffix("%"))
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected a percentage such as 2%, got {text!r}"
        ) from None
    if raw.endswith("%") or value >= 1:
        value /= 100
    if not 0 <= value <= 0.5:
        raise argparse.ArgumentTypeError(f"tolerance must be between 0% and 50%, got {text!r}")
    return value


def _keep(text: str) -> frozenset[str]:
    from shapelint.perf.space import KEEPABLE

    names = {n.strip().lower().replace("-", "_") for n in text.split(",") if n.strip()}
    unknown = sorted(names - set(KEEPABLE))
    if unknown:
        raise argparse.ArgumentTypeError(
            f"unknown dim {', '.join(unknown)} (choose from {', '.join(KEEPABLE)})"
        )
    return frozenset(names)


def add_parser(sub: Any) -> None:
    """Register ``suggest`` on the subparsers ``sub`` (target flags as ``check`` has them)."""
    from shapelint.cli.flags import add_target_flags

    p = sub.add_parser(
        "suggest", help="search shapes near a config for the fastest at the same size"
    )
    p.add_argument("path", metavar="CONFIG", help="one config file")
    p.add_argument("--config-name", metavar="NAME", help="the config to search when several")
    p.add_argument(
        "--params-tolerance",
        type=_tolerance,
        default=0.02,
        metavar="PCT",
        help="how far the parameter count may move (default 2%%)",
    )
    p.add_argument(
        "--keep",
        type=_keep,
        action="append",
        metavar="DIMS",
        help="dims to keep as written, comma-separated (hidden, heads, kv_heads, kv_ratio, "
        "head_dim, ffn, vocab, layers, micro_batch, tp)",
    )
    p.add_argument("--top", type=_count, default=5, metavar="N", help="candidates to show (5)")
    p.add_argument(
        "--pareto", action="store_true", help="show the Pareto front of parameters vs time"
    )
    p.add_argument(
        "--format", choices=("text", "json"), default="text", help="text (default) or json"
    )
    p.add_argument(
        "--apply", type=_count, metavar="N", help="rewrite the config to candidate N (unsafe)"
    )
    add_target_flags(p)


@dataclass
class Loaded:
    """The file as read: its snapshot (None for a text given, not read), document, the config
    searched and its settings."""

    path: str
    snapshot: Snapshot | None
    doc: Document
    config: ModelConfig
    options: LintOptions


def _usage(message: str) -> Exception:
    from shapelint.cli.common import UsageError

    return UsageError(message)


def load(args: argparse.Namespace) -> Loaded:
    """Read the one config file through the pipeline (no rules run), pick its config, and
    build lint options."""
    from shapelint.cli.common import _targets, one_file_options
    from shapelint.core.limits import Budget
    from shapelint.engine.discover import KINDS, kind_of
    from shapelint.engine.reading import read_snapshot
    from shapelint.engine.settings import SettingsError, SettingsResolver

    path = args.path
    if os.path.isdir(path):
        raise _usage(f"{path} is a directory: suggest reads one config file")
    kind = kind_of(path)
    if kind is None:
        raise _usage(f"{path}: not a config file shapelint reads ({', '.join(KINDS)})")
    try:
        settings = SettingsResolver().for_file(path)
    except SettingsError as exc:
        raise _usage(str(exc)) from None
    budget = Budget(**settings.budget)
    try:
        # The bytes and stat an --apply write is checked against (the file must not change).
        snapshot = read_snapshot(path, budget)
    except FileNotFoundError:
        raise _usage(f"no such file: {path}") from None
    except OSError as exc:
        raise _usage(f"cannot read {path}: {exc.strerror}") from None
    flags, _ = _targets(args, settings)
    options = one_file_options(settings, args.gpu, args.gpu_file, flags, min_slowdown=0.0)
    return load_data(path, kind, snapshot.data, options, args.config_name, snapshot)


def load_data(
    path: str,
    kind: str,
    data: bytes,
    options: LintOptions,
    config_name: str | None = None,
    snapshot: Snapshot | None = None,
) -> Loaded:
    """``data``, the bytes of the file at ``path`` of format ``kind``, read and extracted as
    check reads it (no rules run: the search runs them on each candidate); its one config, or
    the one named ``config_name``, else a `UsageError`."""
    from dataclasses import replace

    from shapelint.engine.discover import SourceFile
    from shapelint.engine.pipeline import lint_source

    source = SourceFile(path, kind, explicit=True)
    result = lint_source(source, replace(options, rules=()), data=data)
    doc = result.doc
    if not doc.ok:
        p = doc.problems[0]
        raise _usage(f"{path}:{p.span.line}:{p.span.column}: {p.message}")
    configs = [c for c in result.configs if not c.shape_from_elsewhere]
    if not configs:
        raise _usage(f"{path}: no model config found (suggest needs a model's shape)")
    name = config_name
    if name is not None:
        configs = [c for c in configs if name in (c.name, c.name.split(" ", 1)[-1])] or [
            c for c in configs if c.name.lower() == name.lower()
        ]
        if not configs:
            raise _usage(f"{path}: no config named {name!r}")
    if len(configs) > 1:
        names = ", ".join(repr(c.name) for c in configs[:10])
        raise _usage(
            f"{path} holds {len(configs)} configs ({names}): choose one with --config-name"
        )
    return Loaded(path, snapshot, doc, configs[0], options)


def _reextract(loaded: Loaded, config: ModelConfig, edits: list[tuple[Any, object]]) -> Any:
    """``config`` as the file would give it after ``edits`` ((Value, new) pairs); None when
    the edited text does not parse or no longer holds the config."""
    from shapelint import dialects
    from shapelint.core.model import Edit
    from shapelint.core.source import encode
    from shapelint.engine.fixer import apply_edits
    from shapelint.engine.tree import parse_in_tree

    doc = loaded.doc
    text = apply_edits(doc.text, [Edit(v.span, v.key, v.value, new) for v, new in edits])
    new_doc = parse_in_tree(doc.path, encode(text, doc.encoding, doc.bom), doc.format)
    if not new_doc.ok:
        return None
    for c in dialects.extract(new_doc, loaded.options.extra_keys):
        if c.name == config.name:
            return c
    return None


def ffn_follower(loaded: Loaded) -> Callable[[int], int | None]:
    """The FFN width the file derives for a new hidden size (edit, re-parse, re-extract)."""
    from shapelint.core.model import Dim

    config = loaded.config
    hidden = config.get(Dim.HIDDEN)

    def ffn_of(h: int) -> int | None:
        if hidden is None:
            return None
        again = _reextract(loaded, config, [(hidden, h)])
        return None if again is None else again.int(Dim.FFN)

    return ffn_of


class ProgressLine:
    """``shapelint suggest: 640/1200 shapes estimated`` on a terminal's stderr, shown once a
    search passes ``delay_s`` (`shapelint.cli.progress.ProgressLine`)."""

    def __init__(self, err: TextIO, delay_s: float = 1.0) -> None:
        from shapelint.cli.progress import ProgressLine as Line

        self.line = Line(
            err,
            lambda done, total, _: f"shapelint suggest: {done}/{total} shapes estimated",
            delay_s=delay_s,
        )

    def __call__(self, done: int, total: int) -> None:
        """Show ``done`` of ``total`` shapes evaluated."""
        self.line(done, total)

    def close(self) -> None:
        """Erase the line."""
        self.line.close()


def suggest_config(
    loaded: Loaded,
    options: SuggestOptions,
    runtime_fixed: Sequence[str] = (),
    progress: Callable[[int, int], None] | None = None,
) -> Suggestions:
    """Search the shapes near ``loaded``'s config with the rules as the validity check
    (`shapelint.perf.search.search`); ``runtime_fixed`` names micro_batch/tp the user chose
    (not searched). A dtype a GPU lacks or a config without a shape to search is a
    `UsageError`."""
    from shapelint.engine.target import resolve_target
    from shapelint.hardware.gpus import UnsupportedDtypeError
    from shapelint.perf.search import search
    from shapelint.perf.space import SuggestError
    from shapelint.rules.candidates import (
        accepted_tp,
        checked_rules,
        refusals,
        validator,
        vocab_padding,
    )

    config = loaded.config
    try:
        targets = [resolve_target(config, gpu, loaded.options) for gpu in loaded.options.gpus]
        for t in targets:
            t.gpu.peak(t.dtype)
    except UnsupportedDtypeError as exc:
        raise _usage(str(exc)) from None
    rules = checked_rules()
    refused = refusals(config, targets[0], rules)
    try:
        result = search(
            config,
            targets,
            options,
            valid=validator(config, targets[0], rules),
            ffn_of_hidden=ffn_follower(loaded),
            vocab_fix=vocab_padding(config, targets[0]),
            runtime_fixed=runtime_fixed,
            progress=progress,
            refusals=refused,
        )
    except SuggestError as exc:
        raise _usage(f"{loaded.path}: {exc}") from None
    if refused:
        result.accepted_tp = accepted_tp(config, targets[0], rules)
    return result


def run(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    """``shapelint suggest``: search, print, and optionally apply one candidate."""
    from shapelint.cli.common import write_gpu_notes
    from shapelint.perf.space import SuggestOptions

    loaded = load(args)
    write_gpu_notes(loaded.options.gpus, err)
    keep = frozenset().union(*args.keep) if args.keep else frozenset()
    options = SuggestOptions(
        tolerance=args.params_tolerance, keep=keep, top=args.top, pareto=args.pareto
    )
    runtime = [n for n in ("micro_batch", "tp") if getattr(args, n) is not None]
    progress = ProgressLine(err)
    try:
        result = suggest_config(loaded, options, runtime, progress)
    finally:
        progress.close()
    if args.apply is not None:
        return apply_candidate(loaded, result, args.apply, out, err)
    if args.format == "json":
        out.write(json.dumps(to_json(result, loaded.path), indent=2) + "\n")
    else:
        out.write(render_text(result, loaded.path))
    return 0


# What orders the candidates, as the JSON's "ranking" says it (by ``Suggestions.pareto``).
RANKING_JSON = {
    False: "speedup_per_parameter_pct: shapelint performance model's predicted time per token "
    "per parameter, mean over the GPUs (not measured)",
    True: "params: the Pareto front of parameters against predicted time per token, mean over "
    "the GPUs (not measured)",
}
# The same, as the text table says it.
RANKING_TEXT = {
    False: "Ranked by shapelint's performance model: the speedup per parameter (column "
    "'per param'), the original's predicted time per token per parameter / the candidate's − 1, "
    "time ratios averaged over the GPUs; a prediction, not a measurement.",
    True: "Shown by shapelint's performance model: the Pareto front of parameters against "
    "predicted time per token (mean over the GPUs), fewest parameters first; a prediction, "
    "not a measurement.",
}


def _dims_json(cand: Candidate) -> dict[str, int | None]:
    return cand.shape.dims()


def to_json(result: Suggestions, path: str) -> dict[str, Any]:
    """The JSON document: the original and each candidate, step times by GPU name (the
    ``suggest`` schema, `shapelint.report.schemas`)."""
    from shapelint.report.schemas import stamped

    names = [t.gpu.name for t in result.targets]
    o = result.original
    return stamped(
        "suggest",
        {
            "path": path,
            "config": result.config.name,
            "ranking": RANKING_JSON[result.pareto],
            "targets": [_target_json(t) for t in result.targets],
            "params_tolerance": result.tolerance,
            "original": {
                "dims": _dims_json(o),
                "params": o.params,
                "step_time_s": dict(zip(names, o.step_time_s, strict=True)),
                "refused": list(result.refusals),
                "accepted_tp": list(result.accepted_tp),
            },
            "candidates": [
                {
                    "dims": _dims_json(c),
                    "params": c.params,
                    "params_delta_pct": (c.params / o.params - 1) * 100,
                    "step_time_s": dict(zip(names, c.step_time_s, strict=True)),
                    "speedup_pct": {n: result.speedup_pct(c, i) for i, n in enumerate(names)},
                    "speedup_per_parameter_pct": c.speedup_per_parameter_pct,
                    "checkpoint_compatible": c.checkpoint_compatible,
                    "changes": [
                        {"dim": ch.dim, "key": ch.key, "old": ch.old, "new": ch.new}
                        for ch in c.changes
                    ],
                }
                for c in result.candidates
            ],
            "searched": result.enumerated,
            "held": result.held,
            "pretrained": result.config.pretrained,
        },
    )


def _target_json(t: Target) -> dict[str, Any]:
    return {
        "gpu": t.gpu.name,
        "dtype": t.dtype,
        "mode": t.mode,
        "micro_batch": t.micro_batch,
        "seq_len": t.seq_len,
        "tp": t.tp,
        "attention": t.attention,
    }


def _params(n: int) -> str:
    return f"{n / 1e9:.2f}B" if n >= 1e9 else f"{n / 1e6:.1f}M"


def _ms(s: float) -> str:
    return f"{s * 1e3:.1f} ms" if s >= 1e-3 else f"{s * 1e6:.0f} µs"


def _describe_target(t: Target) -> str:
    return (
        f"{t.gpu.name}, {t.dtype}, {t.mode}, micro-batch {t.micro_batch}, seq {t.seq_len}, "
        f"tp {t.tp}, {t.attention} attention"
    )


def _change_text(cand: Candidate) -> str:
    """Written changes as ``dim old→new``; dims that follow them (no key) in parentheses."""
    written = [f"{c.dim} {c.old}→{c.new}" for c in cand.changes if c.key]
    follows = [f"{c.dim} {c.new}" for c in cand.changes if not c.key]
    text = ", ".join(written) or "-"
    return f"{text} ({', '.join(follows)})" if follows else text


def render_text(result: Suggestions, path: str) -> str:
    """The table: changed dims, parameter delta, step time and speedup per GPU, checkpoint."""
    from shapelint.rules.candidates import TP_TRIED

    o = result.original
    lines = [f"{path}: {result.config.name or result.config.dialect}".rstrip(": ")]
    lines.append(RANKING_TEXT[result.pareto])
    for t in result.targets:
        lines.append(f"Target: {_describe_target(t)}")
    dims = o.shape.dims()
    shown = ", ".join(f"{k} {v}" for k, v in dims.items() if v is not None)
    times = ", ".join(
        f"{_ms(s)} on {t.gpu.name}" for s, t in zip(o.step_time_s, result.targets, strict=True)
    )
    lines.append(f"Original: {shown}; {_params(o.params)} parameters; step {times}")
    if result.config.pretrained:
        lines.append(
            "This config names trained weights: a candidate that is not checkpoint-compatible "
            "breaks loading them (a new model to train)."
        )
    lines.append(
        f"Searched {result.enumerated} shapes within the parameter tolerance in "
        f"{result.elapsed_s:.2f} s."
    )
    reasons: dict[str, list[str]] = {}
    for dim, why in result.held.items():
        reasons.setdefault(why, []).append(dim)
    for why, names in sorted(reasons.items(), key=lambda kv: sorted(kv[1])):
        lines.append(f"Kept as written: {' and '.join(sorted(names))} ({why}).")
    for why in result.refusals:
        lines.append(f"The target refuses the original: {why}")
    if result.refusals:
        if result.accepted_tp:
            sizes = ", ".join(str(t) for t in result.accepted_tp)
            lines.append(
                f"As written it is accepted at tp {sizes} (a target change, no new weights)."
            )
        else:
            lines.append(f"As written it is accepted at no tp from 1 to {TP_TRIED[-1]}.")
        lines.append(
            "Candidates are the shapes the target accepts, fastest first, whether or not "
            "the model predicts them faster than the original."
        )
    if not result.candidates:
        lines.append(
            "No shape in the search is accepted by the target."
            if result.refusals
            else "No shape in the search is predicted faster than the original."
        )
        return "\n".join(lines) + "\n"
    header = ["#", "changes", "params", "per param"]
    for j, t in enumerate(result.targets):
        header.append(f"{t.gpu.name} (original {_ms(o.step_time_s[j])})")
    header.append("checkpoint-compatible")
    rows: list[list[str]] = []
    for i, c in enumerate(result.candidates, 1):
        row = [str(i), _change_text(c), f"{(c.params / o.params - 1) * 100:+.2f}%"]
        row.append(f"{c.speedup_per_parameter_pct:+.1f}%")
        for j in range(len(result.targets)):
            row.append(f"{_ms(c.step_time_s[j])} ({result.speedup_pct(c, j):+.1f}%)")
        row.append("yes" if c.checkpoint_compatible else "no: new weights")
        rows.append(row)
    widths = [max(len(r[k]) for r in [header, *rows]) for k in range(len(header))]
    lines.append("")
    for r in [header, *rows]:
        lines.append("  ".join(cell.ljust(w) for cell, w in zip(r, widths, strict=True)).rstrip())
    lines.append("")
    lines.append(
        "per param: the ranked speedup per parameter; per GPU: original step time / candidate "
        "step time − 1. `--apply N` rewrites the file to candidate N."
    )
    return "\n".join(lines) + "\n"


def candidate_fix(loaded: Loaded, cand: Candidate, vocab_fix: Fix | None) -> Fix:
    """The unsafe fix that sets each changed, written value (the vocab through SL101's fix)."""
    from shapelint.core.model import Dim, Edit
    from shapelint.core.model import Fix as FixType

    config = loaded.config
    by_name = {d.value: d for d in Dim}
    edits: list[Edit] = []
    for ch in cand.changes:
        if ch.dim == "vocab":
            if vocab_fix is None:
                raise _usage("the vocab change has no fix to apply")
            edits.extend(vocab_fix.edits)
            continue
        value = config.get(by_name[ch.dim])
        if value is None or value.derived:
            continue  # a derived dim follows the values it comes from
        edits.append(Edit(value.span, value.key, value.value, ch.new))
    return FixType(
        description="; ".join(f"{c.dim} {c.old} → {c.new}" for c in cand.changes),
        applicability="unsafe",
        edits=tuple(edits),
    )


def apply_candidate(loaded: Loaded, result: Suggestions, n: int, out: TextIO, err: TextIO) -> int:
    """``--apply N``: candidate N as an unsafe fix, verified by the fixer (the file re-parses,
    every edited key reads its new value, no SL0xx/SL1xx/SL3xx finding appears that was not
    there), then the config is extracted again and must have exactly the candidate's dims;
    only then is the file written, atomically."""
    from shapelint import dialects
    from shapelint.core.model import Finding
    from shapelint.engine.fixer import baseline, encode_like, verify
    from shapelint.engine.writer import WriteRefused, linted_roots, write_atomic
    from shapelint.rules.candidates import checked_codes, vocab_padding

    if n > len(result.candidates):
        raise _usage(f"--apply {n}: there are {len(result.candidates)} candidates")
    cand = result.candidates[n - 1]
    fix = candidate_fix(loaded, cand, vocab_padding(loaded.config, result.targets[0]))
    doc = loaded.doc
    finding = Finding(
        code=SUGGEST_CODE,
        name="suggest",
        severity="info",
        message=fix.description,
        path=doc.path,
        span=fix.edits[0].span,
        config=loaded.config.name,
        fix=fix,
    )
    options = replace(loaded.options, select=checked_codes())
    outcome = verify(doc, baseline(doc, options), [finding], options)
    if isinstance(outcome, str):
        raise _usage(f"{loaded.path}: candidate {n} not applied: {outcome}")
    new_doc, _ = outcome
    again = [
        c for c in dialects.extract(new_doc, options.extra_keys) if c.name == loaded.config.name
    ]
    if len(again) != 1:
        raise _usage(f"{loaded.path}: candidate {n} not applied: the config is not found after it")
    got = shape_of(again[0], cand.shape)
    if got != cand.shape.dims():
        wrong = ", ".join(
            f"{k} reads {v}, not {cand.shape.dims()[k]}"
            for k, v in got.items()
            if v != cand.shape.dims()[k]
        )
        raise _usage(f"{loaded.path}: candidate {n} not applied: {wrong}")
    try:
        assert loaded.snapshot is not None  # the command line's load read the file
        data = encode_like(new_doc.text, loaded.snapshot.data, doc.encoding, doc.bom)
        write_atomic(loaded.path, data, loaded.snapshot, linted_roots([loaded.path]))
    except WriteRefused as exc:
        raise _usage(f"{loaded.path}: not written: {exc}") from None
    out.write(f"{loaded.path}: applied candidate {n}: {fix.description}\n")
    if loaded.config.pretrained:
        err.write(
            f"shapelint: {loaded.path} names trained weights; they do not load into the new shape\n"
        )
    return 0


def shape_of(config: ModelConfig, expected: Shape) -> dict[str, int | None]:
    """The dims of ``config`` as a `Shape` names them; micro-batch and tp that the file does
    not state are taken from ``expected`` (they came from the target)."""
    from shapelint.core.model import Dim

    h, a = config.int(Dim.HIDDEN), config.int(Dim.HEADS)
    vocab = config.vocab_value
    return {
        "hidden": h,
        "heads": a,
        "kv_heads": config.int(Dim.KV_HEADS) or a,
        "head_dim": config.int(Dim.HEAD_DIM) or (h // a if h and a else None),
        "ffn": config.int(Dim.FFN) or (4 * h if h else None),
        "layers": config.int(Dim.LAYERS),
        "vocab": vocab.as_int if vocab is not None else None,
        "micro_batch": config.int(Dim.MICRO_BATCH) or expected.micro_batch,
        "tp": config.int(Dim.TP) or expected.tp,
    }
