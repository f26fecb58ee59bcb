"""How shapelint reads Levanter run configs, against an independent PyYAML reading.

Usage: ``python benchmarks/levanter_coverage.py DIR`` (e.g. Levanter's ``config/``). Every
YAML under DIR whose ``model.type`` is a type the dialect reads and whose block states
``hidden_dim`` and ``num_heads`` (and no ``use_hf_model_config: true``) is compared on the
dims the block states, plus Levanter's formulas as the corpus test writes them
(tests/corpus/test_levanter_corpus.py: head dim = hidden // heads unless stated, Gemma
excepted; GPT-2's MLP = hidden · mlp_scale, default 4; GPT-2 and Backpack multi-head; Mixtral's
``intermediate_dim`` per expert). Prints the counts and each difference.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import yaml

from shapelint.core.model import Dim
from shapelint.dialects import extract, levanter
from shapelint.readers import parse


class _Loader(yaml.SafeLoader):
    pass


_Loader.add_multi_constructor("!", lambda loader, suffix, node: None)

STATED = (
    ("num_layers", Dim.LAYERS),
    ("seq_len", Dim.SEQ_LEN),
    ("num_kv_heads", Dim.KV_HEADS),
    ("head_dim", Dim.HEAD_DIM),
)


def expected(model: dict[str, Any]) -> dict[Dim, int]:
    kind, h, a = model["type"], model["hidden_dim"], model["num_heads"]
    exp = {Dim.HIDDEN: h, Dim.HEADS: a}
    exp.update({dim: model[key] for key, dim in STATED if key in model})
    if "head_dim" not in model and not kind.startswith("gemma"):
        exp[Dim.HEAD_DIM] = h // a
    if kind in ("gpt2", "backpack"):
        exp[Dim.KV_HEADS] = a
    if kind == "gpt2":
        exp[Dim.FFN] = h * model.get("mlp_scale", levanter.GPT2_MLP_SCALE)
    if "intermediate_dim" in model:
        exp[Dim.MOE_FFN if kind == "mixtral" else Dim.FFN] = model["intermediate_dim"]
    return exp


def main(root: Path) -> int:
    checked = right = wrong = 0
    for path in sorted([*root.rglob("*.yaml"), *root.rglob("*.yml")]):
        raw = yaml.load(path.read_text(), Loader=_Loader)
        model = raw.get("model") if isinstance(raw, dict) else None
        if not isinstance(model, dict) or model.get("type") not in levanter.TYPES:
            continue
        if raw.get("use_hf_model_config") or not {"hidden_dim", "num_heads"} <= set(model):
            continue
        checked += 1
        found = [c for c in extract(parse(str(path), path.read_bytes(), "yaml"))]
        found = [c for c in found if c.dialect == "levanter"]
        exp = expected(model)
        got = {d: found[0].int(d) for d in exp} if len(found) == 1 else {}
        if got == exp:
            right += 1
        else:
            wrong += 1
            print(f"  differs: {path}: expected {exp}, read {got}")
    print(f"configs {checked}, read exactly as stated {right}, different {wrong}")
    return 1 if wrong else 0


if __name__ == "__main__":
    raise SystemExit(main(Path(sys.argv[1])))
