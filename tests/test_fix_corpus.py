"""--fix on copies of real configs (the shared corpus) and README-like examples changes exactly
the values it reports: ``git diff --no-index --word-diff=porcelain`` between the original and
the fixed tree lists only those values, and a second --fix changes nothing."""

from __future__ import annotations

import ast
import io
import os
import re
import shutil
import stat
import subprocess
from collections import Counter
from pathlib import Path

import pytest

from shapelint.cli.main import main

DATA = Path(__file__).resolve().parent / "data" / "fix"
# Numbers are words of their own, so "50257," diffs as 50257 → 50304, not with the comma.
WORD_REGEX = r"[A-Za-z0-9_.+-]+|[^[:space:]]"
SHOWN = re.compile(
    r"^(?P<path>.+):\d+:\d+: (?P<code>SL\d+) (?P<key>\S+) (?P<old>\S+) → (?P<new>\S+)$"
)


def run(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = main(list(argv), out, err)
    return code, out.getvalue(), err.getvalue()


def _git() -> str:
    git = shutil.which("git")
    if git is None:
        pytest.skip("git is not installed")
    return git


def word_changes(git: str, before: Path, after: Path) -> Counter[tuple[str, str, str]]:
    """(file, removed word, added word) for every changed word between two trees."""
    proc = subprocess.run(
        [
            git,
            "diff",
            "--no-index",
            "--no-color",
            "--word-diff=porcelain",
            f"--word-diff-regex={WORD_REGEX}",
            str(before),
            str(after),
        ],
        capture_output=True,
        text=True,
        encoding="utf-8",
        check=False,
    )
    assert proc.returncode in (0, 1), proc.stderr
    changes: Counter[tuple[str, str, str]] = Counter()
    current = ""
    removed: list[str] = []
    for line in proc.stdout.splitlines():
        if line.startswith("+++ "):
            current = line[4:].split(str(after.name) + "/", 1)[-1]
        elif line.startswith("-") and not line.startswith("---"):
            removed.append(line[1:])
        elif line.startswith("+"):
            assert removed, f"added text with nothing removed in {current}: {line!r}"
            changes[(current, removed.pop(0), line[1:])] += 1
        elif line.startswith("~") or line.startswith(" "):
            assert not removed, f"removed text with nothing added in {current}: {removed}"
    assert not removed
    return changes


def shown_changes(out: str, root: Path) -> Counter[tuple[str, str, str]]:
    """(file, old, new) for every --show-fixes line, as the text the file holds."""
    changes: Counter[tuple[str, str, str]] = Counter()
    for line in out.splitlines():
        m = SHOWN.match(line)
        if m and "→" in line and "[" not in line:
            rel = os.path.relpath(m["path"], root).replace(os.sep, "/")
            changes[(rel, m["old"], m["new"])] += 1
    return changes


ARITHMETIC = re.compile(r"^[\d_ ()+*/-]+$")


def _value_text(word: str) -> str:
    """The value a word of a file stands for: ``50_257`` → 50257, ``50_000 + 257`` → 50257."""
    if ARITHMETIC.match(word) and not word.strip().lstrip("-").replace("_", "").isdigit():
        tree = ast.parse(word.strip(), mode="eval")
        return str(eval(compile(tree, "<fixed value>", "eval"), {"__builtins__": {}}))
    return word.replace("_", "")


def _render_words(changes: Counter[tuple[str, str, str]]) -> Counter[tuple[str, str, str]]:
    # A file keeps its literal style (50_257, an expression), which the shown values do not.
    return Counter({(f, _value_text(o), _value_text(n)): c for (f, o, n), c in changes.items()})


def copy_tree(src: Path, dst: Path) -> None:
    shutil.copytree(src, dst, ignore=shutil.ignore_patterns("SOURCES.tsv"))
    for folder, _, files in os.walk(dst):
        for name in files:
            p = os.path.join(folder, name)
            os.chmod(p, os.stat(p).st_mode | stat.S_IWUSR)


def fix_and_compare(
    tmp_path: Path, src: Path, *flags: str
) -> tuple[int, Counter[tuple[str, str, str]]]:
    git = _git()
    before, after = tmp_path / "before", tmp_path / "after"
    copy_tree(src, before)
    copy_tree(src, after)
    code, out, err = run(*flags, "--show-fixes", str(after))
    assert code in (0, 1), err
    shown = shown_changes(out, after)
    words = word_changes(git, before, after)
    assert _render_words(words) == _render_words(shown)
    changed_files = {f for f, _, _ in words}
    fixed_line = next((ln for ln in out.splitlines() if ln.startswith("Fixed ")), "Fixed 0")
    assert int(fixed_line.split()[1]) >= len(changed_files)
    # A second run changes nothing.
    snapshot = {p: p.read_bytes() for p in after.rglob("*") if p.is_file()}
    code2, out2, _ = run(*flags, str(after))
    assert code2 == code
    assert "Fixed" not in out2
    assert {p: p.read_bytes() for p in after.rglob("*") if p.is_file()} == snapshot
    return len(changed_files), words


def test_examples_fix_only_reported_values(tmp_path: Path) -> None:
    src = tmp_path / "examples"
    src.mkdir()
    for p in DATA.iterdir():
        if ".fixed." not in p.name:
            shutil.copyfile(p, src / p.name)
    # Every finding counts (h/a = 80 costs <1% on H100 with FA3's figures).
    files, words = fix_and_compare(
        tmp_path, src, "--unsafe-fixes", "--select", "SL0,SL1", "--min-slowdown", "0"
    )
    assert files == len(list(src.iterdir()))
    assert sum(words.values()) == files  # one value per example file


@pytest.mark.corpus
@pytest.mark.parametrize("flags", [("--fix",), ("--fix", "--unsafe-fixes")], ids=["safe", "unsafe"])
def test_corpus_fix_only_reported_values(
    tmp_path: Path, corpus: Path, flags: tuple[str, ...]
) -> None:
    files, words = fix_and_compare(tmp_path, corpus, *flags)
    if flags == ("--fix",):
        assert files >= 1, "no safe fix in the corpus"
    else:
        assert files >= 10, f"only {files} corpus files fixed"
    print(f"{' '.join(flags)}: {files} corpus files fixed, {sum(words.values())} values changed")


@pytest.mark.corpus
def test_corpus_diff_matches_fix(tmp_path: Path, corpus: Path) -> None:
    tree = tmp_path / "tree"
    copy_tree(corpus, tree)
    code, diff, _ = run("--diff", "--unsafe-fixes", str(tree))
    assert code == 1
    assert all(not p.name.endswith(".tmp") for p in tree.rglob("*"))
    headers = [ln[4:] for ln in diff.splitlines() if ln.startswith("+++ ")]
    before = {h: Path(h).read_bytes() for h in headers}
    run("--unsafe-fixes", str(tree))
    changed = {h for h in headers if Path(h).read_bytes() != before[h]}
    assert changed == set(headers)


def test_readme_examples_fix_only_reported_values(tmp_path: Path) -> None:
    examples = Path(__file__).resolve().parent.parent / "examples"
    if not examples.is_dir():
        pytest.skip("examples/ not found")
    files, words = fix_and_compare(tmp_path, examples, "--unsafe-fixes")
    assert files >= 1 and sum(words.values()) >= files
