"""How many real configs shapelint reads fully right, on corpora it was not tuned to.

Two sources, each compared dim by dim with an independent reading done here with
``yaml.safe_load`` / ``json.loads`` (never with shapelint's own readers):

- **maxtext**: every ``configs/models/*.yml`` of the pinned MaxText wheel (downloaded once
  into ``.cache/wheels`` with ``pip download --no-deps --python-version 3.12
  --only-binary=:all:``, read straight from the zip). The expected dims follow MaxText's own
  rules: a model YAML overlays ``configs/base.yml`` (``head_dim`` 128, MLA
  ``qk_nope_head_dim`` 128 + ``qk_rope_head_dim`` 64, ``v_head_dim`` 128, ``vocab_size`` 32000
  when left out) and ``global_parameter_scale`` 1 keeps the ``base_*`` dims as written;
- **shared HF JSON**: every ``config.json`` under ``../shared/corpus/hf_config_json`` that
  states ``hidden_size`` and ``num_attention_heads`` at its top level, with the plain HF key
  names (``num_key_value_heads`` defaulting to the head count, ``head_dim`` to hidden / heads).

Per source it prints: configs expected, configs found, fully right (every expected dim read
and equal), unknown (some expected dim not read, none wrong), wrong (some dim read with
another value), and lists the wrong and unknown ones.

Run: ``.venv/bin/python benchmarks/config_coverage.py`` (``--corpus DIR`` for the shared
corpus). ``tests/corpus/test_maxtext_corpus.py`` asserts on the MaxText numbers.
"""

from __future__ import annotations

import argparse
import json
import re
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import wheels
import yaml

from shapelint.core.model import Dim, ModelConfig
from shapelint.dialects import extract
from shapelint.readers import parse

REPO = Path(__file__).resolve().parent.parent
CACHE = REPO / ".cache" / "wheels"
MAXTEXT_VERSION = "0.2.5"
MODELS = re.compile(r"^(?:src/)?(?:MaxText|maxtext)/configs/models/(?:[^/]+/)*[^/]+\.ya?ml$")
BASE = re.compile(r"^(?:src/)?(?:MaxText|maxtext)/configs/base\.yml$")
Unreachable = wheels.Unreachable


def download(cache: Path = CACHE) -> Path:
    """The MaxText wheel, downloaded into ``cache`` unless it is there."""
    pins = {"maxtext": MAXTEXT_VERSION}
    return wheels.download(pins, cache, ("--python-version", "3.12", "--only-binary=:all:"))[
        "maxtext"
    ]


def maxtext_files(wheel: Path) -> tuple[dict[str, str], dict[str, Any]]:
    """The model YAMLs' texts by path, and base.yml as loaded."""
    models: dict[str, str] = {}
    base: dict[str, Any] = {}
    with zipfile.ZipFile(wheel) as zf:
        for name in zf.namelist():
            if MODELS.match(name):
                models[name] = zf.read(name).decode("utf-8")
            elif BASE.match(name):
                base = yaml.safe_load(zf.read(name).decode("utf-8"))
    return models, base


def maxtext_expected(text: str, base: dict[str, Any]) -> dict[Dim, int]:
    """The dims MaxText builds from a model YAML, read with yaml.safe_load."""
    raw = yaml.safe_load(text) or {}
    merged = {**base, **raw}
    out = {
        Dim.HIDDEN: merged["base_emb_dim"],
        Dim.HEADS: merged["base_num_query_heads"],
        Dim.KV_HEADS: merged["base_num_kv_heads"],
        Dim.FFN: merged["base_mlp_dim"],
        Dim.LAYERS: merged["base_num_decoder_layers"],
        Dim.VOCAB: merged["vocab_size"],
    }
    if merged.get("decoder_block") == "gemma2":
        # models/gemma2.py: one Gemma2DecoderLayer = a local and a global attention layer.
        out[Dim.LAYERS] *= 2
    if str(merged.get("attention_type", "")).lower() == "mla":
        out[Dim.HEAD_DIM] = merged["qk_nope_head_dim"] + merged["qk_rope_head_dim"]
        out[Dim.V_HEAD_DIM] = merged["v_head_dim"]
    else:
        out[Dim.HEAD_DIM] = merged["head_dim"]
    if int(merged.get("num_experts", 1)) > 1:
        out[Dim.EXPERTS] = merged["num_experts"]
        out[Dim.EXPERTS_PER_TOKEN] = merged["num_experts_per_tok"]
        out[Dim.MOE_FFN] = merged["base_moe_mlp_dim"]
    return {d: int(v) for d, v in out.items()}


