"""google-deepmind/gemma: model classes holding a ``TransformerConfig(...)`` call.

Units: every class of gemma/gm/nn/_gemma.py with a ``config = _config.TransformerConfig(...)``
class attribute (gemma at 7691fd4e). Dims from the call's keywords, with the framework's
meaning: hidden ``embed_dim``, vocab ``num_embed`` (nn/_transformer.py:118-119), heads
``num_heads``, KV heads ``num_kv_heads``, head dim ``head_dim`` (_transformer.py:129-131),
FFN ``hidden_dim`` (each of the two gating projections is ``hidden_dim`` wide,
nn/_modules.py:363-369, the down projection ``hidden_dim → features``, line 384), layers
``len(attention_types)`` (nn/_config.py:87-88), with ``make_attention_layers_types(pattern,
num_layers=n)`` giving ``n`` entries (_config.py:31-43) and ``(a, b) * k`` giving ``2k``.
"""

from __future__ import annotations

import ast
from pathlib import Path

from .core import Source, Unit
from .pyeval import as_int, call_name, chain, module_constants, parse, try_eval

FILE = "gemma/gm/nn/_gemma.py"


def _layers(node: ast.expr | None, consts: dict[str, object]) -> int | None:
    if isinstance(node, ast.Call) and call_name(node).endswith("make_attention_layers_types"):
        for kw in node.keywords:
            if kw.arg == "num_layers":
                return as_int(try_eval(kw.value, chain(consts)))
        return None
    if (
        isinstance(node, ast.BinOp)
        and isinstance(node.op, ast.Mult)
        and isinstance(node.left, (ast.Tuple, ast.List))
    ):
        times = as_int(try_eval(node.right, chain(consts)))
        return len(node.left.elts) * times if times is not None else None
    if isinstance(node, (ast.Tuple, ast.List)):
        return len(node.elts)
    return None


def units(root: Path) -> list[Unit]:
    """The classes of :data:`FILE` with a config call."""
    tree = parse(root / FILE)
    consts = module_constants(tree)
    out: list[Unit] = []
    for cls in tree.body:
        if not isinstance(cls, ast.ClassDef):
            continue
        for stmt in cls.body:
            if not (
                isinstance(stmt, ast.AnnAssign)
                and isinstance(stmt.target, ast.Name)
                and stmt.target.id == "config"
                and isinstance(stmt.value, ast.Call)
                and call_name(stmt.value).endswith("TransformerConfig")
            ):
                continue
            kws = {k.arg: k.value for k in stmt.value.keywords if k.arg}

            def num(key: str, kws: dict[str, ast.expr] = kws) -> int | None:
                return as_int(try_eval(kws.get(key), chain(consts)))

            out.append(
                Unit(
                    path=FILE,
                    names=(cls.name,),
                    line=cls.lineno,
                    expected={
                        "hidden": num("embed_dim"),
                        "heads": num("num_heads"),
                        "kv_heads": num("num_kv_heads"),
                        "head_dim": num("head_dim"),
                        "ffn": num("hidden_dim"),
                        "vocab": num("num_embed"),
                        "layers": _layers(kws.get("attention_types"), consts),
                    },
                    patterns=("class-call", "keys"),
                )
            )
    return out


SOURCE = Source(
    key="gemma",
    repo="google-deepmind/gemma",
    commit="7691fd4e7f26c9ec5db38110dddb3addfab4d767",
    community="JAX model zoo",
    formats="Python",
    collect=units,
)
