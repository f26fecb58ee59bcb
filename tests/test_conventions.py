"""What a user of ruff or yamllint expects (issue 14): refusals, rule lookup, one finding per fact."""

from __future__ import annotations

import io
import json
import re
from pathlib import Path

import pytest
from conftest import REPO

from shapelint.cli.main import main
from shapelint.rules import REGISTRY

GPT2 = '{\n  "n_embd": 768,\n  "n_head": 12,\n  "n_layer": 12,\n  "vocab_size": 50257\n}\n'
TWELVE_HEADS = '{"hidden_size": 768, "num_attention_heads": 12, "num_hidden_layers": 12, "vocab_size": 50304}\n'


def run(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = main(list(argv), out, err)
    return code, out.getvalue(), err.getvalue()


@pytest.fixture
def gpt2(tmp_path: Path) -> Path:
    path = tmp_path / "config.json"
    path.write_text(GPT2, encoding="utf-8")
    return path


# --- refuse what cannot mean anything ----------------------------------------------------


@pytest.mark.parametrize(
    ("flag", "value", "suggested"),
    [
        ("--select", "SL9", None),
        ("--ignore", "SL1O1", "SL101"),
        ("--select", "SL10l", "SL101"),
        ("--ignore", "SL1,SL777", None),
    ],
)
def test_unknown_codes_on_the_command_line_are_usage_errors(
    gpt2: Path, flag: str, value: str, suggested: str | None
) -> None:
    code, out, err = run(str(gpt2), flag, value)
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and err.startswith("shapelint: error: ")
    assert flag in err and "unknown rule code or prefix" in err
    assert "did you mean" in err
    if suggested is not None:
        assert repr(suggested) in err


def test_a_rule_name_in_select_names_its_code(gpt2: Path) -> None:
    code, _, err = run(str(gpt2), "--select", "vocab-padding")
    assert code == 2 and "SL101" in err


@pytest.mark.parametrize("value", ["SL", "SL1", "sl10", "SL101", "ALL", "SL0,SL2"])
def test_known_prefixes_are_accepted(gpt2: Path, value: str) -> None:
    assert run(str(gpt2), "--select", value)[0] in (0, 1)
    assert run(str(gpt2), "--ignore", value)[0] in (0, 1)


def test_every_registered_code_is_a_valid_selector(gpt2: Path) -> None:
    # Validation reads the registry: a newly registered family (SL3xx) needs no edit here.
    for code in REGISTRY:
        assert run(str(gpt2), "--select", code, "--exit-zero")[0] == 0, code


@pytest.mark.parametrize(
    "table",
    [
        'select = ["SL9"]',
        'ignore = ["SL1", "SL99"]',
        '[per-file-ignores]\n"legacy/*.json" = ["SL101", "SL99"]',
    ],
)
def test_unknown_codes_in_settings_are_usage_errors(tmp_path: Path, table: str) -> None:
    (tmp_path / ".shapelint.toml").write_text(table + "\n", encoding="utf-8")
    (tmp_path / "config.json").write_text(GPT2, encoding="utf-8")
    code, _, err = run(str(tmp_path / "config.json"))
    assert code == 2 and err.count("\n") == 1
    assert ".shapelint.toml" in err and "unknown rule code or prefix" in err


def test_rule_accepts_codes_and_names() -> None:
    by_code = run("rule", "SL101")
    assert by_code[0] == 0
    assert run("rule", "vocab-padding") == by_code
    assert run("rule", "sl101") == by_code
    code, _, err = run("rule", "vocab-paddin")
    assert code == 2 and "'SL101'" in err


@pytest.mark.parametrize("code", sorted(REGISTRY))
def test_rule_prints_its_source_once(code: str) -> None:
    status, out, _ = run("rule", code)
    assert status == 0
    assert sum(line.startswith("Source:") for line in out.splitlines()) == 1


# --- one finding per fact; explain refuses a config that cannot run ---------------------


def test_sl203_is_silent_where_sl005_reports_the_heads(tmp_path: Path) -> None:
    path = tmp_path / "config.json"
    path.write_text(TWELVE_HEADS, encoding="utf-8")
    code, out, _ = run(str(path), "--tp", "8", "--min-slowdown", "0", "--ignore", "SL301")
    assert code == 1
    assert "SL005" in out and "SL203" not in out
    # With the engines' rule on, the heads error is SL301's (SL005 defers): still one.
    code, out, _ = run(str(path), "--tp", "8", "--min-slowdown", "0")
    assert code == 1
    assert "SL301" in out and "SL005" not in out and "SL203" not in out


def test_explain_prints_sl0xx_errors_first_and_exits_1(tmp_path: Path) -> None:
    path = tmp_path / "config.json"
    path.write_text(TWELVE_HEADS, encoding="utf-8")
    code, out, err = run("explain", str(path), "--tp", "8")
    assert code == 1 and out == ""
    assert err.splitlines()[0].startswith(f"{path}:1:")
    assert "SL005" in err.splitlines()[0] and "--force" in err
    code, out, err = run("explain", str(path), "--tp", "8", "--force")
    assert code == 0 and "SL005" in err and "tp 8" in out
    assert run("explain", str(path), "--tp", "4")[0] == 0


@pytest.mark.parametrize(
    ("value", "wording"),
    [
        ("NaN", "got NaN (not a number)"),
        ("4096.5", "got 4096.5 (not a whole number)"),
        ("Infinity", "got inf (infinite)"),
    ],
)
def test_invalid_dim_wording(tmp_path: Path, value: str, wording: str) -> None:
    path = tmp_path / "config.json"
    path.write_text(
        f'{{"hidden_size": {value}, "num_attention_heads": 32, "num_hidden_layers": 32}}\n',
        encoding="utf-8",
    )
    code, out, _ = run(str(path))
    assert code == 1
    line = next(ln for ln in out.splitlines() if "SL002" in ln)
    assert wording in line and "fraction" not in line


def test_tensor_parallel_wording(tmp_path: Path) -> None:
    path = tmp_path / "config.json"
    path.write_text(
        '{"hidden_size": 4100, "num_attention_heads": 41, "num_hidden_layers": 2}\n',
        encoding="utf-8",
    )
    _, out, _ = run(str(path), "--tp", "8")
    assert (
        "hidden size (hidden_size = 4100) must be divisible by the tensor-parallel size (8)" in out
    )
    assert "total number of" not in out


# --- say what was assumed -----------------------------------------------------------------


def docs_contract() -> tuple[set[str], set[str], set[str]]:
    """The field names the JSON contract block of docs/output.md lists for findings, configs,
    targets."""
    page = (REPO / "docs" / "output.md").read_text(encoding="utf-8")
    block = page.split("\n## JSON output\n", 1)[1].split("```", 2)[1]
    findings, configs = block.split('"configs":', 1)
    configs, target = configs.split('"target":', 1)
    findings = findings.split('"findings":', 1)[1].split('"estimates"', 1)[0]

    def names(text: str) -> set[str]:
        return set(re.findall(r'"([a-z_]+)"', text))

    return (
        names(findings) | {"estimates", "fix"},
        names(configs.split('"dims"')[0])
        | {
            "dims",
            "sources",
            "target",
        },
        names(target.split('"origins"')[0]) - {"flag", "config", "settings", "default"}
        | {
            "origins",
            "defaults",
        },
    )


def test_json_output_matches_the_documented_contract(gpt2: Path) -> None:
    finding_keys, config_keys, target_keys = docs_contract()
    code, out, _ = run(str(gpt2), "--format", "json")
    assert code == 1
    data = json.loads(out)
    (f,) = data["findings"]
    (c,) = data["configs"]
    assert set(f) == finding_keys
    assert set(c) == config_keys
    assert c["sources"] == dict.fromkeys(c["dims"], "hf")
    assert set(c["target"]) == target_keys
    assert f["message"].endswith(
        f"[+{f['estimates'][0]['slowdown_pct']:.1f}% step time on H100-SXM]"
    )


def test_text_report_states_the_target_once_marking_defaults(tmp_path: Path) -> None:
    for name in ("a", "b"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "config.json").write_text(GPT2, encoding="utf-8")
    _, out, _ = run(str(tmp_path))
    lines = [ln for ln in out.splitlines() if ln.startswith("Estimated for")]
    # GPT-2's n_positions is absent here: the sequence is the default too.
    assert lines == [
        "Estimated for: H100-SXM*, bf16*, train*, micro-batch 1*, seq 4096*, tp 1* "
        "(* = built-in default; choose with flags or [tool.shapelint])"
    ]
    _, out, _ = run(str(tmp_path), "--micro-batch", "12", "--dtype", "fp16")
    assert "Estimated for: H100-SXM*, fp16, train*, micro-batch 12, seq 4096*, tp 1*" in out
    _, out, _ = run(str(tmp_path), "--gpu", "h100")
    assert "Estimated for: H100-SXM, bf16*, train*" in out
    (tmp_path / ".shapelint.toml").write_text("seq-len = 2048\n", encoding="utf-8")
    _, out, _ = run(str(tmp_path))
    assert "micro-batch 1*, seq 2048, tp 1*" in out
    assert "Estimated for" not in run(str(tmp_path), "-q")[1]


def test_json_and_sarif_carry_the_target_per_config(gpt2: Path) -> None:
    _, out, _ = run(str(gpt2), "--format", "json", "--tp", "2", "--gpu", "a100")
    (c,) = json.loads(out)["configs"]
    assert c["target"]["tp"] == 2 and c["target"]["origins"]["tp"] == "flag"
    assert c["target"]["gpu"] == ["A100-SXM-80GB"]
    assert c["target"]["defaults"] == [
        "dtype",
        "mode",
        "micro_batch",
        "seq_len",
        "attention",
        "fused",
        "data_parallel",
        "sharded",
        "recompute",
    ]
    assert c["target"]["origins"]["gpu"] == "chosen"
    _, out, _ = run(str(gpt2), "--format", "sarif", "--micro-batch", "2")
    (result,) = json.loads(out)["runs"][0]["results"]
    assert result["properties"]["target"]["micro_batch"] == 2
    assert "% step time on H100-SXM]" in result["message"]["text"]


def test_step_summary_marks_unsafe_fixes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "gpt2.json").write_text(GPT2, encoding="utf-8")
    # A pretrained checkpoint's config: its fix is unsafe.
    pretrained = GPT2.replace("{\n", '{\n  "architectures": ["GPT2LMHeadModel"],\n', 1)
    (tmp_path / "hub.json").write_text(pretrained, encoding="utf-8")
    summary = tmp_path / "summary.md"
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    assert run(str(tmp_path), "--format", "github")[0] == 1
    rows = [ln for ln in summary.read_text(encoding="utf-8").splitlines() if "SL101" in ln]
    assert len(rows) == 2
    assert sum("**unsafe**, `--unsafe-fixes`" in r for r in rows) == 1
    assert sum("(safe, `--fix`)" in r for r in rows) == 1
    assert "Estimated for: H100-SXM\\*, bf16\\*" in summary.read_text(encoding="utf-8")


