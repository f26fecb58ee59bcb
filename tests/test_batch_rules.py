"""SL2xx batch and parallelism rules, and estimates of fixes that change the target."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest
from conftest import configs_of, parse_text

from shapelint.core.model import Dim, Finding, Fix, ModelConfig, Target, Value
from shapelint.core.source import Span
from shapelint.engine.options import LintOptions, TargetOptions
from shapelint.engine.pipeline import lint_document
from shapelint.engine.runner import lint_paths
from shapelint.engine.target import fixed_target, resolve_target
from shapelint.hardware.gpus import lookup
from shapelint.perf.estimate import cached_step_time, estimate_fix, step_time, tokens_per_gpu
from shapelint.rules import (
    sl201_tokens_per_microbatch,
    sl202_wave_quantization,
    sl203_attention_batch,
    sl204_memory_bound,
    sl205_tensor_parallel_too_large,
)
from shapelint.rules.base import RuleModule

H100 = lookup("H100-SXM")
A100 = lookup("A100-SXM-80GB")
SPAN = Span("config.json", 1, 1, 1, 2, 0, 1)
SL2 = (
    sl201_tokens_per_microbatch,
    sl202_wave_quantization,
    sl203_attention_batch,
    sl204_memory_bound,
    sl205_tensor_parallel_too_large,
)


def neox(**keys: object) -> str:
    """A GPT-NeoX YAML config (flow style, as NeoX writes them) with these keys."""
    body = {"pipe_parallel_size": 1, "model_parallel_size": 1, **keys}
    lines = [f'  "{k}": {str(v).lower() if isinstance(v, bool) else v},' for k, v in body.items()]
    return "# GPT-NeoX\n{\n" + "\n".join(lines) + "\n}\n"


SMALL = {"num_layers": 24, "hidden_size": 768, "num_attention_heads": 12}


def run_rule(
    module: RuleModule, text: str, fmt: str = "yaml", gpu: object = H100, **flags: object
) -> list[Finding]:
    """The rule's findings on ``text``, with the target resolved as the runner does."""
    options = LintOptions(gpus=(gpu,), flags=TargetOptions(**flags))  # type: ignore[arg-type]
    out: list[Finding] = []
    for config in configs_of(text, fmt, f"config.{fmt}"):
        out.extend(module.check(config, resolve_target(config, gpu, options)))  # type: ignore[arg-type]
    return out


def model(**dims: int) -> ModelConfig:
    return ModelConfig(
        name="test",
        path="config.json",
        dialect="test",
        dims={Dim(k): Value(v, k, SPAN) for k, v in dims.items()},
        gated_mlp=False,
    )


GPT2_350M = dict(hidden=768, heads=12, layers=24, ffn=3072, vocab=50304)


# --- estimates of fixes that change the target -------------------------------------------


def test_fixed_target_is_compared_per_token() -> None:
    config = model(**GPT2_350M)
    now_target = Target(gpu=H100, micro_batch=3, seq_len=256)
    after = replace(now_target, micro_batch=6)
    fix = Fix("b 3 → 6", "safe", (), ((Dim.MICRO_BATCH, 6),))
    est = estimate_fix(config, now_target, fix, after)
    assert est is not None
    fixed_raw = step_time(config.with_dims({Dim.MICRO_BATCH: 6}), after).total_s
    # The fixed step runs twice the tokens: its time is reported for the as-written tokens.
    assert est.fixed_step_time_s == pytest.approx(fixed_raw * (3 * 256) / (6 * 256))
    assert est.step_time_s == pytest.approx(step_time(config, now_target).total_s)
    assert est.slowdown_pct == pytest.approx((est.step_time_s / est.fixed_step_time_s - 1) * 100)
    assert est.slowdown_pct > 5  # twice the micro-batch fills the small GEMMs better
    # Without the fixed target the model sees no change (the micro-batch is not a model dim).
    same = estimate_fix(config, now_target, fix)
    assert same is not None and same.slowdown_pct == pytest.approx(0.0, abs=1e-9)


