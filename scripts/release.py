"""Check that this checkout is a release people can pin (``python scripts/release.py``).

From a clean clone of the repository at ``--ref`` (default: the current commit; committed files
only), it:

1. checks the one version source: ``shapelint/__init__.py``'s ``__version__``, which
   pyproject.toml reads (``dynamic = ["version"]``), has a dated CHANGELOG section
   (``## [X.Y.Z] — YYYY-MM-DD``), and the README and docs pin the tag ``vX.Y.Z``;
2. builds the sdist and the wheel (``python -m build``) and runs ``twine check --strict``;
3. installs the wheel into a fresh virtual environment, checks ``shapelint --version`` and
   lints ``examples/`` with it (findings expected: exit 1, GPT-2's SL101 among them);
4. runs ``tests/test_release.py`` in the clone: the pre-commit hooks (``pre-commit try-repo
   CLONE --ref vX.Y.Z``) and the GitHub Action, each from a tag made in a temporary clone.

It never creates or pushes a tag in this repository; the maintainer tags after it passes:
``git tag -a vX.Y.Z -m "shapelint X.Y.Z" && git push origin vX.Y.Z``. Needs ``build``,
``twine``, ``pytest`` and ``pre-commit`` (the ``test`` extra) and network access to PyPI
(the isolated build, the wheel's dependencies, pre-commit's hook environment).
Exit 0 when every check passes, 1 with the failed check's output otherwise.
"""

from __future__ import annotations

import argparse
import ast
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

if sys.version_info >= (3, 11):
    import tomllib
else:  # Python 3.10 reads TOML with tomli, a dependency there
    import tomli as tomllib  # type: ignore[import-not-found,unused-ignore]

REPO = Path(__file__).resolve().parent.parent


class ReleaseError(Exception):
    """A release check failed; the message says which and why."""


def version_of(root: Path) -> str:
    """``__version__`` as written in ``root/shapelint/__init__.py`` (read, not imported)."""
    tree = ast.parse((root / "shapelint" / "__init__.py").read_text(encoding="utf-8"))
    for node in tree.body:
        if (
            isinstance(node, ast.Assign)
            and any(isinstance(t, ast.Name) and t.id == "__version__" for t in node.targets)
            and isinstance(node.value, ast.Constant)
            and isinstance(node.value.value, str)
        ):
            return node.value.value
    raise ReleaseError("shapelint/__init__.py assigns no literal __version__")


def check_sources(root: Path) -> str:
    """The version's single source, its CHANGELOG section and the tag the docs pin."""
    version = version_of(root)
    if not re.fullmatch(r"\d+\.\d+\.\d+", version):
        raise ReleaseError(f"__version__ {version!r} is not X.Y.Z")
    project = tomllib.loads((root / "pyproject.toml").read_text(encoding="utf-8"))
    if "version" in project["project"] or "version" not in project["project"].get("dynamic", []):
        raise ReleaseError("pyproject.toml must take its version from shapelint.__version__")
    attr = project["tool"]["setuptools"]["dynamic"]["version"]
    if attr != {"attr": "shapelint.__version__"}:
        raise ReleaseError(f"pyproject.toml reads the version from {attr}")
    changelog = (root / "CHANGELOG.md").read_text(encoding="utf-8")
    heading = re.search(
        rf"^## \[{re.escape(version)}\] — (\d{{4}}-\d{{2}}-\d{{2}})$", changelog, re.M
    )
    if heading is None:
        raise ReleaseError(f"CHANGELOG.md has no section '## [{version}] — YYYY-MM-DD'")
    tag = f"v{version}"
    texts = {
        p: p.read_text(encoding="utf-8") for p in [root / "README.md", *root.glob("docs/*.md")]
    }
    pins = re.compile(r"(?:rev: |shapelint/shapelint@|shapelint@)(v?[\w.]+)")
    for path, text in texts.items():
        for pinned in pins.findall(text):
            if pinned != tag:
                name = path.relative_to(root)
                raise ReleaseError(f"{name} pins {pinned!r}, not the release tag {tag}")
    if not any(tag in text for text in texts.values()):
        raise ReleaseError(f"README.md and docs/ never name the tag {tag}")
    return version