# --- --diff applies with git apply and patch -p1 ------------------------------------------


@pytest.mark.parametrize("tool", ["git", "patch"])
def test_diff_applies(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, tool: str) -> None:
    import shutil
    import subprocess

    if shutil.which(tool) is None:
        pytest.skip(f"{tool} is not installed")
    (tmp_path / "models" / "gpt2").mkdir(parents=True)
    (tmp_path / "models" / "gpt2" / "config.json").write_text(GPT2, encoding="utf-8")
    yaml_text = "# model\nhidden_size: 768\nnum_attention_heads: 12\nnum_hidden_layers: 12\nvocab_size: 50257"
    (tmp_path / "train.yaml").write_bytes(yaml_text.encode())  # no final newline
    monkeypatch.chdir(tmp_path)
    code, diff, _ = run("--diff", ".")
    assert code == 1
    assert "--- a/models/gpt2/config.json\n+++ b/models/gpt2/config.json\n" in diff
    assert "--- a/train.yaml\n+++ b/train.yaml\n" in diff
    (tmp_path / "fix.patch").write_text(diff, encoding="utf-8")
    if tool == "git":
        subprocess.run(["git", "init", "-q"], check=True)
        cmd = ["git", "apply", "fix.patch"]
    else:
        cmd = ["patch", "-p1", "-i", "fix.patch"]
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert (tmp_path / "models" / "gpt2" / "config.json").read_text() == GPT2.replace(
        "50257", "50304"
    )
    assert (tmp_path / "train.yaml").read_bytes() == yaml_text.replace("50257", "50304").encode()
    assert run("--diff", ".")[0] == 0  # nothing left to fix


def test_test_caches_stay_out_of_the_tree() -> None:
    """Downloaded wheels (``.cache``, a symlink to a shared folder) and the hypothesis
    database are git-ignored, so no test run leaves files for ``git add``."""
    import shutil
    import subprocess

    if shutil.which("git") is None or not (REPO / ".git").exists():
        pytest.skip("not a git checkout")
    for name in (".cache", ".hypothesis/examples/x"):
        proc = subprocess.run(["git", "check-ignore", "-q", name], cwd=REPO, check=False)
        assert proc.returncode == 0, f"{name} is not git-ignored"
