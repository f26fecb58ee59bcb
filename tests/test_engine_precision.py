"""Precision first: production configs at the parallel sizes their publishers run them at
report nothing from SL3xx (every serve and train engine checked, as when none is named).

Each row names the config in the shared corpus, the tensor-parallel size and where that size
comes from. The training configs of the corpus are linted at the sizes they state themselves.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from shapelint.engine.options import LintOptions, TargetOptions
from shapelint.engine.runner import lint_paths
from shapelint.hardware.gpus import lookup

pytestmark = pytest.mark.corpus

NEURON = "hf_config_json/aws-neuron+neuronx-distributed"
EXECUTORCH = "hf_config_json/pytorch+executorch/examples/mediatek/models/llm_models/weights"
EAGLE = "hf_config_json/SafeAILab+EAGLE/eagle/train"
META_LLAMA2 = "github.com/meta-llama/llama README, 'Inference': MP 1 (7B), 2 (13B), 8 (70B)"
META_LLAMA3 = "github.com/meta-llama/llama3 README, 'Inference': MP 1 (8B), 8 (70B)"
ONE_GPU = "model card quick-start runs the model on one GPU"
DEEPSEEK_V3 = (
    "github.com/deepseek-ai/DeepSeek-V3 README, 'DeepSeek-Infer Demo': torchrun --nnodes 2 "
    "--nproc-per-node 8 (16 model-parallel ranks)"
)

# (config path under the corpus, tensor-parallel size, source of that size)
PRODUCTION = [
    (
        f"{NEURON}/examples/training/llama2/tp_zero1_llama2_7b_hf_pretrain/config.json",
        1,
        META_LLAMA2,
    ),
    (
        f"{NEURON}/examples/training/llama2/tp_pp_llama2_hf_pretrain/13B_config/config.json",
        2,
        META_LLAMA2,
    ),
    (
        f"{NEURON}/examples/training/llama2/tp_pp_llama2_hf_pretrain/70B_config/config.json",
        8,
        META_LLAMA2,
    ),
    (f"{EAGLE}/llama_2_chat_70B_config.json", 8, META_LLAMA2),
    (f"{EAGLE}/llama_2_chat_13B_config.json", 2, META_LLAMA2),
    (
        f"{NEURON}/examples/training/llama/tp_zero1_llama_hf_pretrain/8B_config_llama3/config.json",
        1,
        META_LLAMA3,
    ),
    (
        f"{NEURON}/examples/training/llama/tp_pp_llama_hf_pretrain/70B_config_llama3/config.json",
        8,
        META_LLAMA3,
    ),
    (f"{EXECUTORCH}/llama3-8B-instruct/config.json", 1, META_LLAMA3),
    (f"{EXECUTORCH}/Llama-3.2-1B-Instruct/config.json", 1, ONE_GPU),
    (f"{EXECUTORCH}/Llama-3.2-3B-Instruct/config.json", 1, ONE_GPU),
    (f"{EXECUTORCH}/Qwen2-7B-Instruct/config.json", 1, ONE_GPU),
    (f"{EXECUTORCH}/Qwen2-1.5B-Instruct/config.json", 1, ONE_GPU),
    (f"{EXECUTORCH}/Qwen2.5-3B/config.json", 1, ONE_GPU),
    (f"{EXECUTORCH}/Qwen2.5-0.5B-Instruct/config.json", 1, ONE_GPU),
    (f"{EXECUTORCH}/Qwen3-4B/config.json", 1, ONE_GPU),
    (f"{EXECUTORCH}/Qwen3-1.7B/config.json", 1, ONE_GPU),
    (f"{EXECUTORCH}/gemma2_2b_it/config.json", 1, ONE_GPU),
    (f"{EXECUTORCH}/gemma3_1b_it/config.json", 1, ONE_GPU),
    (f"{EXECUTORCH}/phi3.5-mini-instruct/config.json", 1, ONE_GPU),
    (f"{EXECUTORCH}/phi-4-mini-reasoning/config.json", 1, ONE_GPU),
    ("deepseek-v3/inference/configs/config_671B.json", 16, DEEPSEEK_V3),
    ("deepseek-v3/inference/configs/config_v3.1.json", 16, DEEPSEEK_V3),
]


def sl3_findings(path: Path, gpu: str = "H100-SXM", **flags: object) -> list[str]:
    options = LintOptions(
        gpus=(lookup(gpu),),
        flags=TargetOptions(**flags),  # type: ignore[arg-type]
        select=("SL3",),
        min_slowdown=0.0,
    )
    result = lint_paths([str(path)], options)
    assert not result.errors
    assert result.configs, f"{path}: no config read"
    return [f"{f.code} {f.message}" for f in result.findings]


@pytest.mark.parametrize(("rel", "tp", "source"), PRODUCTION, ids=[r[0] for r in PRODUCTION])
def test_production_config_at_its_published_tp_is_silent(
    corpus: Path, rel: str, tp: int, source: str
) -> None:
    path = corpus / rel
    assert path.is_file(), rel
    assert sl3_findings(path, tp=tp) == [], source


# The kernels (and llama.cpp) are checked only when named; Transformer Engine is a default
# train engine.
KERNELS = ("flash-attn2", "flash-attn3", "flash-attn4", "transformer-engine", "llama.cpp")


@pytest.mark.parametrize("gpu", ["H100-SXM", "B200"])
@pytest.mark.parametrize(("rel", "tp", "source"), PRODUCTION, ids=[r[0] for r in PRODUCTION])
def test_production_config_is_silent_on_the_named_kernels(
    corpus: Path, rel: str, tp: int, source: str, gpu: str
) -> None:
    """FlashAttention-4's head-dim sets (SL320), Transformer Engine's backend choice (SL321,
    SL322 at context parallel 2) on Hopper and Blackwell, and FlashAttention's fused rotary in
    decode (SL323), FP8 Linear dims (SL324), llama.cpp's CUDA FlashAttention kernels (SL315):
    nothing to report."""
    path = corpus / rel
    for cp in (1, 2):
        assert sl3_findings(path, gpu, tp=tp, cp=cp, engines=KERNELS) == [], source
    assert sl3_findings(path, gpu, tp=tp, mode="decode", engines=KERNELS) == [], source
    # Transformer Engine's FP8 Linear dims (SL324), at the published tensor parallel size.
    assert sl3_findings(path, gpu, tp=tp, dtype="fp8", engines=KERNELS) == [], source


def test_training_configs_at_their_own_sizes_report_only_a_real_head_size(corpus: Path) -> None:
    """Every corpus file at the sizes it states (Megatron, NeMo, nanotron, torchtitan …): the
    only SL3xx findings are on the tiny DBRX test config, whose head size vLLM (SL310) and
    Transformer Engine (SL321) have no fused kernel for."""
    options = LintOptions(gpus=(lookup("H100-SXM"),), select=("SL3",), min_slowdown=0.0)
    result = lint_paths([str(corpus)], options)
    reported = {(Path(f.path).name, f.code) for f in result.findings}
    assert reported <= {("small_scale.json", "SL310"), ("small_scale.json", "SL321")}, reported
    # The head size, read independently: d_model / n_heads = 12 (not a multiple of 8, not
    # one of FlashInfer's 64/128/256/512; TE's FlashAttention 2 and cuDNN need multiples of 8).
    small = next(corpus.rglob("dbrx_pretrain/configs/small_scale.json"))
    data = json.loads(small.read_text())
    assert data["d_model"] // data["n_heads"] == 12


@pytest.mark.parametrize("gpu", ["H100-SXM", "A100-SXM-80GB", "L40S", "A10"])
@pytest.mark.parametrize(("rel", "tp", "source"), PRODUCTION, ids=[r[0] for r in PRODUCTION])
def test_production_config_is_silent_on_tensorrt_llm(
    corpus: Path, rel: str, tp: int, source: str, gpu: str
) -> None:
    """TensorRT-LLM (checked only when named): heads vs tensor parallel (SL301), the MMHA
    decoder kernels' head sizes (SL326) and the context FMHA kernels on sm80/86/89/90 (SL331), in
    prefill and decode: nothing to report."""
    path = corpus / rel
    for mode in ("prefill", "decode"):
        assert sl3_findings(path, gpu, tp=tp, mode=mode, engines=("tensorrt-llm",)) == [], source