def hf_expected(text: str) -> dict[Dim, int] | None:
    """The dims a flat HF config.json states, read with json.loads; None if not one."""
    try:
        raw = json.loads(text)
    except ValueError:
        return None
    if not isinstance(raw, dict):
        return None
    h, a = raw.get("hidden_size"), raw.get("num_attention_heads")
    if not isinstance(h, int) or not isinstance(a, int) or isinstance(h, bool) or a <= 0:
        return None
    out = {Dim.HIDDEN: h, Dim.HEADS: a}
    kv = raw.get("num_key_value_heads")
    out[Dim.KV_HEADS] = kv if isinstance(kv, int) else a
    for dim, key in (
        (Dim.LAYERS, "num_hidden_layers"),
        (Dim.VOCAB, "vocab_size"),
        (Dim.HEAD_DIM, "head_dim"),
    ):
        value = raw.get(key)
        if isinstance(value, int) and not isinstance(value, bool):
            out[dim] = value
    nope, rope = raw.get("qk_nope_head_dim"), raw.get("qk_rope_head_dim")
    if isinstance(nope, int) and isinstance(rope, int):
        # Multi-latent attention (DeepSeek V2/V3, Kimi K2): DeepseekV3Attention's
        # qk_head_dim = qk_nope_head_dim + qk_rope_head_dim; ``head_dim`` is the rotary part.
        out[Dim.HEAD_DIM] = nope + rope
    if Dim.HEAD_DIM not in out and h % a == 0:
        out[Dim.HEAD_DIM] = h // a
    return out


@dataclass
class Coverage:
    """Counts for one source."""

    source: str
    expected: int = 0
    found: int = 0
    right: int = 0
    unknown: list[str] = field(default_factory=list)
    wrong: list[str] = field(default_factory=list)


def classify(
    name: str, text: str, path: str, fmt: str, want: dict[Dim, int], cov: Coverage
) -> None:
    """Compare the config shapelint reads from ``text`` with ``want``."""
    cov.expected += 1
    doc = parse(path, text.encode("utf-8"), fmt)
    configs = [c for c in extract(doc) if not c.shape_from_elsewhere] if doc.ok else []
    config = _root_config(configs)
    if config is None:
        cov.unknown.append(f"{name}: no config")
        return
    cov.found += 1
    wrong = {
        d.value: (_read(config, d), v) for d, v in want.items() if _read(config, d) not in (None, v)
    }
    missing = [d.value for d in want if _read(config, d) is None]
    if wrong:
        cov.wrong.append(f"{name}: {wrong}")
    elif missing:
        cov.unknown.append(f"{name}: unknown {missing}")
    else:
        cov.right += 1


def _read(config: ModelConfig, dim: Dim) -> int | None:
    value = config.get(dim)
    return value.as_int if value is not None else None


def _root_config(configs: list[ModelConfig]) -> ModelConfig | None:
    for config in configs:
        if "." not in config.name and "[" not in config.name:
            return config
    return configs[0] if configs else None


def measure_maxtext(wheel: Path) -> Coverage:
    """Coverage of every MaxText model YAML."""
    models, base = maxtext_files(wheel)
    cov = Coverage("maxtext")
    for name, text in sorted(models.items()):
        short = name.rsplit("/", 1)[1]
        classify(short, text, short, "yaml", maxtext_expected(text, base), cov)
    return cov


def shared_hf_files(corpus: Path) -> Iterator[Path]:
    """Every config.json under the shared corpus's hf_config_json folder."""
    yield from sorted((corpus / "hf_config_json").rglob("*.json"))


def measure_shared(corpus: Path) -> Coverage:
    """Coverage of the shared corpus's flat HF config.json files."""
    cov = Coverage("shared hf_config_json")
    for path in shared_hf_files(corpus):
        text = path.read_text(encoding="utf-8")
        want = hf_expected(text)
        if want is not None:
            classify(str(path.relative_to(corpus)), text, str(path), "json", want, cov)
    return cov


def report(rows: list[Coverage]) -> str:
    """The coverage table and the lists of unknown and wrong configs."""
    head = f"{'source':<24} {'configs':>8} {'found':>6} {'fully right':>12}"
    lines = [f"{head} {'unknown':>8} {'wrong':>6}"]
    for c in rows:
        pct = 100 * c.right / c.expected if c.expected else 0.0
        lines.append(
            f"{c.source:<24} {c.expected:>8} {c.found:>6} {c.right:>6} ({pct:4.1f}%)"
            f" {len(c.unknown):>8} {len(c.wrong):>6}"
        )
    for c in rows:
        lines += [f"  unknown  {c.source}: {u}" for u in c.unknown]
        lines += [f"  WRONG    {c.source}: {w}" for w in c.wrong]
    return "\n".join(lines)


def main() -> int:
    """Measure and print."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", type=Path, default=REPO.parent / "shared" / "corpus")
    args = parser.parse_args()
    rows = []
    try:
        rows.append(measure_maxtext(download()))
    except Unreachable as exc:
        print(f"maxtext: skipped, PyPI unreachable ({exc})")
    if args.corpus.is_dir():
        rows.append(measure_shared(args.corpus))
    print(report(rows))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
