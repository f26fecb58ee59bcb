"""Engines as targets: ``--engine``, ``--pp/--ep/--cp``, settings, defaults from the config,
``shapelint engines``, every output format, and the engine rules through the pipeline."""

from __future__ import annotations

import io
import json
import re
from dataclasses import replace
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from conftest import REPO, parse_text

from shapelint import dialects
from shapelint.cli.main import main
from shapelint.core.model import Dim, Target
from shapelint.engine.options import LintOptions, TargetOptions
from shapelint.engine.pipeline import lint_document
from shapelint.engine.target import resolve_target
from shapelint.hardware import engines
from shapelint.hardware.gpus import lookup
from shapelint.rules import engine_rules, sl314_fp8_linear_left_bf16

# Qwen2-7B's shape (28 heads, 4 KV heads): vLLM issue #11797, cannot run at TP 8.
QWEN2_7B = (
    '{"architectures": ["Qwen2ForCausalLM"], "hidden_size": 3584, "num_attention_heads": 28,\n'
    ' "num_key_value_heads": 4, "intermediate_size": 18944, "num_hidden_layers": 28,\n'
    ' "vocab_size": 152064}\n'
)
# A Megatron-LM YAML in the layout of examples/gpt3/gpt_config.yaml.
MEGATRON = (
    "language_model:\n  num_layers: 30\n  hidden_size: 4096\n  num_attention_heads: 32\n"
    "  num_moe_experts: 8\n"
    "seq_length: 4095\n"
    "model_parallel:\n  tensor_model_parallel_size: 1\n  pipeline_model_parallel_size: 4\n"
    "  expert_model_parallel_size: 3\n  context_parallel_size: 2\n"
)
AWQ = (
    '{"architectures": ["Qwen2ForCausalLM"], "hidden_size": 8192, "num_attention_heads": 64,\n'
    ' "num_key_value_heads": 8, "intermediate_size": 29568, "num_hidden_layers": 80,\n'
    ' "vocab_size": 152064, "quantization_config": {"bits": 4, "group_size": 128,\n'
    ' "quant_method": "awq", "zero_point": true}}\n'
)


