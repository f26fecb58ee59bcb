"""Dialects for Python configs: LitGPT (Python and YAML), torchtitan/Llama, gpt-fast, nanoGPT."""

from __future__ import annotations

import io
import textwrap
from pathlib import Path

import pytest

from shapelint.cli.main import main
from shapelint.core.model import Dim, Finding, ModelConfig
from shapelint.core.source import Candidate, Document, Entry, LineIndex, Mapping, Node, Scalar
from shapelint.dialects import extract
from shapelint.engine.options import LintOptions
from shapelint.engine.pipeline import lint_document
from shapelint.hardware.gpus import lookup
from shapelint.readers import parse
from shapelint.readers.python import parse_python


def configs(source: str, path: str = "config.py") -> list[ModelConfig]:
    doc = parse_python(path, textwrap.dedent(source).lstrip("\n"))
    assert doc.ok, doc.problems
    return extract(doc)


def named(found: list[ModelConfig], name: str) -> ModelConfig:
    hits = [c for c in found if c.name == name]
    assert hits, f"{name!r} not in {[c.name for c in found]}"
    return hits[0]


def dims(config: ModelConfig) -> dict[str, object]:
    return {d.value: v.value for d, v in config.dims.items()}


LITGPT = """
llama_2 = [
    # https://huggingface.co/meta-llama/Llama-2-7b-hf/blob/main/config.json
    dict(
        name="Llama-2-7b{}-hf",
        hf_config=dict(org="meta-llama", name="Llama-2-7b{}-hf"),
        vocab_size=32000,
        padding_multiple=64,
        n_layer=32,
        rotary_percentage=1.0,
        parallel_residual=False,
        bias=False,
        norm_class_name="RMSNorm",
        mlp_class_name="LLaMAMLP",
        intermediate_size=11008,
    ),
    dict(
        name="Llama-2-70b{}-hf",
        hf_config=dict(org="meta-llama", name="Llama-2-70b{}-hf"),
        vocab_size=32000,
        padding_multiple=64,
        n_layer=80,
        n_head=64,
        n_embd=8192,
        n_query_groups=8,
        mlp_class_name="LLaMAMLP",
        intermediate_size=28672,
    ),
]
pythia = [
    dict(
        name="pythia-160m",
        hf_config=dict(org="EleutherAI", name="pythia-160m"),
        block_size=2048,
        n_layer=12,
        n_embd=768,
        n_head=12,
        padding_multiple=128,
    ),
]
configs = [
    dict(name="stablelm-base-alpha-3b", hf_config=dict(org="stabilityai", name="x")),
    dict(
        name="Mixtral-8x7B-{}v0.1",
        hf_config=dict(org="mistralai", name="Mixtral-8x7B-{}v0.1"),
        padded_vocab_size=32000,
        block_size=32768,
        n_layer=32,
        n_query_groups=8,
        mlp_class_name="LLaMAMoE",
        intermediate_size=14336,
        n_expert=8,
        n_expert_per_token=2,
    ),
]
"""


def test_litgpt_llama_2_7b_uses_config_defaults() -> None:
    found = configs(LITGPT)
    llama = named(found, "llama_2[0] Llama-2-7b{}-hf")
    assert llama.dialect == "litgpt"
    assert llama.gated_mlp is True
    assert dims(llama) == {
        "hidden": 4096,
        "heads": 32,
        "kv_heads": 32,
        "head_dim": 128,
        "layers": 32,
        "seq_len": 4096,
        "vocab": 32000,
        "vocab_multiple": 64,
        "padded_vocab": 32000,
        "ffn": 11008,
        "rotary_dim": 128,  # rotary_percentage=1.0 × head size 128
    }
    # n_embd is LitGPT's default: derived, pointing at the entry's name
    hidden = llama.dims[Dim.HIDDEN]
    assert hidden.derived and "n_embd=4096" in hidden.formula
    assert (hidden.span.line, hidden.key) == (4, "n_embd")
    assert not llama.dims[Dim.FFN].derived
    assert llama.dims[Dim.FFN].span.line == 14
    padded = llama.dims[Dim.PADDED_VOCAB]
    assert padded.derived and "find_multiple" in padded.formula
    assert [v.key for v in padded.derived_from] == ["vocab_size", "padding_multiple"]


