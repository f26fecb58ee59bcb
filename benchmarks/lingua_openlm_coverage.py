"""How shapelint reads Meta lingua run YAMLs and OpenLM model JSONs, against an independent
PyYAML / json reading with the frameworks' own formulas written out here.

Usage::

    python benchmarks/lingua_openlm_coverage.py --lingua DIR --open-lm DIR

``DIR`` is a checkout of facebookresearch/lingua (its ``apps/*/configs/*.yaml``) or of
mlfoundations/open_lm (its ``open_lm/model_configs/*.json``). The expected dims:

- lingua (``lingua/transformer.py`` at 437d680e): hidden ``dim``, layers ``n_layers``; a block
  with ``state_dim`` or ``conv_size`` (Mamba, Hawk, minGRU, minLSTM) has no attention: no
  heads, head dim or FFN; otherwise heads ``n_heads or dim // head_dim``, head dim
  ``head_dim or dim // n_heads``, KV heads ``n_kv_heads or heads`` and the FFN
  ``multiple_of·⌈int(ffn_dim_multiplier·int(2·4·dim/3))/multiple_of⌉`` (``multiple_of`` 256
  unless stated); ``data.seq_len`` the sequence;
- OpenLM (``open_lm/model.py`` at 9bb92ef1): hidden ``hidden_dim``, heads ``n_heads``, KV
  heads = heads, head dim ``hidden_dim // n_heads``, FFN by ``ffn_type`` (swiglu default:
  ``256·⌈int(2·4·dim/3)/256⌉``; gelu ``4·dim``), vocab ``vocab_size``. Mamba JSONs
  (``d_model``) are counted apart.

Prints, per source: configs, read, fully right, with a wrong dim, not read (each difference).
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path
from typing import Any

import yaml

from shapelint.core.model import Dim
from shapelint.dialects import extract
from shapelint.readers import parse


def _round_up(x: int, m: int) -> int:
    return m * math.ceil(x / m)


def lingua_expected(model: dict[str, Any], data: dict[str, Any]) -> dict[Dim, object]:
    dim = model["dim"]
    exp: dict[Dim, object] = {Dim.HIDDEN: dim, Dim.LAYERS: model["n_layers"]}
    if "seq_len" in data:
        exp[Dim.SEQ_LEN] = data["seq_len"]
    if "state_dim" in model or "conv_size" in model:
        return exp
    heads = model.get("n_heads") or dim // model["head_dim"]
    exp[Dim.HEADS] = heads
    exp[Dim.HEAD_DIM] = model.get("head_dim") or dim // heads
    exp[Dim.KV_HEADS] = model.get("n_kv_heads") or heads
    hidden = int(2 * (4 * dim) / 3)
    if model.get("ffn_dim_multiplier") is not None:
        hidden = int(model["ffn_dim_multiplier"] * hidden)
    exp[Dim.FFN] = _round_up(hidden, model.get("multiple_of", 256))
    return exp


def openlm_expected(cfg: dict[str, Any]) -> dict[Dim, object]:
    dim, heads = cfg["hidden_dim"], cfg["n_heads"]
    exp: dict[Dim, object] = {
        Dim.HIDDEN: dim,
        Dim.LAYERS: cfg["n_layers"],
        Dim.HEADS: heads,
        Dim.KV_HEADS: heads,
        Dim.HEAD_DIM: dim // heads,
        Dim.VOCAB: cfg["vocab_size"],
        Dim.SEQ_LEN: cfg["seq_len"],
    }
    kind = cfg.get("ffn_type", "swiglu")
    if kind in ("swiglu", "swiglu_torch", "gemma_geglu"):
        exp[Dim.FFN] = _round_up(int(2 * 4 * dim / 3), 256)
    elif kind == "gelu":
        exp[Dim.FFN] = 4 * dim
    return exp


def compare(path: Path, fmt: str, exp: dict[Dim, object]) -> tuple[str, list[str]]:
    configs = extract(parse(str(path), path.read_bytes(), fmt))
    if not configs:
        return "not read", []
    got = {d: v.value for d, v in configs[0].dims.items() if v.known}
    diffs = [
        f"{d.value}: expected {e}, read {got.get(d)}" for d, e in exp.items() if got.get(d) != e
    ]
    extra = [d for d in (Dim.HEADS, Dim.HEAD_DIM, Dim.FFN) if d in got and d not in exp]
    diffs += [f"{d.value}: expected none (no attention), read {got[d]}" for d in extra]
    return ("wrong" if diffs else "right"), diffs


def report(name: str, results: list[tuple[Path, str, list[str]]]) -> None:
    counts = {k: sum(1 for _, s, _ in results if s == k) for k in ("right", "wrong", "not read")}
    print(
        f"{name}: {len(results)} configs, {len(results) - counts['not read']} read, "
        f"{counts['right']} fully right, {counts['wrong']} with a wrong dim, "
        f"{counts['not read']} not read"
    )
    for path, status, diffs in results:
        if status != "right":
            print(f"  {path}: {status} {'; '.join(diffs)}")


def lingua(root: Path) -> list[tuple[Path, str, list[str]]]:
    out = []
    for path in sorted(root.glob("apps/**/configs/*.yaml")):
        raw = yaml.safe_load(path.read_text())
        model = raw.get("model") if isinstance(raw, dict) else None
        if not isinstance(model, dict) or not isinstance(model.get("dim"), int):
            continue  # eval configs; aunet's per-level lists
        status, diffs = compare(path, "yaml", lingua_expected(model, raw.get("data") or {}))
        out.append((path.relative_to(root), status, diffs))
    return out


def openlm(root: Path) -> list[tuple[Path, str, list[str]]]:
    out = []
    for path in sorted(root.glob("open_lm/model_configs/*.json")):
        cfg = json.loads(path.read_text())
        if "hidden_dim" not in cfg:
            continue  # Mamba (d_model, n_layer): not a transformer
        status, diffs = compare(path, "json", openlm_expected(cfg))
        out.append((path.relative_to(root), status, diffs))
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--lingua", type=Path, help="a facebookresearch/lingua checkout")
    parser.add_argument("--open-lm", type=Path, help="an mlfoundations/open_lm checkout")
    args = parser.parse_args(argv)
    if args.lingua is None and args.open_lm is None:
        parser.error("give --lingua DIR, --open-lm DIR or both")
    if args.lingua is not None:
        report("lingua", lingua(args.lingua))
    if args.open_lm is not None:
        report("open_lm", openlm(args.open_lm))
    return 0


if __name__ == "__main__":
    sys.exit(main())