def run(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = main(list(argv), out, err)
    return code, out.getvalue(), err.getvalue()


def write(tmp_path: Path, name: str, text: str) -> str:
    path = tmp_path / name
    path.write_text(text)
    return str(path)


def codes(out: str) -> list[str]:
    return [f["code"] for f in json.loads(out)["findings"]]


def target_of(text: str, fmt: str = "json", **flags: Any) -> Target:
    config = dialects.extract(parse_text(text, fmt, f"c.{fmt}"))[0]
    options = LintOptions(gpus=(lookup("H100-SXM"),), flags=TargetOptions(**flags))
    return resolve_target(config, options.gpus[0], options)


def test_engine_flag_narrows_the_engines_a_rule_lists(tmp_path: Path) -> None:
    path = write(tmp_path, "config.json", QWEN2_7B)
    code, out, _ = run(path, "--tp", "8", "--select", "SL301", "--engine", "tgi")
    assert code == 1
    assert "`num_heads` must be divisible by `num_shards` (got `num_heads`: 28" in out
    assert "TGI db931fcf" in out and "vLLM" not in out
    _, out, _ = run(path, "--tp", "8", "--select", "SL301")  # every serve and train engine
    assert (
        "Total number of attention heads (28) must be divisible by tensor parallel size (8)" in out
    )
    for title in ("vLLM 0.34.0", "SGLang 0.5.23", "Megatron-LM", "TGI", "nanotron"):
        assert title in out


def test_engine_with_version_and_alias_is_accepted(tmp_path: Path) -> None:
    path = write(tmp_path, "config.json", QWEN2_7B)
    code, out, _ = run(path, "--tp", "8", "--select", "SL3", "--engine", "Megatron-LM@core_r0.14")
    assert code == 1 and "num_attention_heads (28) must be a multiple of" in out


def test_unknown_engine_is_a_usage_error(tmp_path: Path) -> None:
    path = write(tmp_path, "config.json", QWEN2_7B)
    code, _, err = run(path, "--engine", "vllmm")
    assert code == 2
    assert "unknown engine 'vllmm'" in err and "Traceback" not in err


@pytest.mark.parametrize("fmt", ["text", "json", "github", "sarif"])
def test_engine_findings_in_every_format(tmp_path: Path, fmt: str) -> None:
    path = write(tmp_path, "config.json", QWEN2_7B)
    code, out, _ = run(path, "--tp", "8", "--engine", "vllm", "--format", fmt, "--select", "SL3")
    assert code == 1
    assert "SL301" in out and "Total number of attention heads (28)" in out
    if fmt == "json":
        assert codes(out) == ["SL301"]
    if fmt == "sarif":
        schema = json.loads(
            (REPO / "tests" / "data" / "sarif" / "sarif-schema-2.1.0.json").read_text()
        )
        jsonschema.Draft4Validator(schema).validate(json.loads(out))
    if fmt == "github":
        assert out.startswith("::error ")


def test_megatron_yaml_reads_its_parallel_sizes_and_runs_on_megatron(tmp_path: Path) -> None:
    target = target_of(MEGATRON, "yaml")
    engines = ("megatron", "transformer-engine")  # Megatron's default transformer_impl
    assert (target.pp, target.ep, target.cp, target.engines) == (4, 3, 2, engines)
    path = write(tmp_path, "gpt.yaml", MEGATRON)
    code, out, _ = run(path, "--format", "json", "--select", "SL3")
    assert code == 1
    assert sorted(codes(out)) == ["SL303", "SL304", "SL305"]


def test_flags_override_the_parallel_sizes_a_config_states(tmp_path: Path) -> None:
    path = write(tmp_path, "gpt.yaml", MEGATRON)
    flags = ("--pp", "5", "--ep", "4", "--cp", "1", "--seq-len", "4096")
    code, out, _ = run(path, "--format", "json", "--select", "SL3", *flags)
    assert code == 0, out


def test_quantized_checkpoint_defaults_to_the_engines_serving_it() -> None:
    assert target_of(AWQ).engines == ("vllm", "sglang", "tgi")
    assert target_of(QWEN2_7B).engines == ()  # nothing implied: every default engine
    assert target_of(AWQ, engines=("tgi",)).engines == ("tgi",)


def test_settings_name_engines_and_parallel_sizes(tmp_path: Path) -> None:
    path = write(tmp_path, "config.json", QWEN2_7B)
    write(tmp_path, ".shapelint.toml", 'engines = ["nanotron"]\ntp = 8\nselect = ["SL3"]\n')
    code, out, _ = run(path)
    assert code == 1 and "num_attention_heads (28) must be divisible by tp (8)" in out
    assert "vLLM" not in out
    write(tmp_path, ".shapelint.toml", 'engines = ["nanotronn"]\n')
    code, _, err = run(path)
    assert code == 2 and "engines: unknown engine 'nanotronn'" in err


def test_engines_command_lists_versions_and_rule_codes() -> None:
    code, out, _ = run("engines")
    assert code == 0
    assert "vllm" in out and "0.34.0" in out and "SL301" in out
    code, out, _ = run("engines", "--format", "json")
    rows = {r["name"]: r for r in json.loads(out)["engines"]}
    assert rows["vllm"]["version"] == "0.34.0"
    assert "SL306" in rows["tgi"]["rules"] and "SL307" in rows["tgi"]["rules"]
    assert rows["megatron"]["rules"] == ["SL301", "SL303", "SL304", "SL305"]
    assert rows["flash-attn2"]["default"] is False


def test_every_engine_rule_names_what_it_verified() -> None:
    known = {e.name for e in engines.ENGINES}
    for module in engine_rules.engine_rules():
        verified = module.VERIFIED
        assert verified and set(verified) <= known, module.RULE.code
        assert all(":" in where for where in verified.values()), module.RULE.code
        for name in verified:
            assert engines.get(name).version in (module.__doc__ or ""), (module.RULE.code, name)


def test_engine_rules_run_through_the_pipeline_only_when_selected() -> None:
    doc = parse_text(AWQ)
    options = LintOptions(
        gpus=(lookup("H100-SXM"),),
        flags=TargetOptions(tp=8, engines=("vllm",)),
        select=("SL3",),
        min_slowdown=float("-inf"),
    )
    configs, found = lint_document(doc, options)
    assert [f.code for f in found] == ["SL306"]
    assert lint_document(doc, replace(options, select=("SL301",)))[1] == []
    assert configs[0].int(Dim.QUANT_GROUP_SIZE) == 128


def test_vision_tower_heads_are_checked_like_the_text_model(tmp_path: Path) -> None:
    # GLM-4.5V's vision tower: 12 heads (vLLM issue #24004: cannot run at TP 8).
    text = (
        '{"architectures": ["Glm4vMoeForConditionalGeneration"],\n'
        ' "text_config": {"hidden_size": 4096, "num_attention_heads": 96,'
        ' "num_key_value_heads": 8, "num_hidden_layers": 46, "vocab_size": 151552},\n'
        ' "vision_config": {"hidden_size": 1536, "num_heads": 12, "depth": 24}}\n'
    )
    path = write(tmp_path, "config.json", text)
    code, out, _ = run(path, "--tp", "8", "--engine", "vllm", "--select", "SL301")
    assert code == 1
    assert (
        "Total number of attention heads (12) must be divisible by tensor parallel size (8)" in out
    )
    assert "(96)" not in out  # the text model's 96 heads split evenly


def test_torchtitan_fp8_layers_left_in_bf16_carry_an_estimate() -> None:
    # Llama-2-7B's shape with an FFN width of 11000 (not a multiple of 16): torchtitan keeps
    # w1/w3/w2 in BF16; the estimate is the model's BF16 minus FP8 time of those GEMMs.
    text = (
        '{"hidden_size": 4096, "num_attention_heads": 32, "intermediate_size": 11000,'
        ' "num_hidden_layers": 32, "vocab_size": 32000}\n'
    )
    config = dialects.extract(parse_text(text))[0]
    target = Target(gpu=lookup("H100-SXM"), dtype="fp8", engines=("torchtitan",))
    found = list(sl314_fp8_linear_left_bf16.check(config, target))
    assert [f.code for f in found] == ["SL314"]
    assert "feed_forward.w1/w3 (11000×4096), feed_forward.w2 (4096×11000)" in found[0].message
    match = re.search(r"estimated \+([0-9.]+)% step time on H100-SXM", found[0].message)
    assert match is not None and float(match.group(1)) > 0
    bf16 = Target(gpu=lookup("H100-SXM"), dtype="bf16", engines=("torchtitan",))
    assert list(sl314_fp8_linear_left_bf16.check(config, bf16)) == []


def test_sl005_defers_to_sl301_on_the_same_head_count(tmp_path: Path) -> None:
    # 28 heads at tp 8 (Qwen2-7B's shape): one error, the engine's, not two for one value.
    path = tmp_path / "config.json"
    path.write_text(
        '{"hidden_size": 3584, "num_attention_heads": 28, "num_key_value_heads": 4,'
        ' "intermediate_size": 18944, "num_hidden_layers": 28, "vocab_size": 152064}\n'
    )
    code, out, _ = run("check", str(path), "--tp", "8", "--no-cache")
    assert code == 1
    assert "SL301" in out and "SL005" not in out
    # Without SL301 (not selected, or no engine of the target checks heads) SL005 says it.
    _, out, _ = run("check", str(path), "--tp", "8", "--no-cache", "--ignore", "SL301")
    assert "SL005" in out and "(num_attention_heads = 28)" in out
    _, out, _ = run("check", str(path), "--tp", "8", "--no-cache", "--engine", "flash-attn2")
    assert "SL005" in out and "SL301" not in out
    # SL005's other dims are never deferred: 18944 / 3 is not whole, nor 28 / 3.
    _, out, _ = run("check", str(path), "--tp", "3", "--no-cache")
    assert "SL005" in out
