"""apple/corenet: OpenELM presets in Python dicts, named from YAML by ``model_name``.

Units (corenet at 1aa3acd1):

- each entry of ``gpt_configs`` (corenet/modeling/models/language_modeling/general_gpt.py)
  and of ``layer_pruned_gpt_configs`` (…/kv_prediction.py), read as ``GPTConfig`` reads them:
  defaults ``head_dim`` 128, ``qkv_multipliers`` 1.0, ``num_gqa_groups`` 1,
  ``ffn_multipliers`` 4.0, ``ffn_dim_divisor`` 256 (general_gpt.py:52-71). A scalar
  multiplier gives every layer ``q_dim = make_divisible(model_dim · m, head_dim · groups)``
  (general_gpt.py:89-95), heads ``q_dim // head_dim`` and KV heads ``heads // groups``
  (lines 129-135), FFN ``make_divisible(m · model_dim, ffn_dim_divisor)`` (lines 450-456,
  the GLU's per-branch width); a pair of multipliers scales them layer by layer (OpenELM's
  layer-wise scaling, lines 98-121, 142-156): heads, KV heads and FFN then differ per layer
  and are unknown. ``make_divisible`` is corenet/utils/math_utils.py:9-30. Layers
  ``num_transformer_layers`` (``len(select_layers)`` for a pruned entry,
  kv_prediction.py:38-40), hidden ``model_dim``. ``from_name`` replaces the vocabulary and the
  context by the caller's (general_gpt.py:163-173): unknown for the Python entry.
- each YAML of projects/openelm/ and projects/kv-prediction/openelm/ whose
  ``model.language_modeling.name`` is ``general_gpt`` or ``layer_pruned_general_gpt``: the
  entry it names in ``general_gpt.model_name``, with the vocabulary ``general_gpt.vocab_size``
  and the sequence ``general_gpt.max_context_length`` it states (anchors resolved by
  PyYAML), and the micro-batch ``dataset.train_batch_size0`` (the batch on each GPU,
  corenet/data/sampler/base_sampler.py:400-404).
"""

from __future__ import annotations

import ast
from numbers import Number
from pathlib import Path
from typing import Any

import yaml

from .core import Source, Unit
from .pyeval import Unknown, as_int, evaluate, parse

GPT = "corenet/modeling/models/language_modeling/general_gpt.py"
PRUNED = "corenet/modeling/models/language_modeling/kv_prediction.py"
YAML_DIRS = ("projects/openelm", "projects/kv-prediction")


def make_divisible(v: float, divisor: int) -> int:
    """corenet/utils/math_utils.py:9-30 (min_value defaults to the divisor)."""
    new_v = max(divisor, int(v + divisor / 2) // divisor * divisor)
    if new_v < 0.9 * v:
        new_v += divisor
    return new_v


def table(root: Path, rel: str, name: str) -> dict[str, tuple[int, dict[str, Any]]]:
    """A module-level dict of ``dict(...)`` presets: key → (line, keywords)."""
    out: dict[str, tuple[int, dict[str, Any]]] = {}
    for stmt in parse(root / rel).body:
        if (
            isinstance(stmt, ast.Assign)
            and isinstance(stmt.targets[0], ast.Name)
            and stmt.targets[0].id == name
            and isinstance(stmt.value, ast.Dict)
        ):
            for k, v in zip(stmt.value.keys, stmt.value.values, strict=True):
                if isinstance(k, ast.Constant) and isinstance(v, ast.Call):
                    kws: dict[str, Any] = {}
                    for kw in v.keywords:
                        if kw.arg:
                            try:
                                kws[kw.arg] = evaluate(kw.value)
                            except Unknown:
                                kws[kw.arg] = None
                    out[str(k.value)] = (k.lineno, kws)
    return out


def preset_dims(p: dict[str, Any]) -> dict[str, int | None]:
    """The dims ``GPTConfig(**p)`` builds (None where they differ per layer)."""
    hidden = as_int(p.get("model_dim", 2048))
    head_dim = as_int(p.get("head_dim", 128))
    groups = as_int(p.get("num_gqa_groups", 1)) or 2
    qkv, ffn_m = p.get("qkv_multipliers", 1.0), p.get("ffn_multipliers", 4.0)
    divisor = as_int(p.get("ffn_dim_divisor", 256))
    select = p.get("select_layers")
    layers = len(select) if isinstance(select, list) else as_int(p.get("num_transformer_layers"))
    heads = kv = ffn = None
    if isinstance(qkv, Number) and hidden and head_dim:
        q_dim = make_divisible(hidden * float(qkv), head_dim * groups)  # type: ignore[arg-type]
        heads = q_dim // head_dim
        kv = heads // (as_int(p.get("num_gqa_groups", 1)) or 1)
    if isinstance(ffn_m, Number) and hidden and divisor:
        ffn = int(make_divisible(float(ffn_m) * hidden, divisor))  # type: ignore[arg-type]
    return {
        "hidden": hidden,
        "heads": heads,
        "kv_heads": kv,
        "head_dim": head_dim,
        "ffn": ffn,
        "layers": layers,
    }


def _get(d: Any, *keys: str) -> Any:
    for k in keys:
        if not isinstance(d, dict):
            return None
        d = d.get(k)
    return d


def units(root: Path) -> list[Unit]:
    """The presets and the YAMLs naming them."""
    gpt, pruned = table(root, GPT, "gpt_configs"), table(root, PRUNED, "layer_pruned_gpt_configs")
    out: list[Unit] = []
    for rel, presets in ((GPT, gpt), (PRUNED, pruned)):
        for name, (line, p) in presets.items():
            out.append(
                Unit(
                    path=rel,
                    names=(name,),
                    line=line,
                    expected=preset_dims(p),
                    patterns=("dict-in-function", "keys"),
                )
            )
    for d in YAML_DIRS:
        for path in sorted((root / d).rglob("*.yaml")):
            try:
                raw = yaml.safe_load(path.read_text())
            except yaml.YAMLError:
                continue
            lm = _get(raw, "model", "language_modeling")
            kind = _get(lm, "name")
            if kind not in ("general_gpt", "layer_pruned_general_gpt"):
                continue
            g = _get(lm, "general_gpt") or {}
            presets = pruned if kind == "layer_pruned_general_gpt" else gpt
            name = g.get("model_name")
            if name not in presets:
                continue
            exp = preset_dims(presets[name][1])
            exp["vocab"] = as_int(g.get("vocab_size"))
            exp["seq_len"] = as_int(g.get("max_context_length"))
            batch = _get(raw, "dataset", "train_batch_size0")
            exp["micro_batch"] = as_int(batch)
            text = path.read_text().splitlines()
            line = next((i + 1 for i, t in enumerate(text) if "model_name:" in t), 1)
            out.append(
                Unit(
                    path=str(path.relative_to(root)),
                    names=(path.stem, str(name)),
                    line=line,
                    expected=exp,
                    patterns=("named-preset", "keys"),
                    batch_stated=batch is not None,
                )
            )
    return out


SOURCE = Source(
    key="corenet",
    repo="apple/corenet",
    commit="1aa3acd17b7b02ba51889b648b1182845c4323eb",
    community="research codebase",
    formats="Python, YAML",
    collect=units,
)
