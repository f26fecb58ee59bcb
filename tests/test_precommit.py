"""The shipped .pre-commit-hooks.yaml, run for real through pre-commit.

pre-commit installs the hook's environment with pip from PyPI, so these tests need the network;
they skip, saying so, only when that install fails for lack of it. ``try-repo`` would leave out
files this checkout has not committed (it snapshots tracked changes only), so the hooks are run
from a throwaway git repository holding a commit of this working tree.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from conftest import REPO

GPT2 = '{\n  "n_embd": 768,\n  "n_head": 12,\n  "n_layer": 12,\n  "vocab_size": 50257\n}\n'
GPT2_FIXED = GPT2.replace("50257", "50304")
LLAMA = (
    "hidden_size: 4096\nnum_attention_heads: 32\nnum_hidden_layers: 32\n"
    "intermediate_size: 11008\nvocab_size: 32000\n"
)
NETWORK_MARKERS = (
    "NewConnectionError",
    "Temporary failure in name resolution",
    "Name or service not known",
    "Network is unreachable",
    "No matching distribution found",
    "Could not find a version that satisfies",
    "ConnectTimeoutError",
    "ProxyError",
)
PRE_COMMIT = [sys.executable, "-m", "pre_commit"]
HOOKS = REPO / ".pre-commit-hooks.yaml"


def git_env() -> dict[str, str]:
    """An environment where git ignores the user's config and can commit."""
    env = dict(os.environ)
    env.update(
        GIT_CONFIG_GLOBAL=os.devnull,
        GIT_CONFIG_NOSYSTEM="1",
        GIT_AUTHOR_NAME="shapelint tests",
        GIT_AUTHOR_EMAIL="tests@example.invalid",
        GIT_COMMITTER_NAME="shapelint tests",
        GIT_COMMITTER_EMAIL="tests@example.invalid",
    )
    for var in ("GITHUB_ACTIONS", "NO_COLOR", "FORCE_COLOR", "PRE_COMMIT_COLOR"):
        env.pop(var, None)
    return env


def git(cwd: Path, *args: str) -> str:
    proc = subprocess.run(
        ["git", *args], cwd=cwd, env=git_env(), capture_output=True, text=True, check=True
    )
    return proc.stdout.strip()


def snapshot(dest: Path) -> str:
    """Copy this working tree (tracked and untracked, not ignored) to ``dest``; commit it there."""
    listed = subprocess.run(
        ["git", "ls-files", "-co", "--exclude-standard", "-z"],
        cwd=REPO,
        capture_output=True,
        check=True,
    ).stdout.decode()
    for name in filter(None, listed.split("\0")):
        src = REPO / name
        if src.is_file():
            (dest / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest / name)
    git(dest, "init", "-q")
    git(dest, "add", "-A")
    git(dest, "commit", "-q", "-m", "snapshot of the working tree")
    return git(dest, "rev-parse", "HEAD")


