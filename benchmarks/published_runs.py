"""The published training runs of tests/perf/data, as the step model's inputs.

Each row of a published throughput table becomes a `Run`: the model (a `ModelConfig` of its
shape), the run's settings as target fields (micro-batch, sequence, the parallel sizes, the
global batch, recompute, fusions, attention kernel, framework …) and its published throughput
per GPU in tokens per second, with its fixed fit / held-out split. benchmarks/step_calibration.py
predicts, fits and reports them.

The tables and what each row's settings are taken from (tests/perf/data/README.md lists the
sources; each CSV's header says what is published and what is not):

- ``llm-foundry``: llm_foundry_mpt.csv (MPT, FSDP over 8 GPUs, Composer; see
  step_calibration.py's docstring for the run settings).
- ``nemo``: nemo_performance_summary.csv (NeMo 24.07 on DGX-H100 in FP8; long-sequence tables on
  DGX-H100 and DGX-B200). TP/PP/CP/VP, micro- and global batch as published, DP = GPUs /
  (TP·PP·CP); shapes, recompute, sequence parallelism and Userbuffers TP overlap from the NeMo
  launcher configs the tables name (model_shapes.csv). The long-sequence tables publish TFLOP/s
  only: tokens/s = TFLOP/s / NeMo's FLOPs per token (Megatron's formula, which NeMo's pretraining
  table follows: its TFLOP/s / tokens/s ratios match it to 0.3%, `megatron_flops_per_token`).
- ``torchtitan``: torchtitan_performance.csv (FSDP2 / TP / PP / CP, torch.compile, Float8).
- ``megatron``: megatron_lm_scaling.csv (Megatron-LM 2024 H100, 2021 A100). Published TFLOP/s
  per GPU → tokens/s with the FLOP formula each publication uses.
- ``h200``: benchmarks/results/nvidia-h200/train.csv (our own: a ~1B model on one H200, plain
  PyTorch eager, fused AdamW), split as SPLIT.md fixes it.

A row the model cannot express is kept with its reason in ``skip`` (LoRA fine-tuning, runs whose
parallel settings are not published) and left out of every fit and report.
"""

from __future__ import annotations

import csv
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType

from shapelint.core.model import Dim, ModelConfig, Value
from shapelint.core.source import Span

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "tests" / "perf" / "data"
H200_TRAIN = ROOT / "benchmarks" / "results" / "nvidia-h200" / "train.csv"
_NOWHERE = Span("", 1, 1, 1, 1, 0, 0)

# The attention kernel each framework's runs use on these GPUs: Transformer Engine's fused
# attention (cuDNN) under NeMo/Megatron-Core on Hopper and Blackwell; PyTorch SDPA (its flash
# backend) under torchtitan; Megatron-LM of 2021 had no fused attention kernel (its fused
# scale-mask-softmax between two batched GEMMs).
TE_ATTENTION = "cudnn"
TORCH_ATTENTION = "sdpa"


@dataclass(frozen=True)
class Run:
    """One published row: the model, the run's target settings, the published tokens/s per GPU."""

    table: str
    part: str
    label: str
    split: str
    gpu: str
    config: ModelConfig
    settings: Mapping[str, object]
    tokens_per_s_per_gpu: float
    # How the published number became tokens/s per GPU ("" when published as such).
    derived: str = ""
    # Why the model does not predict this row ("" when it does).
    skip: str = ""
    # GPU figures of the run's hardware where it is not the table's product (torchtitan's
    # 2.4 TB/s H100 96GB at 500 W): GPU field → value.
    gpu_overrides: Mapping[str, float] = field(default_factory=dict)

    @property
    def gpus_per_step(self) -> int:
        """GPUs one micro-batch's tokens are spread over: TP · CP · PP."""
        s = self.settings
        return int(s.get("tp", 1)) * int(s.get("cp", 1)) * int(s.get("pp", 1))  # type: ignore[call-overload]


def _lines(path: Path) -> Iterator[str]:
    with path.open(encoding="utf-8", newline="") as f:
        for line in f:
            if not line.startswith("#"):
                yield line


def _rows(path: Path) -> list[dict[str, str]]:
    return list(csv.DictReader(_lines(path)))


def model_config(
    name: str,
    dims: Mapping[Dim, int],
    *,
    gated: bool,
    position: str,
    dialect: str = "published",
) -> ModelConfig:
    """A ModelConfig of ``dims`` (stated values, no source spans)."""
    return ModelConfig(
        name=name,
        path="",
        dialect=dialect,
        dims=MappingProxyType({d: Value(v, d.value, _NOWHERE) for d, v in dims.items()}),
        gated_mlp=gated,
        position_embedding=position,
    )


