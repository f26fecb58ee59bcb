"""``shapelint explain``: the performance model's view of one config, as data and as text.

`explain` returns plain JSON-ready data; `render_explain_text` turns it into a table. Field
names of the documented JSON (gpu, dtype, mode, step_time_s, mfu, gemms[name, pass, m, n, k,
batch, count, flops, bytes, intensity, time_s, tflops, bound]) never change; others are added.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TextIO

from shapelint.cli.common import UsageError, _targets, one_file_options, write_gpu_notes
from shapelint.core.model import ModelConfig, Target
from shapelint.perf.estimate import step_time

if TYPE_CHECKING:
    import argparse

    from shapelint.core.model import Finding
    from shapelint.engine.discover import SourceFile
    from shapelint.engine.options import LintOptions
    from shapelint.engine.results import FileResult


def explain(config: ModelConfig, target: Target) -> dict[str, Any]:
    """The model's per-GEMM breakdown of one step of ``config`` on ``target``.

    ``time_s`` and ``flops`` are for one call, ``count`` the calls per step; ``lost_tiles``,
    ``lost_waves`` and ``lost_alignment`` are shares of ``time_s``.
    """
    gpu = target.gpu
    step = step_time(config, target)
    gemms: list[dict[str, Any]] = []
    for e in step.gemms:
        g, t = e.gemm, e.time
        gemms.append(
            {
                "name": g.name,
                "pass": g.pass_,
                "m": g.m,
                "n": g.n,
                "k": g.k,
                "batch": g.batch,
                "count": g.count,
                "dtype": g.dtype,
                "kind": g.kind,
                "head_dim": g.head_dim or None,
                "window": g.window or None,
                "total_s": e.total_s,
                "share_of_step": e.total_s / step.total_s if step.total_s > 0 else 0.0,
                **t.report(),
            }
        )
    ops: list[dict[str, Any]] = [
        {
            "name": o.op.name,
            "pass": o.op.pass_,
            "count": o.op.count,
            "bytes": o.op.bytes,
            "kernels": o.op.kernels,
            "time_s": o.time.time_s,
            "exposed_s": o.time.exposed_s,
            "bandwidth_gbs": o.time.bandwidth_gbs,
            "total_s": o.total_s,
            "share_of_step": o.total_s / step.total_s if step.total_s > 0 else 0.0,
            "note": o.op.note,
        }
        for o in step.ops
    ]
    comms: list[dict[str, Any]] = [
        {
            "name": c.op.name,
            "pass": c.op.pass_,
            "collective": c.op.collective,
            "group": c.op.group,
            "count": c.op.count,
            "share": c.op.share,
            "bytes": c.op.size,
            "wire_bytes": c.op.wire_bytes,
            "link": c.op.link,
            "link_gbs": c.op.link_gbs,
            "time_s": c.time.time_s,
            "exposed_s": c.time.exposed_s,
            "total_s": c.total_s,
            "share_of_step": c.total_s / step.total_s if step.total_s > 0 else 0.0,
            "note": c.op.note,
        }
        for c in step.comms
    ]
    dtype = target.dtype
    return {
        "gpu": gpu.name,
        "dtype": dtype,
        "mode": target.mode,
        "step_time_s": step.total_s,
        "mfu": step.mfu,
        "gemms": gemms,
        "config": config.name,
        "path": config.path,
        "micro_batch": target.micro_batch,
        "seq_len": target.seq_len,
        "tp": target.tp,
        "attention": step.attention or target.attention,
        "attention_engine": (
            "transformer-engine" if step.attention and step.attention != target.attention else None
        ),
        "model_flops": step.flops,
        "peak_tflops": gpu.peak(dtype),
        "achievable_tflops": gpu.achievable_flops(dtype) / 1e12,
        "achievable_fraction_measured": dtype in gpu.measured_dtypes,
        "mem_bw_gbs": gpu.mem_bw_gbs,
        "ridge": gpu.ridge_point(dtype),
        "effective_ridge": gemms[0]["ridge"] if gemms else None,
        "sms": gpu.sms,
        "ops": ops,
        "gemm_time_s": step.gemm_s,
        "other_time_s": step.memops_s,
        "fused": target.fused,
        "data_parallel": target.data_parallel,
        "sharded": target.sharded,
        # JSON version 1's boolean; the mode (none, selective, op, layer, full) beside it.
        "recompute": target.recompute != "none",
        "recompute_mode": target.recompute,
        "pp": target.pp,
        "vp": target.vp,
        "cp": target.cp,
        "ep": target.ep,
        "global_batch": target.global_batch,
        "micro_batches": step.micro_batches,
        "gpus_per_node": target.gpus_per_node or gpu.gpus_per_node,
        "tp_overlap": target.tp_overlap,
        "framework": step.framework,
        "comms": comms,
        "comm_time_s": step.comm_s,
        "bubble": step.bubble,
        "bubble_s": step.bubble_s,
        "has_attention": config.has_attention,
        "untimed": config.untimed or None,
    }


def _si(x: float, unit: str = "") -> str:
    for factor, prefix in ((1e15, "P"), (1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(x) >= factor:
            return f"{x / factor:.3g}{prefix}{unit}"
    return f"{x:.3g}{unit}"


def _seconds(x: float) -> str:
    if x >= 1:
        return f"{x:.3g} s"
    if x >= 1e-3:
        return f"{x * 1e3:.3g} ms"
    return f"{x * 1e6:.3g} µs"


def _pct(x: float) -> str:
    return f"{x * 100:.0f}%"


def _step_run(data: dict[str, Any]) -> str:
    """``, fused none, data-parallel 8, sharded, recompute``: how the step is run, where it is
    not the default."""
    parts = []
    for name in ("pp", "vp", "cp", "ep"):
        if data.get(name, 1) != 1:
            parts.append(f"{name} {data[name]}")
    if data.get("fused", "default") != "default":
        parts.append(f"fused {data['fused']}")
    if data.get("data_parallel", 1) != 1:
        parts.append(f"data-parallel {data['data_parallel']}")
    if data.get("global_batch"):
        parts.append(f"global batch {data['global_batch']}")
    if data.get("sharded"):
        parts.append("sharded")
    recompute = data.get("recompute_mode", "full" if data.get("recompute") else "none")
    if recompute != "none":
        parts.append(f"recompute {recompute}")
    if data.get("tp_overlap"):
        parts.append("tp overlap")
    if data.get("framework"):
        parts.append(f"{data['framework']} step")
    return "".join(f", {p}" for p in parts)


def _comm_lines(data: dict[str, Any]) -> list[str]:
    """The collectives of the step and its pipeline bubble, as text lines."""
    lines: list[str] = []
    if data.get("comms"):
        lines.append("")
        lines.append(
            "collectives (bytes this GPU sends per call, at the link's achievable bandwidth;"
            " exposed: what the framework does not hide behind compute):"
        )
        header = "op pass collective GPUs count bytes link GB/s time exposed step note"
        rows: list[tuple[str, ...]] = [tuple(header.split())]
        for c in data["comms"]:
            count = str(c["count"]) if c.get("share", 1.0) >= 1.0 else f"{c['count']}/step"
            rows.append(
                (
                    c["name"],
                    c["pass"],
                    c["collective"],
                    str(c["group"]),
                    count,
                    _si(c["wire_bytes"], "B"),
                    c["link"],
                    f"{c['link_gbs']:.0f}",
                    _seconds(c["time_s"]),
                    _seconds(c["exposed_s"]),
                    _pct(c.get("share_of_step", 0.0)),
                    c.get("note", ""),
                )
            )
        widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
        left = {0, 1, 2, 6, 11}
        for r in rows:
            cells = [
                c.ljust(w) if i in left else c.rjust(w)
                for i, (c, w) in enumerate(zip(r, widths, strict=True))
            ]
            lines.append("  ".join(cells).rstrip())
        lines.append(
            "time and exposed per call; count/step: once per step, its time shared by the"
            f" {data.get('micro_batches', 1)} micro-batches of the step."
        )
    if data.get("pp", 1) > 1:
        bubble = data.get("bubble")
        if bubble is None:
            lines.append(
                "pipeline bubble: not counted (the micro-batches per step are not known:"
                " --global-batch, or the config's global batch or gradient accumulation)"
            )
        else:
            m, v = data.get("micro_batches", 1), data.get("vp", 1)
            lines.append(
                f"pipeline bubble: (p-1)/(m*v) = {data['pp'] - 1}/({m}*{v}) = {_pct(bubble)} of"
                f" the micro-batches' time, {_seconds(data.get('bubble_s', 0.0))}"
            )
    return lines


def render_explain_text(data: dict[str, Any]) -> str:
    """A readable table of `explain`'s data."""
    lines = [
        f"{data.get('config') or 'config'}: {data['mode']} step on {data['gpu']}, {data['dtype']}"
        f", micro-batch {data.get('micro_batch')}, seq {data.get('seq_len')}, tp {data.get('tp')}"
        + _step_run(data),
    ]
    if "peak_tflops" in data:
        measured = "measured" if data.get("achievable_fraction_measured") else "default"
        gpu_line = (
            f"GPU: {data['peak_tflops']:g} TFLOP/s dense peak, "
            f"{data['achievable_tflops']:.1f} achievable ({measured} fraction), "
            f"{data['mem_bw_gbs']:g} GB/s; ridge point {data['ridge']:.0f} FLOP/B"
        )
        if data.get("effective_ridge"):
            gpu_line += f" ({data['effective_ridge']:.0f} at achievable rates)"
        lines.append(gpu_line)
    if not data["gemms"] and data.get("untimed"):
        lines.append(
            f"no GEMMs: {data['untimed']}: the performance model has no cost for those layers,"
            " so it does not time the model"
        )
        return "\n".join(lines) + "\n"
    if not data["gemms"]:
        lines.append(
            "no GEMMs: the config lacks hidden size, heads, layers or the FFN width, or a MoE's"
            " expert count or top-k (what it does not state is not guessed)"
            if data.get("has_attention", True)
            else "no GEMMs: a model without attention (recurrent or state-space layers), which "
            "the performance model does not time"
        )
        return "\n".join(lines) + "\n"
    header = (
        "op",
        "pass",
        "M",
        "N",
        "K",
        "batch",
        "count",
        "FLOPs",
        "bytes",
        "FLOP/B",
        "bound",
        "time",
        "TFLOP/s",
        "tiles",
        "waves",
        "align",
        "step",
    )
    rows = [header]
    for g in data["gemms"]:
        rows.append(
            (
                g["name"],
                g["pass"],
                str(g["m"]),
                str(g["n"]),
                str(g["k"]) + ("*" if g.get("kind") == "flash" else ""),
                str(g["batch"]),
                str(g["count"]),
                _si(g["flops"]),
                _si(g["bytes"], "B"),
                f"{g['intensity']:.0f}",
                g["bound"],
                _seconds(g["time_s"]),
                f"{g['tflops']:.0f}",
                _pct(g.get("lost_tiles", 0.0)),
                _pct(g.get("lost_waves", 0.0)),
                _pct(g.get("lost_alignment", 0.0)),
                _pct(g.get("share_of_step", 0.0)),
            )
        )
    widths = [max(len(r[i]) for r in rows) for i in range(len(header))]
    left = {0, 1, 10}
    for r in rows:
        cells = [
            c.ljust(w) if i in left else c.rjust(w)
            for i, (c, w) in enumerate(zip(r, widths, strict=True))
        ]
        lines.append("  ".join(cells).rstrip())
    lines.append(
        "time and FLOPs per call; tiles/waves/align: share of the call's time lost to tail"
        " tiles, idle SMs in the last wave and misaligned dims; step: share of the step."
    )
    if any(g.get("kind") == "flash" for g in data["gemms"]):
        lines.append("K*: flash-attention runs at the padded head dim; causal work counted half.")
    if data.get("attention_engine") == "transformer-engine":
        lines.append(
            "attention: unfused (attn_scores, attn_values, softmax): Transformer Engine has no"
            " fused kernel for this head dim in training (SL321)."
        )
    windows = sorted({g["window"] for g in data["gemms"] if g.get("window")})
    if windows:
        shown = ", ".join(str(w) for w in windows)
        lines.append(
            f"window_attn: the sliding-window layers (window {shown}): only the (query, key) pairs"
            " inside the window, at the kernel's rate for the whole sequence."
        )
    if data.get("ops"):
        lines.append("")
        lines.append("memory-bound ops (time at the GPU's achievable streaming bandwidth):")
        op_rows: list[tuple[str, ...]] = [
            ("op", "pass", "count", "bytes", "time", "step", "how the bytes are counted")
        ]
        for o in data["ops"]:
            op_rows.append(
                (
                    o["name"],
                    o["pass"],
                    str(o["count"]),
                    _si(o["bytes"], "B"),
                    _seconds(o["exposed_s"]),
                    _pct(o.get("share_of_step", 0.0)),
                    o.get("note", ""),
                )
            )
        op_widths = [max(len(r[i]) for r in op_rows) for i in range(len(op_rows[0]))]
        for op_row in op_rows:
            cells = [
                c.ljust(w) if i in (0, 1, 6) else c.rjust(w)
                for i, (c, w) in enumerate(zip(op_row, op_widths, strict=True))
            ]
            lines.append("  ".join(cells).rstrip())
    lines.extend(_comm_lines(data))
    if data.get("ops") or data.get("comms") or data.get("bubble_s"):
        parts = [
            f"GEMMs and attention {_seconds(data.get('gemm_time_s', 0.0))}",
            f"memory-bound ops {_seconds(data.get('other_time_s', 0.0))}",
        ]
        if data.get("comms"):
            parts.append(f"collectives {_seconds(data.get('comm_time_s', 0.0))} exposed")
        if data.get("bubble_s"):
            parts.append(f"pipeline bubble {_seconds(data['bubble_s'])}")
        lines.append(", ".join(parts))
    lines.append(f"step time: {_seconds(data['step_time_s'])}   predicted MFU: {_pct(data['mfu'])}")
    return "\n".join(lines) + "\n"