@pytest.fixture(scope="module")
def hook_repo(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """A committed copy of this checkout: (path, commit)."""
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    dest = tmp_path_factory.mktemp("hook-repo")
    return dest, snapshot(dest)


@pytest.fixture(scope="module")
def pre_commit_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("pre-commit-home")


@pytest.fixture
def work(tmp_path: Path) -> Iterator[Path]:
    """An empty git repository to lint."""
    repo = tmp_path / "project"
    repo.mkdir()
    git(repo, "init", "-q")
    yield repo


def pre_commit(cwd: Path, home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = git_env()
    env["PRE_COMMIT_HOME"] = str(home)
    env["PRE_COMMIT_COLOR"] = "never"
    proc = subprocess.run(
        [*PRE_COMMIT, *args], cwd=cwd, env=env, capture_output=True, text=True, check=False
    )
    skip_without_network(proc.stdout + proc.stderr)
    return proc


def skip_without_network(output: str) -> None:
    if "CalledProcessError" in output and any(m in output for m in NETWORK_MARKERS):
        pytest.skip("pre-commit could not install the hook from PyPI (no network)")


def add(repo: Path, name: str, text: str) -> Path:
    path = repo / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    git(repo, "add", name)
    return path


def test_manifest_declares_both_hooks() -> None:
    hooks = {h["id"]: h for h in yaml.safe_load(HOOKS.read_text(encoding="utf-8"))}
    assert set(hooks) == {"shapelint", "shapelint-fix"}
    for hook in hooks.values():
        assert hook["language"] == "python"
        assert hook["require_serial"] is True
        assert set(hook["types_or"]) == {"json", "yaml", "python", "toml", "shell"}
        assert hook["entry"].split()[0] == "shapelint"
    assert "--fix" in hooks["shapelint-fix"]["entry"].split()
    assert "--fix" not in hooks["shapelint"]["entry"].split()


@pytest.mark.parametrize(
    ("name", "passed"),
    [
        ("config.json", True),
        ("train.yaml", True),
        ("train.yml", True),
        ("model_config.py", True),
        ("torchtitan.toml", True),
        ("train_gpt3.sh", True),
        ("notes.txt", False),
        ("README.md", False),
        ("weights.safetensors", False),
        ("tokenizer.model", False),
    ],
)
def test_hook_file_selection(tmp_path: Path, name: str, passed: bool) -> None:
    """pre-commit passes a file when its identify tags meet the hook's types_or."""
    from identify import identify

    path = tmp_path / name
    path.write_text("{}\n" if name.endswith(".json") else "x = 1\n", encoding="utf-8")
    tags = identify.tags_from_path(str(path))
    for hook in yaml.safe_load(HOOKS.read_text(encoding="utf-8")):
        assert "files" not in hook and "exclude" not in hook
        assert bool(tags & set(hook["types_or"])) is passed, (hook["id"], name, tags)


@pytest.mark.network
def test_try_repo_check_hook(hook_repo: tuple[Path, str], work: Path, tmp_path: Path) -> None:
    repo, _ = hook_repo
    add(work, "models/llama/config.yaml", LLAMA)
    add(work, "notes.txt", "vocab_size: 50257\n")
    proc = pre_commit(work, tmp_path / "home", "try-repo", str(repo), "shapelint", "--all-files")
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out
    assert "shapelint" in out and "Passed" in out

    add(work, "models/gpt2/config.json", GPT2)
    proc = pre_commit(work, tmp_path / "home", "try-repo", str(repo), "shapelint", "--all-files")
    out = proc.stdout + proc.stderr
    assert proc.returncode == 1, out
    assert "Failed" in out
    assert "models/gpt2/config.json:5:17: SL101" in out
    assert "notes.txt" not in out
    assert (work / "models/gpt2/config.json").read_text() == GPT2  # the check hook writes nothing


@pytest.mark.network
def test_try_repo_fix_hook(hook_repo: tuple[Path, str], work: Path, tmp_path: Path) -> None:
    repo, _ = hook_repo
    gpt2 = add(work, "gpt2/config.json", GPT2)
    add(work, "llama.yaml", LLAMA)
    home = tmp_path / "home"
    proc = pre_commit(work, home, "try-repo", str(repo), "shapelint-fix", "--all-files")
    out = proc.stdout + proc.stderr
    assert proc.returncode == 1, out
    assert "Failed" in out and "files were modified by this hook" in out
    assert gpt2.read_text() == GPT2_FIXED
    assert (work / "llama.yaml").read_text() == LLAMA

    git(work, "add", "-A")
    proc = pre_commit(work, home, "try-repo", str(repo), "shapelint-fix", "--all-files")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert gpt2.read_text() == GPT2_FIXED


README_CONFIG = """\
repos:
  - repo: {repo}
    rev: {rev}
    hooks:
      - id: shapelint
"""


@pytest.mark.network
def test_installed_hook_blocks_a_commit(
    hook_repo: tuple[Path, str], work: Path, pre_commit_home: Path
) -> None:
    """The README's .pre-commit-config.yaml, installed with `pre-commit install`, blocks a commit."""
    repo, rev = hook_repo
    add(work, ".pre-commit-config.yaml", README_CONFIG.format(repo=repo, rev=rev))
    proc = pre_commit(work, pre_commit_home, "install")
    assert proc.returncode == 0, proc.stdout + proc.stderr

    add(work, "llama.yaml", LLAMA)
    env = git_env()
    env["PRE_COMMIT_HOME"] = str(pre_commit_home)
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])
    ok = subprocess.run(
        ["git", "commit", "-m", "clean config"], cwd=work, env=env, capture_output=True, text=True
    )
    skip_without_network(ok.stdout + ok.stderr)
    assert ok.returncode == 0, ok.stdout + ok.stderr
    assert "shapelint" in ok.stdout + ok.stderr

    add(work, "gpt2/config.json", GPT2)
    bad = subprocess.run(
        ["git", "commit", "-m", "bad config"], cwd=work, env=env, capture_output=True, text=True
    )
    out = bad.stdout + bad.stderr
    assert bad.returncode != 0, out
    assert "gpt2/config.json:5:17: SL101" in out
    assert git(work, "log", "--format=%s") == "clean config"


