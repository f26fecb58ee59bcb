"""facebookresearch/fairseq: ``getattr(args, "k", default)`` architecture functions.

Units: every function registered with ``@register_model_architecture`` in the files below.
The legacy parser leaves every model option it was not given unset (options.py:146,
``argument_default=argparse.SUPPRESS``; dataclass models too, models/fairseq_model.py:52,
``delete_default=True``), so an architecture function's ``getattr(args, k, default)`` gives
the default the first time ``k`` is set along the call chain. The reading here simulates that
with `ast`: ``args.k = (safe_)getattr(args, "k", d)`` sets ``k`` to ``d`` when unset,
``args.k = e`` sets it, ``f(args)`` runs ``f`` (a function of the same module); a statement
under ``if`` that sets a dim makes that dim unknown. Dims (fairseq at 3d262bb2):

- decoder LMs (transformer_lm.py, model_parallel/models/transformer_lm.py): hidden
  ``decoder_embed_dim``, heads ``decoder_attention_heads`` (KV heads the same: plain MHA,
  modules/multihead_attention.py), head dim hidden // heads, FFN ``decoder_ffn_embed_dim``,
  layers ``decoder_layers``;
- RoBERTa (roberta/model.py): the same with ``encoder_`` keys.

The vocabulary is the task's dictionary and the sequence ``--tokens-per-sample``: unknown.
"""

from __future__ import annotations

import ast
from pathlib import Path

from .core import Source, Unit
from .pyeval import UNKNOWN, Unknown, as_int, evaluate, parse

FILES = {
    "fairseq/models/transformer_lm.py": "decoder",
    "fairseq/model_parallel/models/transformer_lm.py": "decoder",
    "fairseq/models/roberta/model.py": "encoder",
}
_GETATTR = {"getattr", "safe_getattr"}


def _arch_names(fn: ast.FunctionDef) -> list[str]:
    names = []
    for dec in fn.decorator_list:
        if (
            isinstance(dec, ast.Call)
            and isinstance(dec.func, ast.Name)
            and dec.func.id == "register_model_architecture"
            and len(dec.args) == 2
            and isinstance(dec.args[1], ast.Constant)
        ):
            names.append(str(dec.args[1].value))
    return names


class _Args:
    """Runs architecture functions on an ``args`` namespace that starts empty."""

    def __init__(self, funcs: dict[str, ast.FunctionDef]) -> None:
        self.funcs = funcs
        self.values: dict[str, object] = {}

    def _value(self, node: ast.expr) -> object:
        def lookup(name: str) -> object:
            raise Unknown(name)

        # args.x inside an expression: the value set so far.
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
            if node.value.id == "args" and node.attr in self.values:
                return self.values[node.attr]
            raise Unknown(node.attr)
        if isinstance(node, ast.BinOp):
            left, right = self._value(node.left), self._value(node.right)
            return evaluate(ast.BinOp(ast.Constant(left), node.op, ast.Constant(right)), lookup)
        return evaluate(node, lookup)

    def run(self, name: str, depth: int = 0) -> None:
        fn = self.funcs.get(name)
        if fn is None or depth > 10:
            return
        self._block(fn.body, depth, conditional=False)

    def _block(self, body: list[ast.stmt], depth: int, conditional: bool) -> None:
        for stmt in body:
            if isinstance(stmt, ast.If):
                self._block(stmt.body, depth, True)
                self._block(stmt.orelse, depth, True)
            elif isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call):
                call = stmt.value
                if isinstance(call.func, ast.Name) and not conditional:
                    self.run(call.func.id, depth + 1)
            elif (
                isinstance(stmt, ast.Assign)
                and len(stmt.targets) == 1
                and isinstance(stmt.targets[0], ast.Attribute)
                and isinstance(stmt.targets[0].value, ast.Name)
                and stmt.targets[0].value.id == "args"
            ):
                key = stmt.targets[0].attr
                if conditional:
                    self.values[key] = UNKNOWN
                    continue
                value = stmt.value
                if (
                    isinstance(value, ast.Call)
                    and isinstance(value.func, ast.Name)
                    and value.func.id in _GETATTR
                    and len(value.args) == 3
                    and isinstance(value.args[1], ast.Constant)
                ):
                    if value.args[1].value in self.values:
                        continue
                    value = value.args[2]
                try:
                    self.values[key] = self._value(value)
                except Unknown:
                    self.values[key] = UNKNOWN


def _int(values: dict[str, object], key: str) -> int | None:
    v = values.get(key)
    return None if v is UNKNOWN else as_int(v)


def arch_units(root: Path, files: dict[str, str]) -> list[Unit]:
    """One unit per registered architecture function of ``files`` (path → decoder/encoder)."""
    out: list[Unit] = []
    for rel, kind in files.items():
        tree = parse(root / rel)
        funcs = {s.name: s for s in tree.body if isinstance(s, ast.FunctionDef)}
        for fn in funcs.values():
            names = _arch_names(fn)
            if not names:
                continue
            args = _Args(funcs)
            args.run(fn.name)
            side = "decoder" if kind == "decoder" else "encoder"
            hidden = _int(args.values, f"{side}_embed_dim")
            heads = _int(args.values, f"{side}_attention_heads")
            out.append(
                Unit(
                    path=rel,
                    names=(fn.name, *names),
                    line=fn.lineno,
                    expected={
                        "hidden": hidden,
                        "heads": heads,
                        "kv_heads": heads,
                        "head_dim": hidden // heads if hidden and heads else None,
                        "ffn": _int(args.values, f"{side}_ffn_embed_dim"),
                        "layers": _int(args.values, f"{side}_layers"),
                    },
                    patterns=("getattr-arch", "keys"),
                )
            )
    return out


def units(root: Path) -> list[Unit]:
    """One unit per registered architecture function of :data:`FILES`."""
    return arch_units(root, FILES)


SOURCE = Source(
    key="fairseq",
    repo="facebookresearch/fairseq",
    commit="3d262bb25690e4eb2e7d3c1309b1e9c406ca4b99",
    community="research codebase",
    formats="Python",
    collect=units,
)
