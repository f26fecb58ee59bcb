"""Every ``--format json`` output is valid against its shipped, versioned schema, and the
schema documents every field the output has (checked with every object closed).

The schemas are package data (`shapelint.report.schemas`); each output carries its
``$schema`` id and ``version``. docs/output.md lists them.
"""

from __future__ import annotations

import copy
import io
import json
import shutil
import sys
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from conftest import REPO

from shapelint.cli.main import main
from shapelint.report.schemas import BASE, VERSIONS, file_name, load, schema_id, schema_path

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

COMMANDS = tuple(VERSIONS)
GPT2 = '{"n_embd": 768, "n_head": 12, "n_layer": 12, "vocab_size": 50257}\n'
QWEN2_7B = (
    '{"architectures": ["Qwen2ForCausalLM"], "hidden_size": 3584, "num_attention_heads": 28,'
    ' "num_key_value_heads": 4, "intermediate_size": 18944, "num_hidden_layers": 28,'
    ' "vocab_size": 152064}\n'
)


def closed(schema: Any) -> Any:
    """``schema`` with every object closed: a property it does not list is an error (so an
    output field the schema does not document fails the test)."""
    if isinstance(schema, list):
        return [closed(s) for s in schema]
    if not isinstance(schema, dict):
        return schema
    out = {k: closed(v) if k not in ("const", "enum") else v for k, v in schema.items()}
    if "properties" in schema and not {"additionalProperties", "unevaluatedProperties"} & set(
        schema
    ):
        # Properties a oneOf/$ref evaluates count as known at this level too.
        composed = {"oneOf", "anyOf", "allOf", "$ref"} & set(schema)
        out["unevaluatedProperties" if composed else "additionalProperties"] = False
    return out


def valid(command: str, data: Any) -> None:
    """``data`` is valid against ``command``'s shipped schema, and against it closed."""
    schema = load(command)
    jsonschema.Draft202012Validator(schema).validate(data)
    jsonschema.Draft202012Validator(closed(schema)).validate(data)
    assert data["$schema"] == schema_id(command)
    assert data["version"] == VERSIONS[command]


def run(*argv: str) -> Any:
    out, err = io.StringIO(), io.StringIO()
    code = main(list(argv), out, err)
    assert code in (0, 1), err.getvalue()
    return json.loads(out.getvalue())


@pytest.fixture
def here(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.delenv("GITHUB_ACTIONS", raising=False)
    (tmp_path / ".git").mkdir()
    monkeypatch.chdir(tmp_path)
    return tmp_path


@pytest.mark.parametrize("command", COMMANDS)
def test_each_schema_is_a_schema_with_its_id_and_version(command: str) -> None:
    schema = load(command)
    jsonschema.Draft202012Validator.check_schema(schema)
    assert schema["$id"] == schema_id(command) == BASE + file_name(command)
    assert Path(schema_path(command)).name == f"{command}-v{VERSIONS[command]}.json"
    stamp = schema["properties"]
    assert stamp["version"]["const"] == VERSIONS[command]
    assert stamp["$schema"]["const"] == schema_id(command)


def test_the_schemas_are_package_data() -> None:
    pyproject = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))
    assert "report/schemas/*.json" in pyproject["tool"]["setuptools"]["package-data"]["shapelint"]
    shipped = {p.name for p in Path(schema_path("check")).parent.glob("*.json")}
    assert {file_name(c) for c in COMMANDS} <= shipped


def test_the_docs_list_every_schema() -> None:
    page = (REPO / "docs" / "output.md").read_text(encoding="utf-8")
    for command in COMMANDS:
        assert schema_id(command) in page, command


