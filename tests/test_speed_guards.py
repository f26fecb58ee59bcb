"""Speed regression guards that are not timed: what a run imports, and how often it parses.

A pre-commit hook pays for every module it imports on every commit: a JSON-only run must not
import libcst, PyYAML or jsonschema (or the readers that need them), and ``--version`` must not
import the rules. Each file is read and parsed once per lint.
"""

from __future__ import annotations

import io
import shutil
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest
from conftest import ParseLog

import shapelint
from shapelint.cli import main as cli
from shapelint.core import sandbox

REPO = Path(__file__).resolve().parent.parent
FIX_DATA = REPO / "tests" / "data" / "fix"
GPT2 = '{"n_embd": 768, "n_head": 12, "n_layer": 12, "vocab_size": 50257}\n'

HEAVY = ("libcst", "yaml", "jsonschema")
READERS = ("yaml", "python", "toml")

# Runs the CLI in a fresh interpreter and prints the exit code, then every imported module.
PROBE = """
import contextlib, io, sys
from shapelint.cli.main import main
out = io.StringIO()
with contextlib.redirect_stdout(io.StringIO()):
    code = main(sys.argv[1:], out, io.StringIO())
print(code)
print(out.getvalue().count("SL"))
print("\\n".join(sorted(sys.modules)))
"""


def imported(tmp_path: Path, *argv: str) -> tuple[int, int, set[str]]:
    """Exit code, number of findings printed, and the modules a CLI run imported."""
    proc = subprocess.run(
        [sys.executable, "-c", PROBE, *argv],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=True,
    )
    lines = proc.stdout.splitlines()
    return int(lines[0]), int(lines[1]), set(lines[2:])


def _heavy(modules: set[str], names: tuple[str, ...]) -> list[str]:
    return sorted(m for m in modules if m.split(".")[0] in names)


def test_json_run_imports_no_libcst_yaml_or_jsonschema(tmp_path: Path) -> None:
    (tmp_path / "config.json").write_text(GPT2)
    code, findings, modules = imported(tmp_path, "check", "config.json")
    assert code == 1 and findings >= 1  # the rules and the estimates really ran
    assert "shapelint.readers.json" in modules
    assert _heavy(modules, HEAVY) == []
    assert "shapelint.readers.yaml" not in modules
    assert "shapelint.readers.toml" not in modules
    # Nor the shape search, nor the rules a JSON file's check does not run (the rule registry
    # imports a rule when it is looked up): the YAML and duplicate-key problems' rules are
    # named only when a reader reports one, unused ignores only when asked for.
    assert not [
        m for m in modules if m.startswith(("shapelint.perf.search", "shapelint.perf.space"))
    ]
    assert "shapelint.rules.sl101_vocab_padding" in modules
    for rule in ("sl001_duplicate_key", "sl006_unsafe_yaml_tag", "sl007_yaml_alias_limit"):
        assert f"shapelint.rules.{rule}" not in modules
    assert "shapelint.rules.sl008_unused_ignore" not in modules
    # Package data is read from files, not through importlib.resources (~5 ms of imports).
    assert "importlib.resources" not in modules


def test_yaml_run_imports_no_libcst_or_jsonschema(tmp_path: Path) -> None:
    shutil.copyfile(FIX_DATA / "neox.yml", tmp_path / "neox.yml")
    # h/a = 80 costs <1% on H100 with FA3's figures: every finding counts here.
    code, findings, modules = imported(tmp_path, "check", "--min-slowdown", "0", "neox.yml")
    assert code == 1 and findings >= 1
    assert "yaml" in modules
    assert _heavy(modules, ("libcst", "jsonschema")) == []


def test_python_run_imports_no_yaml_or_jsonschema(tmp_path: Path) -> None:
    shutil.copyfile(FIX_DATA / "nanogpt.py", tmp_path / "model.py")
    code, findings, modules = imported(tmp_path, "check", "model.py")
    assert code == 1 and findings >= 1
    # libcst is loaded where the file is parsed: a worker where one can be forked.
    assert ("libcst" in modules) != sandbox.available()
    assert _heavy(modules, ("yaml", "jsonschema")) == []


def test_version_imports_no_rules(tmp_path: Path) -> None:
    code, _, modules = imported(tmp_path, "--version")
    assert code == 0
    assert not [m for m in modules if m.startswith(("shapelint.rules", "shapelint.perf"))]
    assert "shapelint.engine.runner" not in modules


def _mixed_tree(root: Path) -> list[str]:
    names = ["gpt2.json", "neox.yml", "megatron.yaml", "nanogpt.py"]
    for name in names:
        shutil.copyfile(FIX_DATA / name, root / name)
    (root / "clean.toml").write_text("[model]\nname = 'x'\n")
    return [*names, "clean.toml"]


def test_each_file_is_parsed_once_per_lint(tmp_path: Path, parses: ParseLog) -> None:
    names = _mixed_tree(tmp_path)
    code = cli.main(["check", str(tmp_path)], io.StringIO(), io.StringIO())
    assert code == 1
    assert parses == Counter(dict.fromkeys(names, 1))


