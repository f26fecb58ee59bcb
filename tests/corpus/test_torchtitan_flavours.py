"""torchtitan 0.3.0's model flavours (``models/{llama3,qwen3}/__init__.py``), not tuned on.

The ``torchtitan==0.3.0`` wheel is downloaded at test time (``wheels.py``). The truth is read
here with `ast`: each function that returns ``Llama3Model.Config(...)`` or
``Qwen3Model.Config(...)``, its integer locals, the keywords of its ``layers=`` helper call,
and ``compute_ffn_hidden_dim`` computed with torchtitan's formula as this test writes it.
Known released shapes are checked against the model cards' numbers as well.
"""

from __future__ import annotations

import ast
import zipfile
from pathlib import Path
from typing import Any

import pytest
import wheels

from shapelint.core.model import Dim
from shapelint.dialects import extract
from shapelint.readers import parse

pytestmark = [pytest.mark.corpus, pytest.mark.network]

PINS = {"torchtitan": "0.3.0"}
FILES = ("torchtitan/models/llama3/__init__.py", "torchtitan/models/qwen3/__init__.py")


def ffn(dim: int, multiple_of: int = 1, ffn_dim_multiplier: float | None = None) -> int:
    """models/common/feed_forward.py at 0.3.0, written out here."""
    hidden = int(2 * 4 * dim / 3)
    if ffn_dim_multiplier is not None:
        hidden = int(ffn_dim_multiplier * hidden)
    return multiple_of * ((hidden + multiple_of - 1) // multiple_of)


def _value(node: ast.expr, local: dict[str, Any]) -> Any:
    if isinstance(node, ast.Name):
        return local.get(node.id)
    if isinstance(node, ast.Call) and ast.unparse(node.func) == "compute_ffn_hidden_dim":
        args = [_value(a, local) for a in node.args]
        kwargs = {k.arg: _value(k.value, local) for k in node.keywords if k.arg}
        return ffn(*args, **kwargs)
    try:
        return ast.literal_eval(node)
    except ValueError:
        return None


def truth(source: str) -> dict[str, dict[Dim, int]]:
    out: dict[str, dict[Dim, int]] = {}
    for fn in ast.parse(source).body:
        if not isinstance(fn, ast.FunctionDef):
            continue
        local: dict[str, Any] = {}
        for stmt in fn.body:
            if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1:
                target = stmt.targets[0]
                if isinstance(target, ast.Name):
                    local[target.id] = _value(stmt.value, local)
            call = stmt.value if isinstance(stmt, ast.Return) else None
            if not isinstance(call, ast.Call) or not ast.unparse(call.func).endswith(
                "Model.Config"
            ):
                continue
            top = {k.arg: k.value for k in call.keywords if k.arg}
            layers = top.get("layers")
            if not isinstance(layers, ast.Call):
                continue
            kw = {k.arg: _value(k.value, local) for k in layers.keywords if k.arg}
            dims = {
                Dim.HIDDEN: _value(top["dim"], local),
                Dim.VOCAB: _value(top["vocab_size"], local),
                Dim.LAYERS: kw["n_layers"],
                Dim.HEADS: kw["n_heads"],
                Dim.KV_HEADS: kw.get("n_kv_heads") or kw["n_heads"],
                Dim.HEAD_DIM: kw.get("head_dim") or _value(top["dim"], local) // kw["n_heads"],
            }
            if "hidden_dim" in kw:
                dims[Dim.FFN] = kw["hidden_dim"]
            if "moe_hidden_dim" in kw:
                dims[Dim.MOE_FFN] = kw["moe_hidden_dim"]
                dims[Dim.EXPERTS] = kw["num_experts"]
                dims[Dim.EXPERTS_PER_TOKEN] = kw["top_k"]
            out[fn.name] = dims
    return out


@pytest.fixture(scope="module")
def flavours(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[dict, dict]]:
    try:
        wheel = wheels.download(PINS)["torchtitan"]
    except wheels.Unreachable as exc:
        pytest.skip(f"PyPI unreachable, wheel not cached: {exc}")
    out: dict[str, tuple[dict, dict]] = {}
    with zipfile.ZipFile(wheel) as archive:
        for name in FILES:
            source = archive.read(name)
            family = Path(name).parent.name
            read = {
                c.name: {d: c.int(d) for d in Dim}
                for c in extract(parse(name, source, "python"))
                if c.dialect == "torchtitan"
            }
            for fn, dims in truth(source.decode()).items():
                out[f"{family}{fn}"] = (dims, read.get(fn, {}))
    return out


def test_every_flavour_reads_as_the_source_states(flavours: dict[str, tuple[dict, dict]]) -> None:
    assert len(flavours) == 16  # 6 Llama 3 and 10 Qwen3 flavours in 0.3.0
    wrong = {
        name: {d: (v, got.get(d)) for d, v in want.items() if got.get(d) != v}
        for name, (want, got) in flavours.items()
    }
    assert {k: v for k, v in wrong.items() if v} == {}


def test_released_shapes(flavours: dict[str, tuple[dict, dict]]) -> None:
    # Meta's and Qwen's published configs (Llama-3.1-8B/70B/405B, Qwen3-8B, Qwen3-30B-A3B).
    assert flavours["llama3_8b"][1][Dim.FFN] == 14336
    assert flavours["llama3_70b"][1][Dim.FFN] == 28672
    assert flavours["llama3_405b"][1][Dim.FFN] == 53248
    assert flavours["qwen3_8b"][1][Dim.FFN] == 12288
    moe = flavours["qwen3_30b_a3b"][1]
    assert (moe[Dim.MOE_FFN], moe[Dim.EXPERTS], moe[Dim.EXPERTS_PER_TOKEN]) == (768, 128, 8)