def test_litgpt_gqa_and_gptneox_defaults() -> None:
    found = configs(LITGPT)
    seventy = named(found, "llama_2[1] Llama-2-70b{}-hf")
    assert (seventy.int(Dim.KV_HEADS), seventy.int(Dim.HEAD_DIM)) == (8, 128)
    pythia = named(found, "pythia[0] pythia-160m")
    assert pythia.gated_mlp is False
    # GptNeoxMLP: intermediate_size = 4 * n_embd; vocab 50254 padded to a multiple of 128
    assert (pythia.int(Dim.FFN), pythia.dims[Dim.FFN].formula) == (
        3072,
        "intermediate_size = 4 * n_embd (GptNeoxMLP)",
    )
    assert (pythia.int(Dim.VOCAB), pythia.int(Dim.PADDED_VOCAB)) == (50254, 50304)
    stablelm = named(found, "configs[0] stablelm-base-alpha-3b")
    assert (stablelm.int(Dim.HIDDEN), stablelm.int(Dim.LAYERS)) == (4096, 16)
    assert stablelm.int(Dim.PADDED_VOCAB) == 50688  # find_multiple(50254, 512)


def test_litgpt_moe_and_padded_vocab_clamp() -> None:
    mixtral = named(configs(LITGPT), "configs[1] Mixtral-8x7B-{}v0.1")
    assert mixtral.gated_mlp is True
    assert (mixtral.int(Dim.EXPERTS), mixtral.int(Dim.EXPERTS_PER_TOKEN)) == (8, 2)
    assert mixtral.int(Dim.MOE_FFN) == 14336  # no moe_intermediate_size: the dense width
    # vocab_size absent: the default 50254 is clamped to padded_vocab_size
    vocab = mixtral.dims[Dim.VOCAB]
    assert (vocab.value, vocab.derived) == (32000, True)


def test_litgpt_config_class_is_dense_without_experts_per_token() -> None:
    # litgpt/config.py's Config: n_expert and n_expert_per_token both default to 0, a dense
    # model; the 0 experts per token is not a value (it drew SL002 "must be positive").
    text = (
        "from dataclasses import dataclass\n"
        "@dataclass\n"
        "class Config:\n"
        "    name: str = ''\n"
        "    hf_config: dict = None\n"
        "    block_size: int = 4096\n"
        "    vocab_size: int = 50254\n"
        "    padding_multiple: int = 512\n"
        "    n_layer: int = 16\n"
        "    n_head: int = 32\n"
        "    n_embd: int = 4096\n"
        "    n_expert: int = 0\n"
        "    n_expert_per_token: int = 0\n"
    )
    (config,) = [c for c in configs(text) if c.name == "Config"]
    assert Dim.EXPERTS_PER_TOKEN not in config.dims and Dim.EXPERTS not in config.dims
    assert config.int(Dim.LAYERS) == 16


def test_litgpt_unknown_value_is_not_defaulted() -> None:
    found = configs('cfgs = [dict(name="x", hf_config={}, n_embd=WIDTH, n_head=8)]\n')
    config = named(found, "cfgs[0] x")
    assert Dim.HIDDEN not in config.dims
    assert config.int(Dim.HEADS) == 8


LITGPT_VARIANTS = """
from copy import deepcopy

configs = []
phi = [
    # GPT-3 2.7B's shape: h/a = 2560/32 = 80, and a vocab padded to a multiple of 1
    dict(
        name="phi-2{}",
        hf_config=dict(org="microsoft", name="phi-2{}"),
        vocab_size=50257,
        padding_multiple=1,
        n_embd=2560,
        n_head=32,
        n_layer=32,
        mlp_class_name="LLaMAMLP",
        intermediate_size=10240,
    ),
]
for c in phi:
    for kind in ("", "-chat"):
        copy = deepcopy(c)
        copy["name"] = c["name"].format(kind)
        copy["hf_config"]["name"] = c["hf_config"]["name"].format(kind)
        configs.append(copy)
"""


