"""Real YAML / TOML / DeepSpeed-JSON training configs from ../shared/corpus.

Every file parses without SL000 and extracts without an exception; for the named files the
extracted dims are the numbers read off the files themselves (and the frameworks' formulas).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from shapelint import dialects
from shapelint.core.model import Dim, ModelConfig
from shapelint.readers import parse

pytestmark = pytest.mark.corpus

FOLDERS = (
    "gpt-neox",
    "megatron-lm",
    "neuronx-distributed-training",
    "olmo",
    "llm-foundry",
    "smollm",
    "axolotl",
    "torchtitan",
)
KINDS = {".yml": "yaml", ".yaml": "yaml", ".toml": "toml", ".json": "json"}


def _corpus() -> Path | None:
    env = os.environ.get("SHAPELINT_CORPUS")
    path = Path(env) if env else Path(__file__).resolve().parents[2] / ".." / "shared" / "corpus"
    return path if path.is_dir() else None


@pytest.fixture(scope="module")
def corpus_root() -> Path:
    path = _corpus()
    if path is None:
        pytest.skip(
            "shared corpus not found (set SHAPELINT_CORPUS or place it at ../shared/corpus)"
        )
    return path


def _files(root: Path) -> list[Path]:
    files = []
    for folder in FOLDERS:
        for path in sorted((root / folder).rglob("*")):
            if path.suffix in KINDS and path.is_file():
                files.append(path)
    return files


def _extract(path: Path) -> list[ModelConfig]:
    doc = parse(str(path), path.read_bytes(), KINDS[path.suffix])
    assert doc.ok, [p.message for p in doc.problems]
    assert not [p for p in doc.problems if p.code != "SL001"], doc.problems
    return dialects.extract(doc)


def test_every_training_config_reads_cleanly(corpus_root: Path) -> None:
    files = _files(corpus_root)
    assert len(files) >= 90
    with_configs = 0
    for path in files:
        configs = _extract(path)
        with_configs += bool(configs)
        for config in configs:
            for value in config.dims.values():
                span = value.span
                assert span.path == str(path)
                assert span.start <= span.end
    assert with_configs >= 80


SHAPE = (Dim.HIDDEN, Dim.HEADS, Dim.KV_HEADS, Dim.FFN, Dim.LAYERS, Dim.SEQ_LEN)

# path → (dialect, {dim: value}); numbers read off each file.
EXPECTED: dict[str, tuple[str, dict[Dim, object]]] = {
    "gpt-neox/configs/pythia/1-4B.yml": (
        "gpt-neox",
        dict(zip(SHAPE, (2048, 16, 16, 8192, 24, 2048), strict=True))
        | {Dim.MICRO_BATCH: 16, Dim.TP: 1, Dim.DTYPE: "fp16"},
    ),
    "gpt-neox/configs/20B.yml": (
        "gpt-neox",
        {Dim.HIDDEN: 6144, Dim.HEADS: 64, Dim.LAYERS: 44, Dim.TP: 2, Dim.GRAD_ACCUM: 32},
    ),
    "gpt-neox/configs/llama2/7B.yml": (
        "gpt-neox",
        {Dim.HIDDEN: 4096, Dim.FFN: 11008, Dim.FFN_MULTIPLE: 256, Dim.VOCAB_MULTIPLE: 1},
    ),
    "gpt-neox/configs/llama2/70B.yml": (
        "gpt-neox",
        {Dim.HIDDEN: 8192, Dim.KV_HEADS: 8, Dim.FFN: 28672, Dim.LAYERS: 80},
    ),
    "olmo/configs/official-0724/OLMo-7B-0724.yaml": (
        "olmo",
        dict(zip(SHAPE, (4096, 32, 32, 11008, 32, 4096), strict=True))
        | {Dim.VOCAB: 50280, Dim.PADDED_VOCAB: 50304, Dim.MICRO_BATCH: 2, Dim.GLOBAL_BATCH: 1024},
    ),
    "olmo/configs/official-0724/OLMo-1B.yaml": (
        "olmo",
        {Dim.HIDDEN: 2048, Dim.FFN: 8192, Dim.LAYERS: 16, Dim.SEQ_LEN: 2048},
    ),
    "olmo/configs/official-1124/OLMo2-13B-stage1.yaml": (
        "olmo",
        {Dim.HIDDEN: 5120, Dim.HEADS: 40, Dim.FFN: 13824, Dim.PADDED_VOCAB: 100352},
    ),
    "neuronx-distributed-training/examples/conf/hf_llama3_8B_config.yaml": (
        "nemo",
        {Dim.HIDDEN: 4096, Dim.LAYERS: 32, Dim.SEQ_LEN: 8192, Dim.TP: 32, Dim.GLOBAL_BATCH: 1024},
    ),
    "neuronx-distributed-training/examples/conf/megatron_llama_7B_config.yaml": (
        "nemo",
        dict(zip(SHAPE, (4096, 32, 32, 11008, 32, 4096), strict=True))
        | {Dim.TP: 8, Dim.VOCAB_MULTIPLE: 8},
    ),
    "megatron-lm/examples/gpt3/gpt_config.yaml": (
        "megatron-lm",
        {Dim.HIDDEN: 1024, Dim.FFN: 2688, Dim.MICRO_BATCH: 2, Dim.GLOBAL_BATCH: 128},
    ),
    "megatron-lm/tests/functional_tests/test_cases/gpt/gpt3_7b_tp1_pp4_memory_speed/"
    "model_config.yaml": (
        "megatron-lm",
        {Dim.KV_HEADS: 8, Dim.SEQ_LEN: 8192, Dim.VOCAB: 131073, Dim.PADDED_VOCAB: 131200},
    ),
    "megatron-lm/tests/functional_tests/test_cases/mixtral/mixtral_8x7b_tp1pp4ep8vpp8_release/"
    "model_config.yaml": (
        "megatron-lm",
        {Dim.FFN: 14336, Dim.EXPERTS: 8, Dim.EXPERTS_PER_TOKEN: 2, Dim.TP: 2},
    ),
    "megatron-lm/tests/functional_tests/test_cases/mixtral/"
    "deepseekv3_proxy_flex_tp1pp4emp16etp1cp1_release/model_config.yaml": (
        "megatron-lm",
        {Dim.HEAD_DIM: 192, Dim.V_HEAD_DIM: 128, Dim.MOE_FFN: 2048, Dim.EXPERTS: 64},
    ),
    "llm-foundry/scripts/train/yamls/pretrain/mpt-7b.yaml": (
        "llm-foundry",
        dict(zip(SHAPE, (4096, 32, 32, 16384, 32, 2048), strict=True)) | {Dim.VOCAB: 50368},
    ),
    "llm-foundry/scripts/train/yamls/pretrain/mpt-125m.yaml": (
        "llm-foundry",
        {Dim.HIDDEN: 768, Dim.HEADS: 12, Dim.LAYERS: 12, Dim.FFN: 3072},
    ),
    "smollm/text/pretraining/smollm2/config_smollm2_135M.yaml": (
        "nanotron",
        dict(zip(SHAPE, (576, 9, 3, 1536, 30, 2048), strict=True))
        | {Dim.VOCAB: 49152, Dim.MICRO_BATCH: 8, Dim.TP: 1},
    ),
    "smollm/text/pretraining/smollm3/stage1_8T.yaml": (
        "nanotron",
        {Dim.HIDDEN: 2048, Dim.KV_HEADS: 4, Dim.LAYERS: 36, Dim.TP: 2, Dim.SEQ_LEN: 4096},
    ),
    "axolotl/examples/llama-3/fft-8b.yaml": (
        "axolotl",
        {Dim.SEQ_LEN: 8192, Dim.MICRO_BATCH: 1, Dim.GRAD_ACCUM: 8},
    ),
    "axolotl/examples/alst/llama3-8b-deepspeed-alst.yaml": (
        "axolotl",
        {Dim.SEQ_LEN: 500_000},  # written 500_000
    ),
    "axolotl/deepspeed_configs/zero3_bf16.json": ("deepspeed", {Dim.DTYPE: "bf16"}),
    "torchtitan/legacy_aa000a3c/torchtitan/models/llama3/train_configs/llama3_8b.toml": (
        "torchtitan",
        {Dim.SEQ_LEN: 8192, Dim.MICRO_BATCH: 1, Dim.TP: 1},
    ),
    "torchtitan/legacy_aa000a3c/torchtitan/models/llama3/train_configs/llama3_70b.toml": (
        "torchtitan",
        {Dim.SEQ_LEN: 8192, Dim.MICRO_BATCH: 8, Dim.TP: 8},
    ),
}


@pytest.mark.parametrize("relative", sorted(EXPECTED))
def test_named_files(corpus_root: Path, relative: str) -> None:
    dialect, expected = EXPECTED[relative]
    path = corpus_root / relative
    configs = _extract(path)
    assert len(configs) == 1
    config = configs[0]
    assert config.dialect == dialect
    got = {dim: config.dims[dim].value for dim in expected if dim in config.dims}
    assert got == expected
    text = path.read_text(encoding="utf-8")
    for dim in expected:
        value = config.dims[dim]
        if not value.derived:  # a stated value's span is exactly its text
            written = text[value.span.start : value.span.end]
            assert written.strip("'\"").replace("_", "") == str(value.value).replace("_", "") or (
                dim == Dim.DTYPE
            )


def test_deepspeed_auto_values_are_unknown(corpus_root: Path) -> None:
    (config,) = _extract(corpus_root / "axolotl/deepspeed_configs/zero3_bf16.json")
    assert config.shape_from_elsewhere
    assert not config.dims[Dim.MICRO_BATCH].known


def test_known_good_configs_have_no_sl0_errors(corpus_root: Path) -> None:
    """Every public config in the corpus trains or loads in its framework, so none may get an
    SL0xx error (a config that cannot describe a working model)."""
    from shapelint.engine.options import LintOptions
    from shapelint.engine.runner import lint_paths
    from shapelint.hardware.gpus import lookup

    result = lint_paths([str(corpus_root)], LintOptions(gpus=(lookup("h100"),), select=("SL0",)))
    assert len(result.files) >= 200
    errors = [
        (f.path, f.code, f.message)
        for f in result.findings
        if f.severity == "error" and f.code != "SL001"  # duplicate keys exist upstream
    ]
    assert errors == []
    assert sum(len(r.configs) for r in result.files) >= 200
