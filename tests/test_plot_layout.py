"""``explain --plot``: labels never cover one another, a point, the title, the legend or the
summary; each sits nearer its own point than any other; the axes read in plain numbers
(issue 25, friction 8)."""

from __future__ import annotations

import math
import re
from typing import Any

import pytest
from conftest import REPO, configs_of

from shapelint.cli.explain import explain
from shapelint.core.model import Target
from shapelint.hardware.gpus import lookup

DENSE_MOE = (
    '{"architectures": ["MixtralForCausalLM"], "hidden_size": 4096, "num_attention_heads": 32,'
    ' "num_key_value_heads": 8, "intermediate_size": 14336, "num_hidden_layers": 32,'
    ' "num_local_experts": 8, "num_experts_per_tok": 2, "vocab_size": 32001}\n'
)
CASES = [
    ("examples/gpt2-from-scratch/config.json", Target(gpu=lookup("H100-SXM"), seq_len=1024)),
    ("examples/llama-2-7b/config.json", Target(gpu=lookup("H100-SXM"), seq_len=4096)),
    ("examples/gpt3-2.7b/config.json", Target(gpu=lookup("A100"), seq_len=2048)),
    (
        DENSE_MOE,
        Target(gpu=lookup("A100"), micro_batch=2, seq_len=2048, tp=2, attention="unfused"),
    ),
]


def _overlap(a: Any, b: Any) -> bool:
    return bool(a.x0 < b.x1 and b.x0 < a.x1 and a.y0 < b.y1 and b.y0 < a.y1)


def _distance(box: Any, x: float, y: float) -> float:
    return math.hypot(max(box.x0 - x, 0.0, x - box.x1), max(box.y0 - y, 0.0, y - box.y1))


@pytest.fixture(scope="module", params=range(len(CASES)), ids=["gpt2", "llama2", "gpt3", "moe"])
def drawn(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> tuple[dict[str, Any], dict[str, Any]]:
    """(explain's data, the plot's layout) for one case, drawn once for all tests."""
    pytest.importorskip("matplotlib")
    from shapelint.report.plot import plot_roofline

    source, target = CASES[request.param]
    text = source if source.startswith("{") else (REPO / source).read_text(encoding="utf-8")
    config = configs_of(text)[0]
    data = explain(config, target)
    out = tmp_path_factory.mktemp("plot") / "roofline.png"
    result = plot_roofline(data, out)
    assert out.stat().st_size > 0
    return data, result


def test_labels_cover_no_label_point_or_box(drawn: tuple[dict[str, Any], dict[str, Any]]) -> None:
    data, result = drawn
    labels, markers = result["labels"], result["markers"]
    assert len(markers) == len(data["gemms"])
    assert len(labels) >= min(4, len(data["gemms"]))
    for i, label in enumerate(labels):
        assert not any(_overlap(label, other) for other in labels[i + 1 :])
        assert not any(_overlap(label, box) for box in result["boxes"].values())
        covered = [j for j, m in enumerate(markers) if _overlap(label, m)]
        assert covered == [], (result["texts"][i], covered)


def test_each_label_is_nearest_its_own_point(drawn: tuple[dict[str, Any], dict[str, Any]]) -> None:
    """Nearer its own point than any point drawn elsewhere, wherever a free place allows it
    (its leader line names the point in a cluster where none does), and in most cases."""
    _, result = drawn
    checked = 0
    for label, text, (x, y), near in zip(
        result["labels"], result["texts"], result["anchors"], result["nearest"], strict=True
    ):
        others = [p for p in result["points"] if math.dist(p, (x, y)) > 1.0]
        truly = all(_distance(label, x, y) < _distance(label, *p) for p in others)
        assert truly == near, text
        checked += near
    assert checked >= len(result["labels"]) / 2, result["texts"]


def test_axes_read_in_plain_numbers(drawn: tuple[dict[str, Any], dict[str, Any]]) -> None:
    _, result = drawn
    for axis in ("x", "y"):
        ticks = result["ticks"][axis]
        assert len(ticks) >= 2, (axis, ticks)
        assert all(re.fullmatch(r"[0-9]+(\.[0-9]+)?", t) for t in ticks), (axis, ticks)
