"""A GPU from ``--gpu-file`` is treated like a built-in one: its compute capability and family
constants are fields of its entry, or its family's (named by ``arch`` or by its compute
capability) with a note, or the defaults with a note when no family can be found.

Before the GPU table held them, compute capability was keyed by built-in name: a copy of the
H100 entry under another name got SL102 but not the SL321 the built-in H100 gets.
"""

from __future__ import annotations

import copy
import io
import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from shapelint.cli.main import main
from shapelint.engine.gpu_file import load_table
from shapelint.hardware.arch import FAMILY_FIELDS, family_of
from shapelint.hardware.gpus import GPUTableError, builtin_data

NAME = "LAB-GPU"

# SL102, SL103 (with an estimate) and SL321: head dim 100 on a hidden size of 4100.
HEAD_DIM_100 = (
    '{"hidden_size": 4100, "num_attention_heads": 41, "intermediate_size": 11000,'
    ' "num_hidden_layers": 32, "vocab_size": 32000, "torch_dtype": "bfloat16"}\n'
)
# SL101 with an estimate (vocab 50257) on a GPT-2 shape.
GPT2 = '{"n_embd": 768, "n_head": 12, "n_layer": 12, "vocab_size": 50257}\n'
# SL332: MXFP8 needs compute capability 10.0 (a Megatron-LM functional-test config).
MXFP8 = (
    "MODEL_ARGS:\n  --num-layers: 32\n  --hidden-size: 4096\n  --ffn-hidden-size: 14336\n"
    "  --num-attention-heads: 32\n  --group-query-attention: true\n"
    "  --num-query-groups: 8\n  --swiglu: true\n  --seq-length: 8192\n"
    "  --micro-batch-size: 1\n  --bf16: true\n  --fp8-format: hybrid\n"
    "  --fp8-recipe: mxfp8\n"
)
CONFIGS = {"head_dim_100/config.json": HEAD_DIM_100, "gpt2/config.json": GPT2}
CONFIGS["megatron/model_config.yaml"] = MXFP8


def run(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = main(list(argv), out, err)
    return code, out.getvalue(), err.getvalue()


def h100_entry() -> dict[str, Any]:
    """The built-in H100 entry as a user would copy it (its aliases left out: they would
    take the built-in names)."""
    entry = copy.deepcopy(builtin_data()["gpus"]["H100-SXM"])
    entry.pop("aliases")
    return dict(entry)


def gpu_file(tmp_path: Path, entry: dict[str, Any], **top: Any) -> Path:
    path = tmp_path / "gpus.yaml"
    path.write_text(yaml.safe_dump({**top, "gpus": {NAME: entry}}), encoding="utf-8")
    return path


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    root = tmp_path / "tree"
    for rel, text in CONFIGS.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text, encoding="utf-8")
    return root


def check_json(tree: Path, *gpu: str) -> tuple[str, str]:
    """The JSON report with the GPU's name written as H100-SXM, and stderr."""
    code, out, err = run(str(tree), "--format", "json", "--min-slowdown", "0", "--no-cache", *gpu)
    assert code == 1, err
    return out.replace(NAME, "H100-SXM"), err


def explain_json(tree: Path, *gpu: str) -> str:
    config = str(tree / "head_dim_100" / "config.json")
    code, out, err = run("explain", config, "--format", "json", *gpu)
    assert code == 0, err
    return out.replace(NAME, "H100-SXM")


def codes(report: str) -> set[str]:
    return {f["code"] for f in json.loads(report)["findings"]}


def with_family_fields(entry: dict[str, Any]) -> dict[str, Any]:
    """``entry`` with every family constant stated, as the built-in H100 resolves them."""
    h100 = load_table().lookup("h100")
    out = dict(entry)
    for key in FAMILY_FIELDS:
        value = getattr(h100, key)
        out[key] = {str(k): v for k, v in value.items()} if key == "align_factor" else value
        if key == "attention_scale":
            out[key] = dict(value)
        if key == "kernel_cliffs":
            out[key] = [c.as_dict() for c in value]
    return out


