"""The runner: target resolution, dtype fallback, filtering and estimates."""

from __future__ import annotations

from conftest import configs_of, parse_text

from shapelint.core.dtypes import runnable_dtype
from shapelint.engine.options import LintOptions, TargetOptions
from shapelint.engine.pipeline import lint_document
from shapelint.engine.target import DEFAULT_SEQ_LEN, resolve_target
from shapelint.hardware.gpus import lookup

H100, V100, A100 = lookup("h100"), lookup("v100"), lookup("a100")
GPT2 = '{"n_embd": 768, "n_head": 12, "n_layer": 12, "n_positions": 1024, "vocab_size": 50257}'


def test_flags_win_then_config_then_settings_then_defaults() -> None:
    (c,) = configs_of(
        '{"hidden_size": 64, "num_attention_heads": 1, "num_hidden_layers": 1, "torch_dtype": "float16"}'
    )
    plain = LintOptions(gpus=(H100,))
    t = resolve_target(c, H100, plain)
    assert (t.dtype, t.micro_batch, t.seq_len, t.tp, t.mode) == (
        "fp16",
        1,
        DEFAULT_SEQ_LEN,
        1,
        "train",
    )
    settings = LintOptions(gpus=(H100,), defaults=TargetOptions(dtype="fp8", micro_batch=4, tp=2))
    t = resolve_target(c, H100, settings)
    assert (t.dtype, t.micro_batch, t.tp) == ("fp16", 4, 2)  # the config's dtype beats settings
    flags = LintOptions(
        gpus=(H100,), flags=TargetOptions(dtype="bf16", micro_batch=8), defaults=settings.defaults
    )
    t = resolve_target(c, H100, flags)
    assert (t.dtype, t.micro_batch, t.tp) == ("bf16", 8, 2)


def test_max_context_is_capped_but_training_seq_is_not() -> None:
    (c,) = configs_of(
        '{"hidden_size": 64, "num_attention_heads": 1, "num_hidden_layers": 1, "max_position_embeddings": 131072}'
    )
    assert resolve_target(c, H100, LintOptions(gpus=(H100,))).seq_len == DEFAULT_SEQ_LEN
    (c,) = configs_of(
        "num_layers: 2\nhidden_size: 64\nnum_attention_heads: 1\nmodel_parallel_size: 1\nseq_length: 8192\n",
        "yaml",
        "c.yml",
    )
    assert resolve_target(c, H100, LintOptions(gpus=(H100,))).seq_len == 8192


def test_dtype_fallback_on_gpus_without_it() -> None:
    assert runnable_dtype("bf16", V100.peak_tflops) == "fp16"
    assert runnable_dtype("fp8", A100.peak_tflops) == "bf16"
    assert runnable_dtype("bf16", H100.peak_tflops) == "bf16"


def test_estimates_per_gpu_and_min_slowdown() -> None:
    doc = parse_text(GPT2)
    _, findings = lint_document(doc, LintOptions(gpus=(H100, A100, V100)))
    (f,) = findings
    assert [e.gpu for e in f.estimates] == ["H100-SXM", "A100-SXM-80GB", "V100-SXM2"]
    assert all(e.slowdown_pct > 1 for e in f.estimates)
    _, hidden = lint_document(doc, LintOptions(gpus=(H100,), min_slowdown=1000))
    assert hidden == []


def test_errors_are_never_hidden_by_min_slowdown() -> None:
    doc = parse_text('{"hidden_size": 3000, "num_attention_heads": 32, "num_hidden_layers": 2}')
    _, findings = lint_document(doc, LintOptions(gpus=(H100,), min_slowdown=1000))
    assert "SL003" in {f.code for f in findings}


def test_per_file_ignores_and_yaml_suppressions() -> None:
    doc = parse_text(GPT2, path="models/gpt2/config.json")
    opts = LintOptions(gpus=(H100,), per_file_ignores={"models/**/config.json": ("SL101",)})
    assert lint_document(doc, opts)[1] == []
    yaml_text = (
        "n_embd: 768\nn_head: 12\nn_layer: 12\nvocab_size: 50257  # shapelint: ignore[SL101]\n"
    )
    doc = parse_text(yaml_text, "yaml", "c.yaml")
    assert lint_document(doc, LintOptions(gpus=(H100,)))[1] == []


def test_text_report_says_time_per_token_for_batch_fixes() -> None:
    from dataclasses import replace

    from shapelint.core.model import Dim, Estimate, Fix
    from shapelint.report.text import estimate_text

    (f,) = lint_document(parse_text(GPT2), LintOptions(gpus=(H100,)))[1]
    assert estimate_text(f).endswith("step time on H100-SXM")
    assert f.fix is not None
    batch_fix = replace(f.fix, dims=((Dim.MICRO_BATCH, 4),))
    est = Estimate("H100-SXM", 12.0, 1.0, 0.9)
    text = estimate_text(replace(f, fix=batch_fix, estimates=(est, replace(est, gpu="A100"))))
    assert text == "+12.0% time per token on H100-SXM, +12.0% on A100"
    assert isinstance(batch_fix, Fix)