def add_parser(sub: Any) -> None:
    """Register ``explain`` on the subparsers ``sub``."""
    from shapelint.cli.flags import add_target_flags

    explain = sub.add_parser("explain", help="print the performance model's view of a config")
    explain.add_argument("path", metavar="CONFIG", help="one config file")
    explain.add_argument("--config-name", metavar="NAME", help="only the config named NAME")
    explain.add_argument(
        "--format",
        choices=("text", "json"),
        default="text",
        help='text (default) or json: one object, or {"configs": [...]} for several',
    )
    explain.add_argument(
        "--plot", metavar="FILE", help="draw the roofline chart to FILE (.png, .svg; needs [plot])"
    )
    explain.add_argument(
        "--force", action="store_true", help="model a config even when it has SL0xx errors"
    )
    add_target_flags(explain)


def _explained_source(path: str) -> SourceFile:
    """The one file ``explain`` reads, or a usage error for a path that names none."""
    from shapelint.engine.discover import KINDS, SourceFile, kind_of

    if os.path.isdir(path):
        raise UsageError(f"{path} is a directory: explain reads one config file")
    kind = kind_of(path)
    if kind is None:
        raise UsageError(f"{path}: not a config file shapelint reads ({', '.join(KINDS)})")
    if not os.path.lexists(path):
        raise UsageError(f"no such file: {path}")
    return SourceFile(path, kind, explicit=True)


