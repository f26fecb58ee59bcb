"""A release people can pin (issue 25): one version source, a dated CHANGELOG section per
version, docs that pin the release tag, and the pre-commit hooks and the GitHub Action working
from a tag. ``scripts/release.py`` runs this module in a clean clone after building and
installing the wheel.

The tag tests never touch this repository's tags: they commit this working tree into a
temporary repository, tag it ``vX.Y.Z`` there, then commit a change after the tag that breaks
the hook and the action, so only a run that really uses the tag passes.
"""

from __future__ import annotations

import importlib.util
import re
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path
from types import ModuleType

import pytest
from conftest import REPO
from test_action import run_action
from test_precommit import GPT2, add, git, pre_commit, snapshot

from shapelint import __version__

TAG = f"v{__version__}"


def release_script() -> ModuleType:
    spec = importlib.util.spec_from_file_location("release", REPO / "scripts" / "release.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_one_version_source() -> None:
    """pyproject.toml reads shapelint.__version__; the release check's source checks pass."""
    release = release_script()
    assert release.version_of(REPO) == __version__
    assert release.check_sources(REPO) == __version__
    pyproject = (REPO / "pyproject.toml").read_text(encoding="utf-8")
    assert not re.search(r"^version\s*=\s*\"", pyproject, flags=re.M)


def test_changelog_has_dated_sections_per_version() -> None:
    changelog = (REPO / "CHANGELOG.md").read_text(encoding="utf-8")
    headings = re.findall(r"^## (.+)$", changelog, flags=re.M)
    assert headings[0] == "[Unreleased]"
    versions = []
    for heading in headings[1:]:
        m = re.fullmatch(r"\[(\d+)\.(\d+)\.(\d+)\] — (\d{4}-\d{2}-\d{2})", heading)
        assert m is not None, heading
        versions.append(tuple(int(g) for g in m.groups()[:3]))
    assert versions == sorted(versions, reverse=True) and len(set(versions)) == len(versions)
    assert versions[0] == tuple(int(p) for p in __version__.split("."))
    # The unreleased section names the next version; each version links to its tag.
    unreleased = changelog.split("## [Unreleased]", 1)[1].split("\n## ", 1)[0]
    assert re.search(r"next release is \d+\.\d+\.\d+", unreleased)
    assert (
        f"[{__version__}]: https://github.com/shapelint/shapelint/releases/tag/{TAG}" in changelog
    )


def test_release_check_refuses_a_pin_to_a_branch(tmp_path: Path) -> None:
    release = release_script()
    for name in ("shapelint", "docs"):
        shutil.copytree(REPO / name, tmp_path / name, ignore=shutil.ignore_patterns("__pycache__"))
    for name in ("pyproject.toml", "CHANGELOG.md", "README.md"):
        shutil.copy2(REPO / name, tmp_path / name)
    assert release.check_sources(tmp_path) == __version__
    readme = tmp_path / "README.md"
    readme.write_text(readme.read_text(encoding="utf-8").replace(f"rev: {TAG}", "rev: main"))
    with pytest.raises(release.ReleaseError, match="pins 'main'"):
        release.check_sources(tmp_path)


@pytest.fixture(scope="module")
def tagged(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A temporary repository holding this working tree, tagged ``TAG``, with one commit
    after the tag that breaks both the hook manifest and the action."""
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    repo = tmp_path_factory.mktemp("tagged")
    snapshot(repo)
    git(repo, "tag", "-a", TAG, "-m", f"shapelint {__version__}")
    (repo / ".pre-commit-hooks.yaml").write_text("- id: shapelint\n  entry: false\n")
    (repo / "action.yml").write_text("name: broken after the tag\n")
    git(repo, "commit", "-q", "-am", "after the tag: breaks the hooks and the action")
    return repo


@pytest.mark.network
@pytest.mark.parametrize("hook_id", ["shapelint", "shapelint-fix"])
def test_precommit_hooks_work_from_the_tag(
    tagged: Path, tmp_path: Path, hook_id: str, tmp_path_factory: pytest.TempPathFactory
) -> None:
    work = tmp_path / "project"
    work.mkdir()
    git(work, "init", "-q")
    add(work, "models/gpt2/config.json", GPT2)
    home = tmp_path_factory.getbasetemp() / "release-pre-commit-home"
    args = ("try-repo", str(tagged), hook_id, "--ref", TAG, "--all-files")
    proc = pre_commit(work, home, *args)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 1 and "Failed" in out, out
    assert "models/gpt2/config.json:5:17: SL101" in out or "Fixed 1 problem" in out, out


@pytest.mark.network
def test_action_works_from_the_tag(tagged: Path, tmp_path: Path) -> None:
    """``uses: shapelint/shapelint@vX.Y.Z``: the action's files at the tag, its ref the tag;
    the install step installs shapelint from that checkout, which reports the version."""
    checkout = tmp_path / "checkout"
    git(tmp_path, "clone", "-q", "--branch", TAG, str(tagged), str(checkout))
    python = _runner_python(tmp_path / "runner")
    rc, output, _, outputs = run_action(
        tmp_path, python, {"paths": "configs"}, checkout=checkout, ref=TAG
    )
    assert rc == 1 and outputs["exit-code"] == "1", output
    assert "file=configs/gpt2/config.json" in output
    installed = subprocess.run(
        [str(python), "-c", "import shapelint; print(shapelint.__version__, shapelint.__file__)"],
        capture_output=True,
        text=True,
        check=True,
        cwd=tmp_path,
    ).stdout.split()
    assert installed[0] == __version__ and str(python.parent.parent) in installed[1]


def _runner_python(where: Path) -> Path:
    """A fresh venv without pip that imports the test venv's packages (not its editable
    shapelint), so the action's install step puts shapelint in it."""
    venv = where / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = venv / "bin" / "python"
    purelib = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    Path(purelib, "test-venv.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    return python
