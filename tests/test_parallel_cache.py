"""--jobs and the lint cache: the same report as one uncached worker, and no stale results."""

from __future__ import annotations

import io
import os
import shutil
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from shapelint import readers as formats
from shapelint.cli import main as cli
from shapelint.engine import cache as cache_mod
from shapelint.engine import parallel

REPO = Path(__file__).resolve().parent.parent
FIX_DATA = REPO / "tests" / "data" / "fix"


def run(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = cli.main(list(argv), out, err)
    return code, out.getvalue(), err.getvalue()


def _tree(root: Path, corpus_files: int = 40) -> Path:
    """The fix fixtures, a file that does not parse, and some real configs when available."""
    root.mkdir(parents=True, exist_ok=True)
    for p in sorted(FIX_DATA.iterdir()):
        shutil.copyfile(p, root / p.name)
    (root / "broken.json").write_text('{"hidden_size": 4096,,}\n')
    corpus = REPO.parent / "shared" / "corpus"
    if corpus.is_dir():
        files = sorted(p for p in corpus.rglob("*") if p.suffix in (".json", ".yaml", ".yml"))
        for i, p in enumerate(files[:corpus_files]):
            shutil.copyfile(p, root / f"c{i:03d}_{p.name}")
    return root


@pytest.fixture
def parses(monkeypatch: pytest.MonkeyPatch) -> Counter[str]:
    counts: Counter[str] = Counter()
    real = formats._parse_text

    def counting(
        path: str, text: str, kind: str, files: formats.OtherFiles | None = None
    ) -> object:
        counts[Path(path).name] += 1
        return real(path, text, kind, files)

    monkeypatch.setattr(formats, "_parse_text", counting)
    return counts


@pytest.mark.skipif(not parallel.can_fork(), reason="workers are forked")
@pytest.mark.parametrize("fmt", ["json", "text", "sarif"])
def test_two_workers_report_exactly_what_one_does(tmp_path: Path, fmt: str) -> None:
    tree = _tree(tmp_path / "t")
    one = run("check", "--no-cache", "--jobs", "1", "--format", fmt, "--statistics", str(tree))
    two = run("check", "--no-cache", "--jobs", "2", "--format", fmt, "--statistics", str(tree))
    assert one[0] == 1
    assert two == one


@pytest.mark.skipif(not parallel.can_fork(), reason="workers are forked")
def test_fix_with_two_workers_writes_what_one_does(tmp_path: Path) -> None:
    a, b = _tree(tmp_path / "a"), _tree(tmp_path / "b")
    code_a, out_a, _ = run("check", "--fix", "--no-cache", "--jobs", "1", str(a))
    code_b, out_b, _ = run("check", "--fix", "--no-cache", "--jobs", "2", str(b))
    assert (code_a, out_a.replace(str(a), "T")) == (code_b, out_b.replace(str(b), "T"))
    originals = {p.name: p.read_bytes() for p in FIX_DATA.iterdir()}
    changed = 0
    for p in sorted(a.iterdir()):
        assert (b / p.name).read_bytes() == p.read_bytes()
        changed += p.name in originals and p.read_bytes() != originals[p.name]
    assert changed >= 3


def test_default_jobs_grow_with_the_tree() -> None:
    assert parallel.auto_jobs(1) == 1
    assert parallel.auto_jobs(parallel.FILES_PER_JOB - 1) == 1
    assert 1 <= parallel.auto_jobs(100_000) <= parallel.cpu_count()
    assert parallel.auto_jobs(100_000) == parallel.cpu_count()


def test_unchanged_rerun_parses_nothing_and_reports_the_same(
    tmp_path: Path, parses: Counter[str]
) -> None:
    tree = _tree(tmp_path / "t", corpus_files=5)
    first = run("check", "--jobs", "1", "--format", "json", str(tree))
    n_files = len(parses)
    assert n_files >= 10
    parses.clear()
    second = run("check", "--jobs", "1", "--format", "json", str(tree))
    assert parses == Counter()
    assert second == first
    # The same again in text format (the report, not the cache, differs).
    assert run("check", "--jobs", "1", str(tree)) == run("check", "--no-cache", str(tree))


def test_changed_file_is_linted_again(tmp_path: Path, parses: Counter[str]) -> None:
    tree = _tree(tmp_path / "t", corpus_files=0)
    run("check", "--jobs", "1", str(tree))
    parses.clear()
    gpt2 = tree / "gpt2.json"
    gpt2.write_text(gpt2.read_text().replace("50257", "50304"))
    code, out, _ = run("check", "--jobs", "1", str(tree))
    assert parses == Counter({"gpt2.json": 1})
    assert "gpt2.json:9" not in out  # the vocab finding is gone
    assert (code, out) == run("check", "--no-cache", str(tree))[:2]


@pytest.mark.parametrize(
    "flags", [("--gpu", "A100"), ("--select", "SL1"), ("--micro-batch", "3"), ("--tp", "2")]
)
def test_other_options_miss_the_cache(
    tmp_path: Path, parses: Counter[str], flags: tuple[str, ...]
) -> None:
    tree = _tree(tmp_path / "t", corpus_files=0)
    run("check", str(tree))
    parses.clear()
    cached = run("check", *flags, str(tree))
    assert sum(parses.values()) == len(list(tree.iterdir()))
    assert cached == run("check", "--no-cache", *flags, str(tree))


def test_settings_change_misses_the_cache(tmp_path: Path, parses: Counter[str]) -> None:
    tree = _tree(tmp_path / "t", corpus_files=0)
    (tmp_path / ".git").mkdir()  # the settings search stops here
    first = run("check", str(tree))
    (tmp_path / ".shapelint.toml").write_text('ignore = ["SL101"]\n')
    parses.clear()
    second = run("check", str(tree))
    assert sum(parses.values()) == len(list(tree.iterdir()))
    assert "SL101" in first[1] and "SL101" not in second[1]


def test_no_cache_writes_nothing(tmp_path: Path) -> None:
    cache_dir = Path(os.environ["SHAPELINT_CACHE_DIR"])
    tree = _tree(tmp_path / "t", corpus_files=0)
    run("check", "--no-cache", str(tree))
    assert not cache_dir.exists() or not any(cache_dir.iterdir())
    run("check", str(tree))
    assert (cache_dir / ".gitignore").read_text().splitlines()[-1] == "*"
    assert (cache_dir / "CACHEDIR.TAG").read_text().startswith("Signature: 8a477f597d28d172789f")
    assert not list(cache_dir.rglob("*.tmp"))


def test_corrupt_entries_are_misses(tmp_path: Path, parses: Counter[str]) -> None:
    cache_dir = Path(os.environ["SHAPELINT_CACHE_DIR"])
    tree = _tree(tmp_path / "t", corpus_files=0)
    first = run("check", str(tree))
    entries = [p for p in cache_dir.rglob("*") if p.is_file() and len(p.name) == 32]
    assert len(entries) == len(list(tree.iterdir()))
    for i, p in enumerate(entries):
        p.write_bytes(b"" if i % 2 else b"\x80\x05garbage")
    parses.clear()
    assert run("check", str(tree)) == first
    assert sum(parses.values()) == len(entries)


def test_unwritable_cache_is_skipped(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, parses: Counter[str]
) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    monkeypatch.setenv("SHAPELINT_CACHE_DIR", str(blocker / "cache"))
    tree = _tree(tmp_path / "t", corpus_files=0)
    first = run("check", str(tree))
    assert first == run("check", "--no-cache", str(tree))
    assert first[2] == run("check", "--no-cache", str(tree))[2]  # nothing printed about it


def test_code_fingerprint_follows_the_package_files(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    rule = pkg / "rule.py"
    rule.write_text("X = 1\n")
    monkeypatch.setattr(cache_mod, "_PACKAGE", str(pkg))
    before = cache_mod.code_fingerprint()
    assert cache_mod.code_fingerprint() == before
    rule.write_text("X = 22\n")
    assert cache_mod.code_fingerprint() != before


def test_concurrent_runs_share_one_cache(tmp_path: Path) -> None:
    tree = _tree(tmp_path / "t", corpus_files=20)
    cmd = [sys.executable, "-m", "shapelint", "check", "--jobs", "1", "--format", "json"]
    procs = [
        subprocess.Popen([*cmd, str(tree)], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        for _ in range(3)
    ]
    outs = [p.communicate() for p in procs]
    assert len({o for o, _ in outs}) == 1
    assert all(p.returncode == 1 for p in procs)
    cache_dir = Path(os.environ["SHAPELINT_CACHE_DIR"])
    assert not list(cache_dir.rglob("*.tmp"))
    rerun = subprocess.run([*cmd, str(tree)], capture_output=True, check=False)
    assert rerun.stdout == outs[0][0]


def test_entries_are_found_by_a_process_with_another_hash_seed(tmp_path: Path) -> None:
    tree = _tree(tmp_path / "t", corpus_files=0)
    cache_dir = Path(os.environ["SHAPELINT_CACHE_DIR"])
    cmd = [sys.executable, "-m", "shapelint", "check", "--jobs", "1", str(tree)]
    entries = []
    for seed in ("1", "2"):
        env = {**os.environ, "PYTHONHASHSEED": seed}
        subprocess.run(cmd, env=env, capture_output=True, check=False)
        entries.append(sorted(p.name for p in cache_dir.rglob("*") if len(p.name) == 32))
    assert entries[0] and entries[1] == entries[0]  # the second run wrote no new entry


@pytest.mark.skipif(not parallel.can_fork(), reason="workers are forked")
def test_a_result_a_worker_cannot_send_is_linted_here(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    tree = _tree(tmp_path / "t", corpus_files=10)
    one = run("check", "--no-cache", "--jobs", "1", "--format", "json", str(tree))
    monkeypatch.setattr(cache_mod, "dumps", lambda result: None)  # as if nothing pickled
    assert run("check", "--no-cache", "--jobs", "2", "--format", "json", str(tree)) == one


class _Planted:
    """A pickle that creates a file when it is loaded (what a hostile cache entry would do)."""

    def __init__(self, marker: str) -> None:
        self.marker = marker

    def __reduce__(self) -> tuple[object, tuple[str, str]]:
        return (open, (self.marker, "w"))


def test_planted_entries_are_never_unpickled(tmp_path: Path, parses: Counter[str]) -> None:
    # The cache directory can sit in a tree a pull request controls: an entry without this
    # user's MAC is a miss, and its pickle is never loaded.
    import pickle

    cache_dir = Path(os.environ["SHAPELINT_CACHE_DIR"])
    tree = _tree(tmp_path / "t", corpus_files=0)
    first = run("check", str(tree))
    entries = [p for p in cache_dir.rglob("*") if p.is_file() and len(p.name) == 32]
    assert entries
    marker = tmp_path / "executed"
    for p in entries:
        p.write_bytes(pickle.dumps(_Planted(str(marker))))
    parses.clear()
    assert run("check", str(tree)) == first
    assert not marker.exists()
    assert sum(parses.values()) == len(entries)
    # A MAC made with another key is refused as well.
    for p in entries:
        payload = pickle.dumps(_Planted(str(marker)))
        p.write_bytes(cache_mod.keyed_digest(payload, b"k" * 32) + payload)
    assert run("check", str(tree)) == first
    assert not marker.exists()


def test_cache_key_is_private_to_the_user() -> None:
    secret = cache_mod.user_secret()
    assert secret is not None and len(secret) == cache_mod.MAC_BYTES
    assert os.stat(cache_mod.secret_path()).st_mode & 0o077 == 0
