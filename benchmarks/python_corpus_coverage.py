"""How much of the real Python config corpus the Python reader and dialects understand.

Downloads (once, into ``.cache/wheels``) the wheels of transformers, LitGPT and torchtitan at
pinned versions with ``pip download --no-deps``, then parses every config module in them
straight out of the zip — nothing is installed, imported or executed — and prints:

- transformers: config classes (``class …Config`` in ``models/*/configuration_*.py``), how many
  yield a hidden size and a head count, and how many of those that declare an integer
  ``vocab_size`` default also yield the vocab;
- LitGPT: the configs found in ``litgpt/config.py`` (the wheel ships no ``config_hub``): its
  written ``dict(…)`` entries, the name variants its loops build (``Llama-2-7b{}-hf`` →
  ``Llama-2-7b-hf``, ``Llama-2-7b-chat-hf``), and whether linting it reports any finding twice;
- torchtitan: the configs found in its ``models/*/__init__.py`` flavour tables;
- Llama-2-7B (4096 / 32 / 11008 / 32000) as found in transformers' ``LlamaConfig`` and
  LitGPT's ``Llama-2-7b-hf`` and ``Llama-2-7b-chat-hf`` variants;
- the wall time.

Run: ``.venv/bin/python benchmarks/python_corpus_coverage.py`` (``--cache DIR`` to move the
cache). ``tests/corpus/test_wheel_corpus.py`` asserts on the same numbers.
"""

from __future__ import annotations

import argparse
import re
import time
import zipfile
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import wheels

from shapelint.core.model import Dim, ModelConfig
from shapelint.core.source import Document, Scalar
from shapelint.dialects import extract
from shapelint.engine.options import LintOptions
from shapelint.engine.pipeline import lint_document
from shapelint.hardware.gpus import lookup
from shapelint.readers import parse

REPO = Path(__file__).resolve().parent.parent
CACHE = REPO / ".cache" / "wheels"
# Pinned so that the counts are reproducible. torchtitan 0.2.x is the last release whose
# flavours are ``TransformerModelArgs(dim=…, …)`` tables; 0.3 builds them in functions.
WHEELS = {
    "transformers": "5.24.0",
    "litgpt": "0.5.13",
    "torchtitan": "0.2.0",
}
Unreachable = wheels.Unreachable


def download(cache: Path = CACHE) -> dict[str, Path]:
    """The pinned wheels, downloading those not cached. Raises `Unreachable` when offline."""
    return wheels.download(WHEELS, cache, ("--only-binary=:all:",))


def sources(wheel: Path, pattern: str) -> Iterator[tuple[str, bytes]]:
    """(member name, bytes) of the wheel's files whose name matches ``pattern``."""
    wanted = re.compile(pattern)
    with zipfile.ZipFile(wheel) as archive:
        for name in sorted(archive.namelist()):
            if wanted.search(name):
                yield name, archive.read(name)


@dataclass
class Coverage:
    """The numbers the report prints and the corpus test asserts on."""

    files: int = 0
    errors: list[str] = field(default_factory=list)
    hf_classes: int = 0
    hf_hidden_heads: int = 0
    hf_vocab_declared: int = 0
    hf_vocab_found: int = 0
    # "Class (dialect)" for classes that declare an integer vocab_size but yield none.
    hf_vocab_missing: list[str] = field(default_factory=list)
    hf_missing: list[str] = field(default_factory=list)
    hf_llama: ModelConfig | None = None
    litgpt_source: str = ""
    litgpt_entries_written: int = 0
    # Written entries whose name is a ``str.format`` template (``name="Llama-2-7b{}-hf"``).
    litgpt_templates_written: int = 0
    litgpt_configs: int = 0
    litgpt_hidden_heads: int = 0
    litgpt_llama: ModelConfig | None = None
    litgpt_llama_chat: ModelConfig | None = None
    litgpt_findings: int = 0
    # "CODE line:column" of each finding reported more than once at the same span.
    litgpt_repeated_findings: list[str] = field(default_factory=list)
    torchtitan_configs: list[ModelConfig] = field(default_factory=list)
    seconds: float = 0.0


def _declares_int(doc: Document, class_name: str, key: str) -> bool:
    for candidate in doc.candidates:
        if candidate.name == class_name:
            node = candidate.root.get(key)
            return isinstance(node, Scalar) and node.known and type(node.value) is int
    return False


def _has(config: ModelConfig, *dims: Dim) -> bool:
    return all(config.int(d) is not None for d in dims)