def test_sequence_and_tensor_parallel_changes_scale_by_tokens_per_gpu() -> None:
    config = model(**GPT2_350M)
    now_target = Target(gpu=H100, micro_batch=4, seq_len=1000, tp=2)
    after = replace(now_target, seq_len=1024, tp=1)
    fix = Fix("s, t", "unsafe", (), ((Dim.SEQ_LEN, 1024), (Dim.TP, 1)))
    est = estimate_fix(config, now_target, fix, after)
    assert est is not None
    fixed_raw = step_time(config.with_dims(dict(fix.dims)), after).total_s
    # 4·1000/2 tokens per GPU as written, 4·1024/1 after the fix.
    assert tokens_per_gpu(now_target) == 2000 and tokens_per_gpu(after) == 4096
    assert est.fixed_step_time_s == pytest.approx(fixed_raw * 2000 / 4096)
    decode = Target(gpu=H100, micro_batch=8, seq_len=4096, mode="decode", tp=2)
    assert tokens_per_gpu(decode) == 4  # one token per sequence


def test_runner_estimates_at_the_fixed_target_even_over_a_flag() -> None:
    text = neox(**SMALL, seq_length=256, train_micro_batch_size_per_gpu=3)
    doc = parse_text(text, "yaml", "config.yaml")
    (config,) = configs_of(text, "yaml", "config.yaml")
    options = LintOptions(gpus=(H100,), select=("SL202",))
    _, findings = lint_document(doc, options)
    (finding,) = findings
    assert finding.fix is not None and finding.estimates
    new_b = dict(finding.fix.dims)[Dim.MICRO_BATCH]
    assert isinstance(new_b, int) and new_b != 3
    (est,) = finding.estimates
    after = replace(resolve_target(config, H100, options), micro_batch=new_b)
    expected = step_time(config.with_dims(dict(finding.fix.dims)), after).total_s * 3 / new_b
    assert est.fixed_step_time_s == pytest.approx(expected)
    assert est.slowdown_pct > 1
    # A --micro-batch flag equal to the file's value does not pin the fixed target.
    flagged = LintOptions(gpus=(H100,), flags=TargetOptions(micro_batch=3))
    pinned = fixed_target(
        config.with_dims({Dim.MICRO_BATCH: new_b}), {Dim.MICRO_BATCH: new_b}, H100, flagged
    )
    assert pinned.micro_batch == new_b


def test_step_cache_is_per_config_object_and_target() -> None:
    config = model(**GPT2_350M)
    target = Target(gpu=H100, micro_batch=2, seq_len=512)
    first = cached_step_time(config, target)
    assert cached_step_time(config, replace(target)) is first
    assert cached_step_time(config, replace(target, micro_batch=4)) is not first
    twin = model(**GPT2_350M)
    assert cached_step_time(twin, target) is not first
    assert cached_step_time(twin, target).total_s == pytest.approx(first.total_s)


# --- SL201 tokens-per-microbatch ---------------------------------------------------------


def test_sl201_needs_a_stated_batch_or_training_sequence() -> None:
    hf = '{"hidden_size": 768, "num_attention_heads": 12, "num_hidden_layers": 12}\n'
    assert run_rule(sl201_tokens_per_microbatch, hf, "json", seq_len=1000, micro_batch=3) == []
    # NeoX's max_position_embeddings is the model's context, not the length a run trains at.
    text = neox(**SMALL, max_position_embeddings=1000, train_micro_batch_size_per_gpu=3)
    (f,) = run_rule(sl201_tokens_per_microbatch, text)
    assert f.key == "train_micro_batch_size_per_gpu"
    assert f.fix is not None and dict(f.fix.dims)[Dim.MICRO_BATCH] == 8
    # No grad accumulation or global batch: the global batch changes, so the fix is unsafe.
    assert f.fix.applicability == "unsafe"
    assert "H100-SXM" in f.message and "3·1000 = 3000" in f.message


