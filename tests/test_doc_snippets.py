"""Every command the README and docs/ show is run by a test, and shows what it prints.

- ``console`` blocks: each ``$ shapelint …`` line runs (in the repository root, or in the folder
  a ``<!-- snippet: run in tests/data/docs/NAME -->`` comment above the block names) and the
  lines after it must be its output: ``…`` inside a line stands for text that changes from run
  to run, ``…`` alone for lines left out.
- ``sh`` blocks: each line that is a ``shapelint`` command runs in a folder holding a copy of
  ``examples/`` (also as ``configs/``, and GPT-2's ``config.json``) and must end with exit
  code 0 or 1 and no error; every other line names, in ``ELSEWHERE``, the test (or the CI
  step) that runs it.
- ``pycon`` blocks (the Python API) run as doctests, the blocks of a page in order in one
  namespace, in a folder as ``sh`` blocks have it: each ``>>>`` line must print what the page
  shows under it (``...`` inside a line stands for text left out).
- ``toml`` blocks load as settings; the workflow blocks use only inputs and outputs the
  action declares; the suppression comment the README shows does suppress, and so do those
  of the ``bash`` blocks (launch scripts, checked by ``bash -n``).
"""

from __future__ import annotations

import io
import re
import shlex
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml
from conftest import REPO

from shapelint.cli.main import main
from shapelint.engine.settings import load

# docs/rules.md is generated from the rule modules; its examples run in test_rule_examples.
PAGES = [
    REPO / "README.md",
    *sorted(p for p in (REPO / "docs").glob("*.md") if p.name != "rules.md"),
]
FENCE = re.compile(r"^(?P<indent> *)```(?P<lang>\w*)\n(?P<body>.*?)^(?P=indent)```", re.M | re.S)
RUN_IN = re.compile(r"<!-- snippet: run (?:in (?P<dir>\S+)|from the repository root) -->\s*$")

# Lines of sh blocks that are not shapelint commands, each with what runs it: a test
# (path::name, which must exist) or a CI step (which .ci/run must contain). "not run: …" is
# for what no automated check can run, with the reason.
ELSEWHERE = {
    "python3 -m venv .venv && .venv/bin/pip install -e '.[test]' && .venv/bin/shapelint "
    "examples/ --exit-zero": "tests/test_readme.py::test_ci_runs_exactly_the_readme_test_command",
    ".venv/bin/ruff check . && .venv/bin/ruff format --check . && .venv/bin/mypy --strict "
    "shapelint && .venv/bin/mkdocs build --strict && .venv/bin/pytest": (
        "tests/test_readme.py::test_ci_runs_exactly_the_readme_test_command"
    ),
    "git clone https://github.com/shapelint/shapelint && cd shapelint": (
        ".ci/run: python scripts/release.py"
    ),
    "git checkout v0.1.0": ".ci/run: python scripts/release.py",
    "python3 -m venv .venv && .venv/bin/pip install . && .venv/bin/shapelint --version": (
        ".ci/run: python scripts/release.py"
    ),
    "python3 -m pip install build && python3 -m build": ".ci/run: python scripts/release.py",
    "python3 -m pip install dist/shapelint-0.1.0-py3-none-any.whl": (
        ".ci/run: python scripts/release.py"
    ),
    "python scripts/release.py": ".ci/run: python scripts/release.py",
    'pip install "shapelint @ git+https://github.com/shapelint/shapelint@v0.1.0"': (
        "tests/test_precommit.py::test_docs_local_recipe_runs"
    ),
    "python -m venv /tmp/sl-bench && /tmp/sl-bench/bin/pip install .": (
        "not run: the speed benchmark's set-up; the benchmark takes minutes"
    ),
    "python benchmarks/bench_speed.py --python /tmp/sl-bench/bin/python": (
        "not run: the speed benchmark takes minutes and its numbers are the machine's"
    ),
}


@dataclass(frozen=True)
class Block:
    page: Path
    line: int
    lang: str
    text: str
    run_in: Path

    def __str__(self) -> str:
        return f"{self.page.relative_to(REPO)}:{self.line}"


def blocks(lang: str | None = None) -> list[Block]:
    """The fenced blocks of every page (of language ``lang``), in order."""
    out = []
    for page in PAGES:
        text = page.read_text(encoding="utf-8")
        for m in FENCE.finditer(text):
            before = text[: m.start()].rstrip("\n").rsplit("\n", 1)[-1]
            where = RUN_IN.search(before)
            run_in = REPO / where["dir"] if where and where["dir"] else REPO
            indent = len(m["indent"])
            body = "\n".join(ln[indent:] for ln in m["body"].splitlines())
            block = Block(page, text.count("\n", 0, m.start()) + 1, m["lang"], body, run_in)
            if lang is None or block.lang == lang:
                out.append(block)
    return out