def _explained_configs(result: FileResult, name: str | None) -> list[ModelConfig]:
    """The configs of the linted file that have a model shape (``name``: only that one)."""
    path, doc = result.source.path, result.doc
    if not doc.ok:
        p = doc.problems[0]
        raise UsageError(f"{path}:{p.span.line}:{p.span.column}: {p.message}")
    configs = [c for c in result.configs if not c.shape_from_elsewhere]
    if not configs:
        raise UsageError(f"{path}: no model config found (explain needs a model's shape)")
    if name is None:
        return configs
    picked = [c for c in configs if name in (c.name, c.name.split(" ", 1)[-1])]
    picked = picked or [c for c in configs if c.name.lower() == name.lower()]
    if not picked:
        names = ", ".join(repr(c.name) for c in configs[:10])
        more = f" and {len(configs) - 10} more" if len(configs) > 10 else ""
        raise UsageError(f"{path}: no config named {name!r} (found {names}{more})")
    return picked


def _print_errors(errors: list[Finding], err: TextIO) -> None:
    from shapelint.report import ReportContext
    from shapelint.report.text import format_finding

    for f in errors:
        err.write(format_finding(f, ReportContext()) + "\n")


@dataclass
class Explained:
    """What `explain_file` found for one file."""

    # The performance model's view of each config on each GPU (`explain`'s data).
    results: list[dict[str, Any]]
    # The SL000 finding of a file that could not be read, or the errors that say the configs
    # cannot run (no results then, unless forced).
    errors: list[Finding]
    read: bool = True