LITGPT_LOOP = """
for c in llama_2:
    for kind in ("", "-chat"):
        copy = deepcopy(c)
        copy["name"] = c["name"].format(kind)
        copy["hf_config"]["name"] = c["hf_config"]["name"].format(kind)
        configs.append(copy)
"""


def test_litgpt_variant_loop_gives_one_config_per_variant() -> None:
    found = configs(LITGPT + "from copy import deepcopy\n" + LITGPT_LOOP)
    base = named(found, "llama_2[0] Llama-2-7b-hf")
    chat = named(found, "llama_2[0] Llama-2-7b-chat-hf")
    shape = (Dim.HIDDEN, Dim.HEADS, Dim.FFN, Dim.VOCAB)
    assert [base.int(d) for d in shape] == [4096, 32, 11008, 32000]
    assert [chat.int(d) for d in shape] == [4096, 32, 11008, 32000]
    # Both read the template's values: same spans (line 14: intermediate_size=11008).
    assert chat.dims[Dim.FFN].span == base.dims[Dim.FFN].span
    assert chat.dims[Dim.FFN].span.line == 14
    # A LitGPT default points at the variant's name, which is the template's name literal.
    assert chat.dims[Dim.HIDDEN].derived and chat.dims[Dim.HIDDEN].span.line == 4
    assert "llama_2[0] Llama-2-7b{}-hf" not in [c.name for c in found]
    seventy = named(found, "llama_2[1] Llama-2-70b-chat-hf")
    assert (seventy.int(Dim.HIDDEN), seventy.int(Dim.KV_HEADS)) == (8192, 8)


def _lint(text: str) -> list[Finding]:
    doc = parse_python("config.py", textwrap.dedent(text).lstrip("\n"))
    options = LintOptions(gpus=(lookup("H100-SXM"),), min_slowdown=0.0)
    return lint_document(doc, options)[1]


def test_litgpt_variants_report_a_template_finding_once() -> None:
    findings = _lint(LITGPT_VARIANTS)
    assert sorted((f.code, f.span.line, f.config) for f in findings) == [
        ("SL101", 9, "phi[0] phi-2"),  # padding_multiple=1 leaves the vocab at 50257
        ("SL102", 11, "phi[0] phi-2"),  # head_size = 2560 // 32 = 80
    ]


def test_litgpt_variants_fix_the_template_once(tmp_path: Path) -> None:
    path = tmp_path / "config.py"
    text = textwrap.dedent(LITGPT_VARIANTS).lstrip("\n")
    path.write_text(text)
    out, err = io.StringIO(), io.StringIO()
    assert main(["check", "--fix", "--min-slowdown", "0", str(path)], out, err) == 1
    assert path.read_text() == text.replace("padding_multiple=1,", "padding_multiple=128,")
    assert [f.code for f in _lint(path.read_text())] == ["SL102"]


def test_litgpt_variant_loop_literal_is_shared_and_unsafe_to_fix() -> None:
    # The loop's own padding_multiple=1 is one literal for both variants: fixing it for one
    # config changes the other, so the fix is unsafe.
    loop_set = LITGPT_VARIANTS.replace("        padding_multiple=1,\n", "").replace(
        "        configs.append(copy)",
        '        copy["padding_multiple"] = 1\n        configs.append(copy)',
    )
    findings = [f for f in _lint(loop_set) if f.code == "SL101"]
    assert len(findings) == 1
    fix = findings[0].fix
    assert fix is not None and fix.applicability == "unsafe"
    assert [(e.span.line, e.old, e.new) for e in fix.edits] == [(22, 1, 128)]


def _yaml_candidate(data: dict[str, object]) -> Candidate:
    """A candidate built by hand as a YAML reader would, for tests independent of that reader."""
    index = LineIndex("x")

    def node(value: object) -> Node:
        span = index.span("c.yaml", 0, 1)
        if isinstance(value, dict):
            return Mapping(tuple(Entry(k, span, node(v)) for k, v in value.items()), span)
        return Scalar(value, span)

    root = node(data)
    assert isinstance(root, Mapping)
    return Candidate(name="", root=root)