# --- the documented recipes (issue 14; docs/integrations.md and the README) ----------------

INTEGRATIONS = REPO / "docs" / "integrations.md"


def doc_blocks(heading: str) -> list[str]:
    """The yaml and sh blocks under ``## heading`` of docs/integrations.md."""
    page = INTEGRATIONS.read_text(encoding="utf-8")
    section = page.split(f"\n## {heading}\n", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"```(?:yaml|sh)\n(.*?)```", section, flags=re.S)


def readme_precommit_block() -> str:
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    section = readme.split("\n## pre-commit\n", 1)[1].split("\n## ", 1)[0]
    (block,) = re.findall(r"```yaml\n(.*?)```", section, flags=re.S)
    return block


def readme_hook_ids() -> list[str]:
    return re.findall(r"id: ([\w-]+)", readme_precommit_block())


def test_snippets_name_real_hooks_and_the_release_tag() -> None:
    """The README and the docs show the same remote recipe, naming both hooks of the manifest
    and pinned to this version's tag (tests/test_release.py runs it from such a tag)."""
    from shapelint import __version__

    assert readme_precommit_block() == doc_blocks("pre-commit")[0]
    remote = yaml.safe_load(readme_precommit_block())["repos"][0]
    manifest = {h["id"] for h in yaml.safe_load(HOOKS.read_text(encoding="utf-8"))}
    ids = readme_hook_ids()
    assert ids == ["shapelint", "shapelint-fix"] and set(ids) <= manifest
    assert remote["repo"] == "https://github.com/shapelint/shapelint"
    assert str(remote["rev"]) == f"v{__version__}"


@pytest.mark.network
@pytest.mark.parametrize("hook_id", readme_hook_ids())
def test_try_repo_with_the_readme_hook_ids(
    hook_repo: tuple[Path, str], work: Path, pre_commit_home: Path, hook_id: str
) -> None:
    repo, _ = hook_repo
    add(work, "models/gpt2/config.json", GPT2)
    # One pre-commit home for both ids: the hook environment is installed once.
    proc = pre_commit(work, pre_commit_home, "try-repo", str(repo), hook_id, "--all-files")
    out = proc.stdout + proc.stderr
    assert proc.returncode == 1 and "Failed" in out, out
    gpt2 = (work / "models/gpt2/config.json").read_text(encoding="utf-8")
    if hook_id == "shapelint-fix":
        assert gpt2 == GPT2_FIXED and "Fixed 1 problem" in out
    else:
        assert gpt2 == GPT2 and "SL101" in out


@pytest.mark.network
def test_docs_local_recipe_runs(hook_repo: tuple[Path, str], work: Path, tmp_path: Path) -> None:
    """The documented ``repo: local`` hook as written, installing this checkout in place of the
    tag it pins."""
    repo, _ = hook_repo
    from shapelint import __version__

    local = yaml.safe_load(doc_blocks("pre-commit")[1])
    (hook,) = local["repos"][0]["hooks"]
    (dep,) = hook["additional_dependencies"]
    assert local["repos"][0]["repo"] == "local" and hook["language"] == "python"
    assert dep == f"shapelint @ git+https://github.com/shapelint/shapelint@v{__version__}"
    hook["additional_dependencies"] = [f"shapelint @ {repo.as_uri()}"]
    add(work, ".pre-commit-config.yaml", yaml.safe_dump(local))
    add(work, "models/gpt2/config.json", GPT2)
    proc = pre_commit(work, tmp_path / "home", "run", "--all-files")
    out = proc.stdout + proc.stderr
    assert proc.returncode == 1 and "Failed" in out and "SL101" in out, out
    add(work, "models/gpt2/config.json", GPT2_FIXED)
    proc = pre_commit(work, tmp_path / "home", "run", "--all-files")
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_docs_ci_recipe_commands_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The CI recipe's ``shapelint`` commands, run as written on the bundled examples."""
    import io
    import shlex

    from shapelint.cli.main import main

    (ci,) = doc_blocks("Other CI systems")
    commands = [ln for ln in ci.splitlines() if ln.startswith("shapelint ")]
    assert len(commands) == 2 and ci.startswith("pip install ")
    shutil.copytree(REPO / "examples", tmp_path / "examples")
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)
    for command in commands:
        out, err = io.StringIO(), io.StringIO()
        code = main(shlex.split(command)[1:], out, err)
        assert code in (0, 1) and "error" not in err.getvalue(), (command, err.getvalue())
    assert (tmp_path / "shapelint.sarif").is_file()