def test_check_json(here: Path) -> None:
    shutil.copytree(REPO / "examples", here / "examples")
    shutil.copytree(REPO / "tests" / "data" / "fix", here / "fix")
    (here / "broken").mkdir()
    (here / "broken" / "config.json").write_text('{"hidden_size": 4096,,}')
    (here / "gpt2.json").write_text(GPT2)
    # Dims the key lexicon reads (layers, seq) carry lexicon_keys.
    (here / "mesh.json").write_text('{"layers": 28, "d_model": 4096, "n_heads": 16, "seq": 2048}')
    data = run("check", ".", "--format", "json", "--min-slowdown", "0", "--gpu", "a100",
               "--gpu", "h100", "--no-cache")  # fmt: skip
    codes = {f["code"] for f in data["findings"]}
    assert {"SL000", "SL101"} <= codes and any(f["fix"] for f in data["findings"])
    assert any("target" in c for c in data["configs"])
    assert any("lexicon_keys" in c for c in data["configs"])
    valid("check", data)
    valid("check", run("check", "examples/llama-2-7b", "--format", "json", "--no-cache"))


def test_explain_json_one_and_several(here: Path) -> None:
    (here / "gpt2.json").write_text(GPT2)
    one = run("explain", "gpt2.json", "--format", "json")
    assert "gemms" in one
    valid("explain", one)
    several = run("explain", "gpt2.json", "--format", "json", "--gpu", "a100", "--gpu", "h100")
    assert len(several["configs"]) == 2
    valid("explain", several)
    for item in several["configs"]:  # the items are explanations without the stamp
        assert "$schema" not in item and "version" not in item
    moe = REPO / "examples" / "paligemma-3b" / "config.json"
    valid("explain", run("explain", str(moe), "--format", "json"))
    # A parallel step: its collectives and pipeline bubble.
    flags = ("--tp", "2", "--pp", "2", "--data-parallel", "2", "--global-batch", "8")
    parallel = run("explain", "gpt2.json", "--format", "json", *flags, "--recompute", "selective")
    assert parallel["comms"] and parallel["bubble"] > 0
    valid("explain", parallel)


def test_suggest_json(here: Path) -> None:
    (here / "gpt2.json").write_text(GPT2)
    data = run("suggest", "gpt2.json", "--format", "json", "--gpu", "a100", "--gpu", "h100")
    assert data["candidates"]
    valid("suggest", data)
    (here / "qwen.json").write_text(QWEN2_7B)
    refused = run("suggest", "qwen.json", "--format", "json", "--tp", "8", "--engine", "vllm")
    assert refused["original"]["refused"]
    valid("suggest", refused)


def test_gemm_and_engines_json() -> None:
    valid("gemm", run("gemm", "4096", "4096", "4096", "--format", "json"))
    valid(
        "gemm", run("gemm", "100", "3", "7", "--batch", "4", "--layout", "tn", "--format", "json")
    )
    data = run("engines", "--format", "json")
    assert len(data["engines"]) > 3
    valid("engines", data)


def test_the_checks_can_fail(here: Path) -> None:
    (here / "gpt2.json").write_text(GPT2)
    data = run("check", "gpt2.json", "--format", "json")
    undocumented = copy.deepcopy(data)
    undocumented["findings"][0]["severity_rank"] = 2
    with pytest.raises(jsonschema.ValidationError):
        valid("check", undocumented)
    wrong = copy.deepcopy(data)
    wrong["findings"][0]["line"] = "5"
    with pytest.raises(jsonschema.ValidationError):
        valid("check", wrong)
    one = run("explain", "gpt2.json", "--format", "json")
    one["gemms"][0]["lost_somewhere"] = 0.1
    with pytest.raises(jsonschema.ValidationError):
        valid("explain", one)


@pytest.mark.corpus
def test_check_json_of_the_shared_corpus(corpus: Path) -> None:
    """Real configs of public projects, every dialect and format: the schema describes it all."""
    from shapelint.engine.options import LintOptions
    from shapelint.engine.runner import lint_paths
    from shapelint.hardware.gpus import lookup
    from shapelint.report.json import report_dict

    options = LintOptions(gpus=(lookup("H100-SXM"), lookup("A100")), min_slowdown=0.0)
    data = report_dict(lint_paths([str(corpus)], options))
    assert len(data["configs"]) > 100
    valid("check", data)
