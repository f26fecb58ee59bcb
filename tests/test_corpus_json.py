"""Every JSON file of the shared corpus: no crash, no SL000 on valid JSON, known models' dims."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from shapelint.core.model import Dim
from shapelint.engine.options import LintOptions
from shapelint.engine.runner import lint_paths
from shapelint.hardware.gpus import lookup

HF = "hf_config_json/"
EXECUTORCH = HF + "pytorch+executorch/examples/mediatek/models/llm_models/weights/"
NEURON = HF + "aws-neuron+neuronx-distributed/examples/training/"

# path → (config name, expected dims)
EXPECTED: dict[str, tuple[str, dict[Dim, int]]] = {
    HF + "SafeAILab+EAGLE/eagle/train/llama_2_chat_7B_config.json": (
        "",
        {Dim.HIDDEN: 4096, Dim.HEADS: 32, Dim.FFN: 11008, Dim.VOCAB: 32000, Dim.HEAD_DIM: 128},
    ),
    NEURON + "mixtral/mixtral_pretrain/configs/8x7b_config.json": (
        "",
        {
            Dim.HIDDEN: 4096,
            Dim.EXPERTS: 8,
            Dim.EXPERTS_PER_TOKEN: 2,
            Dim.MOE_FFN: 14336,
            Dim.KV_HEADS: 32,
        },
    ),
    "deepseek-v3/inference/configs/config_671B.json": (
        "",
        {
            Dim.HIDDEN: 7168,
            Dim.HEADS: 128,
            Dim.HEAD_DIM: 192,
            Dim.V_HEAD_DIM: 128,
            Dim.MOE_FFN: 2048,
            Dim.EXPERTS: 256,
        },
    ),
    EXECUTORCH + "Llama-3.2-1B-Instruct/config.json": (
        "",
        {Dim.HIDDEN: 2048, Dim.HEADS: 32, Dim.KV_HEADS: 8, Dim.HEAD_DIM: 64, Dim.VOCAB: 128256},
    ),
    EXECUTORCH + "Qwen2-7B-Instruct/config.json": (
        "",
        {
            Dim.HIDDEN: 3584,
            Dim.HEADS: 28,
            Dim.KV_HEADS: 4,
            Dim.FFN: 18944,
            Dim.VOCAB: 152064,
            Dim.HEAD_DIM: 128,
        },
    ),
    EXECUTORCH + "gemma2_2b_it/config.json": (
        "",
        {Dim.HIDDEN: 2304, Dim.HEADS: 8, Dim.HEAD_DIM: 256, Dim.FFN: 9216, Dim.VOCAB: 256000},
    ),
    EXECUTORCH + "phi3.5-mini-instruct/config.json": (
        "",
        {Dim.HIDDEN: 3072, Dim.HEADS: 32, Dim.HEAD_DIM: 96, Dim.VOCAB: 32064},
    ),
    EXECUTORCH + "whisper-large-v3/config.json": (
        "decoder",
        {Dim.HIDDEN: 1280, Dim.HEADS: 20, Dim.HEAD_DIM: 64, Dim.FFN: 5120, Dim.VOCAB: 51866},
    ),
    EXECUTORCH + "Qwen3-4B/config.json": (
        "",
        {Dim.HIDDEN: 2560, Dim.HEADS: 32, Dim.KV_HEADS: 8, Dim.HEAD_DIM: 128, Dim.FFN: 9728},
    ),
    HF + "SafeAILab+EAGLE/eagle/train/vicuna_33B_config.json": (
        "",
        {Dim.HIDDEN: 6656, Dim.HEADS: 52, Dim.HEAD_DIM: 128, Dim.FFN: 17920},
    ),
    NEURON + "llama/tp_pp_llama_hf_pretrain/70B_config_llama3/config.json": (
        "",
        {Dim.HIDDEN: 8192, Dim.HEADS: 64, Dim.KV_HEADS: 8, Dim.FFN: 28672, Dim.VOCAB: 128256},
    ),
    "llama_params_json/pytorch+executorch/examples/models/llama/params/demo_config.json": (
        "",
        {Dim.HIDDEN: 64, Dim.HEADS: 8, Dim.LAYERS: 5, Dim.VOCAB: 512},
    ),
}


@pytest.fixture(scope="module")
def corpus_result(request: pytest.FixtureRequest):  # type: ignore[no-untyped-def]
    from conftest import corpus_dir

    root = corpus_dir()
    if root is None:
        pytest.skip(
            "shared corpus not found (set SHAPELINT_CORPUS or place it at ../shared/corpus)"
        )
    files = sorted(str(p) for p in root.rglob("*.json"))
    options = LintOptions(gpus=(lookup("H100-SXM"),))
    return root, files, lint_paths(files, options)


def test_no_crash_and_no_sl000_on_valid_json(corpus_result) -> None:  # type: ignore[no-untyped-def]
    _root, files, result = corpus_result
    assert result.errors == []
    assert len(result.files) == len(files)
    for r in result.files:
        try:
            json.loads(Path(r.source.path).read_text(encoding="utf-8-sig"))
            valid = True
        except (json.JSONDecodeError, UnicodeDecodeError):
            valid = False
        sl000 = [f for f in r.findings if f.code == "SL000"]
        assert bool(sl000) == (not valid), r.source.path
    assert len(result.configs) >= 60


@pytest.mark.parametrize("rel", sorted(EXPECTED))
def test_known_models(corpus_result, rel: str) -> None:  # type: ignore[no-untyped-def]
    root, _, result = corpus_result
    name, expected = EXPECTED[rel]
    path = str(root / rel)
    assert Path(path).exists(), f"{rel} missing from corpus"
    configs = [c for c in result.configs if c.path == path and c.name == name]
    assert configs, f"no config {name!r} in {rel}"
    got = {d: configs[0].int(d) for d in expected}
    assert got == expected
