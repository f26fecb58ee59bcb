"""``shapelint explain --plot``: a log-log roofline chart of one step's GEMMs."""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import Any


class MissingExtraError(ImportError):
    """An optional dependency is not installed; the message says which extra to install."""


def plot_roofline(data: dict[str, Any], path: str | Path) -> None:
    """Draw the roofline (memory roof, compute roof, ridge point) with every GEMM of
    `shapelint.perf.explain.explain`'s ``data`` as a labelled point, and save it to ``path``."""
    try:
        # Imported by name: matplotlib is an optional extra without type stubs here.
        matplotlib = importlib.import_module("matplotlib")
        matplotlib.use("Agg")
        plt = importlib.import_module("matplotlib.pyplot")
    except ImportError:
        raise MissingExtraError(
            "plotting needs matplotlib: pip install 'shapelint[plot]'"
        ) from None

    peak = float(data["achievable_tflops"])
    bw_tbs = float(data["mem_bw_gbs"]) / 1000.0
    ridge = peak / bw_tbs
    points = [(float(g["intensity"]), float(g["tflops"]), g) for g in data["gemms"]]
    xs = [p[0] for p in points] or [ridge]
    lo = min([*xs, ridge]) / 4
    hi = max([*xs, ridge]) * 4

    fig, ax = plt.subplots(figsize=(9, 6))
    ax.plot([lo, ridge], [lo * bw_tbs, peak], color="tab:blue", label="memory roof")
    ax.plot([ridge, hi], [peak, peak], color="tab:red", label="compute roof (achievable)")
    ax.axvline(ridge, color="grey", linestyle=":", label=f"ridge {ridge:.0f} FLOP/B")
    for x, y, g in points:
        color = "tab:red" if g["bound"] == "compute" else "tab:blue"
        ax.scatter([x], [y], color=color, zorder=3)
        ax.annotate(
            f"{g['name']} {g['pass']}",
            (x, y),
            textcoords="offset points",
            xytext=(4, 4),
            fontsize=7,
        )
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("arithmetic intensity (FLOP/byte)")
    ax.set_ylabel("predicted TFLOP/s")
    ax.set_title(f"{data.get('config') or ''} {data['mode']} on {data['gpu']} ({data['dtype']})")
    ax.legend(loc="lower right")
    ax.grid(True, which="both", alpha=0.3)
    fig.tight_layout()
    fig.savefig(str(path))
    plt.close(fig)