def test_sl201_prefers_a_micro_batch_that_keeps_the_global_batch() -> None:
    text = neox(
        **SMALL,
        max_position_embeddings=1000,
        train_micro_batch_size_per_gpu=3,
        gradient_accumulation_steps=16,
    )
    (f,) = run_rule(sl201_tokens_per_microbatch, text)
    assert f.fix is not None and f.fix.applicability == "safe"
    dims = dict(f.fix.dims)
    assert dims[Dim.MICRO_BATCH] == 8 and dims[Dim.GRAD_ACCUM] == 6  # 3·16 = 8·6
    assert [e.new for e in f.fix.edits] == [8, 6]


def test_sl201_quiet_in_decode_and_when_a_flag_overrides() -> None:
    text = neox(**SMALL, seq_length=1000, train_micro_batch_size_per_gpu=4)
    assert run_rule(sl201_tokens_per_microbatch, text, mode="decode") == []
    assert run_rule(sl201_tokens_per_microbatch, text, seq_len=1024) == []
    # Overriding the micro-batch still reports at the stated sequence length.
    (f,) = run_rule(sl201_tokens_per_microbatch, text, micro_batch=3)
    assert f.key == "seq_length" and "3·1000" in f.message


# --- SL202 wave-quantization -------------------------------------------------------------


def test_sl202_fix_edits_only_the_micro_batch_without_accumulation() -> None:
    unsafe = neox(**SMALL, seq_length=256, train_micro_batch_size_per_gpu=3)
    (f,) = run_rule(sl202_wave_quantization, unsafe)
    assert f.fix is not None and f.fix.applicability == "unsafe"
    assert [e.key for e in f.fix.edits] == ["train_micro_batch_size_per_gpu"]
    assert "wave efficiency of 0." in f.message and "132 SMs" in f.message
    # A stated global batch that the new micro-batch divides keeps the fix safe.
    kept = neox(**SMALL, seq_length=256, train_micro_batch_size_per_gpu=3, train_batch_size=96)
    (g,) = run_rule(sl202_wave_quantization, kept)
    assert g.fix is not None and g.fix.applicability == "safe"
    new_b = dict(g.fix.dims)[Dim.MICRO_BATCH]
    assert isinstance(new_b, int) and 96 % new_b == 0