def test_litgpt_yaml_training_config() -> None:
    candidate = _yaml_candidate(
        {
            "model_name": "stories15M",
            "model_config": {
                "name": "stories15M",
                "padded_vocab_size": 32000,
                "n_layer": 6,
                "n_head": 6,
                "n_embd": 288,
                "mlp_class_name": "LLaMAMLP",
                "intermediate_size": 768,
            },
            "precision": "bf16-mixed",
            "train": {"global_batch_size": 512, "micro_batch_size": 128, "max_seq_length": 256},
        }
    )
    doc = Document(path="c.yaml", text="x", format="yaml", candidates=[candidate])
    (config,) = extract(doc)
    assert config.dialect == "litgpt"
    assert (config.int(Dim.HIDDEN), config.int(Dim.HEADS), config.int(Dim.FFN)) == (288, 6, 768)
    assert config.dims[Dim.HIDDEN].key == "model_config.n_embd"
    assert (config.int(Dim.MICRO_BATCH), config.int(Dim.GLOBAL_BATCH)) == (128, 512)
    assert config.dims[Dim.SEQ_LEN].key == "train.max_seq_length"
    assert config.int(Dim.SEQ_LEN) == 256
    assert config.dims[Dim.VOCAB].key == "model_config.vocab_size"


def test_litgpt_yaml_registry_model_takes_shape_from_elsewhere() -> None:
    candidate = _yaml_candidate(
        {
            "model_name": "tiny-llama-1.1b",
            "model_config": None,
            "train": {"micro_batch_size": 4, "max_seq_length": 2048},
        }
    )
    doc = Document(path="c.yaml", text="x", format="yaml", candidates=[candidate])
    (config,) = extract(doc)
    assert config.dialect == "litgpt" and config.shape_from_elsewhere
    assert Dim.HIDDEN not in config.dims
    assert (config.int(Dim.MICRO_BATCH), config.int(Dim.SEQ_LEN)) == (4, 2048)


def test_litgpt_yaml_corpus(corpus: Path) -> None:
    folder = corpus / "litgpt" / "config_hub" / "pretrain"
    files = sorted(folder.glob("*.yaml"))
    if not files:
        pytest.skip(f"no LitGPT YAML in {folder}")
    for path in files:
        doc = parse(str(path), path.read_bytes(), "yaml")
        found = extract(doc)
        assert [c.dialect for c in found] == ["litgpt"], path
        assert found[0].int(Dim.MICRO_BATCH), path
    stories = extract(parse("t.yaml", (folder / "tinystories.yaml").read_bytes(), "yaml"))
    if stories:
        assert (stories[0].int(Dim.HIDDEN), stories[0].int(Dim.HEAD_DIM)) == (288, 48)


TORCHTITAN = """
llama3_configs = {
    "8B": TransformerModelArgs(
        dim=4096,
        n_layers=32,
        n_heads=32,
        n_kv_heads=8,
        ffn_dim_multiplier=1.3,
        multiple_of=1024,
        rope_theta=500000,
    ),
    "70B": TransformerModelArgs(
        dim=8192, n_layers=80, n_heads=64, n_kv_heads=8,
        ffn_dim_multiplier=1.3, multiple_of=4096,
    ),
}
"""


def test_torchtitan_flavours_use_llama_ffn_formula() -> None:
    found = configs(TORCHTITAN)
    eight = named(found, 'llama3_configs["8B"]')
    assert eight.dialect == "llama-params"
    ffn = eight.dims[Dim.FFN]
    assert (ffn.value, ffn.derived) == (14336, True)
    assert [v.key for v in ffn.derived_from] == ["dim", "multiple_of", "ffn_dim_multiplier"]
    assert ffn.span.line == 3  # points at dim=4096
    assert named(found, 'llama3_configs["70B"]').int(Dim.FFN) == 28672
    assert eight.int(Dim.KV_HEADS) == 8


