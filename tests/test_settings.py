"""Settings: [tool.shapelint] / .shapelint.toml discovery, validation, and CLI precedence."""

from __future__ import annotations

import io
import json
import subprocess
import sys
from pathlib import Path

import pytest

from shapelint.cli.main import main
from shapelint.core.model import Dim
from shapelint.engine.settings import SettingsError, SettingsResolver, load

GPT2 = '{\n  "n_embd": 768,\n  "n_head": 12,\n  "n_layer": 12,\n  "vocab_size": 50257\n}\n'
CLEAN = (
    '{"hidden_size": 4096, "num_attention_heads": 32, "num_hidden_layers": 32, '
    '"intermediate_size": 11008, "vocab_size": 32000}\n'
)
# Key names no built-in dialect knows (MaxText's base_* keys are built in now).
CUSTOM = '{"model_width": 4096, "query_heads": 30, "vocab_size": 32000}\n'


def run(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = main(list(argv), out, err)
    return code, out.getvalue(), err.getvalue()


def codes(*argv: str) -> list[str]:
    code, out, err = run(*argv, "--format", "json")
    assert code in (0, 1), err
    return [f["code"] for f in json.loads(out)["findings"]]


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A git work tree with a bad GPT-2 config and a clean Llama config."""
    monkeypatch.delenv("GITHUB_ACTIONS", raising=False)
    (tmp_path / ".git").mkdir()
    (tmp_path / "gpt2").mkdir()
    (tmp_path / "gpt2" / "config.json").write_text(GPT2)
    (tmp_path / "clean.json").write_text(CLEAN)
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_pyproject_section_applies(project: Path) -> None:
    assert codes(".", "--select", "SL101") == ["SL101"]
    assert "SL005" not in codes(".")
    (project / "pyproject.toml").write_text('[project]\nname = "x"\n\n[tool.shapelint]\ntp = 3\n')
    assert "SL005" in codes(".")  # settings supply --tp: 3 divides no head count
    assert "SL005" not in codes(".", "--tp", "1")  # the flag wins


def test_nearest_settings_file_wins(project: Path) -> None:
    (project / "pyproject.toml").write_text('[tool.shapelint]\nignore = ["SL101"]\n')
    assert codes(".") == []
    (project / "gpt2" / ".shapelint.toml").write_text('select = ["SL1"]\n')
    assert codes(".") == ["SL101"]  # gpt2/ has its own settings, without the ignore
    # A pyproject.toml without [tool.shapelint] does not count: the search goes on up.
    (project / "gpt2" / ".shapelint.toml").unlink()
    (project / "gpt2" / "pyproject.toml").write_text('[project]\nname = "gpt2"\n')
    assert codes(".") == []


def test_shapelint_toml_before_pyproject_in_one_directory(project: Path) -> None:
    (project / "pyproject.toml").write_text('[tool.shapelint]\nignore = ["SL101"]\n')
    (project / ".shapelint.toml").write_text("min-slowdown = 0\n")
    assert codes(".") == ["SL101"]


def test_search_stops_at_the_git_root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / ".shapelint.toml").write_text('ignore = ["SL101"]\n')
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    (repo / "config.json").write_text(GPT2)
    assert codes(str(repo)) == ["SL101"]
    (repo / ".git").rmdir()
    assert codes(str(repo)) == []


def test_select_ignore_per_file_ignores_and_exclude(project: Path) -> None:
    (project / "legacy").mkdir()
    (project / "legacy" / "config.json").write_text(GPT2)
    (project / "vendor").mkdir()
    (project / "vendor" / "gpt2.json").write_text(GPT2)
    (project / ".shapelint.toml").write_text(
        'exclude = ["vendor"]\n[per-file-ignores]\n"legacy/*.json" = ["SL101"]\n'
    )
    _, out, _ = run(".", "--format", "json")
    paths = [f["path"] for f in json.loads(out)["findings"]]
    assert paths == [str(Path("gpt2", "config.json"))]
    # --select on the command line replaces the settings' select/ignore; --ignore adds.
    (project / ".shapelint.toml").write_text('ignore = ["SL101"]\n')
    assert codes(".") == []
    assert codes(".", "--select", "SL101") == ["SL101"] * 3
    (project / ".shapelint.toml").write_text('select = ["SL0"]\n')
    assert codes(".") == []
    assert codes(".", "--tp", "3", "--ignore", "SL005") == []


def test_target_defaults_and_gpus(project: Path) -> None:
    (project / ".shapelint.toml").write_text(
        'gpu = ["a100", "h100"]\ndtype = "bfloat16"\nmode = "train"\nmicro-batch = 2\n'
        'seq-len = 2048\nattention = "flash"\nmin-slowdown = 0.5\n'
    )
    _, out, _ = run(".", "--format", "json")
    (f,) = json.loads(out)["findings"]
    assert [e["gpu"] for e in f["estimates"]] == ["A100-SXM-80GB", "H100-SXM"]
    _, out, _ = run(".", "--format", "json", "--gpu", "h100")
    (f,) = json.loads(out)["findings"]
    assert [e["gpu"] for e in f["estimates"]] == ["H100-SXM"]


def test_one_gpu_or_engine_may_be_written_as_a_string(project: Path) -> None:
    """``gpu = "A100"`` was refused because it had to be a list; a list-valued setting takes
    one name as itself (``engines`` too, the other list of names)."""
    (project / ".shapelint.toml").write_text('gpu = "a100"\nengines = "vllm"\ntp = 5\n')
    settings = load(str(project / ".shapelint.toml"))
    assert (settings.gpu, settings.target.get("engines")) == (("a100",), ("vllm",))
    code, out, err = run("gpt2", "--format", "json", "--select", "SL301")
    assert code == 1, err
    (finding,) = json.loads(out)["findings"]  # GPT-2's 12 heads over tp 5
    assert [e["gpu"] for e in finding["estimates"]] == ["A100-SXM-80GB"]
    assert "(refused by vLLM 0.34.0)" in finding["message"]  # that engine alone


def test_gpu_file_is_relative_to_the_settings_file(project: Path) -> None:
    (project / "conf").mkdir()
    (project / "conf" / "gpus.yaml").write_text(": not a gpu table [\n")
    (project / ".shapelint.toml").write_text('gpu-file = "conf/gpus.yaml"\n')
    code, _, err = run(".")
    assert code == 2 and ".shapelint.toml" in err and err.count("\n") == 1


def test_custom_keys(project: Path) -> None:
    (project / "custom.json").write_text(CUSTOM)
    assert "SL003" not in codes("custom.json")
    (project / ".shapelint.toml").write_text(
        '[keys]\nhidden = ["model_width"]\nheads = ["query_heads"]\n'
    )
    _, out, _ = run("custom.json", "--format", "json")
    data = json.loads(out)
    assert [f["code"] for f in data["findings"]] == ["SL003"]
    assert data["findings"][0]["key"] in ("model_width", "query_heads")
    assert data["configs"][0]["dims"]["hidden"] == 4096
    settings = SettingsResolver().for_file(str(project / "custom.json"))
    assert settings.keys == {Dim.HIDDEN: ("model_width",), Dim.HEADS: ("query_heads",)}


def test_fail_on(project: Path) -> None:
    assert run(".")[0] == 1
    (project / ".shapelint.toml").write_text('fail-on = "error"\n')
    code, out, _ = run(".")
    assert code == 0 and "SL101" in out  # reported, but only errors fail
    assert run(".", "--fail-on", "warning")[0] == 1  # the flag wins
    (project / ".shapelint.toml").write_text('fail-on = "warning"\n')
    assert run(".")[0] == 1
    assert run(".", "--fail-on", "error")[0] == 0


def test_config_flag_replaces_the_search(
    project: Path, tmp_path_factory: pytest.TempPathFactory
) -> None:
    (project / ".shapelint.toml").write_text('ignore = ["SL101"]\n')
    assert codes(".") == []
    other = tmp_path_factory.mktemp("elsewhere") / "strict.toml"
    other.write_text("min-slowdown = 0\n")
    assert codes(".", "--config", str(other)) == ["SL101"]
    pyproject = tmp_path_factory.mktemp("elsewhere2") / "pyproject.toml"
    pyproject.write_text('[tool.shapelint]\nignore = ["SL"]\n')
    assert codes(".", "--config", str(pyproject)) == []


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('tp = "four"\n', 'tp: expected a positive integer, got "four"'),
        ("tp = 0\n", "tp: expected a positive integer, got 0"),
        ('ignor = ["SL101"]\n', "unknown key 'ignor'"),
        ("gpu = 100\n", 'gpu: expected a GPU name or a list of them, such as "A100"'),
        ("gpu = []\n", "gpu: expected a GPU name or a list of them"),
        ('engines = ""\n', "engines: expected an engine or a list of them"),
        (
            'mode = "training"\n',
            'mode: expected one of "train", "prefill", "decode", got "training"',
        ),
        ('fail-on = "never"\n', "fail-on: expected one of"),
        ('select = ["E501"]\n', "select[0]: expected a list of rule codes"),
        ('dtype = "int4"\n', "dtype: expected a dtype name"),
        ('[keys]\nhiden = ["d"]\n', "keys: unknown dim 'hiden'"),
        ('[keys]\nhidden = "d"\n', "keys.hidden: expected a table of dim name"),
        ('[per-file-ignores]\n"a/*" = "SL101"\n', "per-file-ignores.a/*: expected"),
        ("tp = = 3\n", "invalid TOML"),
    ],
)
def test_invalid_settings_exit_2_with_one_line(project: Path, text: str, expected: str) -> None:
    (project / ".shapelint.toml").write_text(text)
    code, out, err = run(".")
    assert code == 2, (out, err)
    assert err.startswith("shapelint: error: .shapelint.toml")
    assert expected in err, err
    assert err.count("\n") == 1 and "Traceback" not in err


def test_pyproject_errors_name_the_section(project: Path) -> None:
    (project / "pyproject.toml").write_text("[tool.shapelint]\ntp = -1\n")
    _, _, err = run(".")
    assert err == (
        "shapelint: error: pyproject.toml [tool.shapelint]: tp: expected a positive integer, "
        "got -1\n"
    )


def test_schema_dims_match_the_model() -> None:
    from importlib import resources

    schema = json.loads(
        resources.files("shapelint.engine").joinpath("settings.schema.json").read_text("utf-8")
    )
    assert schema["properties"]["keys"]["propertyNames"]["enum"] == [d.value for d in Dim]


def test_load_and_missing_file(tmp_path: Path) -> None:
    with pytest.raises(SettingsError, match="cannot read settings file"):
        load(str(tmp_path / "nope.toml"))
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "x"\n')
    assert load(str(tmp_path / "pyproject.toml")).select is None


def test_no_settings_file_does_not_import_jsonschema(project: Path) -> None:
    code = (
        "import sys; from shapelint.cli.main import main; rc = main(['.', '-q']); "
        "print('jsonschema' in sys.modules, rc)"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code], cwd=project, capture_output=True, text=True, check=False
    )
    assert proc.stdout.strip().splitlines()[-1] == "False 1", proc.stderr
    (project / ".shapelint.toml").write_text("tp = 1\n")
    proc = subprocess.run(
        [sys.executable, "-c", code], cwd=project, capture_output=True, text=True, check=False
    )
    assert proc.stdout.strip().splitlines()[-1] == "True 1", proc.stderr


def docs_example() -> str:
    """The settings example that opens docs/configuration.md."""
    page = Path(__file__).resolve().parent.parent / "docs" / "configuration.md"
    return page.read_text(encoding="utf-8").split("```toml\n", 1)[1].split("```", 1)[0]


def test_docs_example_loads(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text(docs_example())
    s = load(str(tmp_path / "pyproject.toml"))
    assert s.gpu == ("H100-SXM", "A100") and s.target.get("tp") == 8 and s.fail_on == "warning"
    assert s.per_file_ignores == {"checkpoints/*/config.json": ("SL101", "SL103")}
    assert s.keys[Dim.HIDDEN] == ("model_width",)