def run(cmd: list[str], cwd: Path, env: dict[str, str] | None = None) -> str:
    """Run ``cmd``; raise ReleaseError with its output when it fails."""
    proc = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise ReleaseError(f"{' '.join(cmd)} exited {proc.returncode}:\n{proc.stdout}{proc.stderr}")
    return proc.stdout + proc.stderr


def clone(ref: str, dest: Path) -> Path:
    """A clean clone of this repository at ``ref`` (committed files only: commit first)."""
    commit = run(["git", "rev-parse", "--verify", f"{ref}^{{commit}}"], REPO).strip()
    run(["git", "clone", "--quiet", "--no-hardlinks", "--no-checkout", str(REPO), str(dest)], REPO)
    run(["git", "fetch", "--quiet", str(REPO), commit], dest)
    run(["git", "checkout", "--quiet", "--detach", commit], dest)
    return dest


def build(root: Path, out: Path) -> tuple[Path, Path]:
    """Build the sdist and the wheel of ``root`` into ``out`` and twine-check them."""
    run([sys.executable, "-m", "build", "--sdist", "--wheel", "--outdir", str(out), "."], root)
    version = version_of(root)
    sdist, wheel = (
        out / f"shapelint-{version}.tar.gz",
        out / f"shapelint-{version}-py3-none-any.whl",
    )
    if not (sdist.is_file() and wheel.is_file()):
        raise ReleaseError(f"the build did not write {sdist.name} and {wheel.name}")
    run([sys.executable, "-m", "twine", "check", "--strict", str(sdist), str(wheel)], root)
    return sdist, wheel


def install_and_lint(wheel: Path, root: Path, venv: Path, version: str) -> str:
    """Install ``wheel`` into a fresh venv; lint root/examples with it; return its report."""
    run([sys.executable, "-m", "venv", str(venv)], root)
    bindir = venv / ("Scripts" if os.name == "nt" else "bin")
    run([str(bindir / "python"), "-m", "pip", "install", "--quiet", str(wheel)], root)
    shown = run([str(bindir / "shapelint"), "--version"], root).strip()
    if shown != f"shapelint {version}":
        raise ReleaseError(f"the installed wheel says {shown!r}, not 'shapelint {version}'")
    env = {k: v for k, v in os.environ.items() if k not in ("GITHUB_ACTIONS", "NO_COLOR")}
    proc = subprocess.run(
        [str(bindir / "shapelint"), "check", "--no-cache", "examples/"],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    report = proc.stdout
    if proc.returncode != 1 or "examples/gpt2-from-scratch/config.json:9:17: SL101" not in report:
        raise ReleaseError(
            f"linting examples/ with the wheel exited {proc.returncode}:\n{report}{proc.stderr}"
        )
    return report


def tag_checks(root: Path) -> str:
    """tests/test_release.py in the clone: pre-commit and the Action from a tag."""
    return run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests/test_release.py"],
        root,
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--ref", default="HEAD", help="commit or tag to check (default HEAD)")
    parser.add_argument(
        "--keep", metavar="DIR", help="build in DIR and keep it (default: a temporary folder)"
    )
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="shapelint-release-") as tmp:
        work = Path(args.keep) if args.keep else Path(tmp)
        work.mkdir(parents=True, exist_ok=True)
        try:
            root = clone(args.ref, work / "clone")
            version = check_sources(root)
            print(f"version {version}: one source, CHANGELOG dated, docs pin v{version}")
            sdist, wheel = build(root, work / "dist")
            print(f"built {sdist.name} and {wheel.name}; twine check passed")
            report = install_and_lint(wheel, root, work / "venv", version)
            print(f"fresh venv: shapelint {version} linted examples/ ({report.splitlines()[-1]})")
            print(tag_checks(root).strip().splitlines()[-1])
        except ReleaseError as exc:
            print(f"release check failed: {exc}", file=sys.stderr)
            return 1
    print(f"release check passed: tag it with git tag -a v{version} -m 'shapelint {version}'")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
