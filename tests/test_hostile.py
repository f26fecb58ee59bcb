"""Hostile and huge input (issue 12): every bad input of the catalogue is a finding or a
one-line note naming the file, the other files are still linted, nothing is a traceback.

Also the reading half of issue 9's "no silent pass": a walked file with no model-shape keys
that does not parse is skipped (``-v`` says so); a named one, or one whose name or text says
it holds a model, is SL000; a read failure is SL000 with the OS's reason, never an internal
error.
"""

from __future__ import annotations

import io
import json
import os
import signal
import subprocess
import sys
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest
from hostile import (
    GPT2,
    GPT2_CLASS,
    GPT2_PY,
    KEYS,
    SIDE_EFFECT_MARKER,
    build,
    deep_subshell,
    fstring_bomb,
    lambda_chain,
    many_keys,
    not_chains,
)

from shapelint.cli.main import main
from shapelint.core.limits import Budget, check_python
from shapelint.engine import pipeline, reading, runner
from shapelint.engine.options import LintOptions
from shapelint.engine.reading import read_source
from shapelint.engine.runner import lint_paths
from shapelint.hardware.gpus import load_table
from shapelint.readers import parse


def run(*argv: str, cwd: Path | None = None) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    old = os.getcwd()
    if cwd is not None:
        os.chdir(cwd)
    try:
        code = main(list(argv), out, err)
    finally:
        os.chdir(old)
    return code, out.getvalue(), err.getvalue()


def shapelint(*argv: str, cwd: Path, timeout: float = 300) -> tuple[int, str, str]:
    """``shapelint ARGV`` as a user runs it, in a fresh process: an input that crashes or
    hangs the run fails the test instead of taking the test process with it."""
    try:
        proc = subprocess.run(
            [sys.executable, "-m", "shapelint", *argv],
            cwd=cwd,
            capture_output=True,
            text=True,
            timeout=timeout,
        )
    except subprocess.TimeoutExpired:
        raise AssertionError(f"shapelint {' '.join(argv)} ran past {timeout} s") from None
    return proc.returncode, proc.stdout, proc.stderr


def findings_by_path(out: str) -> dict[str, list[dict[str, object]]]:
    by: dict[str, list[dict[str, object]]] = defaultdict(list)
    for f in json.loads(out)["findings"]:
        by[f["path"]].append(f)
    return by


def gpt2_vocab_line() -> tuple[int, int]:
    """Line and column of the vocab value in GPT2, found by plain text search."""
    for number, line in enumerate(GPT2.splitlines(), 1):
        if '"vocab_size"' in line:
            return number, line.index("50257") + 1
    raise AssertionError("no vocab line")


# -- the whole catalogue at once (the done-when) ---------------------------------------


def test_catalogue_directory_lints_every_file_without_a_traceback(tmp_path: Path) -> None:
    root = tmp_path / "tree"
    expect = build(root, tmp_path)
    code, out, err = run(".", "--format", "json", "-v", cwd=root)
    assert code == 1
    assert "Traceback" not in out + err and "internal error" not in err
    by = findings_by_path(out)
    vocab = json.loads(GPT2)["vocab_size"]
    assert vocab % 64 != 0  # the good config's finding, from json, not from shapelint
    for rel, outcome in expect.items():
        path = os.path.normpath(rel)
        codes = sorted({str(f["code"]) for f in by.get(path, [])})
        if outcome == "good":
            assert codes == ["SL101"], (rel, by.get(path))
            (finding,) = by[path]
            assert finding["fix"]["edits"][0]["old"] == vocab  # type: ignore[index]
        elif outcome in ("clean", "skipped"):
            assert codes == [], (rel, by.get(path))
        else:
            assert codes == [outcome], (rel, by.get(path))
        if outcome == "skipped":
            assert f"info: {path}: skipped: " in err, rel
    # Line and column of the good JSON configs match a text search of the file.
    assert by[os.path.join("good", "config.json")][0]["line"] == gpt2_vocab_line()[0]
    assert by[os.path.join("good", "config.json")][0]["column"] == gpt2_vocab_line()[1]
    assert not (tmp_path / SIDE_EFFECT_MARKER).exists()  # Python is read, never run
    assert set(by) <= {os.path.normpath(p) for p in expect}


def test_catalogue_text_report_never_says_all_passed(tmp_path: Path) -> None:
    root = tmp_path / "tree"
    build(root, tmp_path)
    code, out, _err = run(".", cwd=root)
    assert code == 1
    assert "All checks passed" not in out
    assert out.splitlines()[-1].startswith("Found ")


# -- issue 9: skip what is not a model config, report what is -----------------------------------


def repo_with_noise(root: Path) -> None:
    (root / ".vscode").mkdir(parents=True)
    (root / ".vscode" / "settings.json").write_text('{\n  // tabs\n  "editor.tabSize": 2,\n}\n')
    (root / "chart" / "templates").mkdir(parents=True)
    (root / "chart" / "templates" / "deployment.yaml").write_text(
        "apiVersion: apps/v1\nmetadata:\n  name: {{ .Release.Name }}\n"
    )
    (root / "scripts").mkdir()
    (root / "scripts" / "old.py").write_text('import sys\nprint "usage: old.py FILE"\n')
    (root / "model").mkdir()
    (root / "model" / "config.json").write_text(GPT2)