GPTFAST = """
transformer_configs = {
    "CodeLlama-7b-Python-hf": dict(block_size=16384, vocab_size=32000, n_layer=32, dim = 4096),
    "7B": dict(n_layer=32, n_head=32, dim=4096),
    "13B": dict(n_layer=40, n_head=40, dim=5120),
    "70B": dict(n_layer=80, n_head=64, dim=8192, n_local_heads=8, intermediate_size=28672),
    "stories15M": dict(n_layer=6, n_head=6, dim=288),
}
"""


def test_gptfast_defaults_and_ffn() -> None:
    found = configs(GPTFAST)
    assert {c.dialect for c in found} == {"gpt-fast"}
    seven = named(found, 'transformer_configs["7B"]')
    ffn = seven.dims[Dim.FFN]
    assert (ffn.value, ffn.formula) == (11008, "find_multiple(int(2 * 4 * dim / 3), 256)")
    assert named(found, 'transformer_configs["13B"]').int(Dim.FFN) == 13824
    assert seven.gated_mlp is True
    assert (seven.int(Dim.VOCAB), seven.int(Dim.SEQ_LEN)) == (32000, 2048)
    assert seven.dims[Dim.VOCAB].derived
    code = named(found, 'transformer_configs["CodeLlama-7b-Python-hf"]')
    assert (code.int(Dim.HEADS), code.int(Dim.SEQ_LEN)) == (32, 16384)
    assert code.dims[Dim.HEADS].derived
    seventy = named(found, 'transformer_configs["70B"]')
    assert (seventy.int(Dim.KV_HEADS), seventy.int(Dim.FFN)) == (8, 28672)
    assert named(found, 'transformer_configs["stories15M"]').int(Dim.HEAD_DIM) == 48


def test_nanogpt_training_script_defaults() -> None:
    script = """
    wandb_log = True
    batch_size = 12
    block_size = 1024
    gradient_accumulation_steps = 5 * 8
    max_iters = 600000
    """
    (config,) = configs(script, "config/train_gpt2.py")
    assert config.dialect == "nanogpt" and config.gated_mlp is False
    assert dims(config) == {
        "hidden": 768,
        "heads": 12,
        "layers": 12,
        "seq_len": 1024,
        "vocab": 50304,
        "micro_batch": 12,
        "grad_accum": 40,
        "ffn": 3072,
        "head_dim": 64,
        "kv_heads": 12,
    }
    assert config.dims[Dim.GRAD_ACCUM].expression == "5 * 8"
    assert not config.dims[Dim.SEQ_LEN].derived and config.dims[Dim.HIDDEN].derived
    assert config.dims[Dim.FFN].formula == "4 * n_embd (nanoGPT MLP)"


def test_nanogpt_char_dataset_and_gpt2_init() -> None:
    char = """
    dataset = 'shakespeare_char'
    gradient_accumulation_steps = 1
    batch_size = 64
    block_size = 256
    n_layer = 6
    n_head = 6
    n_embd = 384
    """
    (config,) = configs(char)
    assert (config.int(Dim.HIDDEN), config.int(Dim.HEADS), config.int(Dim.MICRO_BATCH)) == (
        384,
        6,
        64,
    )
    assert Dim.VOCAB not in config.dims  # from the dataset's meta.pkl
    finetune = """
    init_from = 'gpt2-xl'
    batch_size = 1
    gradient_accumulation_steps = 32
    """
    (xl,) = configs(finetune)
    assert (xl.int(Dim.HIDDEN), xl.int(Dim.HEADS), xl.int(Dim.LAYERS)) == (1600, 25, 48)
    assert xl.int(Dim.VOCAB) == 50257 and xl.int(Dim.HEAD_DIM) == 64
    (resumed,) = configs("init_from = 'resume'\nbatch_size = 8\n")
    assert resumed.shape_from_elsewhere and Dim.HIDDEN not in resumed.dims