def explain_file(
    source: SourceFile,
    options: LintOptions,
    *,
    data: bytes | None = None,
    config_name: str | None = None,
    force: bool = False,
) -> Explained:
    """Every config of one file (``data`` stands for its bytes when given; ``config_name``:
    only that config) on every GPU of ``options``, as `explain` sees it.

    The file is read, parsed and checked by the pipeline ``check`` runs, with the rules whose
    errors say a config cannot run (`shapelint.engine.preflight`); with such errors only
    ``force`` models it anyway. A file without a model's shape, an unknown config name or a
    dtype a GPU lacks is a `UsageError`.
    """
    from shapelint.engine.pipeline import lint_source
    from shapelint.engine.preflight import config_errors, preflight_options
    from shapelint.engine.target import resolve_target
    from shapelint.hardware.gpus import UnsupportedDtypeError

    dtype = options.flags.get("dtype")
    for gpu in options.gpus:
        try:
            if dtype is not None:  # asked for by name: no silent fallback to another dtype
                gpu.peak(str(dtype))
        except UnsupportedDtypeError as exc:
            raise UsageError(str(exc)) from None
    result = lint_source(source, preflight_options(options), data=data)
    if not result.read:
        return Explained([], result.findings, read=False)
    configs = _explained_configs(result, config_name)
    errors = config_errors(result, {c.name for c in configs})
    if errors and not force:
        return Explained([], errors)
    results: list[dict[str, Any]] = []
    for config in configs:
        for gpu in options.gpus:
            try:
                results.append(explain(config, resolve_target(config, gpu, options)))
            except UnsupportedDtypeError as exc:
                raise UsageError(str(exc)) from None
    return Explained(results, errors)