def test_repository_noise_is_skipped_and_only_the_real_config_reported(tmp_path: Path) -> None:
    repo_with_noise(tmp_path)
    code, out, err = run(".", "--format", "json", "-v", cwd=tmp_path)
    assert code == 1
    by = findings_by_path(out)
    assert list(by) == [os.path.join("model", "config.json")]
    assert [f["code"] for f in by[os.path.join("model", "config.json")]] == ["SL101"]
    for skipped in (".vscode/settings.json", "chart/templates/deployment.yaml", "scripts/old.py"):
        assert f"info: {os.path.normpath(skipped)}: skipped: not read: invalid" in err


def test_skipped_files_are_not_silent_in_the_summary(tmp_path: Path) -> None:
    repo_with_noise(tmp_path)
    (tmp_path / "model" / "config.json").write_text(GPT2.replace("50257", "50304"))
    code, out, err = run(".", cwd=tmp_path)
    assert code == 0
    assert "All checks passed" not in out
    assert "3 files skipped (-v lists them)" in out.splitlines()[-1]
    assert err == ""


@pytest.mark.parametrize(
    "rel", [".vscode/settings.json", "chart/templates/deployment.yaml", "scripts/old.py"]
)
def test_a_named_file_is_always_reported(tmp_path: Path, rel: str) -> None:
    repo_with_noise(tmp_path)
    code, out, _ = run(rel, cwd=tmp_path)
    assert code == 1
    assert f"{os.path.normpath(rel)}:" in out and " SL000 [error] invalid " in out


def test_pre_commit_passes_files_as_a_walk_finds_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo_with_noise(tmp_path)
    monkeypatch.setenv("PRE_COMMIT", "1")
    files = [".vscode/settings.json", "scripts/old.py", "model/config.json"]
    code, out, _ = run(*files, "--format", "json", cwd=tmp_path)
    assert code == 1
    assert list(findings_by_path(out)) == [os.path.join("model", "config.json")]


@pytest.mark.parametrize(
    ("name", "text"),
    [
        ("config.json", "{\n  // a comment\n}\n"),  # the name says it is a model config
        ("other.json", '{\n  "hidden_size": 4096, // the text says so\n  "n_head": 32\n}\n'),
        ("train.yaml", "model:\n  n_layer: 2\n  num_attention_heads: {{ .Values.heads }}\n"),
        ("model.py", 'print "n_layer"\nn_layer = 12\nn_embd = 768\n'),
    ],
)
def test_a_walked_file_that_looks_like_a_model_config_is_reported(
    tmp_path: Path, name: str, text: str
) -> None:
    (tmp_path / name).write_text(text)
    code, out, _ = run(".", cwd=tmp_path)
    assert code == 1
    assert out.startswith(f"{name}:") and " SL000 " in out


# -- reading: failures are findings with the OS's reason -----------------------------------------


def test_dangling_symlink_is_a_finding_with_the_reason(tmp_path: Path) -> None:
    os.symlink("missing.json", tmp_path / "config.json")
    for target in ("config.json", "."):
        code, out, err = run(target, cwd=tmp_path)
        assert code == 1 and err == ""
        assert out.startswith(
            "config.json:1:1: SL000 [error] cannot read file: No such file or directory"
        )
        assert "'missing.json', which does not exist" in out
        assert "All checks passed" not in out


def test_permission_denied_is_a_finding(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "a.json").write_text(GPT2)
    (tmp_path / "b.json").write_text(GPT2)
    real_open = os.open

    def deny(path: str, flags: int, *args: int, **kwargs: int) -> int:
        if str(path).endswith("a.json"):
            raise PermissionError(13, "Permission denied", path)
        return real_open(path, flags, *args, **kwargs)

    monkeypatch.setattr(reading.os, "open", deny)
    code, out, err = run(".", cwd=tmp_path)
    assert code == 1 and err == ""
    assert "a.json:1:1: SL000 [error] cannot read file: Permission denied" in out
    assert "b.json:5:17: SL101" in out  # the other file is still linted


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads a chmod 000 file")
def test_unreadable_file_on_disk(tmp_path: Path) -> None:
    path = tmp_path / "config.json"
    path.write_text(GPT2)
    path.chmod(0)
    code, out, _ = run(".", cwd=tmp_path)
    assert code == 1
    assert "config.json:1:1: SL000 [error] cannot read file: Permission denied" in out


def test_file_deleted_between_discovery_and_reading(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "a.json").write_text(GPT2)
    (tmp_path / "b.json").write_text(GPT2)
    real = runner.discover

    def discover_then_delete(*args: object, **kwargs: object):  # type: ignore[no-untyped-def]
        for source in real(*args, **kwargs):  # type: ignore[arg-type]
            if source.path.endswith("a.json"):
                os.unlink(source.path)
            yield source

    monkeypatch.setattr(runner, "discover", discover_then_delete)
    code, out, _ = run(".", cwd=tmp_path)
    assert code == 1
    assert "a.json:1:1: SL000 [error] cannot read file: No such file or directory" in out
    assert "b.json:5:17: SL101" in out


def test_fifo_is_skipped_when_walked_and_refused_when_named(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "x.json")
    (tmp_path / "config.json").write_text(GPT2)
    code, out, err = run(".", "-v", cwd=tmp_path)  # would hang forever if the FIFO were opened
    assert code == 1 and "config.json:5:17: SL101" in out
    assert "info: x.json: skipped: a FIFO, not a regular file" in err
    code, out, _ = run("x.json", cwd=tmp_path)
    assert code == 1
    assert out.startswith(
        "x.json:1:1: SL000 [error] cannot read file: it is a FIFO, not a regular file"
    )


