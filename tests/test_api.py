"""The Python API, through its public names only (``import shapelint``): what it returns is
what the command line prints as JSON, its errors are `shapelint.ShapelintError`, and
importing it costs nothing until it is used."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest

import shapelint

REPO = Path(__file__).resolve().parent.parent
GPT2 = '{\n  "n_embd": 768,\n  "n_head": 12,\n  "n_layer": 12,\n  "vocab_size": 50257\n}\n'
QWEN2_7B = (
    '{"architectures": ["Qwen2ForCausalLM"], "hidden_size": 3584, "num_attention_heads": 28,'
    ' "num_key_value_heads": 4, "intermediate_size": 18944, "num_hidden_layers": 28,'
    ' "vocab_size": 152064}\n'
)
LLAMA_YAML = (
    "hidden_size: 4096\nnum_attention_heads: 32\nnum_hidden_layers: 32\nvocab_size: 50257\n"
)


@pytest.fixture
def here(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.delenv("GITHUB_ACTIONS", raising=False)
    (tmp_path / ".git").mkdir()  # settings are searched up to here
    monkeypatch.chdir(tmp_path)
    return tmp_path


def cli_json(*argv: str, cwd: Path) -> object:
    proc = subprocess.run(
        [sys.executable, "-m", "shapelint", *argv, "--format", "json"],
        cwd=cwd,
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode in (0, 1), proc.stderr
    return json.loads(proc.stdout)


def valid(command: str, data: object) -> None:
    jsonschema.Draft202012Validator(shapelint.schema(command)).validate(data)


# -- the names ------------------------------------------------------------------------------------


def test_importing_shapelint_loads_nothing_until_the_api_is_used() -> None:
    """``--version`` and every command start from ``import shapelint``: the API it names
    must not import the engine (or even ``typing``) before a program uses it."""
    code = (
        "import sys\nimport shapelint\n"
        "print(sorted(m for m in sys.modules if m.startswith('shapelint')), 'typing' in sys.modules)\n"
        "shapelint.check\n"
        "print('shapelint.api' in sys.modules, 'shapelint.engine.runner' in sys.modules)\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert proc.stdout.splitlines() == ["['shapelint'] False", "True False"]


def test_all_names_the_api_and_each_name_is_there() -> None:
    assert set(shapelint.__all__) == {
        "__version__",
        "check",
        "explain",
        "suggest",
        "schema",
        "CheckResult",
        "Explanation",
        "Suggestions",
        "ShapelintError",
        "Finding",
        "ModelConfig",
        "Fix",
        "Estimate",
        "Span",
        "Dim",
    }
    for name in shapelint.__all__:
        value = getattr(shapelint, name)
        assert name == "__version__" or value.__doc__, name
    assert set(shapelint.__all__) <= set(dir(shapelint))
    with pytest.raises(AttributeError, match="no attribute 'chek'"):
        shapelint.chek  # type: ignore[attr-defined]  # noqa: B018


# -- check ----------------------------------------------------------------------------------------


def test_check_of_paths_is_the_commands_json(here: Path) -> None:
    (here / "gpt2").mkdir()
    (here / "gpt2" / "config.json").write_text(GPT2)
    (here / "model.yaml").write_text(LLAMA_YAML)
    (here / ".shapelint.toml").write_text('gpu = ["A100", "H100"]\nmicro-batch = 2\n')
    result = shapelint.check(".")
    assert result.to_json() == cli_json(".", "--no-cache", cwd=here)
    valid("check", result.to_json())
    assert [f.code for f in result.findings] == ["SL101", "SL101"]
    first = result.findings[0]
    assert isinstance(first, shapelint.Finding) and isinstance(first.span, shapelint.Span)
    assert (first.path, first.span.line, first.key) == ("gpt2/config.json", 5, "vocab_size")
    assert [e.gpu for e in first.estimates] == ["A100-SXM-80GB", "H100-SXM"]
    assert first.fix is not None and first.fix.edits[0].new == 50304
    assert len(result.configs) == 2  # the settings file is read too, as the command reads it
    assert set(result.files) == {"gpt2/config.json", "model.yaml", ".shapelint.toml"}
    config = next(c for c in result.configs if c.path == "gpt2/config.json")
    assert isinstance(config, shapelint.ModelConfig)
    assert config.int(shapelint.Dim.HIDDEN) == 768


def test_check_of_a_text_takes_the_settings_above_its_path(here: Path) -> None:
    """A text stands for the file at ``path`` (an editor's unsaved buffer): reported there,
    under the settings that apply to it; without a path, under none."""
    found = shapelint.check(LLAMA_YAML, format="yaml")
    assert [(f.code, f.path, f.span.line) for f in found.findings] == [("SL101", "<text>.yaml", 4)]
    (here / "conf").mkdir()
    (here / "conf" / ".shapelint.toml").write_text('ignore = ["SL101"]\n')
    assert shapelint.check(LLAMA_YAML, format="yaml", path="conf/model.yaml").findings == ()
    assert shapelint.check(LLAMA_YAML, format="yaml", path="model.yaml").findings != ()
    hidden = shapelint.check(LLAMA_YAML + "# shapelint: disable-file\n", format="yaml")
    assert hidden.findings == ()


def test_check_options_act_as_the_flags_do(here: Path) -> None:
    (here / "config.json").write_text(GPT2)
    on_a100 = shapelint.check("config.json", target={"gpu": "A100", "micro_batch": 4})
    assert [e.gpu for e in on_a100.findings[0].estimates] == ["A100-SXM-80GB"]
    assert on_a100.to_json() == cli_json(
        "config.json", "--no-cache", "--gpu", "A100", "--micro-batch", "4", cwd=here
    )
    assert shapelint.check("config.json", select="SL2").findings == ()
    assert shapelint.check("config.json", ignore=["SL101"]).findings == ()
    tp5 = shapelint.check(here / "config.json", target={"tp": 5, "engines": "vllm"})
    assert {f.code for f in tp5.findings} >= {"SL005", "SL301", "SL309"}  # 12 heads, tp 5


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"source": "nowhere.json"}, "no such file or directory: nowhere.json"),
        ({"target": {"tpp": 2}}, "target: unknown field 'tpp' (known: gpu, "),
        ({"target": {"tp": 0}}, "target: tp: expected a positive integer, got 0"),
        ({"target": {"gpu": "H1000"}}, "H1000"),
        ({"target": {"mode": "training"}}, 'target: mode: expected one of "train"'),
        ({"select": "SL999"}, "SL999"),
        ({"source": "{}", "format": "xml"}, "unknown format 'xml'"),
        ({"settings": "missing.toml"}, "cannot read settings file missing.toml"),
    ],
)
def test_check_refuses_what_the_command_refuses(
    here: Path, kwargs: dict[str, object], message: str
) -> None:
    (here / "config.json").write_text(GPT2)
    with pytest.raises(shapelint.ShapelintError) as caught:
        shapelint.check(**kwargs)  # type: ignore[arg-type]
    assert message in str(caught.value)
    assert isinstance(caught.value, ValueError)


# -- explain --------------------------------------------------------------------------------------


def test_explain_gives_one_explanation_per_config_and_gpu(here: Path) -> None:
    (here / "config.json").write_text(GPT2)
    found = shapelint.explain("config.json", target={"gpu": ["A100", "H100"]})
    assert [e.gpu for e in found] == ["A100-SXM-80GB", "H100-SXM"]
    assert all(0 < e.mfu < 1 and e.step_time_s > 0 for e in found)
    assert found[0].data["gemms"] and found[0].data["step_time_s"] == found[0].step_time_s
    several = cli_json("explain", "config.json", "--gpu", "A100", "--gpu", "H100", cwd=here)
    assert [e.data for e in found] == several["configs"]  # type: ignore[index]
    one = shapelint.explain(GPT2, format="json", path="config.json")[0].to_json()
    assert one == cli_json("explain", "config.json", cwd=here)
    valid("explain", one)


def test_explain_refuses_a_config_that_cannot_run_unless_forced(here: Path) -> None:
    broken = '{"hidden_size": 4100, "num_attention_heads": 48, "num_hidden_layers": 2}'
    with pytest.raises(shapelint.ShapelintError, match="cannot run as written") as caught:
        shapelint.explain(broken, format="json")
    assert [f.code for f in caught.value.findings] == ["SL003"]
    assert shapelint.explain(broken, format="json", force=True)
    with pytest.raises(shapelint.ShapelintError, match="no model config found"):
        shapelint.explain('{"name": "pkg"}', format="json")
    (here / "d").mkdir()
    with pytest.raises(shapelint.ShapelintError, match="is a directory"):
        shapelint.explain("d")


# -- suggest --------------------------------------------------------------------------------------


def test_suggest_ranks_as_the_command_does(here: Path) -> None:
    gpt3 = REPO / "examples" / "gpt3-2.7b" / "config.json"
    found = shapelint.suggest(gpt3, target={"gpu": ["A100", "H100"]}, top=3)
    assert found.gpus == ("A100-SXM-80GB", "H100-SXM")
    ranked = [c.speedup_per_parameter_pct for c in found.candidates]
    assert len(ranked) == 3 and ranked == sorted(ranked, reverse=True)
    assert all(c.shape.hidden % c.shape.heads == 0 for c in found.candidates)
    assert found.original.params > 2_000_000_000
    data = found.to_json()
    valid("suggest", data)
    shown = cli_json("suggest", str(gpt3), "--gpu", "A100", "--gpu", "H100", "--top", "3", cwd=here)
    assert data["candidates"] == shown["candidates"]  # type: ignore[index]


def test_suggest_holds_what_the_target_chooses_and_says_what_refuses(here: Path) -> None:
    found = shapelint.suggest(QWEN2_7B, format="json", target={"tp": 8, "engines": "vllm"})
    assert found.refused and all(c.shape.tp == 8 for c in found.candidates)
    assert all(c.shape.heads % 8 == 0 for c in found.candidates)
    with pytest.raises(shapelint.ShapelintError, match="unknown dim 'heds'"):
        shapelint.suggest(QWEN2_7B, format="json", keep=["heds"])
    kept = shapelint.suggest(GPT2, format="json", keep=["heads"], top=2)
    assert all(c.shape.heads == 12 for c in kept.candidates)


# -- schemas --------------------------------------------------------------------------------------


def test_schema_is_the_shipped_one_for_each_output() -> None:
    for command in ("check", "explain", "suggest", "gemm", "engines"):
        schema = shapelint.schema(command)
        jsonschema.Draft202012Validator.check_schema(schema)
        assert schema["$id"].endswith(f"/{command}-v1.json")
    with pytest.raises(shapelint.ShapelintError, match="no schema for 'sarif'"):
        shapelint.schema("sarif")