def test_fix_parses_a_fixed_file_once_more_to_verify_it(tmp_path: Path, parses: ParseLog) -> None:
    names = _mixed_tree(tmp_path)
    before = {n: (tmp_path / n).read_bytes() for n in names}
    cli.main(["check", "--fix", str(tmp_path)], io.StringIO(), io.StringIO())
    fixed = {n for n in names if (tmp_path / n).read_bytes() != before[n]}
    assert fixed == {"gpt2.json", "megatron.yaml", "nanogpt.py"}
    # Lint once; verify the fixed text once (one pass); the report re-lints that verified
    # document instead of reading the written file back; untouched files are not re-read.
    assert parses == Counter({n: 2 if n in fixed else 1 for n in names})


# As PROBE, but lists only the modules the run itself imported: an editable install's finder
# (or site) may import pathlib at start-up, and that is not the run's cost.
PROBE_NEW = """
import contextlib, io, sys
before = set(sys.modules)
from shapelint.cli.main import main
with contextlib.redirect_stdout(io.StringIO()):
    code = main(sys.argv[1:], io.StringIO(), io.StringIO())
print(code)
print("\\n".join(sorted(set(sys.modules) - before)))
"""


def newly_imported(tmp_path: Path, *argv: str) -> tuple[int, set[str]]:
    """Exit code, and the modules a CLI run imported beyond the interpreter's start-up."""
    proc = subprocess.run(
        [sys.executable, "-c", PROBE_NEW, *argv],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=True,
    )
    lines = proc.stdout.splitlines()
    return int(lines[0]), set(lines[1:])


# Standard-library modules a plain `check` of one JSON file has no use for: tomllib without a
# settings file, pickle without the cache, difflib without an unknown name to suggest for,
# tempfile without a baseline or a fix to write, pathlib anywhere (os.path does it).
# secrets (with hmac and hashlib) without a file to write.
NOT_FOR_ONE_JSON = ("pathlib", "tomllib", "pickle", "difflib", "tempfile", "secrets", "hmac")


def test_one_json_no_cache_imports_only_what_it_uses(tmp_path: Path) -> None:
    (tmp_path / "config.json").write_text(GPT2)
    code, modules = newly_imported(tmp_path, "check", "--no-cache", "config.json")
    assert code == 1  # findings: the rules and the performance model ran
    assert "shapelint.perf.estimate" in modules
    assert sorted(m for m in modules if m.split(".")[0] in NOT_FOR_ONE_JSON) == []
    # Only the subcommand's own module is imported: suggest, explain and gemm are not.
    assert "shapelint.cli.suggest" not in modules
    assert not [
        m
        for m in modules
        if m.startswith(("shapelint.perf.search", "shapelint.perf.space", "shapelint.cli.explain"))
    ]
    assert "shapelint.cli.gemm" not in modules
    assert "shapelint.engine.baseline" not in modules
    assert "shapelint.engine.cache" not in modules
    # LitGPT's Python loops (and the Python evaluator) are for Python files only.
    assert not [m for m in modules if m.startswith("shapelint.readers.python")]
    assert "shapelint.dialects.litgpt_loops" not in modules
    assert "shapelint.dialects.litgpt_loop_values" not in modules


def test_settings_file_is_parsed_only_when_present(tmp_path: Path) -> None:
    (tmp_path / "config.json").write_text(GPT2)
    (tmp_path / ".git").mkdir()  # the settings search stops here
    _, without = newly_imported(tmp_path, "check", "--no-cache", "config.json")
    assert "tomllib" not in without
    (tmp_path / ".shapelint.toml").write_text("min-slowdown = 0\n")
    _, with_settings = newly_imported(tmp_path, "check", "--no-cache", "config.json")
    assert "tomllib" in with_settings


def test_suggest_still_parses_its_own_flags(tmp_path: Path) -> None:
    parser = cli.build_parser("suggest")
    args = parser.parse_args(["suggest", "config.json", "--top", "3"])
    assert args.command == "suggest" and args.top == 3
    # Help lists every command, whichever one a run builds.
    assert "suggest" in cli.build_parser().format_help()
    assert "suggest" not in cli.build_parser("check").format_help().split("{", 1)[1]


@pytest.mark.parametrize(
    "path",
    [
        "",
        ".",
        "./",
        "a",
        "a/",
        "a//b",
        "./a/./b/.",
        "../a/b",
        "/",
        "//",
        "///",
        "//a/b",
        "///a//b/",
        "/a/../b",
        "a/.hidden/b.json",
        "dir with space/x.yaml",
    ],
)
def test_as_posix_is_pathlibs(path: str) -> None:
    from pathlib import PurePosixPath

    from shapelint.engine.discover import as_posix

    assert as_posix(path) == PurePosixPath(path).as_posix()


@pytest.mark.parametrize(
    "name", ["model.safetensors", "a.tar.gz", ".hidden", "a.", "noext", "x.ckpt.index", "..", "."]
)
def test_weight_suffix_is_pathlibs(name: str) -> None:
    from pathlib import PurePosixPath

    from shapelint.dialects.hf import _suffix

    assert _suffix(name) == PurePosixPath(name).suffix


def test_version_answers_before_argparse_and_the_config_types(tmp_path: Path) -> None:
    code, modules = newly_imported(tmp_path, "--version")
    assert code == 0
    assert "argparse" not in modules
    assert not [
        m
        for m in modules
        if m.startswith(
            (
                "shapelint.engine",
                "shapelint.readers",
                "shapelint.dialects",
                "shapelint.core.model",
                "shapelint.hardware.engines",
            )
        )
    ]
    proc = subprocess.run(
        [sys.executable, "-m", "shapelint", "--version"], capture_output=True, text=True, check=True
    )
    assert proc.stdout == f"shapelint {shapelint.__version__}\n"