def shapes() -> dict[str, dict[str, str]]:
    """tests/perf/data/model_shapes.csv by model name."""
    return {r["model"]: r for r in _rows(DATA / "model_shapes.csv")}


def padded(vocab: int, multiple: int) -> int:
    """``vocab`` rounded up to a multiple of ``multiple`` (Megatron's make_vocab_size_divisible_by
    times the tensor-parallel size)."""
    return -(-vocab // multiple) * multiple


def shape_config(model: str, tp: int = 1, *, pad: int = 1) -> ModelConfig:
    """The ModelConfig of a model of model_shapes.csv, its vocab padded to ``pad`` · ``tp``."""
    r = shapes()[model]
    dims = {
        Dim.HIDDEN: int(r["hidden"]),
        Dim.HEADS: int(r["heads"]),
        Dim.KV_HEADS: int(r["kv_heads"]),
        Dim.LAYERS: int(r["layers"]),
        Dim.FFN: int(r["ffn"]),
        Dim.VOCAB: padded(int(r["vocab"]), pad * tp),
    }
    return model_config(model, dims, gated=r["mlp"] == "swiglu", position=r["position"])


def megatron_flops_per_token(
    hidden: int, heads: int, kv_heads: int, layers: int, ffn: int, vocab: int, seq: int, gated: bool
) -> float:
    """Model FLOPs per token as Megatron-LM counts them (``num_floating_point_operations`` in
    megatron/training/training.py: 12·L·h²·((1 + g/a + s/h) + f/h·(3/2 if gated) + V/(2·L·h)),
    attention over the whole s×s square, forward and backward, no recomputation)."""
    h = hidden
    attention = 1 + kv_heads / heads + seq / h
    mlp = ffn / h * (1.5 if gated else 1.0)
    return 12.0 * layers * h * h * (attention + mlp + vocab / (2.0 * layers * h))


def _int(text: str, default: int | None = None) -> int | None:
    return int(text) if text.strip() else default


# --- llm-foundry -------------------------------------------------------------------------------

FOUNDRY_GPUS = {"h100_80gb": "h100", "a100_80gb": "a100-80gb", "a100_40gb": "a100-40gb"}
# Fusions of the MPT benchmark runs: torch LayerNorm and GELU are single kernels anyway
# (counted as "norm"); no SwiGLU or rotary; Composer's default optimizer for these yamls is
# decoupled LionW/AdamW run per tensor (foreach), counted unfused; eager cross-entropy.
FOUNDRY_FUSED = "none,norm"


def foundry_runs() -> list[Run]:
    """llm_foundry_mpt.csv: FSDP (full shard) over 8 GPUs, llm-foundry's Triton attention."""
    mpt = {r["model"]: r for r in _rows(DATA / "mpt_shapes.csv")}
    out = []
    for r in _rows(DATA / "llm_foundry_mpt.csv"):
        shape = mpt[r["model"]]
        d = int(shape["d_model"])
        dims = {
            Dim.HIDDEN: d,
            Dim.HEADS: int(shape["n_heads"]),
            Dim.LAYERS: int(shape["n_layers"]),
            Dim.FFN: int(shape["expansion_ratio"]) * d,
            Dim.VOCAB: int(shape["vocab_size"]),
            Dim.GRAD_ACCUM: int(r["grad_accum"]),
        }
        config = model_config(f"mpt-{r['model']}", dims, gated=False, position="learned")
        micro = int(r["micro_batch"])
        gpus = int(r["gpus"])
        settings = {
            "dtype": "bf16",
            "micro_batch": micro,
            "seq_len": int(r["seq_len"]),
            "data_parallel": gpus,
            "global_batch": micro * gpus * int(r["grad_accum"]),
            "sharded": True,
            "recompute": "full" if r["activation_checkpointing"] == "True" else "none",
            "fused": FOUNDRY_FUSED,
            "attention": "triton",
            "framework": "foundry",
        }
        out.append(
            Run(
                table="llm-foundry",
                part=r["table"],
                label=f"{r['model']} s={r['seq_len']} b={micro}",
                split=r["split"],
                gpu=FOUNDRY_GPUS[r["gpu"]],
                config=config,
                settings=MappingProxyType(settings),
                tokens_per_s_per_gpu=float(r["tokens_per_s_per_gpu"]),
            )
        )
    return out


# --- NeMo --------------------------------------------------------------------------------------

# What the NeMo launcher configs (model_shapes.csv's source) state beyond the shape, by model:
# activations_checkpoint_granularity, ub_tp_comm_overlap and cross_entropy_loss_fusion
# (launcher_scripts/conf/training/<family>/<model>.yaml at 6daee02a).
NEMO_RUN = {
    "GPT3-5B": ("none", False, False),
    "GPT3-20B": ("none", True, False),
    "GPT3-175B": ("none", True, False),
    "LLAMA2-7B": ("none", False, True),
    "LLAMA2-13B": ("none", False, True),
    "LLAMA2-70B": ("none", True, True),
    "LLAMA3-8B": ("none", False, True),
    "LLAMA3-70B": ("none", True, True),
    "Nemotron-8B": ("none", True, True),
    "Nemotron-22B": ("none", True, True),
    "Nemotron-340B": ("selective", True, True),
}
# NeMo's make_vocab_size_divisible_by in every launcher config.
NEMO_VOCAB_MULTIPLE = 128


def nemo_runs() -> list[Run]:
    """nemo_performance_summary.csv."""
    out = []
    for r in _rows(DATA / "nemo_performance_summary.csv"):
        model = r["model"]
        tp, pp, cp = _int(r["tp"]), _int(r["pp"]), _int(r["cp"], 1)
        gpus = int(r["gpus"])
        seq = int(r["seq_len"])
        skip = ""
        if r["task"] == "lora":
            skip = "LoRA: frozen base weights (no weight gradients or optimizer) are not modelled"
        elif tp is None or pp is None:
            skip = "parallel settings not published (the best configuration without CP)"
        tp, pp = tp or 1, pp or 1
        cp = cp or 1
        dp = _int(r["dp"]) or max(1, gpus // (tp * pp * cp))
        micro = _int(r["micro_batch"], 1) or 1
        recompute, overlap, ce = NEMO_RUN[model]
        config = shape_config(model, tp, pad=NEMO_VOCAB_MULTIPLE)
        vp = _int(r["vp"], 1) or 1
        settings = {
            "dtype": r["dtype"],
            "micro_batch": micro,
            "seq_len": seq,
            "tp": tp,
            "pp": pp,
            "vp": vp,
            "cp": cp,
            "data_parallel": dp,
            "global_batch": int(r["global_batch"]),
            "gpus_per_node": int(r["gpus_per_node"]),
            "recompute": recompute,
            "tp_overlap": overlap and tp > 1,
            "fused": "default,+cross_entropy" if ce else "default",
            "attention": TE_ATTENTION,
            "framework": "megatron",
        }
        published = r["tokens_per_s_per_gpu"]
        derived = ""
        if published:
            tokens = float(published)
        else:
            s = shapes()[model]
            per_token = megatron_flops_per_token(
                int(s["hidden"]),
                int(s["heads"]),
                int(s["kv_heads"]),
                int(s["layers"]),
                int(s["ffn"]),
                int(s["vocab"]),
                seq,
                s["mlp"] == "swiglu",
            )
            tokens = float(r["model_tflops_per_gpu"]) * 1e12 / per_token
            derived = "TFLOP/s per GPU / Megatron's FLOPs per token"
        out.append(
            Run(
                table="nemo",
                part=r["table"],
                label=f"{model} {r['task']} {gpus} GPUs s={seq} tp{tp} pp{pp} cp{cp} vp{vp}",
                split=r["split"],
                gpu=r["gpu"],
                config=config,
                settings=MappingProxyType(settings),
                tokens_per_s_per_gpu=tokens,
                derived=derived,
                skip=skip,
            )
        )
    return out


# --- torchtitan --------------------------------------------------------------------------------

# torchtitan's activation checkpointing as the tables write it → the step's recompute:
# "selective op" is per-op SAC (op), "selective layer" checkpoints every second layer
# (selective_ac_option "2", the config default at these commits: layer), "selective" alone is
# the 2024-12 configs' default, op (train_configs/llama3_8b.toml at 9dec370:
# mode = 'selective', selective_ac_option = 'op').
TITAN_RECOMPUTE = {
    "none": "none",
    "full": "full",
    "selective op": "op",
    "selective": "op",
    "selective layer": "layer",
}
# The H100 of torchtitan's 2024-12 and 2025-06 tables: "H100 96GB HBM2e with 2.4 TB/sec",
# 500 W (its peaks are the SXM's, which the tables' MFU uses; the SXM5 80GB's limit is 700 W).
TITAN_H100_HBM2E_GBS = 2400.0
# Fusions: eager PyTorch runs every op as its own kernels; torch.compile fuses the norms, the
# SwiGLU product, rotary embedding and torchao's float8 amax-and-cast into Triton kernels.
TITAN_FUSED = {"no": "none", "yes": "norm,swiglu,rope,fp8_cast", "": "none"}


def torchtitan_runs() -> list[Run]:
    """torchtitan_performance.csv."""
    out = []
    for r in _rows(DATA / "torchtitan_performance.csv"):
        model = r["model"]
        tp, pp, cp = int(r["tp"]), int(r["pp"]), int(r["cp"])
        fsdp = int(r["fsdp"])
        micro = int(r["local_batch"])
        seq = int(r["seq_len"])
        compiled = r["compile"] == "yes"
        float8 = r["float8"] not in ("no", "")
        gpus = int(r["gpus"])
        # Pipeline schedules: torchtitan's 1F1B runs one stage per rank; its interleaved
        # schedule at these commits builds layers-per-stage so that each rank holds two
        # (not published; the 1F1B and interleaved rows are told apart by it).
        vp = 2 if r["pp_schedule"] == "Interleaved 1F1B" else 1
        settings = {
            "dtype": "fp8" if float8 else "bf16",
            "micro_batch": micro,
            "seq_len": seq,
            "tp": tp,
            "pp": pp,
            "vp": vp,
            "cp": cp,
            "data_parallel": fsdp,
            "sharded": True,
            "gpus_per_node": _int(r["gpus_per_node"], 8) or 8,
            "recompute": TITAN_RECOMPUTE[r["activation_checkpointing"]],
            "tp_overlap": r["tp_variant"] == "async",
            "fused": TITAN_FUSED[r["compile"]],
            "attention": TORCH_ATTENTION,
            "framework": "compile" if compiled else "pytorch",
        }
        if pp > 1:
            # torchtitan's pipeline splits the local batch into micro-batches of
            # parallelism.pipeline_parallel_microbatch_size (default 1 at these commits).
            settings["global_batch"] = micro * fsdp
            settings["micro_batch"] = 1
        overrides: dict[str, float] = {}
        if r["table"].startswith(("2024-12", "2025-06_asynctp")):
            overrides["mem_bw_gbs"] = TITAN_H100_HBM2E_GBS
        skip = ""
        if not r["tokens_per_s_per_gpu"]:
            skip = "no throughput published"
        out.append(
            Run(
                table="torchtitan",
                part=r["table"],
                label=(
                    f"{model} {gpus} GPUs fsdp{fsdp} tp{tp} pp{pp} cp{cp} s={seq}"
                    f"{' compile' if compiled else ''}{' float8' if float8 else ''}"
                    f"{' async-tp' if r['tp_variant'] == 'async' else ''}"
                ),
                split=r["split"],
                gpu=r["gpu"],
                config=shape_config(model),
                settings=MappingProxyType(settings),
                tokens_per_s_per_gpu=float(r["tokens_per_s_per_gpu"] or "nan"),
                skip=skip,
                gpu_overrides=MappingProxyType(overrides),
            )
        )
    return out


# --- Megatron-LM -------------------------------------------------------------------------------


def narayanan_flops_per_token(hidden: int, layers: int, vocab: int, seq: int) -> float:
    """FLOPs per token as Narayanan et al. 2021 (arXiv:2104.04473, Eq. 3) count them:
    96·l·h²·(1 + s/(6h) + V/(16·l·h)) per token, which includes the recomputed forward."""
    h = hidden
    return 96.0 * layers * h * h * (1 + seq / (6 * h) + vocab / (16 * layers * h))


def megatron_runs() -> list[Run]:
    """megatron_lm_scaling.csv. Not published, and taken as stated here: micro-batch 1; 2024:
    TE fused attention, no recompute (the README lists the overlaps but no recomputation), and
    one layer per interleaved stage (v = layers / p): the README's "pipeline-parallel
    communication overlapped" is Megatron's --overlap-p2p-communication, which runs with the
    interleaved schedule only, and where layers / p is prime (119B: 23, 462B: 7) one layer per
    stage is the only interleaving there is (NeMo's performance configs interleave so too:
    Llama 2 70B pp4 vp20, Nemotron-340B pp8 vp12); 2021: fp16, unfused attention (no fused
    kernel existed), no interleaving, full recomputation (the FLOP count the table uses
    includes it)."""
    out = []
    for r in _rows(DATA / "megatron_lm_scaling.csv"):
        h, layers = int(r["hidden"]), int(r["layers"])
        vocab, seq = int(r["vocab"]), int(r["seq_len"])
        tp, pp, dp = int(r["tp"]), int(r["pp"]), int(r["dp"])
        recent = r["table"] == "2024_h100"
        # Heads: published for 2024; for 2021 not in the README's table: 128-wide heads
        # (Megatron's GPT recipes of that release use head dim 128 for these widths).
        heads = int(r["heads"]) if r["heads"] else max(1, h // 128)
        dims = {
            Dim.HIDDEN: h,
            Dim.HEADS: heads,
            Dim.LAYERS: layers,
            Dim.FFN: 4 * h,
            Dim.VOCAB: padded(vocab, 128 * tp),
        }
        config = model_config(r["model"], dims, gated=False, position="learned")
        settings = {
            "dtype": r["dtype"],
            "micro_batch": 1,
            "seq_len": seq,
            "tp": tp,
            "pp": pp,
            "vp": layers // pp if recent and pp > 1 else 1,
            "data_parallel": dp,
            "global_batch": int(r["global_batch"]),
            "gpus_per_node": _int(r["gpus_per_node"], 8) or 8,
            "recompute": "none" if recent else "full",
            "tp_overlap": recent and tp > 1,
            "fused": "default",
            "attention": TE_ATTENTION if recent else "unfused",
            "framework": "megatron",
        }
        tflops = float(r["tflops_per_gpu"]) * 1e12
        if recent:
            per_token = megatron_flops_per_token(h, heads, heads, layers, 4 * h, vocab, seq, False)
            derived = "TFLOP/s per GPU / Megatron's FLOPs per token"
        else:
            per_token = narayanan_flops_per_token(h, layers, vocab, seq)
            derived = "TFLOP/s per GPU / Narayanan et al.'s FLOPs per token (with recompute)"
        out.append(
            Run(
                table="megatron",
                part=r["table"],
                label=f"{r['model']} {r['gpus']} GPUs tp{tp} pp{pp} dp{dp}",
                split=r["split"],
                gpu=r["gpu"],
                config=config,
                settings=MappingProxyType(settings),
                tokens_per_s_per_gpu=tflops / per_token,
                derived=derived,
            )
        )
    return out


# --- our H200 ----------------------------------------------------------------------------------

# benchmarks/results/nvidia-h200/SPLIT.md, train.csv: by variant.
H200_SPLIT = {
    "base": "fit",
    "vocab50257": "fit",
    "ffn5504": "held_out",
    "ffn5461": "held_out",
    "h2560-20x128": "fit",
    "h2560-32x80": "fit",
    "ffn5464": "held_out",
}


def h200_runs() -> list[Run]:
    """Our H200 train-step rows: plain PyTorch eager on one GPU (F.rms_norm, eager RoPE, SwiGLU
    and cross-entropy, fused AdamW; gpu_validate.py), the attention kernel SDPA chose."""
    out = []
    for r in _rows(H200_TRAIN):
        if r["status"] != "ok":
            continue
        dims = {
            Dim.HIDDEN: int(r["hidden"]),
            Dim.HEADS: int(r["heads"]),
            Dim.HEAD_DIM: int(r["head_dim"]),
            Dim.LAYERS: int(r["layers"]),
            Dim.FFN: int(r["ffn"]),
            Dim.VOCAB: int(r["vocab"]),
        }
        config = model_config(r["variant"], dims, gated=True, position="rope")
        settings = {
            "dtype": r["dtype"],
            "micro_batch": int(r["batch"]),
            "seq_len": int(r["seq"]),
            "recompute": "none",
            "fused": "none,norm,adamw",
            "attention": r["sdpa_choice"] if r["sdpa_choice"] in ("cudnn", "flash") else "sdpa",
            "framework": "pytorch",
        }
        out.append(
            Run(
                table="h200",
                part="train",
                label=r["variant"],
                split=H200_SPLIT[r["variant"]],
                gpu="h200",
                config=config,
                settings=MappingProxyType(settings),
                tokens_per_s_per_gpu=float(r["tokens_per_s"]),
            )
        )
    return out


TABLES = {
    "llm-foundry": foundry_runs,
    "nemo": nemo_runs,
    "torchtitan": torchtitan_runs,
    "megatron": megatron_runs,
    "h200": h200_runs,
}


def all_runs(tables: tuple[str, ...] | None = None) -> list[Run]:
    """Every published run of ``tables`` (default: all), in table order."""
    return [run for name in tables or tuple(TABLES) for run in TABLES[name]()]
