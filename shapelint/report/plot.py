"""``shapelint explain --plot``: a log-log roofline chart of one step's GEMMs.

Every GEMM call of the step is a point (colour: which op; marker: which pass). The costliest
GEMMs and every GEMM that loses time to alignment get a text label (the latter with the share
lost), joined to its point by a leader line and placed where it covers no other label, no
point, the legend or the summary box, nearer its own point than any other where such a place
exists; the legend names the rest. Axes are labelled in plain numbers (100, 200, 300, 500),
not powers of ten. The summary box gives the step time split into GEMMs and the memory-bound ops
(with the largest of those), and the title names the config and the target.
"""

from __future__ import annotations

import importlib
import math
from pathlib import Path
from typing import Any

# How many of the costliest GEMMs are labelled by name (misaligned ones always are).
LABELLED = 6
# A GEMM loses time to alignment when at least this share of its call is lost.
ALIGN_SHARE = 0.01
MARKERS = {"fwd": "o", "dgrad": "s", "wgrad": "^", "recompute": "D"}
MARKER_AREA = 60  # scatter size, points²
# Where a label may go, around its point: distances (points) from the point, nearest first,
# and 16 directions at each (degrees, counter-clockwise from the right).
RADII = (9, 15, 24, 36, 52, 72, 96)
ANGLES = tuple(range(0, 360, 45)) + tuple(range(22, 360, 45))


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


def _distance(box: Any, x: float, y: float) -> float:
    """Distance in pixels from the point (x, y) to the nearest point of ``box``."""
    dx = max(box.x0 - x, 0.0, x - box.x1)
    dy = max(box.y0 - y, 0.0, y - box.y1)
    return math.hypot(dx, dy)


def _tick(value: float, _pos: object = None) -> str:
    """An axis tick in plain numbers: ``500``, ``2000``, ``0.5``."""
    return f"{value:.0f}" if value >= 1 else f"{value:g}"


def _marker_half(marker: str, linewidth: float, dpi: float) -> float:
    """Half the width of a scatter marker, in pixels, its edge line included."""
    markers = importlib.import_module("matplotlib.markers")
    style = markers.MarkerStyle(marker)
    ext = style.get_path().transformed(style.get_transform()).get_extents()
    half_points = float(max(abs(ext.x0), abs(ext.x1), abs(ext.y0), abs(ext.y1)))
    return (half_points * math.sqrt(MARKER_AREA) + linewidth / 2) * dpi / 72


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
        from shapelint.core.extras import install_hint

        raise MissingExtraError(
            f"plotting needs matplotlib (the plot extra): {install_hint('plot')}"
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
            s=MARKER_AREA,
            zorder=3,
        )
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlim(lo, hi)
    ticker = importlib.import_module("matplotlib.ticker")
    for axis in (ax.xaxis, ax.yaxis):
        # 100, 200, 300, 500 rather than 10² and 6×10² (the minor ticks' default labels).
        axis.set_major_locator(ticker.LogLocator(base=10, subs=(1.0, 2.0, 3.0, 5.0)))
        axis.set_major_formatter(ticker.FuncFormatter(_tick))
        axis.set_minor_locator(ticker.LogLocator(base=10, subs=tuple(range(1, 10))))
        axis.set_minor_formatter(ticker.NullFormatter())
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

    # Every point, as a box in pixels: a label may cover none of them.
    centres: list[tuple[float, float]] = []
    markers: list[Any] = []
    bbox_cls = importlib.import_module("matplotlib.transforms").Bbox
    for g in gemms:
        x, y = ax.transData.transform((float(g["intensity"]), float(g["tflops"])))
        misaligned = float(g.get("lost_alignment", 0.0)) >= ALIGN_SHARE
        half = _marker_half(MARKERS.get(g["pass"], "o"), 2.0 if misaligned else 0.5, fig.dpi)
        centres.append((float(x), float(y)))
        markers.append(bbox_cls.from_extents(x - half, y - half, x + half, y + half))

    costliest = sorted(gemms, key=lambda g: -float(g.get("total_s", 0.0)))[:LABELLED]
    wanted = [g for g in gemms if float(g.get("lost_alignment", 0.0)) >= ALIGN_SHARE]
    wanted += [g for g in costliest if g not in wanted]
    placed: list[Any] = []
    texts: list[str] = []
    anchors: list[tuple[float, float]] = []
    nearest: list[bool] = []
    for g in wanted:
        text = f"{g['name']} {g['pass']}"
        lost = float(g.get("lost_alignment", 0.0))
        if lost >= ALIGN_SHARE:
            text += f" (−{lost:.0%} alignment)"
        own = gemms.index(g)
        cx, cy = centres[own]
        found = _place(ax, renderer, text, g, frame, [*obstacles, *placed, *markers], centres, own)
        if found is None:
            continue
        placed.append(found[0])
        nearest.append(found[1])
        texts.append(text)
        anchors.append((cx, cy))
    fig.savefig(str(path))
    boxes = {"title": ax.title.get_window_extent(renderer), "summary": obstacles[0]}
    boxes["legend"] = obstacles[1]
    ticks = {
        "x": [t.get_text() for t in ax.get_xticklabels() if t.get_text()],
        "y": [t.get_text() for t in ax.get_yticklabels() if t.get_text()],
    }
    plt.close(fig)
    return {
        "labels": placed,
        "texts": texts,
        "boxes": boxes,
        "markers": markers,
        "points": centres,
        "anchors": anchors,
        "nearest": nearest,
        "ticks": ticks,
    }