def last_wave_fill(m: int, n: int, sms: int, tile: int = 128) -> float:
    """Share of the SMs busy over a GEMM's waves at square tiles, by hand: ⌈M/t⌉·⌈N/t⌉ tiles
    over whole waves of ``sms``."""
    tiles = -(-m // tile) * -(-n // tile)
    return tiles / (-(-tiles // sms) * sms)


def test_sl202_picks_a_faster_micro_batch_with_fuller_waves() -> None:
    text = neox(**SMALL, seq_length=256, train_micro_batch_size_per_gpu=3)
    (config,) = configs_of(text, "yaml", "config.yaml")
    target = resolve_target(config, H100, LintOptions(gpus=(H100,)))
    (f,) = sl202_wave_quantization.check(config, target)
    assert f.fix is not None
    new_b = dict(f.fix.dims)[Dim.MICRO_BATCH]
    assert isinstance(new_b, int) and 2 <= new_b <= 6
    # By hand, the MLP up-projection (M = b·256 tokens, N = 4·768) on 132 SMs: at b = 3,
    # 6·24 = 144 tiles of 128×128 run in two waves, 144/264 = 0.545 of them busy.
    assert last_wave_fill(3 * 256, 3072, 132) == pytest.approx(144 / 264)
    assert last_wave_fill(new_b * 256, 3072, 132) > 144 / 264

    # The performance model (not the rule) agrees that the new micro-batch is faster per token.
    def per_token(b: int) -> float:
        return step_time(config, replace(target, micro_batch=b)).total_s / (b * 256)

    assert per_token(new_b) < per_token(3)


def test_sl202_leaves_memory_bound_steps_to_sl204() -> None:
    text = neox(**SMALL, seq_length=256, train_micro_batch_size_per_gpu=3)
    assert run_rule(sl202_wave_quantization, text, mode="decode") == []
    assert run_rule(sl204_memory_bound, text, mode="decode")


# --- SL203 attention-batch ---------------------------------------------------------------


def test_sl203_unfused_attention_counts_gemm_tiles() -> None:
    text = neox(
        **{**SMALL, "num_attention_heads": 4},
        model_parallel_size=2,
        seq_length=256,
        train_micro_batch_size_per_gpu=1,
    )
    (f,) = run_rule(sl203_attention_batch, text, attention="unfused")
    assert "tiles in the batched QKᵀ GEMM" in f.message and "H100-SXM" in f.message
    assert f.fix is not None
    (flash,) = run_rule(sl203_attention_batch, text)
    assert "1·2·2 = 4 flash-attention thread blocks" in flash.message


def test_sl203_needs_a_stated_batch_value_for_the_fill_check() -> None:
    # Four heads at the default micro-batch 1: few thread blocks, but nothing batch-like is
    # stated in the file, so there is nothing to point at.
    hf = '{"hidden_size": 256, "num_attention_heads": 4, "num_hidden_layers": 4}\n'
    assert run_rule(sl203_attention_batch, hf, "json", seq_len=256) == []
    stated_tp = '{"hidden_size": 256, "num_attention_heads": 4, "num_hidden_layers": 4, "tensor_parallel_size": 2}\n'
    (f,) = run_rule(sl203_attention_batch, stated_tp, "json", seq_len=256)
    assert f.key == "tensor_parallel_size" and f.fix is None
    assert run_rule(sl203_attention_batch, stated_tp, "json", seq_len=256, mode="decode") == []


def test_sl203_does_not_restate_sl005() -> None:
    # (b·a)/t not an integer implies a % t != 0, which SL005 reports as an error: one finding
    # per fact, so SL203 stays silent on that config (at any micro-batch).
    hf = '{"hidden_size": 768, "num_attention_heads": 12, "num_hidden_layers": 12}\n'
    assert run_rule(sl203_attention_batch, hf, "json", tp=8) == []
    assert run_rule(sl203_attention_batch, hf, "json", tp=8, micro_batch=2) == []
    options = LintOptions(gpus=(H100,), flags=TargetOptions(tp=8), min_slowdown=0.0)
    _, found = lint_document(parse_text(hf), options)
    codes = [f.code for f in found]
    # The heads error is reported once: by SL301 for the target's engines (SL005 defers).
    assert "SL301" in codes and "SL005" not in codes and "SL203" not in codes
    sl301 = next(f for f in found if f.code == "SL301")
    assert "attention heads (12)" in sl301.message


# --- SL204 memory-bound ------------------------------------------------------------------


def test_sl204_ridge_micro_batch_is_the_smallest_that_reaches_the_ridge() -> None:
    text = neox(**SMALL, seq_length=2048, train_micro_batch_size_per_gpu=2)
    (config,) = configs_of(text, "yaml", "config.yaml")
    options = LintOptions(gpus=(A100,), flags=TargetOptions(mode="decode"))
    target = resolve_target(config, A100, options)
    (f,) = sl204_memory_bound.check(config, target)
    assert "A100-SXM-80GB" in f.message and "decode" in f.message
    assert f.fix is not None
    ridge_b = dict(f.fix.dims)[Dim.MICRO_BATCH]
    assert isinstance(ridge_b, int)
    # The model's ridge: achievable FLOP/s over achievable bytes/s (the measured streaming
    # fraction of the datasheet bandwidth).
    bandwidth = A100.mem_bw_gbs * 1e9 * A100.memory_stream_fraction
    ridge = A100.achievable_flops("bf16") / bandwidth
    assert f"ridge point of {ridge:.0f} FLOP/byte" in f.message

    def share(b: int) -> float:
        return sl202_wave_quantization.memory_bound_share(
            sl202_wave_quantization.step_at(config, target, b)
        )

    assert share(2) == pytest.approx(1.0)
    assert share(ridge_b) <= 0.5 < share(ridge_b - 1)
    assert f"micro-batch {ridge_b} brings most of them to the ridge" in f.message
    # The projection GEMMs' combined intensity at the ridge micro-batch is near the ridge.
    step = sl202_wave_quantization.step_at(config, target, ridge_b)
    assert 0.5 * ridge < sl204_memory_bound.projection_intensity(step) < 2 * ridge


def test_sl204_without_a_stated_micro_batch_has_no_fix() -> None:
    hf = (
        '{"hidden_size": 2048, "num_attention_heads": 16, "num_hidden_layers": 24,'
        ' "intermediate_size": 8192, "tensor_parallel_size": 2}\n'
    )
    (f,) = run_rule(sl204_memory_bound, hf, "json", mode="decode")
    assert f.key == "tensor_parallel_size" and f.fix is None
    no_anchor = (
        '{"hidden_size": 2048, "num_attention_heads": 16, "num_hidden_layers": 24,'
        ' "intermediate_size": 8192}\n'
    )
    assert run_rule(sl204_memory_bound, no_anchor, "json", mode="decode") == []


def test_sl204_narrow_layers_never_reach_the_ridge() -> None:
    text = neox(
        num_layers=6,
        hidden_size=128,
        num_attention_heads=4,
        seq_length=2048,
        train_micro_batch_size_per_gpu=32,
    )
    (f,) = run_rule(sl204_memory_bound, text)
    assert "no micro-batch up to 65536 does" in f.message and f.fix is None


# --- SL205 tensor-parallel-too-large -----------------------------------------------------


def test_sl205_names_a_smaller_tp_that_keeps_efficiency() -> None:
    hf = (
        '{"hidden_size": 1024, "num_attention_heads": 16, "num_hidden_layers": 24,'
        ' "intermediate_size": 4096, "vocab_size": 50304, "tensor_parallel_size": 8}\n'
    )
    (f,) = run_rule(sl205_tensor_parallel_too_large, hf, "json", seq_len=2048)
    assert f.fix is None and f.key == "tensor_parallel_size" and "H100-SXM" in f.message
    (config,) = configs_of(hf)
    target = resolve_target(
        config, H100, LintOptions(gpus=(H100,), flags=TargetOptions(seq_len=2048))
    )

    def tflops(t: int) -> float:
        # The compute alone: the rule leaves the tensor-parallel collectives out.
        step = cached_step_time(config, replace(target, tp=t))
        return step.flops / (step.gemm_s + step.memops_s)

    assert tflops(8) < 0.75 * tflops(1)
    keeps = int(f.message.split("tensor parallel ")[-1].split(" ")[0])
    assert keeps < 8 and tflops(keeps) >= 0.75 * tflops(1)
    bigger = [t for t in (4,) if t > keeps]
    assert all(tflops(t) < 0.75 * tflops(1) for t in bigger)
    assert run_rule(sl205_tensor_parallel_too_large, hf, "json", seq_len=2048, tp=1) == []
    assert run_rule(sl205_tensor_parallel_too_large, hf, "json", mode="decode") == []


def test_sl205_tp_from_a_flag_points_at_the_hidden_size() -> None:
    hf = (
        '{"hidden_size": 1024, "num_attention_heads": 16, "num_hidden_layers": 24,'
        ' "intermediate_size": 4096}\n'
    )
    (f,) = run_rule(sl205_tensor_parallel_too_large, hf, "json", tp=8, seq_len=2048)
    assert f.key == "hidden_size"


# --- every SL2xx rule on the shared corpus -----------------------------------------------


def test_sl2xx_on_the_corpus_point_at_stated_values(corpus: Path) -> None:
    options = LintOptions(gpus=(H100, A100), select=("SL2",), min_slowdown=0.0)
    result = lint_paths([str(corpus)], options)
    assert result.errors == []
    texts: dict[str, str] = {}
    for finding in result.findings:
        assert finding.code.startswith("SL2")
        text = texts.setdefault(finding.path, Path(finding.path).read_text(encoding="utf-8"))
        written = text[finding.span.start : finding.span.end]
        # YAML allows digit separators (500_000).
        assert written.strip("'\"").replace("_", "") == str(finding.value), finding.path
        assert "H100-SXM" in finding.message
        if finding.fix is not None:
            for est in finding.estimates:
                assert est.fixed_step_time_s > 0


def test_every_sl2xx_rule_has_examples_and_is_registered() -> None:
    from shapelint.rules import REGISTRY

    for module in SL2:
        assert REGISTRY[module.RULE.code] is module
        assert any(not e.valid for e in module.EXAMPLES)