def test_device_named_explicitly_is_refused(tmp_path: Path) -> None:
    os.symlink(os.devnull, tmp_path / "null.json")
    code, out, _ = run("null.json", cwd=tmp_path)
    assert code == 1
    assert "SL000 [error] cannot read file: it is a device or other special file" in out


def test_size_limit_refuses_without_reading(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "config.json"
    with open(path, "wb") as fh:  # a sparse 100 GB file: reading it whole would take minutes
        fh.truncate(100 * 1024**3)
    reads: list[int] = []
    real_read = os.read

    def counting_read(fd: int, n: int) -> bytes:
        reads.append(n)
        return real_read(fd, n)

    monkeypatch.setattr(reading.os, "read", counting_read)
    start = time.perf_counter()
    code, out, _ = run("config.json", cwd=tmp_path)
    assert time.perf_counter() - start < 30
    assert code == 1 and reads == []
    assert "over the limit of 64 MB (the setting max-file-size-mb raises it)" in out


def test_size_limit_is_a_setting(tmp_path: Path) -> None:
    (tmp_path / "config.json").write_text(GPT2[:-2] + ', "x": "' + "y" * 3_000_000 + '"}')
    code, out, _ = run(".", cwd=tmp_path)
    assert code == 1 and "SL101" in out  # under the default limit: read
    (tmp_path / ".shapelint.toml").write_text("max-file-size-mb = 2\n")
    code, out, _ = run(".", cwd=tmp_path)
    assert code == 1 and "over the limit of 2 MB" in out and "SL101" not in out


def test_read_source_stops_at_the_limit_when_the_file_grows(tmp_path: Path) -> None:
    path = tmp_path / "a.json"
    path.write_bytes(b"x" * 10)
    assert read_source(str(path), Budget(max_file_size_mb=1)) == b"x" * 10


# -- decoding ------------------------------------------------------------------------------------


def test_invalid_utf8_is_reported_at_the_bad_byte() -> None:
    data = '{\n  "name": "héllo",\n  "x": "ab'.encode() + b"\xff" + b'"\n}\n'
    doc = parse("config.json", data, "json")
    (problem,) = doc.problems
    assert problem.code == "SL000"
    # Line 3, the column of the bad byte counted in characters (``  "x": "ab`` is 10).
    assert (problem.span.line, problem.span.column) == (3, 11)
    assert "0xff" in problem.message


def test_invalid_utf16_is_reported_at_its_line() -> None:
    data = '{\n"a": 1,\n"b": '.encode("utf-16") + b"\x00\xd8"  # a lone surrogate at the end
    doc = parse("config.json", data, "json")
    (problem,) = doc.problems
    assert problem.span.line == 3 and "UTF-16" in problem.message


def test_utf16_with_bom_and_cr_only_line_endings_are_read(tmp_path: Path) -> None:
    (tmp_path / "a.json").write_bytes(GPT2.encode("utf-16"))
    (tmp_path / "b.json").write_text(GPT2.replace("\n", "\r"), newline="")
    code, out, _ = run(".", "--format", "json", cwd=tmp_path)
    assert code == 1
    by = findings_by_path(out)
    assert [f["code"] for f in by["a.json"]] == ["SL101"]
    assert [f["code"] for f in by["b.json"]] == ["SL101"]


# -- numbers -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kind", "text"),
    [
        ("json", '{"hidden_size": ' + "1" * 5000 + "}"),
        ("yaml", "hidden_size: " + "1" * 5000 + "\n"),
        ("toml", "hidden_size = " + "1" * 5000 + "\n"),
    ],
)
def test_a_number_too_large_to_convert_is_a_finding_not_an_internal_error(
    tmp_path: Path, kind: str, text: str
) -> None:
    ext = {"json": "json", "yaml": "yaml", "toml": "toml", "python": "py"}[kind]
    (tmp_path / f"config.{ext}").write_text(text)
    code, out, err = run(f"config.{ext}", cwd=tmp_path)
    assert "internal error" not in err and "Traceback" not in err
    assert code == 1
    assert "SL000" in out or "SL002" in out


def test_python_huge_int_is_unknown_not_an_error(tmp_path: Path) -> None:
    (tmp_path / "model.py").write_text("n_embd = " + "1" * 5000 + "\nn_head = 12\nn_layer = 2\n")
    code, _, err = run("model.py", cwd=tmp_path)
    assert code in (0, 1) and "internal error" not in err and "Traceback" not in err


def test_json_huge_int_position() -> None:
    doc = parse("config.json", b'{\n  "a": 1,\n  "hidden_size": ' + b"9" * 5000 + b"\n}", "json")
    (problem,) = doc.problems
    assert (problem.span.line, problem.span.column) == (3, 18)
    assert "5000 digits" in problem.message


