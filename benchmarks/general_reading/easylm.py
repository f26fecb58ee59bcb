"""young-geng/EasyLM: LLaMA presets as a dict built inside a classmethod, selected by name.

Units: every entry of the dict that ``LLaMAConfigurator.get_standard_llama_config`` builds and
indexes with ``model_name`` (EasyLM/models/llama/llama_model.py:69-214 at fe5b2c35). The
method first sets a full 3B config by attribute assignment (``config.k = v``, lines 71-93)
and then merges the entry over it (``mlxu.update_config_dict(config, updates)``, line 214),
so an entry's dims are the base's with its own keys on top. Dims: hidden ``hidden_size``,
heads ``num_attention_heads``, KV heads ``num_key_value_heads`` (line 328), head dim
``hidden_size // num_attention_heads`` (line 315), FFN ``intermediate_size`` (line 528),
layers ``num_hidden_layers``, vocab ``vocab_size``. ``max_position_embeddings`` is the
model's limit, not a training sequence (the sequence is the dataset's ``seq_length``):
sequence unknown.

The example scripts (examples/*.sh) pass ``--load_llama_config='7b'``, a flag llama_train.py
(line 35) still defines but no longer reads (the model is ``--llama.base_model``, default
``llama_3b``): they are left out rather than judged against a 3B the text does not show.
"""

from __future__ import annotations

import ast
from pathlib import Path

from .core import Source, Unit
from .pyeval import Unknown, as_int, evaluate, parse

FILE = "EasyLM/models/llama/llama_model.py"


def units(root: Path) -> list[Unit]:
    """The presets of ``get_standard_llama_config``."""
    tree = parse(root / FILE)
    fn = next(
        (
            n
            for n in ast.walk(tree)
            if isinstance(n, ast.FunctionDef) and n.name == "get_standard_llama_config"
        ),
        None,
    )
    if fn is None:
        return []
    base: dict[str, object] = {}
    presets: list[tuple[str, int, dict[str, object]]] = []
    for stmt in fn.body:
        if not isinstance(stmt, ast.Assign) or len(stmt.targets) != 1:
            continue
        target = stmt.targets[0]
        if isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name):
            try:
                base[target.attr] = evaluate(stmt.value)
            except Unknown:
                base[target.attr] = None
        elif isinstance(stmt.value, ast.Subscript) and isinstance(stmt.value.value, ast.Dict):
            table = stmt.value.value
            for key, call in zip(table.keys, table.values, strict=True):
                if isinstance(key, ast.Constant) and isinstance(call, ast.Call):
                    entry = {}
                    for kw in call.keywords:
                        if kw.arg:
                            try:
                                entry[kw.arg] = evaluate(kw.value)
                            except Unknown:
                                entry[kw.arg] = None
                    presets.append((str(key.value), key.lineno, entry))
    out: list[Unit] = []
    for name, line, entry in presets:
        cfg = {**base, **entry}

        def num(k: str, cfg: dict[str, object] = cfg) -> int | None:
            return as_int(cfg.get(k))

        hidden, heads = num("hidden_size"), num("num_attention_heads")
        out.append(
            Unit(
                path=FILE,
                names=(name,),
                line=line,
                expected={
                    "hidden": hidden,
                    "heads": heads,
                    "kv_heads": num("num_key_value_heads"),
                    "head_dim": hidden // heads if hidden and heads else None,
                    "ffn": num("intermediate_size"),
                    "vocab": num("vocab_size"),
                    "layers": num("num_hidden_layers"),
                },
                patterns=("dict-in-function", "attr-assign"),
            )
        )
    return out


SOURCE = Source(
    key="easylm",
    repo="young-geng/EasyLM",
    commit="fe5b2c354e25d697fce7cd225e23bbbe72570da3",
    community="JAX/TPU trainer",
    formats="Python",
    collect=units,
)