def shapelint(argv: list[str], cwd: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[int, str]:
    """Run ``shapelint ARGV`` in ``cwd`` as a user's terminal would (no colour, not CI)."""
    monkeypatch.chdir(cwd)
    for var in ("GITHUB_ACTIONS", "GITHUB_STEP_SUMMARY", "FORCE_COLOR"):
        monkeypatch.delenv(var, raising=False)
    out, err = io.StringIO(), io.StringIO()
    code = main(argv, out, err)
    return code, out.getvalue() + err.getvalue()


def matches(shown: list[str], printed: list[str]) -> str | None:
    """None when ``printed`` is what ``shown`` shows; else the first line that differs."""
    i = 0
    for k, want in enumerate(shown):
        if want.strip() == "…":
            rest = shown[k + 1 :]
            if not rest:
                return None
            for j in range(i, len(printed) + 1):
                if matches(rest, printed[j:]) is None:
                    return None
            return f"nothing after line {i} matches {rest[0]!r}"
        pattern = ".*".join(re.escape(part) for part in want.rstrip().split("…"))
        if i >= len(printed) or not re.fullmatch(pattern, printed[i].rstrip()):
            got = printed[i] if i < len(printed) else "(end of output)"
            return f"shown {want!r}\nprinted {got!r}"
        i += 1
    return None if i == len(printed) else f"printed more: {printed[i]!r}"


def console_runs() -> list[tuple[Block, str, list[str]]]:
    """(block, command, the output lines shown under it) for every ``$`` line."""
    runs: list[tuple[Block, str, list[str]]] = []
    for block in blocks("console"):
        for line in block.text.splitlines():
            if line.startswith("$ "):
                runs.append((block, line[2:], []))
            else:
                assert runs and runs[-1][0] is block, f"{block}: output before a command"
                runs[-1][2].append(line)
    return runs


@pytest.mark.parametrize(
    ("block", "command", "shown"),
    console_runs(),
    ids=lambda v: str(v) if isinstance(v, Block) else "",
)
def test_console_commands_print_what_the_page_shows(
    block: Block, command: str, shown: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    argv = shlex.split(command)
    assert argv[0] == "shapelint", f"{block}: only shapelint commands are shown with $"
    code, printed = shapelint(argv[1:], block.run_in, monkeypatch)
    assert code in (0, 1), printed
    diff = matches(shown, printed.splitlines())
    assert diff is None, f"{block}: $ {command}\n{diff}"


def sh_lines() -> list[tuple[Block, str]]:
    """Every command line of every ``sh`` block (comments and blank lines left out)."""
    out = []
    for block in blocks("sh"):
        for line in block.text.splitlines():
            if line.strip() and not line.lstrip().startswith("#"):
                out.append((block, line))
    return out


@pytest.fixture
def sandbox(tmp_path: Path) -> Path:
    """A folder with the bundled examples, as ``examples/`` and ``configs/``, and GPT-2's
    ``config.json``: what the snippets' paths name."""
    shutil.copytree(REPO / "examples", tmp_path / "examples")
    shutil.copytree(REPO / "examples", tmp_path / "configs")
    shutil.copy2(REPO / "examples" / "gpt2-from-scratch" / "config.json", tmp_path)
    (tmp_path / ".git").mkdir()  # the settings search stops here, not in this checkout
    return tmp_path


SH_LINES = sh_lines()


@pytest.mark.parametrize(
    "block", sorted({b for b, ln in SH_LINES if ln.startswith("shapelint")}, key=str), ids=str
)
def test_sh_shapelint_lines_run(
    block: Block, sandbox: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The block's shapelint lines, in order, in one folder (a baseline written by one line
    is read by the next)."""
    for line in [ln for b, ln in SH_LINES if b is block and ln.startswith("shapelint")]:
        argv = shlex.split(line, comments=True)
        target = None
        if ">" in argv:  # `shapelint … > FILE`: the shell's redirection, done here
            argv, target = argv[: argv.index(">")], argv[argv.index(">") + 1]
        code, printed = shapelint(argv[1:], sandbox, monkeypatch)
        assert code in (0, 1), f"{block}: {line}\n{printed}"
        assert "error:" not in printed and "Traceback" not in printed, printed
        if target is not None:
            (sandbox / target).write_text(printed)


@pytest.mark.parametrize(
    ("block", "line"),
    [(b, ln) for b, ln in SH_LINES if not ln.startswith("shapelint")],
    ids=lambda v: str(v) if isinstance(v, Block) else v[:50],
)
def test_other_sh_lines_name_what_runs_them(block: Block, line: str) -> None:
    assert line in ELSEWHERE, f"{block}: no test runs {line!r}; add one (or its ELSEWHERE entry)"


@pytest.mark.parametrize("where", sorted(set(ELSEWHERE.values())))
def test_what_runs_them_exists(where: str) -> None:
    if where.startswith("not run: "):
        return
    if where.startswith(".ci/run: "):
        ci = (REPO / ".ci" / "run").read_text(encoding="utf-8").splitlines()
        assert where.removeprefix(".ci/run: ") in ci
        return
    path, name = where.split("::")
    assert f"def {name}(" in (REPO / path).read_text(encoding="utf-8"), where


def test_every_entry_of_elsewhere_is_still_shown() -> None:
    shown = {line for _, line in SH_LINES}
    assert set(ELSEWHERE) <= shown, set(ELSEWHERE) - shown


def test_plain_blocks_show_no_commands() -> None:
    """A ``$`` line outside a console block would never be run."""
    for block in blocks():
        if block.lang != "console":
            assert not any(ln.startswith("$ ") for ln in block.text.splitlines()), str(block)


@pytest.mark.parametrize(
    "page", sorted({b.page for b in blocks("pycon")}), ids=lambda p: p.relative_to(REPO).name
)
def test_pycon_blocks_print_what_the_page_shows(
    page: Path, sandbox: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import doctest

    monkeypatch.chdir(sandbox)
    for var in ("GITHUB_ACTIONS", "GITHUB_STEP_SUMMARY", "FORCE_COLOR"):
        monkeypatch.delenv(var, raising=False)
    parser = doctest.DocTestParser()
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    report = io.StringIO()
    names: dict[str, object] = {}
    for block in [b for b in blocks("pycon") if b.page == page]:
        test = parser.get_doctest(block.text, names, str(block), str(page), block.line)
        runner.run(test, out=report.write, clear_globs=False)
        names.update(test.globs)  # the next block goes on from this one
    assert runner.failures == 0, report.getvalue()
    assert runner.tries > 0


@pytest.mark.parametrize("block", blocks("toml"), ids=str)
def test_toml_blocks_load_as_settings(block: Block, tmp_path: Path) -> None:
    name = "pyproject.toml" if "[tool.shapelint" in block.text else ".shapelint.toml"
    (tmp_path / name).write_text(block.text, encoding="utf-8")
    load(str(tmp_path / name))  # an unknown key or a wrong type raises


def test_readme_settings_are_the_five_first_ones(tmp_path: Path) -> None:
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    (block,) = [b for b in blocks("toml") if b.page.name == "README.md"]
    assert "The five settings people" in readme
    (tmp_path / "pyproject.toml").write_text(block.text, encoding="utf-8")
    s = load(str(tmp_path / "pyproject.toml"))
    assert s.gpu == ("H100-SXM", "A100") and s.target.get("tp") == 8 and s.fail_on == "warning"
    assert s.per_file_ignores == {"checkpoints/*/config.json": ("SL101", "SL103")}


def workflows() -> list[Block]:
    return [b for b in blocks("yaml") if "uses: shapelint/shapelint@" in b.text]


@pytest.mark.parametrize("block", workflows(), ids=str)
def test_workflows_use_what_the_action_declares(block: Block) -> None:
    from shapelint import __version__

    action = yaml.safe_load((REPO / "action.yml").read_text(encoding="utf-8"))
    steps = yaml.safe_load(block.text)["jobs"]["shapelint"]["steps"]
    (step,) = [s for s in steps if str(s.get("uses", "")).startswith("shapelint/shapelint@")]
    assert step["uses"] == f"shapelint/shapelint@v{__version__}"
    assert set(step.get("with", {})) <= set(action["inputs"])
    used = set(re.findall(r"steps\.shapelint\.outputs\.([\w-]+)", block.text))
    assert used <= set(action["outputs"])


@pytest.mark.parametrize("block", blocks("bash"), ids=str)
def test_bash_blocks_are_scripts_whose_comments_suppress(
    block: Block, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each bash block is a launch script: bash reads it (``bash -n``), and its
    ``# shapelint: ignore`` comments hide the findings they name, which are there without them."""
    if shutil.which("bash"):
        script = tmp_path / "syntax.sh"
        script.write_text(block.text + "\n")
        assert subprocess.run(["bash", "-n", str(script)], check=False).returncode == 0
    (tmp_path / ".git").mkdir()
    (tmp_path / "train.sh").write_text(block.text + "\n")
    argv = ["check", "train.sh", "--report-unused-ignores", "--min-slowdown", "0"]
    code, printed = shapelint(argv, tmp_path, monkeypatch)
    assert code == 0, printed
    codes = set(re.findall(r"ignore\[(SL\d+)\]", block.text))
    assert codes
    bare = re.sub(r"`?# shapelint: ignore\[[^]]*\][^`\n]*`?", "", block.text)
    (tmp_path / "train.sh").write_text(bare + "\n")
    code, printed = shapelint(argv, tmp_path, monkeypatch)
    assert code == 1 and all(f" {c} " in printed for c in codes), printed


def test_readme_suppression_comment_suppresses(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (line,) = [
        ln
        for b in blocks("yaml")
        if b.page.name == "README.md"
        for ln in b.text.splitlines()
        if "# shapelint: ignore" in ln
    ]
    assert "# shapelint: ignore[SL101] -- " in line
    model = "hidden_size: 768\nnum_attention_heads: 12\nnum_hidden_layers: 12\n"
    (tmp_path / ".git").mkdir()
    (tmp_path / "model.yaml").write_text(model + line.split("#")[0].rstrip() + "\n")
    code, printed = shapelint(["check", "model.yaml", "--select", "SL101"], tmp_path, monkeypatch)
    assert code == 1 and "SL101" in printed
    (tmp_path / "model.yaml").write_text(model + line + "\n")
    code, printed = shapelint(["check", "model.yaml", "--select", "SL101"], tmp_path, monkeypatch)
    assert code == 0 and "SL101" not in printed, printed