def measure(wheels: dict[str, Path]) -> Coverage:
    """Parse and extract every config module of the wheels; count what was understood."""
    cov = Coverage()
    start = time.perf_counter()
    for name, data in sources(wheels["transformers"], r"models/[^/]+/configuration_[^/]+\.py$"):
        cov.files += 1
        doc = parse(name, data, "python")
        if not doc.ok:
            cov.errors.append(f"{name}: {doc.problems[0].message}")
            continue
        configs = extract(doc)
        for candidate in doc.candidates:
            if candidate.kind not in ("class", "init") or not candidate.name.endswith("Config"):
                continue
            cov.hf_classes += 1
            own = [
                c
                for c in configs
                if c.name == candidate.name or c.name.startswith(candidate.name + ".")
            ]
            with_shape = [c for c in own if _has(c, Dim.HIDDEN, Dim.HEADS)]
            if not with_shape:
                cov.hf_missing.append(candidate.name)
                continue
            cov.hf_hidden_heads += 1
            if _declares_int(doc, candidate.name, "vocab_size"):
                cov.hf_vocab_declared += 1
                if any(c.int(Dim.VOCAB) for c in with_shape):
                    cov.hf_vocab_found += 1
                else:
                    dialects = ",".join(sorted({c.dialect for c in with_shape}))
                    cov.hf_vocab_missing.append(f"{candidate.name} ({dialects})")
            if candidate.name == "LlamaConfig" and name.endswith("llama/configuration_llama.py"):
                cov.hf_llama = with_shape[0]
    for name, data in sources(wheels["litgpt"], r"^litgpt/config\.py$"):
        cov.files += 1
        cov.litgpt_source = data.decode("utf-8")
        cov.litgpt_entries_written = len(re.findall(rb"\bhf_config=dict\(", data))
        cov.litgpt_templates_written = len(re.findall(rb'(?m)^\s+name="[^"]*\{\}', data))
        doc = parse(name, data, "python")
        if not doc.ok:
            cov.errors.append(f"{name}: {doc.problems[0].message}")
        configs = [c for c in extract(doc) if c.dialect == "litgpt"]
        cov.litgpt_configs = len(configs)
        cov.litgpt_hidden_heads = sum(_has(c, Dim.HIDDEN, Dim.HEADS) for c in configs)
        cov.litgpt_llama = next((c for c in configs if c.name.endswith(" Llama-2-7b-hf")), None)
        cov.litgpt_llama_chat = next(
            (c for c in configs if c.name.endswith(" Llama-2-7b-chat-hf")), None
        )
        options = LintOptions(gpus=(lookup("H100-SXM"),), min_slowdown=0.0)
        findings = lint_document(doc, options)[1]
        cov.litgpt_findings = len(findings)
        spans = Counter((f.code, f.span.start, f.span.end) for f in findings)
        cov.litgpt_repeated_findings = [
            f"{f.code} {f.span.line}:{f.span.column}"
            for f in findings
            if spans[(f.code, f.span.start, f.span.end)] > 1
        ]
    for name, data in sources(wheels["torchtitan"], r"^torchtitan/.*models/[^/]+/__init__\.py$"):
        cov.files += 1
        doc = parse(name, data, "python")
        if not doc.ok:
            cov.errors.append(f"{name}: {doc.problems[0].message}")
        cov.torchtitan_configs.extend(c for c in extract(doc) if _has(c, Dim.HIDDEN, Dim.HEADS))
    cov.seconds = time.perf_counter() - start
    return cov


def _dims(config: ModelConfig | None) -> str:
    if config is None:
        return "not found"
    shown = (Dim.HIDDEN, Dim.HEADS, Dim.KV_HEADS, Dim.FFN, Dim.VOCAB, Dim.PADDED_VOCAB)
    return " ".join(f"{d.value}={config.dims[d].value}" for d in shown if d in config.dims)


def report(cov: Coverage) -> str:
    """The coverage numbers as text."""
    versions = ", ".join(f"{p} {v}" for p, v in WHEELS.items())
    lines = [
        f"wheels: {versions}",
        f"files parsed: {cov.files} in {cov.seconds:.1f} s; parse errors: {len(cov.errors)}",
        f"transformers config classes: {cov.hf_classes}; with hidden and heads: "
        f"{cov.hf_hidden_heads}; integer vocab_size default declared: {cov.hf_vocab_declared}, "
        f"vocab found: {cov.hf_vocab_found}"
        + (f" (missing: {', '.join(cov.hf_vocab_missing)})" if cov.hf_vocab_missing else ""),
        f"litgpt/config.py: {cov.litgpt_configs} configs (from {cov.litgpt_entries_written} "
        f"written hf_config entries, {cov.litgpt_templates_written} of them name templates, "
        f"the variants its loops build, and the Config class); with hidden and heads: "
        f"{cov.litgpt_hidden_heads}; findings: {cov.litgpt_findings}, reported twice at one "
        f"span: {len(cov.litgpt_repeated_findings)}",
        f"torchtitan flavours with hidden and heads: {len(cov.torchtitan_configs)}",
        f"Llama-2-7B in transformers LlamaConfig: {_dims(cov.hf_llama)}",
    ]
    lines += [
        f"Llama-2-7B in LitGPT {config.name if config else ''}: {_dims(config)}"
        for config in (cov.litgpt_llama, cov.litgpt_llama_chat)
    ]
    lines += [f"torchtitan {c.name}: {_dims(c)}" for c in cov.torchtitan_configs]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    """Download (if needed), measure, print."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--cache", type=Path, default=CACHE)
    parser.add_argument("--missing", action="store_true", help="list classes without a shape")
    args = parser.parse_args(argv)
    try:
        wheels = download(args.cache)
    except Unreachable as exc:
        print(f"skipped: {exc}")
        return 0
    cov = measure(wheels)
    print(report(cov))
    if args.missing:
        print("transformers classes without hidden+heads:", " ".join(cov.hf_missing))
    for error in cov.errors:
        print("error:", error)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
