"""The composite GitHub Action (action.yml), its `run` steps executed as a runner would.

Each ``run:`` step is run with bash, with ``${{ inputs.* }}`` / ``${{ github.* }}`` substituted
and the variables GitHub sets (GITHUB_ACTIONS, GITHUB_WORKSPACE, GITHUB_STEP_SUMMARY,
GITHUB_OUTPUT, GITHUB_ACTION_PATH …). ``uses:`` steps (actions/setup-python) are skipped: a
fresh virtual environment stands in for the Python they set up, and the install step really
builds and installs shapelint from a copy of this checkout, with ``--no-deps`` passed through
the ``SHAPELINT_PIP_ARGS`` variable the step honours (dependencies come from the test venv; the
isolated build fetches setuptools from PyPI, and the tests skip, saying so, without network).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import sysconfig
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
import yaml
from conftest import REPO

ACTION = REPO / "action.yml"
SCHEMA = REPO / "tests" / "data" / "sarif" / "sarif-schema-2.1.0.json"
EXPRESSION = re.compile(r"\$\{\{\s*(.*?)\s*\}\}")
GPT2 = '{\n  "n_embd": 768,\n  "n_head": 12,\n  "n_layer": 12,\n  "vocab_size": 50257\n}\n'
LLAMA = (
    "hidden_size: 4096\nnum_attention_heads: 32\nnum_hidden_layers: 32\n"
    "intermediate_size: 11008\nvocab_size: 32000\n"
)
ACTION_REF = "v0-test"


def load_action() -> dict[str, Any]:
    data: dict[str, Any] = yaml.safe_load(ACTION.read_text(encoding="utf-8"))
    return data


def substitute(text: str, contexts: Mapping[str, Mapping[str, str]]) -> str:
    """Replace each ``${{ ctx.name }}``; an expression the test cannot evaluate fails it."""

    def one(m: re.Match[str]) -> str:
        ctx, _, name = m.group(1).partition(".")
        assert ctx in contexts and name in contexts[ctx], f"unsupported expression {m.group(0)}"
        return contexts[ctx][name]

    return EXPRESSION.sub(one, text)


def copy_checkout(dest: Path) -> None:
    """The action's checkout: this working tree's tracked and untracked, non-ignored files."""
    listed = subprocess.run(
        ["git", "ls-files", "-co", "--exclude-standard", "-z"],
        cwd=REPO,
        capture_output=True,
        check=True,
    ).stdout.decode()
    for name in filter(None, listed.split("\0")):
        if (REPO / name).is_file():
            (dest / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(REPO / name, dest / name)


@pytest.fixture(scope="module")
def runner_python(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A new virtual environment (the runner's Python) that sees the test venv's packages."""
    if shutil.which("bash") is None or shutil.which("git") is None:
        pytest.skip("bash and git are needed to run the action's steps")
    venv = tmp_path_factory.mktemp("runner") / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    bindir = venv / ("Scripts" if os.name == "nt" else "bin")
    python = bindir / "python"
    purelib = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    # A plain path line: the test venv's packages (pip, setuptools, PyYAML, libcst, jsonschema)
    # become importable; its editable shapelint does not (its .pth is not processed).
    Path(purelib, "test-venv.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    return python


def run_action(
    tmp_path: Path,
    python: Path,
    inputs: Mapping[str, str],
    only: str | None = None,
    checkout: Path | None = None,
    ref: str = ACTION_REF,
) -> tuple[int, str, Path, dict[str, str]]:
    """Run every step (``only``: just the step of that name) of the action as GitHub would
    for ``uses: shapelint/shapelint@REF``, with the action's files from ``checkout`` (default:
    this working tree); return (exit code of the last step run, its output, workspace,
    outputs)."""
    workspace = tmp_path / "workspace"
    action_path = tmp_path / "action"
    runner_temp = tmp_path / "runner-temp"
    for d in (workspace, runner_temp):
        d.mkdir(exist_ok=True)
    if checkout is None:
        action_path.mkdir(exist_ok=True)
        copy_checkout(action_path)
    else:
        shutil.copytree(checkout, action_path, ignore=shutil.ignore_patterns(".git"))
    action: dict[str, Any] = yaml.safe_load((action_path / "action.yml").read_text("utf-8"))
    files = {
        "GITHUB_STEP_SUMMARY": tmp_path / "step_summary.md",
        "GITHUB_OUTPUT": tmp_path / "output.txt",
        "GITHUB_PATH": tmp_path / "path.txt",
        "GITHUB_ENV": tmp_path / "env.txt",
    }
    for f in files.values():
        f.write_text("")
    github = {
        "workspace": str(workspace),
        "action_path": str(action_path),
        "action_ref": ref,
        "repository": "example/models",
        "sha": "0123456789abcdef0123456789abcdef01234567",
    }
    unknown = set(inputs) - set(action["inputs"])
    assert not unknown, f"the action has no inputs {unknown}"
    values = {
        name: substitute(str(spec.get("default", "")), {"github": github})
        for name, spec in action["inputs"].items()
    }
    values.update(inputs)
    contexts = {"inputs": values, "github": github}
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GITHUB_", "RUNNER_"))}
    for var in ("NO_COLOR", "FORCE_COLOR", "VIRTUAL_ENV", "PYTHONPATH"):
        env.pop(var, None)
    env.update({k: str(v) for k, v in files.items()})
    env.update(
        GITHUB_ACTIONS="true",
        CI="true",
        GITHUB_WORKSPACE=str(workspace),
        GITHUB_ACTION_PATH=str(action_path),
        GITHUB_ACTION_REF=ref,
        GITHUB_REPOSITORY=github["repository"],
        GITHUB_SHA=github["sha"],
        RUNNER_TEMP=str(runner_temp),
        PATH=os.pathsep.join([str(python.parent), env.get("PATH", "")]),
        # Dependencies come from the test venv (--no-deps); the isolated build fetches the
        # build backend (setuptools) from PyPI, the only network this test needs.
        SHAPELINT_PIP_ARGS="--no-deps --ignore-installed",
    )
    _write_workspace(workspace)
    assert action["runs"]["using"] == "composite"
    rc, output = 0, ""
    for step in action["runs"]["steps"]:
        assert "if" not in step, "conditions are not evaluated by this test"
        if "uses" in step:
            assert step["uses"].startswith("actions/setup-python@")
            continue
        if only is not None and step.get("name") != only:
            continue
        assert step["shell"] == "bash"
        step_env = dict(env)
        step_env.update({k: substitute(str(v), contexts) for k, v in step.get("env", {}).items()})
        cwd = substitute(step.get("working-directory", "${{ github.workspace }}"), contexts)
        script = tmp_path / "step.sh"
        script.write_text(substitute(step["run"], contexts))
        # GitHub runs `shell: bash` as `bash --noprofile --norc -eo pipefail {0}`.
        proc = subprocess.run(
            ["bash", "--noprofile", "--norc", "-eo", "pipefail", str(script)],
            cwd=cwd,
            env=step_env,
            capture_output=True,
            text=True,
            check=False,
        )
        rc, output = proc.returncode, proc.stdout + proc.stderr
        if rc != 0 and step.get("name") == "Install shapelint" and _offline(output):
            pytest.skip("the install step could not fetch the build backend from PyPI (no network)")
        if rc != 0:
            break
    outputs = dict(
        line.split("=", 1) for line in files["GITHUB_OUTPUT"].read_text().splitlines() if line
    )
    return rc, output, workspace, outputs


def _offline(output: str) -> bool:
    markers = ("NewConnectionError", "Temporary failure in name resolution", "No matching dist")
    return any(m in output for m in markers)


def _write_workspace(workspace: Path) -> None:
    (workspace / "configs" / "gpt2").mkdir(parents=True, exist_ok=True)
    (workspace / "configs" / "gpt2" / "config.json").write_text(GPT2)
    (workspace / "configs" / "llama.yaml").write_text(LLAMA)
    (workspace / "clean").mkdir(exist_ok=True)
    (workspace / "clean" / "llama.yaml").write_text(LLAMA)


def test_action_inputs_and_steps_are_declared() -> None:
    action = load_action()
    assert set(action["inputs"]) >= {"paths", "gpu", "args", "version", "sarif"}
    assert action["inputs"]["version"]["default"] == "${{ github.action_ref }}"
    uses = [s["uses"] for s in action["runs"]["steps"] if "uses" in s]
    assert uses == ["actions/setup-python@v5"]
    assert all(s.get("shell") == "bash" for s in action["runs"]["steps"] if "run" in s)
    for step in action["runs"]["steps"]:
        # Inputs reach scripts through env, never spliced into the script text (injection).
        assert "${{" not in step.get("run", ""), step.get("name")


@pytest.mark.network
def test_action_annotates_summarizes_and_writes_sarif(tmp_path: Path, runner_python: Path) -> None:
    import jsonschema

    rc, output, workspace, outputs = run_action(
        tmp_path,
        runner_python,
        {"paths": "configs", "gpu": "H100-SXM, A100", "sarif": "reports/shapelint.sarif"},
    )
    assert rc == 1, output
    assert outputs["exit-code"] == "1"
    annotations = [ln for ln in output.splitlines() if ln.startswith("::")]
    assert len(annotations) == 1, output
    (note,) = annotations
    assert note.startswith(
        "::warning file=configs/gpt2/config.json,line=5,endLine=5,col=17,endColumn=22,"
        "title=shapelint SL101 vocab-padding::"
    )
    assert "%25 step time on H100-SXM" in note and "on A100-SXM-80GB" in note

    summary = (tmp_path / "step_summary.md").read_text()
    assert "## shapelint" in summary and "Found 1 problem" in summary
    assert (
        "https://github.com/example/models/blob/0123456789abcdef0123456789abcdef01234567/"
        "configs/gpt2/config.json#L5" in summary
    )

    sarif_path = workspace / "reports" / "shapelint.sarif"
    assert outputs["sarif"] == "reports/shapelint.sarif"
    sarif = json.loads(sarif_path.read_text())
    jsonschema.Draft4Validator(json.loads(SCHEMA.read_text())).validate(sarif)
    (result,) = sarif["runs"][0]["results"]
    location = result["locations"][0]["physicalLocation"]["artifactLocation"]
    assert location == {"uri": "configs/gpt2/config.json", "uriBaseId": "%SRCROOT%"}
    assert [e["gpu"] for e in result["properties"]["estimates"]] == ["H100-SXM", "A100-SXM-80GB"]

    # The step really installed shapelint into the runner's Python, from the action's checkout.
    where = subprocess.run(
        [str(runner_python), "-c", "import shapelint; print(shapelint.__file__)"],
        capture_output=True,
        text=True,
        check=True,
        cwd=tmp_path,
    ).stdout
    assert str(runner_python.parent.parent) in where


@pytest.mark.network
def test_action_passes_on_clean_configs(tmp_path: Path, runner_python: Path) -> None:
    rc, output, _, outputs = run_action(
        tmp_path, runner_python, {"paths": "clean", "args": "--fail-on warning"}
    )
    assert rc == 0, output
    assert outputs == {"exit-code": "0"}
    assert "::" not in output
    assert "All checks passed" in (tmp_path / "step_summary.md").read_text()


@pytest.mark.network
def test_action_settings_error_fails_the_step(tmp_path: Path, runner_python: Path) -> None:
    rc, output, _, outputs = run_action(
        tmp_path, runner_python, {"paths": "clean", "args": "--tp 0"}
    )
    assert rc == 2, output
    assert outputs["exit-code"] == "2"


def test_every_line_of_paths_is_linted(tmp_path: Path) -> None:
    """``paths: |`` with one path per line lints each of them, not only the first (the lint step
    alone, run with this test's Python, where shapelint is installed)."""
    rc, output, _, outputs = run_action(
        tmp_path,
        Path(sys.executable),
        {"paths": "clean\nconfigs/gpt2\n", "args": "--fail-on warning"},
        only="Run shapelint",
    )
    assert rc == 1 and outputs["exit-code"] == "1", output
    annotations = [ln for ln in output.splitlines() if ln.startswith("::")]
    assert len(annotations) == 1 and "file=configs/gpt2/config.json" in annotations[0], output
    summary = (tmp_path / "step_summary.md").read_text()
    assert "in 2 configs in 2 files" in summary, summary


def test_paths_and_args_split_on_spaces_tabs_and_newlines(tmp_path: Path) -> None:
    rc, output, _, _ = run_action(
        tmp_path,
        Path(sys.executable),
        {"paths": "clean\tconfigs/gpt2 configs/llama.yaml", "args": "--select\nSL1"},
        only="Run shapelint",
    )
    assert rc == 1, output
    summary = (tmp_path / "step_summary.md").read_text()
    assert "in 3 configs in 3 files" in summary, summary