def _place(
    ax: Any,
    renderer: Any,
    text: str,
    gemm: dict[str, Any],
    frame: Any,
    taken: list[Any],
    centres: list[tuple[float, float]],
    own: int,
) -> Any:
    """Annotate ``gemm``'s point with ``text`` at the first place around it, nearest first,
    that stays inside the axes and covers nothing in ``taken``, and whose nearest point is its
    own; in a cluster with no such place, the first free place (its leader line names the
    point). Returns the label's box in pixels and whether it is nearest its own point, or None
    when no place is free (the legend still names the GEMM)."""
    point = (float(gemm["intensity"]), float(gemm["tflops"]))
    cx, cy = centres[own]
    others = [c for i, c in enumerate(centres) if i != own and math.dist(c, (cx, cy)) > 1.0]
    fallback: tuple[Any, ...] | None = None
    for radius in RADII:
        for angle in ANGLES:
            dx = radius * math.cos(math.radians(angle))
            dy = radius * math.sin(math.radians(angle))
            ha = "left" if dx > radius / 3 else "right" if dx < -radius / 3 else "center"
            va = "bottom" if dy > radius / 3 else "top" if dy < -radius / 3 else "center"
            probe = ax.annotate(
                text, point, textcoords="offset points", xytext=(dx, dy), ha=ha, va=va, fontsize=7
            )
            ext = probe.get_window_extent(renderer)
            probe.remove()
            inside = (
                frame.x0 <= ext.x0 and ext.x1 <= frame.x1 and frame.y0 <= ext.y0
                and ext.y1 <= frame.y1
            )  # fmt: skip
            if not inside or any(_overlaps(ext, o) for o in taken):
                continue
            mine = _distance(ext, cx, cy)
            if all(mine < _distance(ext, ox, oy) for ox, oy in others):
                _annotate(ax, text, point, (dx, dy, ha, va))
                return ext, True
            if fallback is None:
                fallback = (dx, dy, ha, va, ext)
    if fallback is None:
        return None
    _annotate(ax, text, point, fallback[:4])
    return fallback[4], False


def _annotate(ax: Any, text: str, point: tuple[float, float], at: tuple[Any, ...]) -> None:
    """The label itself, above the points, with a leader line to its point (every label has
    one: in a cluster, the line says which of the close points is meant)."""
    dx, dy, ha, va = at
    ax.annotate(
        text,
        point,
        textcoords="offset points",
        xytext=(dx, dy),
        ha=ha,
        va=va,
        fontsize=7,
        zorder=4,
        arrowprops={"arrowstyle": "-", "color": "grey", "lw": 0.5, "shrinkA": 1, "shrinkB": 4},
    )