def run(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    """``shapelint explain``: every GEMM of one step of each config in one file, as the
    performance model sees it (`explain_file`); ``--format json`` prints one object for one
    config (and GPU), ``{"configs": [...]}`` for several; ``--plot`` draws the roofline chart.
    A file that cannot be read is answered as ``check`` answers it: its one SL000 line, exit 1.
    """
    import json

    from shapelint.engine.settings import SettingsError, SettingsResolver

    try:
        settings = SettingsResolver().for_file(args.path)
    except SettingsError as exc:
        raise UsageError(str(exc)) from None
    source = _explained_source(args.path)
    flags, _ = _targets(args, settings)
    options = one_file_options(settings, args.gpu, args.gpu_file, flags)
    write_gpu_notes(options.gpus, err)
    explained = explain_file(source, options, config_name=args.config_name, force=args.force)
    _print_errors(explained.errors, err)
    if not explained.read:
        return 1
    if explained.errors and not args.force:
        err.write(
            "shapelint: the config cannot run as written (errors above); fix them, or pass "
            "--force to model it anyway\n"
        )
        return 1
    results = explained.results
    if args.plot:
        _plot(results, args.plot)
        err.write(f"shapelint: wrote the roofline chart to {args.plot}\n")
    if args.format == "json":
        from shapelint.report.schemas import stamped

        payload = results[0] if len(results) == 1 else {"configs": results}
        out.write(json.dumps(stamped("explain", payload), indent=2) + "\n")
    else:
        out.write("\n".join(render_explain_text(r) for r in results))
    return 0


def _plot(results: list[dict[str, Any]], path: str) -> None:
    from shapelint.report.plot import MissingExtraError, plot_roofline

    if len(results) != 1:
        raise UsageError(
            f"--plot draws one config on one GPU, not {len(results)}: "
            "choose one with --config-name and a single --gpu"
        )
    try:
        plot_roofline(results[0], path)
    except MissingExtraError as exc:
        raise UsageError(str(exc)) from None
    except OSError as exc:
        raise UsageError(f"cannot write {path}: {exc.strerror or exc}") from None
    except ValueError as exc:  # matplotlib: an unknown image format
        raise UsageError(f"cannot draw {path}: {exc}") from None