def test_nanogpt_gptconfig_call_but_not_hf_gpt2() -> None:
    source = """
    model_args = GPTConfig(n_layer=24, n_head=16, n_embd=1024, block_size=1024, bias=False)

    class GPT2Config(PretrainedConfig):
        model_type = "gpt2"
        def __init__(self, vocab_size=50257, n_positions=1024, n_embd=768, n_layer=12, n_head=12):
            pass
    """
    found = configs(source)
    gpt = named(found, "model_args")
    assert gpt.dialect == "nanogpt"
    assert (gpt.int(Dim.HIDDEN), gpt.int(Dim.FFN), gpt.int(Dim.VOCAB)) == (1024, 4096, 50304)
    hf = named(found, "GPT2Config")
    assert hf.dialect == "hf" and hf.int(Dim.VOCAB) == 50257


HF_LLAMA = """
class LlamaConfig(PreTrainedConfig):
    model_type = "llama"
    vocab_size: int = 32000
    hidden_size: int = positive_int_field(default=4096)
    intermediate_size: int = 11008
    num_hidden_layers: int = 32
    num_attention_heads: int = 32
    num_key_value_heads: int | None = None
"""


def test_hf_config_class_goes_to_the_hf_dialect() -> None:
    (config,) = configs(HF_LLAMA)
    assert (config.name, config.dialect, config.gated_mlp) == ("LlamaConfig", "hf", True)
    assert dims(config) == {
        "hidden": 4096,
        "heads": 32,
        "kv_heads": 32,
        "head_dim": 128,
        "ffn": 11008,
        "layers": 32,
        "vocab": 32000,
    }


# ---- class inheritance: open bases and values written in another file ---------------------

GPT3_2B7 = """
class GPT3XL{bases}:
    hidden_size = 2560
    num_attention_heads = 32
    num_hidden_layers = 32
    vocab_size = 50304
"""


def test_open_base_leaves_derived_dims_unknown() -> None:
    closed = named(configs(GPT3_2B7.format(bases="")), "GPT3XL")
    assert closed.dims[Dim.HEAD_DIM].value == 80 and closed.dims[Dim.HEAD_DIM].known
    assert "SL102" in [f.code for f in _lint(GPT3_2B7.format(bases=""))]
    # The base might state head_dim / kv heads: nothing is derived, nothing flagged on it.
    source = "from .gpt import GPTBase\n" + GPT3_2B7.format(bases="(GPTBase)")
    opened = named(configs(source), "GPT3XL")
    assert dims(opened)["hidden"] == 2560 and opened.dims[Dim.HIDDEN].known
    assert not opened.dims[Dim.HEAD_DIM].known
    assert Dim.KV_HEADS not in opened.dims or not opened.dims[Dim.KV_HEADS].known
    assert "SL102" not in [f.code for f in _lint(source)]


def _inherited_vocab(tmp_path: Path) -> tuple[Path, Path]:
    package = tmp_path / "pkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    base = package / "base.py"
    base.write_text("class GPTBase:\n    vocab_size = 50257\n    num_hidden_layers = 12\n")
    child = package / "child.py"
    child.write_text(
        "from .base import GPTBase\n\n"
        "class Small(GPTBase):\n"
        "    hidden_size = 768\n"
        "    num_attention_heads = 12\n"
    )
    return base, child


def test_value_inherited_from_another_file_is_reported_there_and_never_fixed(
    tmp_path: Path,
) -> None:
    base, child = _inherited_vocab(tmp_path)
    doc = parse(str(child), child.read_bytes(), "python")
    options = LintOptions(gpus=(lookup("H100"),), min_slowdown=0.0)
    found = [f for f in lint_document(doc, options)[1] if f.code == "SL101"]
    assert len(found) == 1
    finding = found[0]
    assert finding.path == str(base) and finding.span.line == 2
    assert base.read_text()[finding.span.start : finding.span.end] == "50257"
    assert finding.fix is None
    base_text, child_text = base.read_text(), child.read_text()
    for flag in ("--fix", "--unsafe-fixes"):
        out, err = io.StringIO(), io.StringIO()
        assert main(["check", flag, "--min-slowdown", "0", str(child)], out, err) == 1
        assert (base.read_text(), child.read_text()) == (base_text, child_text)


# ---- where Python configs are: module level, classes, what builders return ---------------

TEST_FUNCTION = """
import json


def test_whisper(tmp_path):
    config = {"vocab_size": 51866, "hidden_size": 1280, "num_attention_heads": 20}
    (tmp_path / "config.json").write_text(json.dumps(config))
"""