def test_a_copy_of_the_h100_entry_is_the_h100(tree: Path, tmp_path: Path) -> None:
    builtin, quiet = check_json(tree, "--gpu", "h100")
    assert {"SL101", "SL102", "SL103", "SL321", "SL332"} <= codes(builtin)
    assert any(f["estimates"] for f in json.loads(builtin)["findings"])
    assert quiet == ""
    # Every field stated, family constants included: no note.
    path = gpu_file(tmp_path, with_family_fields(h100_entry()))
    copied, err = check_json(tree, "--gpu-file", str(path), "--gpu", NAME)
    assert copied == builtin
    assert err == ""
    assert explain_json(tree, "--gpu-file", str(path), "--gpu", NAME) == explain_json(
        tree, "--gpu", "h100"
    )
    # The entry as the built-in table writes it (the constants in its family): the same, with
    # a note that names what the hopper family gave it.
    path = gpu_file(tmp_path, h100_entry())
    copied, err = check_json(tree, "--gpu-file", str(path), "--gpu", NAME)
    assert copied == builtin
    (note,) = err.splitlines()
    assert note.endswith("from the hopper family")
    assert "compute capability" not in note  # stated in the entry


@pytest.mark.parametrize(
    ("drop", "named_by"),
    [
        (("compute_capability",), "the hopper family"),  # arch stated
        (("arch",), "named by its compute capability 9.0"),  # family from compute capability
    ],
)
def test_an_entry_without_the_family_fields_inherits_them_with_a_note(
    tree: Path, tmp_path: Path, drop: tuple[str, ...], named_by: str
) -> None:
    builtin, _ = check_json(tree, "--gpu", "h100")
    entry = {k: v for k, v in h100_entry().items() if k not in drop}
    assert not set(FAMILY_FIELDS) & set(entry)  # the built-in entry takes them from its family
    path = gpu_file(tmp_path, entry)
    copied, err = check_json(tree, "--gpu-file", str(path), "--gpu", NAME)
    assert copied == builtin
    (note,) = err.splitlines()
    assert note.startswith(f"shapelint: note: GPU '{NAME}' ({path})")
    assert named_by in note
    assert all(f in note for f in FAMILY_FIELDS)
    assert ("takes compute capability 9.0" in note) == ("compute_capability" in drop)


def test_an_entry_of_no_known_family_keeps_the_defaults_and_says_so(
    tree: Path, tmp_path: Path
) -> None:
    entry = {k: v for k, v in h100_entry().items() if k not in ("arch", "compute_capability")}
    path = gpu_file(tmp_path, entry)
    report, err = check_json(tree, "--gpu-file", str(path), "--gpu", NAME)
    (note,) = err.splitlines()
    assert "states no arch and no compute capability" in note
    assert "the defaults apply" in note
    assert "compute capability unknown" in note
    found = codes(report)
    assert {"SL101", "SL102", "SL103"} <= found  # estimates still made, with the defaults
    assert not {"SL321", "SL332"} & found  # rules that need a compute capability skip it
    gpu = load_table(path).lookup(NAME)
    assert gpu.arch == "unknown" and gpu.compute_capability is None
    default = load_table().lookup("a100")  # the defaults are Ampere's, Hopper's tile cost
    assert gpu.step_sustained_fraction == default.step_sustained_fraction
    assert gpu.tile_overhead_k == load_table().lookup("h100").tile_overhead_k


def test_a_compute_capability_of_no_family_is_the_defaults(tmp_path: Path) -> None:
    entry = {k: v for k, v in h100_entry().items() if k != "arch"}
    entry["compute_capability"] = "7.5"  # Turing: not a family of the table
    gpu = load_table(gpu_file(tmp_path, entry)).lookup(NAME)
    assert (gpu.arch, gpu.compute_capability) == ("unknown", (7, 5))
    assert "the defaults apply" in gpu.family_note
    assert "compute capability unknown" not in gpu.family_note


def test_stated_constants_win_and_are_not_in_the_note(tree: Path, tmp_path: Path) -> None:
    entry = {**h100_entry(), "memory_stream_fraction": 0.5, "align_factor": {2: 0.9}}
    entry.pop("compute_capability")
    gpu = load_table(gpu_file(tmp_path, entry)).lookup(NAME)
    assert gpu.memory_stream_fraction == 0.5
    assert dict(gpu.align_factor) == {2: 0.9}  # an integer key, as YAML reads 2:
    assert "memory_stream_fraction" not in gpu.family_note
    assert "align_factor" not in gpu.family_note
    assert "step_sustained_fraction" in gpu.family_note
    builtin, _ = check_json(tree, "--gpu", "h100")
    slower, _ = check_json(tree, "--gpu-file", str(gpu_file(tmp_path, entry)), "--gpu", NAME)
    assert slower != builtin  # its own streaming bandwidth changes the estimates


