"""google/flax examples: ml_collections ``get_config()``, Gemma presets and named presets.

Units (flax at 18f8f311):

- examples/lm1b/configs/default.py and examples/wmt/configs/default.py: ``get_config()``
  fills an ``ml_collections.ConfigDict`` by attribute assignment. Dims, with the models'
  meaning (lm1b/models.py): hidden ``emb_dim`` (line 321), heads ``num_heads`` (line 248,
  KV heads the same), head dim ``qkv_dim // num_heads`` (``qkv_features``, line 250), FFN
  ``mlp_dim`` (line 188), layers ``num_layers``; the sequence ``max_target_length`` (packed
  examples of that length, lm1b/input_pipeline.py:366), the micro-batch
  ``per_device_batch_size`` (the global batch is it times the devices,
  input_pipeline.py:354; no tensor parallelism in these configs). The vocabulary is the
  trained tokenizer's (lm1b/train.py:386): unknown. wmt is an encoder-decoder with
  ``num_layers`` in each stack.
- examples/gemma/transformer_cfg.py: each ``TransformerConfig.gemma*`` classmethod builds a
  dict inside the function (``num_layers`` a local) and returns ``cls(**config)``: layers
  ``num_layers``, vocab ``num_embed``, hidden ``embed_dim``, heads ``num_heads``, KV heads
  ``num_kv_heads``, head dim ``head_dim``, FFN ``hidden_dim`` (gate and up projections are
  each ``hidden_dim`` wide, examples/gemma/modules.py:353-375 and 415, 478 — so the FFN is
  the value as written even where it is twice the published width, e.g. gemma2_9b).
- examples/gemma/configs/*.py: a ``Config`` dataclass whose ``transformer_name`` names one of
  those classmethods (train.py:463-468, ``TransformerConfig.from_version_name``) or whose
  ``transformer_params`` default holds the dims; the sequence ``max_target_length`` (packed
  examples, examples/gemma/input_pipeline_tf.py:410), the micro-batch
  ``per_device_batch_size`` (input_pipeline_tf.py:398) when ``tensor_parallelism`` is 1.
  The vocabulary is the tokenizer's (train.py:453, 466): unknown.
"""

from __future__ import annotations

import ast
from pathlib import Path

from .core import Source, Unit
from .pyeval import UNKNOWN, Unknown, as_int, chain, evaluate, module_constants, parse

ML_COLLECTIONS = ("examples/lm1b/configs/default.py", "examples/wmt/configs/default.py")
PRESETS = "examples/gemma/transformer_cfg.py"
GEMMA_CONFIGS = "examples/gemma/configs"


def _config_assignments(fn: ast.FunctionDef) -> dict[str, object]:
    out: dict[str, object] = {}
    for stmt in fn.body:
        if (
            isinstance(stmt, ast.Assign)
            and len(stmt.targets) == 1
            and isinstance(stmt.targets[0], ast.Attribute)
            and isinstance(stmt.targets[0].value, ast.Name)
            and stmt.targets[0].value.id == "config"
        ):
            try:
                out[stmt.targets[0].attr] = evaluate(stmt.value)
            except Unknown:
                out[stmt.targets[0].attr] = UNKNOWN
    return out


def _n(values: dict[str, object], key: str) -> int | None:
    v = values.get(key)
    return None if v is UNKNOWN else as_int(v)


def ml_collections_units(root: Path) -> list[Unit]:
    """lm1b's and wmt's ``get_config()``."""
    out: list[Unit] = []
    for rel in ML_COLLECTIONS:
        tree = parse(root / rel)
        for fn in tree.body:
            if not (isinstance(fn, ast.FunctionDef) and fn.name == "get_config"):
                continue
            c = _config_assignments(fn)
            heads, qkv = _n(c, "num_heads"), _n(c, "qkv_dim")
            tp = [_n(c, k) for k in ("ici_tensor_parallelism", "dcn_tensor_parallelism")]
            out.append(
                Unit(
                    path=rel,
                    names=("get_config", rel.split("/")[1]),
                    line=fn.lineno,
                    expected={
                        "hidden": _n(c, "emb_dim"),
                        "heads": heads,
                        "kv_heads": heads,
                        "head_dim": qkv // heads if qkv and heads else None,
                        "ffn": _n(c, "mlp_dim"),
                        "layers": _n(c, "num_layers"),
                        "seq_len": _n(c, "max_target_length"),
                        "micro_batch": (
                            _n(c, "per_device_batch_size") if all(t == 1 for t in tp) else None
                        ),
                    },
                    patterns=("ml-collections", "keys", "attr-assign"),
                    batch_stated=True,
                )
            )
    return out