BUILDER = """
def gpt2_small() -> GPTConfig:
    return GPTConfig(
        vocab_size=50257,
        hidden_size=768,
        num_attention_heads=12,
        num_hidden_layers=12,
    )
"""


def test_dict_in_a_test_function_is_not_a_config(tmp_path: Path) -> None:
    # shapelint --fix . rewrote this dict (vocab_size 51866 → 51904) before.
    assert configs(TEST_FUNCTION) == []
    path = tmp_path / "test_whisper.py"
    path.write_text(TEST_FUNCTION)
    out, err = io.StringIO(), io.StringIO()
    assert main(["check", "--fix", "--min-slowdown", "0", str(path)], out, err) == 0
    assert path.read_text() == TEST_FUNCTION


def test_builder_return_is_a_config_whose_fixes_are_unsafe(tmp_path: Path) -> None:
    found = named(configs(BUILDER), "gpt2_small")
    assert dims(found)["vocab"] == 50257
    sl101 = [f for f in _lint(BUILDER) if f.code == "SL101"]
    assert len(sl101) == 1 and sl101[0].config == "gpt2_small"
    assert sl101[0].fix is not None and sl101[0].fix.applicability == "unsafe"
    path = tmp_path / "builders.py"
    path.write_text(BUILDER.lstrip("\n"))
    out, err = io.StringIO(), io.StringIO()
    assert main(["check", "--fix", "--min-slowdown", "0", str(path)], out, err) == 1
    assert path.read_text() == BUILDER.lstrip("\n")


def test_torchtune_builder_is_a_config_named_by_the_function() -> None:
    source = """
    def llama3_8b() -> TransformerDecoder:
        return llama3(
            vocab_size=128_256,
            num_layers=32,
            num_heads=32,
            num_kv_heads=8,
            embed_dim=4096,
            max_seq_len=8192,
            intermediate_dim=14336,
        )
    """
    doc = parse_python("_model_builders.py", textwrap.dedent(source).lstrip("\n"))
    assert [c.name for c in doc.candidates] == ["llama3_8b"]
    # torchtune's embed_dim / intermediate_dim are not a built-in key family (SL009 says so
    # and prints the settings line); mapped, the builder reads fully.
    mapped = {Dim.HIDDEN: ("embed_dim",), Dim.FFN: ("intermediate_dim",)}
    (found,) = extract(doc, mapped)
    assert found.name == "llama3_8b"
    assert {
        k: dims(found)[k] for k in ("hidden", "heads", "kv_heads", "ffn", "layers", "vocab")
    } == {
        "hidden": 4096,
        "heads": 32,
        "kv_heads": 8,
        "ffn": 14336,
        "layers": 32,
        "vocab": 128256,
    }


def test_megatron_mla_head_dim_and_a_none_hf_config() -> None:
    source = """
    class KimiK2Provider(Base):
        hidden_size: int = 7168
        num_attention_heads: int = 64
        num_layers: int = 61
        kv_channels: int = 64  # not the attention head dim of an MLA model
        q_lora_rank: int = 1536
        kv_lora_rank: int = 512
        qk_head_dim: int = 128
        qk_pos_emb_head_dim: int = 64
        v_head_dim: int = 128

    class Ministral3B:
        hf_config: Optional["Mistral3Config"] = None  # not LitGPT's hf_config=dict(…)
        hidden_size: int = 3072
        num_attention_heads: int = 32
        num_layers: int = 26
        ffn_hidden_size: int = 9216
        rotary_base: int = 1000000
    """
    kimi = named(configs(source.replace("(Base)", "")), "KimiK2Provider")
    assert dims(kimi)["head_dim"] == 192  # qk_head_dim + qk_pos_emb_head_dim
    ministral = named(configs(source), "Ministral3B")
    assert ministral.dialect != "litgpt"
    assert {k: dims(ministral)[k] for k in ("hidden", "layers", "ffn")} == {
        "hidden": 3072,
        "layers": 26,
        "ffn": 9216,
    }