def test_a_family_defined_in_the_gpu_file(tmp_path: Path) -> None:
    lab = {key: {"from": "hopper", "source": "our lab: like Hopper"} for key in FAMILY_FIELDS}
    lab["memory_stream_fraction"] = {"value": 0.7, "source": "our stream benchmark"}
    lab["compute_capabilities"] = {"value": ["9.9"], "source": "made up for the test"}
    entry = {k: v for k, v in h100_entry().items() if k not in ("arch", "compute_capability")}
    entry["compute_capability"] = 9.9  # a number reads as "9.9"
    gpu = load_table(gpu_file(tmp_path, entry, families={"lab": lab})).lookup(NAME)
    assert (gpu.arch, gpu.compute_capability) == ("lab", (9, 9))
    assert gpu.memory_stream_fraction == 0.7
    assert gpu.step_sustained_fraction == load_table().lookup("h100").step_sustained_fraction
    assert "lab family" in gpu.family_note
    assert load_table().lookup("h100").arch == "hopper"  # the built-in table is untouched


@pytest.mark.parametrize(
    ("change", "needles"),
    [
        ({"compute_capability": "nine"}, ["compute_capability"]),
        ({"compute_capability": [9, 0]}, ["compute_capability"]),
        ({"memory_stream_fraction": "high"}, ["memory_stream_fraction"]),
        ({"memory_stream_fraction": 1.5}, ["memory_stream_fraction"]),
        ({"step_sustained_fraction": None}, ["step_sustained_fraction"]),
        ({"attention_scale": {"triton": "fast"}}, ["attention_scale.triton"]),
        ({"attention_scale": {"xformers": 1.0}}, ["attention_scale"]),
        ({"attention_figures": "v100"}, ["attention_figures"]),
        ({"align_factor": {"3": 0.5}}, ["align_factor"]),
        ({"align_factor": {"2": "low"}}, ["align_factor.2"]),
        ({"tile_overhead_k": "many"}, ["tile_overhead_k"]),
        ({"default_flash_kernel": 3}, ["default_flash_kernel"]),
        ({"arch": "Hopper!"}, ["arch"]),
        ({"gpus_per_node": "eight"}, ["gpus_per_node"]),
        ({"inter_node_gbs": -50}, ["inter_node_gbs"]),
    ],
)
def test_the_schema_rejects_wrong_types(
    tmp_path: Path, change: dict[str, Any], needles: list[str]
) -> None:
    path = gpu_file(tmp_path, {**h100_entry(), **change})
    with pytest.raises(GPUTableError) as info:
        load_table(path)
    message = str(info.value)
    assert str(path) in message and f"entry '{NAME}'" in message
    for needle in needles:
        assert needle in message


@pytest.mark.parametrize(
    ("families", "arch", "needle"),
    [
        ({}, "volcano", "arch 'volcano' is not a family"),
        (
            {"lab": {key: {"from": "nowhere", "source": "x"} for key in FAMILY_FIELDS}},
            "lab",
            "from unknown family 'nowhere'",
        ),
        (
            {
                "a": {key: {"from": "b", "source": "x"} for key in FAMILY_FIELDS},
                "b": {key: {"from": "a", "source": "x"} for key in FAMILY_FIELDS},
            },
            "a",
            "goes round",
        ),
    ],
)
def test_family_errors_name_the_file(
    tmp_path: Path, families: dict[str, Any], arch: str, needle: str
) -> None:
    path = gpu_file(tmp_path, {**h100_entry(), "arch": arch}, families=families)
    with pytest.raises(GPUTableError, match=needle) as info:
        load_table(path)
    assert str(path) in str(info.value)


def test_built_in_gpus_carry_their_family_and_no_note() -> None:
    table = load_table()
    families = {g.arch for g in table}
    assert families == {"volta", "ampere", "ada", "hopper", "blackwell", "cdna2", "cdna3"}
    for gpu in table:
        assert gpu.family_note == ""
        if gpu.vendor == "nvidia":
            assert gpu.compute_capability is not None, gpu.name
            # The family its compute capability names is the one it states.
            data = builtin_data()["gpus"][gpu.name]
            assert "compute_capability" in data and "arch" in data
    from shapelint.hardware.gpus import _builtin_table

    all_families = _builtin_table()[3]
    for gpu in table:
        if gpu.compute_capability is not None:
            assert family_of(gpu.compute_capability, all_families) == gpu.arch, gpu.name
