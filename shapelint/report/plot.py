"""``shapelint explain --plot``: a log-log roofline chart of one step's GEMMs.

Every GEMM call of the step is a point (colour: which op; marker: which pass). The costliest
GEMMs and every GEMM that loses time to alignment get a text label (the latter with the share
lost), placed where it collides with no other label, the legend or the summary box; the
legend names the rest. The summary box gives the step time split into GEMMs and the
memory-bound ops (with the largest of those), and the title names the config and the target.
"""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import Any

# How many of the costliest GEMMs are labelled by name (misaligned ones always are).
LABELLED = 6
# A GEMM loses time to alignment when at least this share of its call is lost.
ALIGN_SHARE = 0.01
MARKERS = {"fwd": "o", "dgrad": "s", "wgrad": "^", "recompute": "D"}
# Label offsets (points) tried in order, at growing radius, until one collides with nothing.
OFFSETS = ((6, 6), (6, -14), (-6, 6), (-6, -14), (0, 14), (0, -20), (14, 0), (-14, 0))


class MissingExtraError(ImportError):
    """An optional dependency is not installed; the message says which extra to install."""


def _seconds(x: float) -> str:
    if x >= 1:
        return f"{x:.3g} s"
    if x >= 1e-3:
        return f"{x * 1e3:.3g} ms"
    return f"{x * 1e6:.3g} µs"


def title(data: dict[str, Any]) -> str:
    """The chart's title: the config and the target it was estimated for."""
    where = Path(str(data.get("path") or "config"))
    name = data.get("config") or "/".join(where.parts[-2:])
    return (
        f"{name}: {data['mode']} step on {data['gpu']} ({data['dtype']}, micro-batch"
        f" {data.get('micro_batch')}, seq {data.get('seq_len')}, tp {data.get('tp')})"
    )


def summary(data: dict[str, Any]) -> str:
    """The summary box: step time, GEMMs vs memory-bound ops, the largest of those ops."""
    lines = [f"step {_seconds(data['step_time_s'])}, predicted MFU {data['mfu'] * 100:.0f}%"]
    if "gemm_time_s" in data:
        lines.append(f"GEMMs and attention {_seconds(data['gemm_time_s'])}")
        other = float(data.get("other_time_s", 0.0))
        share = other / data["step_time_s"] if data["step_time_s"] > 0 else 0.0
        lines.append(f"memory-bound ops {_seconds(other)} ({share:.0%}, not plotted)")
        by_name: dict[str, float] = {}
        for o in data.get("ops", []):
            by_name[o["name"]] = by_name.get(o["name"], 0.0) + float(o["total_s"])
        top = sorted(by_name.items(), key=lambda kv: -kv[1])[:3]
        if top:
            lines.append("  largest: " + ", ".join(f"{n} {_seconds(t)}" for n, t in top))
    return "\n".join(lines)


def _overlaps(a: Any, b: Any) -> bool:
    return bool(a.x0 < b.x1 and b.x0 < a.x1 and a.y0 < b.y1 and b.y0 < a.y1)


