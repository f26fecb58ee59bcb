"""meta-llama/llama-models: the model zoo's ``arch_args`` dicts built inside functions.

Units: every ``Model(core_model_id=..., arch_args=...)`` call of models/sku_list.py
(llama-models at 8c88b8c0, the last commit with the file; it moved to llama-stack after).
``arch_args`` is a dict literal, ``**`` of a helper returning one (``arch_args_1b()``), or
such a call. Dims, with the reference model's formulas (models/llama3/reference_impl/model.py
at the same commit): hidden ``dim``, heads ``n_heads``, KV heads ``n_kv_heads or n_heads``
(line 111), head dim ``dim // n_heads`` (line 116), FFN from ``4 · dim``: ``int(2h/3)``, times
``ffn_dim_multiplier`` when given, rounded up to ``multiple_of`` (lines 211-218, 236-240),
layers ``n_layers``, vocab ``vocab_size``. A vision model adds
``vision_num_cross_attention_layers`` cross-attention layers to the text stack
(reference_impl/multimodal/model.py:1096-1123): its layer count is left unknown. The sequence
(``max_seq_len``) is not stated: unknown.
"""

from __future__ import annotations

import ast
import contextlib
from pathlib import Path
from typing import Any

from .core import Source, Unit
from .pyeval import UNKNOWN, Unknown, as_int, call_name, chain, evaluate, module_constants, parse

FILE = "models/sku_list.py"


def llama_ffn(dim: int, multiplier: float | None, multiple_of: int) -> int:
    """reference_impl/model.py:211-218 with ``hidden_dim = 4 * dim`` (line 236)."""
    hidden = int(2 * (4 * dim) / 3)
    if multiplier is not None:
        hidden = int(multiplier * hidden)
    return multiple_of * ((hidden + multiple_of - 1) // multiple_of)


def units(root: Path) -> list[Unit]:
    """The ``Model`` calls of :data:`FILE`."""
    tree = parse(root / FILE)
    consts = module_constants(tree)
    helpers: dict[str, dict[str, Any]] = {}
    for fn in tree.body:
        if isinstance(fn, ast.FunctionDef) and len(fn.body) == 1:
            ret = fn.body[0]
            if isinstance(ret, ast.Return) and isinstance(ret.value, ast.Dict):
                with contextlib.suppress(Unknown):
                    helpers[fn.name] = evaluate(ret.value, chain(consts))

    def arch(node: ast.expr) -> dict[str, Any] | None:
        if isinstance(node, ast.Call) and call_name(node) in helpers and not node.args:
            return dict(helpers[call_name(node)])
        if isinstance(node, ast.Dict):
            out: dict[str, Any] = {}
            for k, v in zip(node.keys, node.values, strict=True):
                if k is None:
                    sub = arch(v)
                    if sub is None:
                        return None
                    out.update(sub)
                else:
                    try:
                        out[str(evaluate(k))] = evaluate(v, chain(consts))
                    except Unknown:
                        out[str(try_key(k))] = UNKNOWN
            return out
        return None

    units_: list[Unit] = []
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Call) and call_name(node) == "Model"):
            continue
        kws = {k.arg: k.value for k in node.keywords if k.arg}
        if "arch_args" not in kws:
            continue
        args = arch(kws["arch_args"])
        if args is None:
            continue
        ident = kws.get("core_model_id")
        name = ident.attr if isinstance(ident, ast.Attribute) else "Model"

        def num(key: str, args: dict[str, Any] = args) -> int | None:
            v = args.get(key)
            return None if v is UNKNOWN else as_int(v)

        dim, heads = num("dim"), num("n_heads")
        mult = args.get("ffn_dim_multiplier")
        multiple_of = num("multiple_of")
        ffn = None
        if dim and multiple_of and mult is not UNKNOWN:
            ffn = llama_ffn(dim, mult if isinstance(mult, (int, float)) else None, multiple_of)
        kv = num("n_kv_heads") if "n_kv_heads" in args else heads
        vision = "vision_num_cross_attention_layers" in args
        units_.append(
            Unit(
                path=FILE,
                names=(name, f"CoreModelId.{name}"),
                line=node.lineno,
                expected={
                    "hidden": dim,
                    "heads": heads,
                    "kv_heads": kv,
                    "head_dim": dim // heads if dim and heads else None,
                    "ffn": ffn,
                    "vocab": num("vocab_size"),
                    "layers": None if vision else num("n_layers"),
                },
                patterns=("dict-in-function", "keys"),
            )
        )
    units_.sort(key=lambda u: u.line)
    return units_


def try_key(node: ast.expr) -> object:
    """A dict key's text when it cannot be evaluated."""
    return ast.unparse(node)


SOURCE = Source(
    key="llama-models",
    repo="meta-llama/llama-models",
    commit="8c88b8c0d75dbd136b6895220c4f56ccbe2f2d24",
    community="model zoo",
    formats="Python",
    collect=units,
)