def presets(root: Path) -> dict[str, tuple[int, dict[str, object]]]:
    """``TransformerConfig.gemma*`` classmethods: name → (line, config dict)."""
    tree = parse(root / PRESETS)
    consts = module_constants(tree)
    out: dict[str, tuple[int, dict[str, object]]] = {}
    for cls in tree.body:
        if not (isinstance(cls, ast.ClassDef) and cls.name == "TransformerConfig"):
            continue
        for fn in cls.body:
            if not (isinstance(fn, ast.FunctionDef) and fn.name.startswith("gemma")):
                continue
            local: dict[str, object] = {}
            for stmt in fn.body:
                if (
                    isinstance(stmt, ast.Assign)
                    and len(stmt.targets) == 1
                    and isinstance(stmt.targets[0], ast.Name)
                ):
                    name = stmt.targets[0].id
                    if isinstance(stmt.value, ast.Dict):
                        d: dict[str, object] = {}
                        for k, v in zip(stmt.value.keys, stmt.value.values, strict=True):
                            if isinstance(k, ast.Constant):
                                try:
                                    d[str(k.value)] = evaluate(v, chain(local, consts))
                                except Unknown:
                                    d[str(k.value)] = UNKNOWN
                        local[name] = d
                    else:
                        try:
                            local[name] = evaluate(stmt.value, chain(local, consts))
                        except Unknown:
                            local[name] = UNKNOWN
            cfg = local.get("config")
            if isinstance(cfg, dict):
                out[fn.name] = (fn.lineno, cfg)
    return out


def _gemma_dims(cfg: dict[str, object]) -> dict[str, int | None]:
    return {
        "hidden": _n(cfg, "embed_dim"),
        "heads": _n(cfg, "num_heads"),
        "kv_heads": _n(cfg, "num_kv_heads"),
        "head_dim": _n(cfg, "head_dim"),
        "ffn": _n(cfg, "hidden_dim"),
        "layers": _n(cfg, "num_layers"),
    }


def gemma_units(root: Path) -> list[Unit]:
    """The presets and the training configs naming them."""
    table = presets(root)
    out = [
        Unit(
            path=PRESETS,
            names=(name, f"TransformerConfig.{name}"),
            line=line,
            expected={**_gemma_dims(cfg), "vocab": _n(cfg, "num_embed")},
            patterns=("dict-in-function", "keys"),
        )
        for name, (line, cfg) in table.items()
    ]
    for path in sorted((root / GEMMA_CONFIGS).rglob("*.py")):
        tree = parse(path)
        fields: dict[str, object] = {}
        line = 0
        for cls in tree.body:
            if not (isinstance(cls, ast.ClassDef) and cls.name == "Config"):
                continue
            line = cls.lineno
            for stmt in cls.body:
                if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name):
                    value = stmt.value
                    # dataclasses.field(default_factory=lambda: {...})
                    if isinstance(value, ast.Call):
                        for kw in value.keywords:
                            if kw.arg == "default_factory" and isinstance(kw.value, ast.Lambda):
                                value = kw.value.body
                    try:
                        fields[stmt.target.id] = evaluate(value)
                    except Unknown:
                        fields[stmt.target.id] = UNKNOWN
        if not line:
            continue
        name = fields.get("transformer_name")
        pats: tuple[str, ...]
        if isinstance(name, str):
            dims = _gemma_dims(table[name][1]) if name in table else {}
            pats = ("named-preset", "keys")
        elif isinstance(fields.get("transformer_params"), dict):
            params = fields["transformer_params"]
            assert isinstance(params, dict)
            dims = _gemma_dims(params)
            pats = ("keys",)
        else:
            continue
        if not any(v is not None for v in dims.values()):
            continue
        tp = _n(fields, "tensor_parallelism")
        dims["seq_len"] = _n(fields, "max_target_length")
        dims["micro_batch"] = _n(fields, "per_device_batch_size") if tp == 1 else None
        out.append(
            Unit(
                path=str(path.relative_to(root)),
                names=("Config", path.stem),
                line=line,
                expected=dims,
                patterns=pats,
                batch_stated=True,
            )
        )
    return out


def units(root: Path) -> list[Unit]:
    """All flax example units."""
    return ml_collections_units(root) + gemma_units(root)


SOURCE = Source(
    key="flax",
    repo="google/flax",
    commit="18f8f311c275d57f46d95e41b15aa97b454754c0",
    community="JAX examples",
    formats="Python",
    collect=units,
)