def plot_roofline(data: dict[str, Any], path: str | Path) -> dict[str, Any]:
    """Draw the roofline (memory roof, compute roof, ridge point) with every GEMM of
    `shapelint.cli.explain.explain`'s ``data``, save it to ``path``, and return the text
    artists' window extents (``labels``, ``boxes``) and the label texts (``texts``) so callers
    can check the layout."""
    try:
        # Imported by name: matplotlib is an optional extra without type stubs here.
        matplotlib = importlib.import_module("matplotlib")
        matplotlib.use("Agg")
        plt = importlib.import_module("matplotlib.pyplot")
        lines_mod = importlib.import_module("matplotlib.lines")
    except ImportError:
        raise MissingExtraError(
            "plotting needs matplotlib: pip install 'shapelint[plot]'"
        ) from None

    peak = float(data["achievable_tflops"])
    bw_tbs = float(data["mem_bw_gbs"]) / 1000.0
    ridge = peak / bw_tbs
    gemms = list(data["gemms"])
    xs = [float(g["intensity"]) for g in gemms] or [ridge]
    lo = min([*xs, ridge]) / 4
    hi = max([*xs, ridge]) * 4

    fig, ax = plt.subplots(figsize=(12, 6.5))
    ax.plot([lo, ridge], [lo * bw_tbs, peak], color="tab:blue")
    ax.plot([ridge, hi], [peak, peak], color="tab:red")
    ax.axvline(ridge, color="grey", linestyle=":")
    names = sorted({g["name"] for g in gemms})
    cmap = plt.get_cmap("tab20")
    colour = {n: cmap(i % 20) for i, n in enumerate(names)}
    for g in gemms:
        misaligned = float(g.get("lost_alignment", 0.0)) >= ALIGN_SHARE
        ax.scatter(
            [float(g["intensity"])],
            [float(g["tflops"])],
            color=colour[g["name"]],
            marker=MARKERS.get(g["pass"], "o"),
            edgecolors="red" if misaligned else "black",
            linewidths=2.0 if misaligned else 0.5,
            s=60,
            zorder=3,
        )
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlim(lo, hi)
    ax.set_xlabel("arithmetic intensity (FLOP/byte)")
    ax.set_ylabel("predicted TFLOP/s")
    ax.set_title(title(data), fontsize=10)
    ax.grid(True, which="both", alpha=0.3)

    handles = [
        lines_mod.Line2D([], [], color="tab:blue", label=f"memory roof ({bw_tbs:.2f} TB/s)"),
        lines_mod.Line2D([], [], color="tab:red", label=f"compute roof ({peak:.0f} TFLOP/s)"),
        lines_mod.Line2D([], [], color="grey", linestyle=":", label=f"ridge {ridge:.0f} FLOP/B"),
    ]
    handles += [
        lines_mod.Line2D([], [], color=colour[n], marker="o", linestyle="", label=n) for n in names
    ]
    passes = sorted({g["pass"] for g in gemms}, key=list(MARKERS).index)
    handles += [
        lines_mod.Line2D([], [], color="black", marker=MARKERS[p], linestyle="", label=p)
        for p in passes
    ]
    handles.append(
        lines_mod.Line2D(
            [], [], color="white", marker="o", markeredgecolor="red", markeredgewidth=2,
            linestyle="", label="loses time to alignment",
        )
    )  # fmt: skip
    legend = ax.legend(
        handles=handles, loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8, frameon=True
    )
    # Outside the axes, under the legend: it never hides a point.
    box = ax.text(
        1.01, 0.0, summary(data), transform=ax.transAxes, ha="left", va="bottom", fontsize=8,
        bbox={"boxstyle": "round", "facecolor": "white", "alpha": 0.9},
    )  # fmt: skip
    fig.tight_layout()
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    obstacles = [box.get_window_extent(renderer), legend.get_window_extent(renderer)]
    frame = ax.get_window_extent(renderer)

    costliest = sorted(gemms, key=lambda g: -float(g.get("total_s", 0.0)))[:LABELLED]
    wanted = [g for g in gemms if float(g.get("lost_alignment", 0.0)) >= ALIGN_SHARE]
    wanted += [g for g in costliest if g not in wanted]
    placed: list[Any] = []
    texts: list[str] = []
    for g in wanted:
        text = f"{g['name']} {g['pass']}"
        lost = float(g.get("lost_alignment", 0.0))
        if lost >= ALIGN_SHARE:
            text += f" (−{lost:.0%} alignment)"
        point = (float(g["intensity"]), float(g["tflops"]))
        for scale in (1, 2, 3, 4):
            done = False
            for dx, dy in OFFSETS:
                ann = ax.annotate(
                    text,
                    point,
                    textcoords="offset points",
                    xytext=(dx * scale, dy * scale),
                    ha="left" if dx >= 0 else "right",
                    fontsize=7,
                    arrowprops={"arrowstyle": "-", "color": "grey", "lw": 0.5}
                    if scale > 1
                    else None,
                )
                ext = ann.get_window_extent(renderer)
                inside = (
                    frame.x0 <= ext.x0 and ext.x1 <= frame.x1 and frame.y0 <= ext.y0
                    and ext.y1 <= frame.y1
                )  # fmt: skip
                if inside and not any(_overlaps(ext, o) for o in [*obstacles, *placed]):
                    placed.append(ext)
                    texts.append(text)
                    done = True
                    break
                ann.remove()
            if done:
                break
    fig.savefig(str(path))
    boxes = {"title": ax.title.get_window_extent(renderer), "summary": obstacles[0]}
    boxes["legend"] = obstacles[1]
    plt.close(fig)
    return {"labels": placed, "texts": texts, "boxes": boxes}