# -- Python: bounded before libcst ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "limit"),
    [
        ("x = " + "(" * 2_000 + "1" + ")" * 2_000 + "\n", "more than 200 nested brackets"),
        ("x = " + "[" * 10_000 + "]" * 10_000 + "\n", "more than 200 nested brackets"),
        ("x = " + " + ".join(["1"] * 100_000) + "\n", "max-expression-tokens"),
        ("x = " + "-" * 100_000 + "1\n", "max-expression-tokens"),
        ("x = a" + ".b" * 100_000 + "\n", "max-expression-tokens"),
        ("".join(f"x{i} = {i}\n" for i in range(100_000)), "max-python-tokens"),
        (
            "".join(" " * i + "if x:\n" for i in range(120)) + " " * 120 + "pass\n",
            "more than 100 levels of indentation",
        ),
    ],
)
def test_python_over_budget_is_one_finding_and_never_reaches_libcst(
    text: str, limit: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    import libcst

    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("libcst must not see a file over budget")

    monkeypatch.setattr(libcst, "parse_module", refuse)
    start = time.perf_counter()
    doc = parse("model.py", text.encode(), "python")
    elapsed = time.perf_counter() - start
    (problem,) = doc.problems
    assert problem.code == "SL000"
    assert problem.message.startswith("too complex to read statically: ")
    assert limit in problem.message
    assert elapsed < 20  # generous: the point is "not minutes" (a benchmark measures it)


def test_python_budget_is_a_setting(tmp_path: Path) -> None:
    text = "hidden_size = " + " + ".join(["64"] * 1_500) + "\n"
    (tmp_path / "model.py").write_text(text)
    (tmp_path / ".shapelint.toml").write_text("max-expression-tokens = 1000\n")
    code, out, _ = run("model.py", cwd=tmp_path)
    assert code == 1 and "the setting max-expression-tokens raises the limit" in out
    (tmp_path / ".shapelint.toml").write_text("max-expression-tokens = 5000\n")
    code, out, _ = run("model.py", cwd=tmp_path)
    assert "too complex" not in out


def test_real_python_configs_are_within_budget() -> None:
    """The largest Python config in the tests' examples is far inside the default budget."""
    from conftest import REPO

    for path in (REPO / "examples").rglob("*.py"):
        assert check_python(path.read_text()) is None, path


def test_constant_folding_is_capped() -> None:
    text = (
        "hidden_size = 2 ** 10 ** 10\n"
        "name = 'a' * 10 ** 9\n"
        "vocab_size = (1 << 10 ** 9)\n"
        "n_head = 12\n"
    )
    start = time.perf_counter()
    doc = parse("model.py", text.encode(), "python")
    assert time.perf_counter() - start < 20
    assert doc.ok


def test_python_side_effects_never_run(tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    (tmp_path / "model.py").write_text(
        f"import os\nopen({str(marker)!r}, 'w')\nos.system('touch {marker}')\n"
        f"__import__('os').remove({str(tmp_path / 'model.py')!r})\nn_embd = 768\n"
    )
    run("model.py", cwd=tmp_path)
    assert not marker.exists() and (tmp_path / "model.py").exists()


# -- paths ---------------------------------------------------------------------------------------


def test_paths_with_spaces_unicode_and_a_leading_dash(tmp_path: Path) -> None:
    for name in ("my config.json", "конфиг ü.json", "-x.json"):
        (tmp_path / name).write_text(GPT2)
    code, out, _ = run("--", "my config.json", "конфиг ü.json", "-x.json", cwd=tmp_path)
    assert code == 1
    for name in ("my config.json", "конфиг ü.json", "-x.json"):
        assert f"{name}:5:17: SL101" in out


def test_symlink_loop_and_link_to_a_directory_are_not_followed(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "config.json").write_text(GPT2)
    os.symlink("..", tmp_path / "a" / "up")
    os.symlink(tmp_path / "a", tmp_path / "again")
    code, out, _ = run(".", "--format", "json", cwd=tmp_path)
    assert code == 1
    assert list(findings_by_path(out)) == [os.path.join("a", "config.json")]


def test_directory_named_config_json_is_walked(tmp_path: Path) -> None:
    (tmp_path / "config.json").mkdir()
    (tmp_path / "config.json" / "inner.json").write_text(GPT2)
    code, out, _ = run("config.json", cwd=tmp_path)
    assert code == 1 and os.path.join("config.json", "inner.json") + ":5:17: SL101" in out


# -- internal errors are never "All checks passed" -----------------------------------------------


def test_internal_error_is_not_all_checks_passed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "config.json").write_text(GPT2)

    def boom(*args: object, **kwargs: object) -> None:
        raise RuntimeError("boom")

    monkeypatch.setattr(pipeline, "parse", boom)
    code, out, err = run(".", cwd=tmp_path)
    assert code == 2
    assert "All checks passed" not in out
    assert "1 file not checked (internal error)" in out
    assert "internal error while linting config.json: RuntimeError: boom" in err


def test_runner_api_reports_read_failures_as_findings(tmp_path: Path) -> None:
    os.symlink("nowhere.json", tmp_path / "config.json")
    gpus = (load_table().lookup("H100-SXM"),)
    result = lint_paths([str(tmp_path)], LintOptions(gpus=gpus))
    assert result.errors == []
    assert [f.code for f in result.findings] == ["SL000"]


# -- Ctrl-C --------------------------------------------------------------------------------------


def test_keyboard_interrupt_in_main_is_one_line_and_130(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def interrupted(*args: object, **kwargs: object) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(runner, "lint_paths", interrupted)
    code, out, err = run(".", cwd=tmp_path)
    assert (code, out, err) == (130, "", "shapelint: interrupted\n")


def test_interrupt_while_importing_is_one_line_and_130() -> None:
    """As the console script, SIGINT during the package's own imports exits 130 quietly."""
    code = (
        "import os, signal, sys\n"
        "sys.argv[0] = '/usr/bin/shapelint'\n"
        "import shapelint\n"  # installs the early handler, as the console script does
        "os.kill(os.getpid(), signal.SIGINT)\n"
        "import shapelint.cli.main\n"
        "print('not reached')\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert (proc.returncode, proc.stdout, proc.stderr) == (130, "", "shapelint: interrupted\n")


def test_interrupt_after_the_report_keeps_the_exit_code(tmp_path: Path) -> None:
    """A Ctrl-C once the console script's report is written changes nothing: SIGINT is then
    ignored (a Python-level handler would be reset to the system default by interpreter
    finalization, and a signal in that moment killed the process silently with -2: 4 of 150
    SIGINTs sent in the last 0.15 s of a run did, and `test_sigint_at_any_moment_of_a_run`
    failed now and then)."""
    (tmp_path / "config.json").write_text('{"hidden_size": 4100, "num_attention_heads": 41}')
    code = (
        "import os, signal, sys\n"
        "sys.argv = ['/usr/bin/shapelint', 'config.json', '--no-cache']\n"
        "import shapelint\n"
        "from shapelint.cli.main import main\n"
        "code = main()\n"
        "print('ignored', signal.getsignal(signal.SIGINT) is signal.SIG_IGN)\n"
        "os.kill(os.getpid(), signal.SIGINT)\n"
        "print('still here')\n"
        "raise SystemExit(code)\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, cwd=tmp_path
    )
    assert proc.returncode == 1, proc.stderr
    assert proc.stdout.splitlines()[-2:] == ["ignored True", "still here"]
    assert "interrupted" not in proc.stderr


def test_importing_shapelint_as_a_library_keeps_ctrl_c() -> None:
    # Compared with the handler before the import: a child started from a shell's background
    # job inherits SIGINT ignored, and Python then installs no default_int_handler at all.
    code = (
        "import signal\nbefore = signal.getsignal(signal.SIGINT)\nimport shapelint.cli.main\n"
        "print(signal.getsignal(signal.SIGINT) is before)\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert proc.stdout.strip() == "True"


@pytest.mark.parametrize("delay", [0.3, 0.6, 1.0, 1.5])
def test_sigint_at_any_moment_of_a_run(tmp_path: Path, delay: float) -> None:
    """A real run interrupted at several moments: 130 with one line (or done), no traceback.

    Delays start after the interpreter's own start-up: a signal before Python has run any of
    shapelint's code is the interpreter's to handle.
    """
    build(tmp_path / "tree", tmp_path)
    script = Path(sys.executable).parent / "shapelint"
    proc = subprocess.Popen(
        [str(script), str(tmp_path / "tree")],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    time.sleep(delay)
    proc.send_signal(signal.SIGINT)
    _out, err = proc.communicate(timeout=120)
    assert "Traceback" not in err
    if proc.returncode == 130:
        assert err.endswith("shapelint: interrupted\n")
        assert err.count("\n") == 1 or err.splitlines()[-1] == "shapelint: interrupted"
    else:
        assert proc.returncode == 1, err  # finished before the signal


def _children(pid: int) -> list[int]:
    try:
        with open(f"/proc/{pid}/task/{pid}/children", encoding="ascii") as fh:
            return [int(c) for c in fh.read().split()]
    except OSError:
        return []


@pytest.mark.skipif(
    not os.path.exists(f"/proc/{os.getpid()}/task/{os.getpid()}/children"),
    reason="finds the worker processes in /proc (Linux)",
)
@pytest.mark.parametrize("after", [0.0, 0.05, 0.15, 0.3])
def test_ctrl_c_on_a_terminal_reaches_the_workers_quietly(tmp_path: Path, after: float) -> None:
    """A terminal's Ctrl-C sends SIGINT to the whole foreground process group, the worker
    processes included: one line and 130, no worker's ``Process ForkPoolWorker-2: Traceback``,
    and no worker left running. (Before the workers ignored SIGINT, 5 of 8 tries printed
    tracebacks.)"""
    tree = tmp_path / "tree"
    tree.mkdir()
    for i in range(600):  # two workers, linting for a few seconds
        (tree / f"c{i}.json").write_text(
            json.dumps({"n_embd": 768 + 64 * (i % 7), "n_head": 12, "n_layer": 12})
        )
    script = Path(sys.executable).parent / "shapelint"

    def as_a_terminal_job() -> None:
        # A terminal's foreground job starts with SIGINT at its default and unblocked; this
        # process's own state (an earlier in-process test, a runner started in the
        # background) must not decide what the child starts with.
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})
        signal.signal(signal.SIGINT, signal.SIG_DFL)

    proc = subprocess.Popen(
        [str(script), str(tree), "--no-cache", "--jobs", "2"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,  # its own process group, as a terminal's foreground job
        preexec_fn=as_a_terminal_job,
    )
    deadline = time.monotonic() + 60
    workers: list[int] = []
    while not workers and proc.poll() is None and time.monotonic() < deadline:
        workers = _children(proc.pid)
        time.sleep(0.002)
    assert workers, "the run ended before its workers started"
    time.sleep(after)
    os.killpg(proc.pid, signal.SIGINT)
    _out, err = proc.communicate(timeout=120)
    assert (proc.returncode, err) == (130, "shapelint: interrupted\n")
    for pid in workers:  # terminated by the parent, not orphaned
        while time.monotonic() < deadline:
            try:
                os.kill(pid, 0)
            except ProcessLookupError:
                break
            time.sleep(0.01)
        else:
            raise AssertionError(f"worker {pid} still runs")


# -- CPU-time budget per file --------------------------------------------------------------------


def test_cpu_limit_stops_a_runaway_stage(monkeypatch: pytest.MonkeyPatch) -> None:
    from shapelint.core.limits import OverTime, cpu_limit

    start = time.process_time()
    with pytest.raises(OverTime), cpu_limit(0.2):
        while True:  # a stage that never ends
            pass
    assert time.process_time() - start < 5
    assert signal.getsignal(signal.SIGVTALRM) in (signal.SIG_DFL, None)


def test_a_file_over_its_cpu_time_is_one_finding_and_the_others_are_linted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "config.json").write_text(GPT2)
    (tmp_path / "slow.yaml").write_text("hidden_size: 768\nnum_attention_heads: 12\n")
    real = pipeline.parse

    def slow_parse(path: str, *args: object, **kwargs: object) -> object:
        if path.endswith("slow.yaml"):
            while True:  # a reader stuck on some input
                pass
        return real(path, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(pipeline, "parse", slow_parse)
    (tmp_path / ".shapelint.toml").write_text("max-seconds-per-file = 0.5\n")
    code, out, err = run(".", cwd=tmp_path)
    assert code == 1 and err == ""
    assert (
        "slow.yaml:1:1: SL000 [error] too complex to read statically: more than 0.5 s of CPU time; "
        "the setting max-seconds-per-file raises the limit" in out
    )
    assert "config.json:5:17: SL101" in out


def test_cpu_limit_is_not_swallowed_by_a_reader(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Readers catch Exception around third-party parsers; the limit is not an Exception."""
    (tmp_path / "model.py").write_text("n_embd = 768\nn_head = 12\n")
    import libcst

    def stuck(*args: object, **kwargs: object) -> None:
        while True:
            pass

    monkeypatch.setattr(libcst, "parse_module", stuck)
    (tmp_path / ".shapelint.toml").write_text("max-seconds-per-file = 0.5\n")
    code, out, _ = run("model.py", cwd=tmp_path)
    assert code == 1 and "more than 0.5 s of CPU time" in out


# -- parsing in a worker (issue 26, failures 6 and 7) --------------------------------------------

BOMBS = {
    "fstring": KEYS + fstring_bomb(),  # segfaults libcst
    "lambda": KEYS + lambda_chain(),  # segfaults libcst, or takes gigabytes first
}


def _bomb_tree(root: Path, bomb: str) -> Path:
    root.mkdir()
    (root / "bomb.py").write_text(BOMBS[bomb])
    for i in range(3):
        (root / f"c{i}.json").write_text(GPT2)
    return root


@pytest.mark.parametrize("bomb", sorted(BOMBS))
@pytest.mark.parametrize("jobs", ["1", "2"])
def test_parser_crash_is_one_finding_and_the_run_goes_on(
    tmp_path: Path, bomb: str, jobs: str
) -> None:
    """Failure 6: libcst crashed natively and the whole run died (with --jobs 2 it hung)."""
    root = _bomb_tree(tmp_path / "t", bomb)
    code, out, err = shapelint(".", "--format", "json", "--jobs", jobs, cwd=root)
    assert code == 1, err
    assert "Traceback" not in err and "internal error" not in err
    by = findings_by_path(out)
    (problem,) = by["bomb.py"]
    assert problem["code"] == "SL000"
    assert any(
        reason in str(problem["message"])
        for reason in ("the Python parser crashed on this file (signal", "MB of memory")
    ), problem
    for i in range(3):
        assert [f["code"] for f in by[f"c{i}.json"]] == ["SL101"]


@pytest.mark.parametrize("bomb", sorted(BOMBS))
def test_fix_goes_on_past_a_parser_crash(tmp_path: Path, bomb: str) -> None:
    """Failure 6: "--fix fixes nothing" when a file in the tree crashed the parser."""
    root = _bomb_tree(tmp_path / "t", bomb)
    code, out, err = shapelint("--fix", ".", cwd=root)
    assert code == 1 and "bomb.py:1:1: SL000" in out, err
    for i in range(3):
        assert '"vocab_size": 50304' in (root / f"c{i}.json").read_text()


def test_a_base_class_that_crashes_the_parser_costs_only_that_base(tmp_path: Path) -> None:
    """Failure 6: the run died when the crashing file was only a base class read for
    inheritance; now the base is unreadable (open), the subclass is linted."""
    (tmp_path / "base.py").write_text(KEYS + fstring_bomb() + "class Base:\n    pass\n")
    (tmp_path / "model.py").write_text(GPT2_CLASS)
    code, out, err = shapelint("model.py", "--format", "json", cwd=tmp_path)
    assert code == 1, err
    assert [f["code"] for f in findings_by_path(out)["model.py"]] == ["SL101"]
    code, out, _ = shapelint(".", "--format", "json", "--jobs", "2", cwd=tmp_path)
    by = findings_by_path(out)
    assert [f["code"] for f in by["model.py"]] == ["SL101"]
    assert [f["code"] for f in by["base.py"]] == ["SL000"]


def test_python_memory_bomb_stops_at_the_memory_limit(tmp_path: Path) -> None:
    """Failure 7: a 150 KB Python file within every pre-check took 31 s and 7.5 GB; the
    worker's address-space limit stops it."""
    (tmp_path / "model.py").write_text(KEYS + not_chains())
    (tmp_path / "config.json").write_text(GPT2)
    # The run's peak memory, its worker's included: the largest resident size of any process
    # the wrapper waited for (a process's own waited-for children count in its figure).
    wrapper = (
        "import resource, subprocess, sys\n"
        "code = subprocess.run(sys.argv[1:]).returncode\n"
        "peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss // 1024\n"
        "print(f'peak {peak}', file=sys.stderr)\n"
        "sys.exit(code)\n"
    )
    start = time.monotonic()
    proc = subprocess.run(
        [sys.executable, "-c", wrapper, sys.executable, "-m", "shapelint", "."],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
    )
    code, out, err = proc.returncode, proc.stdout, proc.stderr
    assert time.monotonic() - start < 120
    assert int(err.split("peak ")[-1]) < 2048 + 512  # MB: the worker's limit, and the parent
    assert code == 1, err
    assert "model.py:1:1: SL000 [error] too complex to read statically: more than 2048 MB" in out
    assert "config.json:5:17: SL101" in out


# -- no silent pass (issue 26, failures 19 and 20) -----------------------------------------------


@pytest.mark.parametrize(
    ("name", "text", "expected"),
    [
        ("config.json", many_keys(GPT2, 1_200), "config.json:5:17: SL101"),
        ("train.sh", deep_subshell(), "train.sh:3:"),
        ("deeper.sh", deep_subshell(20_000), "deeper.sh:3:"),
    ],
)
def test_large_but_legal_files_are_read(
    tmp_path: Path, name: str, text: str, expected: str
) -> None:
    """Failure 20: a config.json with more than 1,000 top-level keys, and a script whose ``$(``
    nests 70 deep before its torchrun line, were "All checks passed (0 configs in 1 file)"."""
    (tmp_path / name).write_text(text)
    for target in (name, "."):
        code, out, err = run(target, cwd=tmp_path)
        assert code == 1 and err == "", out
        assert out.startswith(expected) and " SL101 " in out.splitlines()[0], out
        assert "in 1 config in 1 file" in out


def test_a_config_too_large_to_read_says_so(tmp_path: Path) -> None:
    """Failure 20: past what is read one key at a time, the file is SL000, not a pass."""
    (tmp_path / "config.json").write_text(many_keys(GPT2, 12_000))
    code, out, _ = run("config.json", cwd=tmp_path)
    assert code == 1 and "All checks passed" not in out
    assert out.startswith(
        "config.json:1:1: SL000 [error] too large to read as a config: 12004 keys at the top "
        "level (at most 10000 are read one by one)"
    )


@pytest.mark.parametrize("fmt", ["json", "sarif", "text", "github"])
def test_a_value_the_output_cannot_encode_is_escaped(tmp_path: Path, fmt: str) -> None:
    """Found by the fuzz campaign (fuzz/campaign.py, JSON): a JSON string ``"\\ud800"`` is a
    lone surrogate, which UTF-8 output cannot encode: it was an internal error (exit 2)."""
    (tmp_path / "config.json").write_text(
        '{"n_embd": 768, "n_head": 12, "n_layer": 12, "vocab_size": "\\ud800"}\n'
    )
    code, out, err = shapelint("config.json", "--format", fmt, cwd=tmp_path)
    assert (code, err) == (1, "")
    if fmt == "json":
        (finding,) = json.loads(out)["findings"]
        assert finding["code"] == "SL002" and finding["value"] == "\ud800"


_HEX_DIGITS = "f" * 4000  # 16 000 bits: about 4 817 decimal digits, past Python's 4 300


@pytest.mark.parametrize(
    ("name", "text"),
    [
        ("config.yaml", f"hidden_size: 0x{_HEX_DIGITS}\nnum_attention_heads: 32\n"),
        ("config.toml", f"hidden_size = 0x{_HEX_DIGITS}\nnum_attention_heads = 32\n"),
        ("model_cfg.py", f"class Cfg:\n    hidden_size = 0x{_HEX_DIGITS}\n    n_head = 32\n"),
    ],
    ids=["yaml", "toml", "python"],
)
@pytest.mark.parametrize("fmt", ["json", "sarif", "text", "github"])
def test_an_integer_too_long_for_decimal_is_written_in_hex(
    tmp_path: Path, name: str, text: str, fmt: str
) -> None:
    """Found by the fuzz campaign (round 2): YAML, TOML and Python read ``0xfff…`` of 4 000 hex
    digits as an int that Python refuses to write in decimal, so ``--format json`` stopped
    with an internal error (exit 2) while the text report said SL002."""
    (tmp_path / name).write_text(text)
    code, out, err = shapelint(name, "--format", fmt, "--min-slowdown", "0", cwd=tmp_path)
    assert (code, err) == (1, "")
    if fmt == "json":
        (finding,) = json.loads(out)["findings"]
        assert finding["code"] == "SL002" and finding["value"] == "0x" + _HEX_DIGITS


def test_a_baseline_holds_an_integer_too_long_for_decimal(tmp_path: Path) -> None:
    """The baseline writes the value of each finding: the same hex form, and read back."""
    (tmp_path / "config.yaml").write_text(f"hidden_size: 0x{_HEX_DIGITS}\nn_head: 32\n")
    code, _, err = shapelint("--write-baseline", "bl.json", "config.yaml", cwd=tmp_path)
    assert (
        code == 0
        and "recorded 1 finding" in err
        and "0x" + _HEX_DIGITS in (tmp_path / "bl.json").read_text()
    )
    code, out, err = shapelint("--baseline", "bl.json", "config.yaml", cwd=tmp_path)
    assert (code, err) == (0, "") and "All checks passed" in out


def test_unreadable_directory_is_reported(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Failure 19: a directory the walk cannot list was skipped without a word, even with -v."""
    (tmp_path / "locked").mkdir()
    (tmp_path / "locked" / "config.json").write_text(GPT2)
    (tmp_path / "open").mkdir()
    (tmp_path / "open" / "config.json").write_text(GPT2)
    real_scandir = os.scandir

    def scandir(path: Any = ".") -> Any:
        if os.path.basename(os.fspath(path)) == "locked":  # what chmod 000 does to non-root
            raise PermissionError(13, "Permission denied", os.fspath(path))
        return real_scandir(path)

    monkeypatch.setattr(os, "scandir", scandir)
    code, out, err = run(".", cwd=tmp_path)
    assert code == 1 and err == ""
    assert (
        "locked:1:1: SL000 [error] cannot read directory: Permission denied; the files in it "
        "were not linted" in out
    )
    assert os.path.join("open", "config.json") + ":5:17: SL101" in out
    assert "All checks passed" not in out
    code, out, _ = run(".", "--format", "json", cwd=tmp_path)
    assert [f["code"] for f in findings_by_path(out)["locked"]] == ["SL000"]


# -- Issue 26, failures 10 and 21: sizes of 2**63 end in seconds with an answer -------------


def test_a_rule_over_the_cpu_budget_is_not_called_a_file_too_complex_to_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Failure 21: a rule that ran out of CPU time (SL205 at --tp 2**63) made a 76-byte file
    # "too complex to read statically"; the file was read, checking it took the time.
    from shapelint.core.limits import OverTime
    from shapelint.rules import sl101_vocab_padding

    def over(*_: object, **__: object) -> object:
        raise OverTime(10)

    monkeypatch.setattr(sl101_vocab_padding, "check", over)
    (tmp_path / "config.json").write_text(GPT2, encoding="utf-8")
    code, out, err = run("config.json", "--no-cache", "--jobs", "1", cwd=tmp_path)
    assert code == 1 and "Traceback" not in out + err
    assert "checking this file took more than 10 s of CPU time in rule SL101" in out
    assert "too complex to read" not in out


def test_tensor_parallel_candidates_are_divisors_found_without_counting_to_t() -> None:
    from shapelint.rules.sl205_tensor_parallel_too_large import _common_divisors

    for t in range(2, 200):
        for heads in (1, 12, 32, 96, 128):
            want = [d for d in range(t - 1, 1, -1) if t % d == 0 and heads % d == 0]
            assert _common_divisors(t, heads) == want
    start = time.process_time()
    assert _common_divisors(2**63, 2**62)[:2] == [2**62, 2**61]
    assert time.process_time() - start < 1


@pytest.mark.parametrize(
    "dims",
    [
        # Failure 10: heads of 2**32 made the search list every divisor by counting to it.
        {"hidden_size": 2**63, "num_attention_heads": 2**32, "num_hidden_layers": 32},
        # Layers of 2**63 made a list of 10**17 layer counts (MemoryError).
        {"hidden_size": 4096, "num_attention_heads": 32, "num_hidden_layers": 2**63},
    ],
)
def test_suggest_on_a_dim_of_two_to_the_63_ends_in_seconds(
    tmp_path: Path, dims: dict[str, int]
) -> None:
    (tmp_path / "config.json").write_text(json.dumps({**dims, "vocab_size": 50304}), "utf-8")
    start = time.process_time()
    code, out, err = run("suggest", "config.json", cwd=tmp_path)
    assert time.process_time() - start < 20
    assert code in (0, 1, 2) and "internal error" not in err and "Traceback" not in out + err
    assert len(err) < 1000


# -- Issue 26: the language server goes through the same reader and sandbox -----------------

H100 = LintOptions(gpus=(load_table().lookup("H100-SXM"),))


def test_language_server_lints_a_parser_bomb_in_a_worker(tmp_path: Path) -> None:
    """Failure 6, in the language server: a document that crashes libcst is one SL000 and
    the server process lives on."""
    from shapelint.cli.server import lint_text

    path = str(tmp_path / "model.py")
    found = lint_text(path, KEYS + fstring_bomb(), H100)
    assert [f.code for f in found] == ["SL000"]
    assert any(
        reason in found[0].message
        for reason in ("the Python parser crashed on this file (signal", "MB of memory")
    ), found[0].message
    assert [f.code for f in lint_text(path, GPT2_PY, H100)] == ["SL101"]


def test_language_server_document_with_a_lone_surrogate_is_linted() -> None:
    """Failure 22: the editor's text held a lone surrogate (JSON-RPC carries "\\ud800"), it
    could not be encoded, and the document got no diagnostics and no message."""
    from shapelint.cli.server import lint_text

    text = GPT2.replace('"n_embd"', '"name": "\ud800",\n  "n_embd"')
    found = lint_text("config.json", text, H100)
    assert [f.code for f in found] == ["SL101"]
    assert found[0].span.line == 6  # positions are the editor's: one character for one
