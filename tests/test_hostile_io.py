"""Hostile input, round 2 (issue 26): one writer for every output, one bounded reader for
every input, numbers validated once, output that cannot be subverted.

Each test is one failure of the issue's list (its number in the test's docstring) and failed
before the fix: shapelint replaced ``/dev/null`` and a ``/dev/stdout`` link, wrote a cache
through a committed symlink, rewrote a file outside the tree when a directory was swapped for
a symlink mid-fix, changed owners, split hard links and dropped extended attributes, left
temporary files on SIGTERM, hung or crashed on hostile settings, baselines and GPU files, let
1e308 reach the model, and let a file name inject workflow commands or break SARIF.
"""

from __future__ import annotations

import io
import json
import os
import signal
import stat
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from hostile import GPT2

from shapelint.cli.main import main
from shapelint.engine import writer

GPT2_FIXED = GPT2.replace("50257", "50304")
SHAPELINT = str(Path(sys.executable).parent / "shapelint")


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


def temporaries(root: Path) -> list[str]:
    return sorted(str(p) for p in root.rglob("*") if ".tmp" in p.name)


def make_null_device(path: Path) -> None:
    """A character device like /dev/null (1, 3) at ``path``; the test is skipped without the
    privilege to make one."""
    try:
        os.mknod(path, stat.S_IFCHR | 0o666, os.makedev(1, 3))
    except (PermissionError, AttributeError, OSError) as exc:
        pytest.skip(f"cannot make a device node here: {exc}")


# -- 1. outputs: devices, FIFOs and /dev/stdout are written to, never replaced --------------------


@pytest.mark.parametrize("flag", ["--output-file", "--write-baseline"])
def test_output_to_a_device_writes_to_it_and_never_replaces_it(tmp_path: Path, flag: str) -> None:
    """Failure 1: as root, ``--output-file /dev/null`` replaced /dev/null with a file."""
    (tmp_path / "config.json").write_text(GPT2)
    null = tmp_path / "null"
    make_null_device(null)
    code, _out, err = run("config.json", flag, "null", "--no-cache", cwd=tmp_path)
    assert "error" not in err, err
    assert code in (0, 1)
    assert stat.S_ISCHR(os.lstat(null).st_mode)  # still the device
    assert temporaries(tmp_path) == []


def test_output_through_a_link_to_stdout_reaches_stdout_and_keeps_the_link(
    tmp_path: Path,
) -> None:
    """Failure 1: ``--format sarif --output-file /dev/stdout`` replaced the /dev/stdout link
    with a file and nothing reached stdout. Here the link is the tree's own (``out`` →
    /proc/self/fd/1, what /dev/stdout is), so the test cannot harm the machine's."""
    if not os.path.exists("/proc/self/fd/1"):
        pytest.skip("no /proc/self/fd")
    (tmp_path / "config.json").write_text(GPT2)
    os.symlink("/proc/self/fd/1", tmp_path / "out")
    proc = subprocess.run(
        [SHAPELINT, "--format", "sarif", "--output-file", "out", "--no-cache", "config.json"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=120,
    )
    assert proc.returncode == 1, proc.stderr
    assert os.path.islink(tmp_path / "out")
    sarif = json.loads(proc.stdout)
    assert sarif["runs"][0]["results"][0]["ruleId"] == "SL101"
    # Redirected to a file: the report is added to the file, which stays the shell's.
    with open(tmp_path / "captured.txt", "w") as fh:
        proc = subprocess.run(
            [SHAPELINT, "--format", "json", "--output-file", "out", "--no-cache", "config.json"],
            stdout=fh,
            stderr=subprocess.PIPE,
            text=True,
            cwd=tmp_path,
            timeout=120,
        )
    assert proc.returncode == 1, proc.stderr
    assert os.path.islink(tmp_path / "out")
    report = json.loads((tmp_path / "captured.txt").read_text())
    assert [f["code"] for f in report["findings"]] == ["SL101"]


def test_output_to_a_fifo_is_written_to(tmp_path: Path) -> None:
    """Failure 1: a FIFO named as the output is written to (a reader gets the report), not
    replaced by a file."""
    (tmp_path / "config.json").write_text(GPT2)
    fifo = tmp_path / "report.fifo"
    os.mkfifo(fifo)
    got: list[bytes] = []

    def read() -> None:
        with open(fifo, "rb") as fh:
            got.append(fh.read())

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    code, _, err = run(
        "config.json", "--format", "json", "--output-file", str(fifo), "--no-cache", cwd=tmp_path
    )
    reader.join(timeout=30)
    assert code == 1, err
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)
    assert [f["code"] for f in json.loads(got[0])["findings"]] == ["SL101"]


def test_output_through_a_symlink_replaces_the_target_and_keeps_the_link(tmp_path: Path) -> None:
    """Failure 1: a symlink is never replaced: the file it names gets the report."""
    (tmp_path / "config.json").write_text(GPT2)
    (tmp_path / "reports").mkdir()
    target = tmp_path / "reports" / "report.json"
    target.write_text("old")
    os.symlink("reports/report.json", tmp_path / "report.json")
    code, _, err = run(
        "config.json", "--format", "json", "--output-file", "report.json", cwd=tmp_path
    )
    assert code == 1, err
    assert os.path.islink(tmp_path / "report.json")
    assert json.loads(target.read_text())["findings"][0]["code"] == "SL101"


def test_output_to_a_directory_or_a_nul_name_is_one_usage_error(tmp_path: Path) -> None:
    (tmp_path / "config.json").write_text(GPT2)
    (tmp_path / "d").mkdir()
    code, _, err = run("config.json", "--output-file", "d", cwd=tmp_path)
    assert (code, err) == (2, "shapelint: error: cannot write output file d: it is a directory\n")
    code, _, err = run("config.json", "--write-baseline", "a\0b", cwd=tmp_path)
    assert code == 2 and err.count("\n") == 1 and "NUL" in err


# -- 2. the cache is used only in a real directory of this user ----------------------------------


def test_a_committed_cache_symlink_is_never_written_through(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Failure 2: a repository committing ``.shapelint_cache -> ../somewhere`` made shapelint
    write .gitignore, CACHEDIR.TAG and entries outside the repository."""
    monkeypatch.delenv("SHAPELINT_CACHE_DIR", raising=False)
    repo, somewhere = tmp_path / "repo", tmp_path / "somewhere"
    repo.mkdir()
    somewhere.mkdir()
    (repo / "config.json").write_text(GPT2)
    os.symlink("../somewhere", repo / ".shapelint_cache")
    for _ in range(2):
        code, out, err = run("config.json", "-v", cwd=repo)
        assert code == 1 and "SL101" in out
    assert list(somewhere.iterdir()) == []
    assert "info: cache not used: " in err and "is a symlink" in err
    code, _, err = run("config.json", cwd=repo)
    assert err == ""  # the note is for -v only


def test_a_cache_directory_holding_links_is_not_followed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Failure 2: links inside a committed cache directory (its marker files) are left alone."""
    monkeypatch.delenv("SHAPELINT_CACHE_DIR", raising=False)
    repo, somewhere = tmp_path / "repo", tmp_path / "somewhere"
    (repo / ".shapelint_cache").mkdir(parents=True)
    somewhere.mkdir()
    (repo / "config.json").write_text(GPT2)
    for name in (".gitignore", "CACHEDIR.TAG"):
        os.symlink(f"../../somewhere/{name}", repo / ".shapelint_cache" / name)
    code, _, _ = run("config.json", cwd=repo)
    assert code == 1
    assert list(somewhere.iterdir()) == []


# -- 3. a directory swapped for a symlink mid-fix ----------------------------------------------------


def _swap_directory(tree: Path, outside: Path) -> None:
    """``tree/sub`` becomes a symlink to ``outside/sub``, which holds the same file with the
    same modification time (all a check of bytes and mtime can see)."""
    (tree / "sub").rename(tree / "sub.orig")
    os.symlink(os.path.relpath(outside / "sub", tree), tree / "sub")


@pytest.mark.parametrize("moment", ["after the check", "after the temporary file"])
def test_a_directory_swapped_for_a_symlink_during_fix_never_sends_the_write_outside(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, moment: str
) -> None:
    """Failure 3: a directory swapped for a symlink to ../outside during ``--fix .`` got a
    file outside the tree rewritten."""
    import tempfile

    tree, outside = tmp_path / "tree", tmp_path / "outside"
    (tree / "sub").mkdir(parents=True)
    (outside / "sub").mkdir(parents=True)
    inside = tree / "sub" / "config.json"
    victim = outside / "sub" / "config.json"
    inside.write_text(GPT2)
    victim.write_text(GPT2)
    st = inside.stat()
    os.utime(victim, ns=(st.st_atime_ns, st.st_mtime_ns))
    swapped: list[bool] = []

    def swap_once() -> None:
        if not swapped:
            swapped.append(True)
            _swap_directory(tree, outside)

    if moment == "after the check":
        real_target = writer.target_of

        def target_then_swap(path: str, roots: object) -> str:
            real = real_target(path, roots)  # type: ignore[arg-type]
            swap_once()
            return real

        monkeypatch.setattr(writer, "target_of", target_then_swap)
    else:
        real_mkstemp = tempfile.mkstemp

        def mkstemp_then_swap(*args: object, **kwargs: object) -> object:
            made = real_mkstemp(*args, **kwargs)  # type: ignore[call-overload]
            swap_once()
            return made

        monkeypatch.setattr(tempfile, "mkstemp", mkstemp_then_swap)
        # With directory descriptors, the temporary file exists when its bytes are written.
        real_write_all = writer._write_all

        def write_then_swap(fd: int, data: bytes) -> None:
            swap_once()
            real_write_all(fd, data)

        monkeypatch.setattr(writer, "_write_all", write_then_swap)
    code, _, err = run("--fix", "--no-cache", ".", cwd=tree)
    assert swapped
    assert victim.read_text() == GPT2  # never written outside the tree
    assert temporaries(tmp_path) == []
    assert "Traceback" not in err and "internal error" not in err
    if moment == "after the check":
        assert code == 1 and "changed on disk" in err and "sub" in err
        assert (tree / "sub.orig" / "config.json").read_text() == GPT2
    else:  # the open directory is the real one: the file in the tree is fixed
        assert (tree / "sub.orig" / "config.json").read_text() == GPT2_FIXED


# -- 4. --fix keeps owner, group, hard links and extended attributes -----------------------------


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0, reason="needs root")
def test_fix_as_root_keeps_the_owner_and_group(tmp_path: Path) -> None:
    """Failure 4: ``--fix`` as root changed a file's owner to root."""
    path = tmp_path / "config.json"
    path.write_text(GPT2)
    os.chown(path, 1234, 4321)
    os.chmod(path, 0o640)
    code, _, err = run("--fix", "--no-cache", str(path))
    assert (code, err) == (0, "")
    st = path.stat()
    assert path.read_text() == GPT2_FIXED
    assert (st.st_uid, st.st_gid, stat.S_IMODE(st.st_mode)) == (1234, 4321, 0o640)


def test_fix_keeps_extended_attributes(tmp_path: Path) -> None:
    """Failure 4: ``--fix`` dropped extended attributes."""
    path = tmp_path / "config.json"
    path.write_text(GPT2)
    try:
        os.setxattr(path, "user.shapelint.test", b"kept")
    except (OSError, AttributeError) as exc:
        pytest.skip(f"no user extended attributes here: {exc}")
    code, _, err = run("--fix", "--no-cache", str(path))
    assert (code, err) == (0, "")
    assert path.read_text() == GPT2_FIXED
    assert os.getxattr(path, "user.shapelint.test") == b"kept"


def test_a_hard_linked_file_is_refused_with_the_reason(tmp_path: Path) -> None:
    """Failure 4: ``--fix`` split hard links (the other name kept the old bytes). A file with
    several names is refused: replacing it splits them, writing into it changes a file that
    may lie outside the tree and is not atomic."""
    path = tmp_path / "config.json"
    path.write_text(GPT2)
    (tmp_path / "elsewhere").mkdir()
    other = tmp_path / "elsewhere" / "same.json"
    os.link(path, other)
    code, out, err = run("--fix", "--no-cache", str(path))
    assert code == 1 and "SL101" in out
    assert "not written: it has 2 hard links" in err
    assert path.read_text() == GPT2 and other.read_text() == GPT2
    assert os.path.samefile(path, other)
    assert temporaries(tmp_path) == []


def test_a_hard_linked_baseline_is_refused(tmp_path: Path) -> None:
    (tmp_path / "config.json").write_text(GPT2)
    (tmp_path / "baseline.json").write_text("{}")
    os.link(tmp_path / "baseline.json", tmp_path / "other.json")
    code, _, err = run("config.json", "--write-baseline", "baseline.json", cwd=tmp_path)
    assert code == 2 and "it has 2 hard links" in err
    assert (tmp_path / "other.json").read_text() == "{}"


def test_write_baseline_keeps_mode_and_extended_attributes(tmp_path: Path) -> None:
    (tmp_path / "config.json").write_text(GPT2)
    baseline = tmp_path / "baseline.json"
    baseline.write_text("{}")
    os.chmod(baseline, 0o600)
    try:
        os.setxattr(baseline, "user.shapelint.test", b"kept")
    except (OSError, AttributeError) as exc:
        pytest.skip(f"no user extended attributes here: {exc}")
    code, _, err = run("config.json", "--write-baseline", "baseline.json", cwd=tmp_path)
    assert code == 0, err
    assert json.loads(baseline.read_text())["findings"][0]["code"] == "SL101"
    assert stat.S_IMODE(baseline.stat().st_mode) == 0o600
    assert os.getxattr(baseline, "user.shapelint.test") == b"kept"


# -- 5. SIGTERM and SIGHUP clean up as Ctrl-C does -------------------------------------------------


@pytest.mark.skipif(not hasattr(signal, "SIGHUP"), reason="POSIX signals")
@pytest.mark.parametrize("signame", ["SIGTERM", "SIGHUP"])
def test_sigterm_while_a_fix_is_written_leaves_no_temporary_file(
    tmp_path: Path, signame: str
) -> None:
    """Failure 5: SIGTERM during ``--fix`` left ``*.shapelint.tmp`` files. The signal arrives
    exactly while the temporary file is being flushed (the moment that left them)."""
    (tmp_path / "config.json").write_text(GPT2)
    code = (
        "import os, signal, sys\n"
        "sys.argv = ['/usr/bin/shapelint', '--fix', '--no-cache', 'config.json']\n"
        "import shapelint\n"
        "from shapelint.cli.main import main\n"
        "real = os.fsync\n"
        "def fsync(fd):\n"
        f"    os.kill(os.getpid(), signal.{signame})\n"
        "    time.sleep(0.5)\n"
        "    real(fd)\n"
        "import time\n"
        "os.fsync = fsync\n"
        "raise SystemExit(main())\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=tmp_path
    )
    number = getattr(signal, signame)
    assert proc.returncode == 128 + number, (proc.returncode, proc.stderr)
    assert proc.stderr == f"shapelint: terminated ({signame})\n"
    assert sorted(os.listdir(tmp_path)) == ["config.json"]
    assert (tmp_path / "config.json").read_text() == GPT2


def test_sigterm_at_any_moment_of_a_fix_leaves_no_temporary_file(tmp_path: Path) -> None:
    """Failure 5, as the issue measured it: a real ``--fix`` of many files, SIGTERM at several
    moments; each run ends with one line (or finishes), no temporary file anywhere."""
    for trial, delay in enumerate((0.4, 0.8, 1.2, 1.6, 2.0, 2.5)):
        tree = tmp_path / str(trial)
        for i in range(60):
            (tree / f"m{i}").mkdir(parents=True)
            (tree / f"m{i}" / "config.json").write_text(GPT2)
        proc = subprocess.Popen(
            [SHAPELINT, "--fix", "--no-cache", str(tree)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        time.sleep(delay)
        proc.send_signal(signal.SIGTERM)
        _out, err = proc.communicate(timeout=120)
        assert "Traceback" not in err
        assert proc.returncode in (0, 1, 143, -signal.SIGTERM), err
        if proc.returncode == 143:
            assert err.splitlines()[-1] == "shapelint: terminated (SIGTERM)"
        assert temporaries(tree) == []
        for i in range(60):
            assert (tree / f"m{i}" / "config.json").read_text() in (GPT2, GPT2_FIXED)


# -- 8, 9. GPU files, baselines and settings come through the bounded reader -----------------------

LAB_GPU = """\
gpus:
  Lab-GPU:
    vendor: nvidia
    arch: hopper
    sms: 132
    peak_tflops: {bf16: 900}
    mem_bw_gbs: 3000
    mem_gb: 80
    best_align_bytes: 128
    achievable_fraction: {bf16: 0.8}
    source: "our lab"
"""


def one_line_error(code: int, out: str, err: str, *needles: str) -> None:
    """A usage error: exit 2, one short line on stderr naming what went wrong, nothing else."""
    assert code == 2, (code, out, err)
    assert err.count("\n") == 1 and err.startswith("shapelint: error: "), err[:500]
    assert len(err) < 600, err[:500]
    assert "Traceback" not in err and "internal error" not in err
    for needle in needles:
        assert needle in err, err


def timed_run(*argv: str, cwd: Path, limit: float = 20) -> tuple[int, str, str]:
    start = time.perf_counter()
    result = run(*argv, cwd=cwd)
    assert time.perf_counter() - start < limit
    return result


@pytest.mark.parametrize("via", ["flag", "settings"])
@pytest.mark.parametrize("target", ["fifo", "/dev/zero", "directory"])
def test_a_gpu_file_that_is_not_a_regular_file_is_one_line(
    tmp_path: Path, via: str, target: str
) -> None:
    """Failure 8: ``gpu-file`` pointing at a FIFO hung; at /dev/zero, MemoryError after
    1.8 GB."""
    (tmp_path / "config.json").write_text(GPT2)
    if target == "fifo":
        os.mkfifo(tmp_path / "gpus.yaml")
    elif target == "directory":
        (tmp_path / "gpus.yaml").mkdir()
    else:
        os.symlink(target, tmp_path / "gpus.yaml")
    args = ["config.json", "--no-cache"]
    if via == "flag":
        args += ["--gpu-file", "gpus.yaml"]
    else:
        (tmp_path / ".shapelint.toml").write_text('gpu-file = "gpus.yaml"\n')
    code, out, err = timed_run(*args, cwd=tmp_path)
    why = "it is a directory" if target == "directory" else "not a regular file"
    one_line_error(code, out, err, "gpus.yaml", "cannot read GPU table", why)


@pytest.mark.parametrize("target", ["fifo", "/dev/zero"])
@pytest.mark.parametrize("what", ["baseline", "extend"])
def test_a_baseline_or_extended_settings_file_at_a_fifo_is_one_line(
    tmp_path: Path, what: str, target: str
) -> None:
    """Failure 8: ``baseline`` pointing at a FIFO hung; at /dev/zero, MemoryError (an
    ``extend`` too, read the same way)."""
    (tmp_path / "config.json").write_text(GPT2)
    if target == "fifo":
        os.mkfifo(tmp_path / "pipe")
    else:
        os.symlink(target, tmp_path / "pipe")
    (tmp_path / ".shapelint.toml").write_text(f'{what} = "pipe"\n')
    code, out, err = timed_run("config.json", "--no-cache", cwd=tmp_path)
    one_line_error(code, out, err, "pipe", "FIFO" if target == "fifo" else "not a regular file")


def _laughs(levels: int) -> str:
    """A GPU file whose ``aliases`` list is a YAML alias bomb: each level a list of ten
    aliases of the one before (10^levels names, which the schema validates one by one)."""
    text = "a: &a [x, x, x, x, x, x, x, x, x, x]\n"
    for i in range(1, levels):
        prev, name = chr(96 + i), chr(97 + i)
        text += f"{name}: &{name} [{', '.join(['*' + prev] * 10)}]\n"
    return text + LAB_GPU + f"    aliases: *{chr(96 + levels)}\n"


@pytest.mark.parametrize("levels", [9, 6])
def test_a_gpu_file_alias_bomb_is_refused_at_once_in_one_short_line(
    tmp_path: Path, levels: int
) -> None:
    """Failure 9: a 762-byte ``--gpu-file`` alias bomb ran past 60 s; the 10⁶ variant printed
    an error line of several MB."""
    (tmp_path / "config.json").write_text(GPT2)
    bomb = _laughs(levels)
    if levels == 9:
        assert len(bomb.encode()) < 800  # the 762 bytes
    (tmp_path / "gpus.yaml").write_text(bomb)
    code, _out, err = timed_run(
        "config.json", "--gpu-file", "gpus.yaml", "--no-cache", cwd=tmp_path
    )
    assert code == 2
    assert len(err) < 1000 and err.count("\n") <= 2, err[:1000]
    assert "gpus.yaml" in err


def test_a_gpu_file_within_the_limits_still_works(tmp_path: Path) -> None:
    (tmp_path / "config.json").write_text(GPT2)
    (tmp_path / "gpus.yaml").write_text(LAB_GPU)
    code, out, err = run(
        "config.json", "--gpu-file", "gpus.yaml", "--gpu", "lab-gpu", "--no-cache", cwd=tmp_path
    )
    assert code == 1 and "error" not in err, err
    assert "SL101" in out and "Lab-GPU" in out


# -- 15. settings: nesting, extend chains, NUL characters ------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        "x = " + "[" * 3000 + "]" * 3000 + "\n",
        "x = " + "{a = " * 3000 + "1" + "}" * 3000 + "\n",
        "".join(f"[{'.'.join(['t'] * 300)}]\n"),
        "x = " + "[" * 300 + "]" * 300 + "\n",
    ],
)
def test_deeply_nested_settings_are_one_line(tmp_path: Path, text: str) -> None:
    """Failure 15: deep TOML arrays and tables in settings → RecursionError."""
    (tmp_path / "config.json").write_text(GPT2)
    (tmp_path / ".shapelint.toml").write_text(text)
    code, out, err = timed_run("config.json", "--no-cache", cwd=tmp_path)
    one_line_error(code, out, err, ".shapelint.toml", "nested")


def test_a_3000_file_extend_chain_is_one_line(tmp_path: Path) -> None:
    """Failure 15: a 3,000-file ``extend`` chain → RecursionError."""
    (tmp_path / "config.json").write_text(GPT2)
    (tmp_path / "s").mkdir()
    for i in range(3000):
        (tmp_path / "s" / f"{i}.toml").write_text(f'extend = "{i + 1}.toml"\n')
    (tmp_path / "s" / "3000.toml").write_text("min-slowdown = 2\n")
    (tmp_path / ".shapelint.toml").write_text('extend = "s/0.toml"\n')
    code, out, err = timed_run("config.json", "--no-cache", cwd=tmp_path, limit=60)
    one_line_error(code, out, err, "extend", "longer than")


def test_a_short_extend_chain_still_merges(tmp_path: Path) -> None:
    (tmp_path / "config.json").write_text(GPT2)
    (tmp_path / "s").mkdir()
    for i in range(5):
        (tmp_path / "s" / f"{i}.toml").write_text(f'extend = "{i + 1}.toml"\n')
    (tmp_path / "s" / "5.toml").write_text('ignore = ["SL101"]\n')
    (tmp_path / ".shapelint.toml").write_text('extend = "s/0.toml"\n')
    code, out, err = run("config.json", "--no-cache", cwd=tmp_path)
    assert (code, err) == (0, "") and "SL101" not in out


@pytest.mark.parametrize("key", ["gpu-file", "baseline", "extend"])
def test_a_nul_in_a_settings_path_is_one_line(tmp_path: Path, key: str) -> None:
    """Failure 15: a NUL in ``gpu-file``/``baseline`` → ValueError (an internal error)."""
    (tmp_path / "config.json").write_text(GPT2)
    (tmp_path / ".shapelint.toml").write_text(f'{key} = "a\\u0000b"\n')
    code, out, err = run("config.json", "--no-cache", cwd=tmp_path)
    one_line_error(code, out, err, ".shapelint.toml" if key == "extend" else "a\\x00b")


# -- 17. baselines: nesting and huge integers -----------------------------------------------------


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        ("[" * 100_000 + "]" * 100_000, "nested too deeply"),
        ('{"version": 1, "findings": ' + "[" * 300 + "]" * 300 + "}", "nested more than 200"),
        ('{"version": ' + "9" * 5000 + ', "findings": []}', "invalid JSON"),
        ('{"version": 1, "findings": [{"path": "a", "value": ' + "1" * 5000 + "}]}", "JSON"),
        ('{"version": "' + "x" * 100_000 + '", "findings": []}', "unsupported baseline version"),
    ],
)
def test_hostile_baselines_are_one_line(tmp_path: Path, text: str, needle: str) -> None:
    """Failure 17: a baseline nested 10⁵ deep → RecursionError; integers over 4,300 digits →
    ValueError."""
    (tmp_path / "config.json").write_text(GPT2)
    (tmp_path / "baseline.json").write_text(text)
    code, out, err = timed_run("config.json", "--baseline", "baseline.json", cwd=tmp_path)
    one_line_error(code, out, err, "baseline.json", needle)


# -- 12. a large baseline's unused entries are reported in linear time ---------------------------


def test_unused_baseline_entries_read_the_baseline_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Failure 12: a 30k-entry baseline with ``--report-unused-ignores`` took 254 s (10k:
    25 s): the baseline file was read and indexed again for each unused entry."""
    from shapelint.engine.baseline import Baseline

    reads = []
    text_of = Baseline._text

    def counted(self: Baseline) -> str:
        reads.append(self.path)
        return text_of(self)

    monkeypatch.setattr(Baseline, "_text", counted)
    (tmp_path / "config.json").write_text(GPT2)
    entries = [
        {"path": "config.json", "code": "SL101", "config": "", "key": f"k{i}", "value": i}
        for i in range(2000)
    ]
    lines = ",\n".join("    " + json.dumps(e) for e in entries)
    (tmp_path / "baseline.json").write_text(f'{{"version": 1, "findings": [\n{lines}\n]}}\n')
    code, out, err = run(
        "config.json", "--baseline", "baseline.json", "--report-unused-ignores", cwd=tmp_path
    )
    assert code == 1, err
    assert out.count("baseline entry matches no finding") == 2000
    assert "baseline.json:2001:5:" in out  # the last entry, on its own line
    assert len(reads) == 1


# -- 10, 14. a dim of 1e308 or 2**63 is SL002, never an OverflowError or a hang ---------------

HUGE = '{"hidden_size": 1e308, "num_attention_heads": 12, "num_hidden_layers": 2, ' + (
    '"intermediate_size": 3072, "vocab_size": 50257}\n'
)


@pytest.mark.parametrize("command", [[], ["explain", "--force"], ["suggest"]])
def test_a_dim_of_1e308_never_reaches_the_model(tmp_path: Path, command: list[str]) -> None:
    """Failure 14: ``"hidden_size": 1e308`` → OverflowError in check, explain --force and
    suggest."""
    (tmp_path / "config.json").write_text(HUGE)
    argv = [*command[:1], "config.json", *command[1:], *([] if command else ["--no-cache"])]
    code, out, err = run(*argv, cwd=tmp_path)
    assert "internal error" not in err and "Traceback" not in err, err
    assert code in (0, 1, 2)
    assert all(len(line) < 400 for line in (out + err).splitlines())  # no 309-digit numbers
    if not command:
        assert (
            "config.json:1:17: SL002 [error] hidden_size must be a positive integer of at most "
            "2³¹ (2147483648), got 1e+308" in out
        )


@pytest.mark.parametrize("value", [str(2**63), str(2**31 + 1), str(-(2**63)), "1e19"])
def test_a_dim_beyond_2_31_is_sl002_naming_the_value(tmp_path: Path, value: str) -> None:
    (tmp_path / "config.json").write_text(
        '{"hidden_size": 768, "num_attention_heads": 12, "vocab_size": ' + value + "}\n"
    )
    code, out, err = run("config.json", "--no-cache", cwd=tmp_path)
    assert code == 1 and err == ""
    shown = value if "e" not in value else repr(float(value))
    assert f"vocab_size must be a positive integer of at most 2³¹ (2147483648), got {shown}" in out
    assert "SL101" not in out  # never computed with


@pytest.mark.parametrize("key", ["hidden_size", "num_attention_heads"])
def test_suggest_on_a_dim_of_2_63_ends_at_once_naming_it(tmp_path: Path, key: str) -> None:
    """Failure 10: ``suggest`` hung on hidden or heads of 2⁶³."""
    dims = {"hidden_size": 4096, "num_attention_heads": 32, "num_hidden_layers": 32}
    dims[key] = 2**63
    (tmp_path / "config.json").write_text(json.dumps({**dims, "vocab_size": 32000}) + "\n")
    code, out, err = timed_run("suggest", "config.json", cwd=tmp_path)
    one_line_error(
        code,
        out,
        err,
        f"{key} must be a positive integer of at most 2³¹ (2147483648), got {2**63} (SL002)",
    )


@pytest.mark.parametrize("flag", ["--tp", "--micro-batch", "--seq-len", "--pp", "--data-parallel"])
def test_a_flag_beyond_2_31_is_a_usage_error_naming_the_flag(
    tmp_path: Path, flag: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """Deliverable 4 (and failure 21's cause): a flag out of range is a usage error naming
    the flag, never a value the model computes with."""
    (tmp_path / "config.json").write_text(GPT2)
    for command in ([], ["explain"], ["suggest"]):
        argv = [*command, "config.json", flag, str(2**63)]
        code, out, err = run(*argv, cwd=tmp_path)
        err += capsys.readouterr().err  # where argparse writes usage errors itself
        assert code == 2 and out == ""
        assert f"argument {flag}: expected a positive integer of at most 2³¹" in err


def test_min_slowdown_must_be_finite(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "config.json").write_text(GPT2)
    for value in ("nan", "inf"):
        code, _, err = run("config.json", "--min-slowdown", value, cwd=tmp_path)
        err += capsys.readouterr().err
        assert code == 2 and "argument --min-slowdown: expected a finite number" in err


# -- 15. settings: NaN, infinity and numbers past their bounds ------------------------------------


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        ("max-seconds-per-file = nan\n", "max-seconds-per-file: expected a finite number, got nan"),
        ("max-seconds-per-file = inf\n", "max-seconds-per-file: expected a finite number, got inf"),
        ("max-seconds-per-file = 1e300\n", "max-seconds-per-file: expected a number of seconds"),
        ("min-slowdown = nan\n", "min-slowdown: expected a finite number, got nan"),
        ("tp = 9223372036854775808\n", "tp: expected a positive integer of at most 2147483648"),
        ("max-file-size-mb = " + "9" * 30 + "\n", "max-file-size-mb: expected a positive integer"),
        ("[rules.SL101]\nmultiple = nan\n", "rules.SL101.multiple: expected a finite number"),
        ("tp = " + "7" * 5000 + "\n", "invalid TOML: "),
    ],
)
def test_numbers_in_settings_are_finite_and_bounded(tmp_path: Path, text: str, needle: str) -> None:
    """Failure 15: ``max-seconds-per-file = nan``/``inf`` → ValueError/OverflowError."""
    (tmp_path / "config.json").write_text(GPT2)
    (tmp_path / ".shapelint.toml").write_text(text)
    code, out, err = run("config.json", "--no-cache", cwd=tmp_path)
    one_line_error(code, out, err, needle)


# -- 16. GPU-table fields are finite and bounded --------------------------------------------------


@pytest.mark.parametrize(
    ("change", "needle"),
    [
        (("peak_tflops: {bf16: 900}", "peak_tflops: {bf16: .inf}"), "expected a finite number"),
        (("peak_tflops: {bf16: 900}", "peak_tflops: {bf16: 1.0e+308}"), "greater than the maximum"),
        (("peak_tflops: {bf16: 900}", "peak_tflops: {bf16: .nan}"), "expected a finite number"),
        (("achievable_fraction: {bf16: 0.8}", "achievable_fraction: {bf16: .nan}"), "finite"),
        (("mem_bw_gbs: 3000", "mem_bw_gbs: .nan"), "expected a finite number"),
        (("sms: 132", "sms: " + "7" * 5000), "gpus.yaml:5:"),
        (("sms: 132", "sms: 10000000000000"), "greater than the maximum"),
    ],
)
def test_gpu_file_numbers_are_finite_and_bounded(
    tmp_path: Path, change: tuple[str, str], needle: str
) -> None:
    """Failure 16: ``peak_tflops: .inf`` or ``1e308`` → ZeroDivisionError; a 5,000-digit
    ``sms`` → ValueError; NaN peaks or fractions passed the schema and printed
    ``[+nan% step time]``."""
    (tmp_path / "config.json").write_text(GPT2)
    (tmp_path / "gpus.yaml").write_text(LAB_GPU.replace(*change))
    for command in ([], ["explain"]):
        argv = [*command, "config.json", "--gpu-file", "gpus.yaml", "--gpu", "lab-gpu"]
        code, out, err = run(*argv, "--no-cache" if not command else "--force", cwd=tmp_path)
        one_line_error(code, out, err, "gpus.yaml", needle)
        assert "nan%" not in out


# -- 13. --format github: nothing a file name holds runs as a workflow command --------------------

HOSTILE_NAME = "zz\n::error file=README.md,line=1,title=X::pwned\n##[error]pwned too\n.json"


def runner_commands(out: str) -> list[str]:
    """The workflow commands GitHub's runner would process in ``out``: lines that start with
    ``::`` after leading spaces (v2) or hold ``##[`` anywhere (v1), except between
    ``::stop-commands::TOKEN`` and ``::TOKEN::``."""
    processed: list[str] = []
    stopped: str | None = None
    for line in out.splitlines():
        text = line.lstrip()
        if stopped is not None:
            if text == f"::{stopped}::":
                stopped = None
            continue
        if text.startswith("::stop-commands::"):
            stopped = text.removeprefix("::stop-commands::")
            continue
        if text.startswith("::") or "##[" in text:
            processed.append(text)
    return processed


def test_github_format_escapes_every_line_of_hostile_file_names(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Failure 13: findings past the 10-per-level annotation limit were printed unescaped, so
    a file named ``zz\\n::error file=README.md,…\\n.json`` emitted a live workflow command."""
    for var in ("GITHUB_ACTIONS", "GITHUB_STEP_SUMMARY", "GITHUB_WORKSPACE"):
        monkeypatch.delenv(var, raising=False)
    for i in range(11):
        (tmp_path / f"a{i:02}.json").write_text(GPT2)
    (tmp_path / HOSTILE_NAME).write_text(GPT2)
    code, out, err = run(".", "--format", "github", "--no-cache", cwd=tmp_path)
    assert code == 1, err
    commands = runner_commands(out)
    assert len(commands) == 10  # the annotations, and nothing else
    assert all(c.startswith("::warning file=a") for c in commands), commands
    assert "pwned" not in "".join(commands)
    # The hostile name is still reported, on one line, escaped.
    assert (
        "zz\\n::error file=README.md,line=1,title=X::pwned\\n##[error]pwned too\\n.json:5:17: SL101"
        in out
    )


def test_github_annotation_of_a_hostile_name_is_one_command(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for var in ("GITHUB_ACTIONS", "GITHUB_STEP_SUMMARY", "GITHUB_WORKSPACE"):
        monkeypatch.delenv(var, raising=False)
    (tmp_path / HOSTILE_NAME).write_text(GPT2)
    _code, out, _ = run(".", "--format", "github", "--no-cache", cwd=tmp_path)
    (command,) = runner_commands(out)
    assert command.startswith("::warning file=zz%0A%3A%3Aerror file=README.md%2Cline=1")


# -- 18. file names that are not UTF-8 -------------------------------------------------------------


@pytest.mark.skipif(sys.platform == "darwin", reason="APFS refuses names that are not UTF-8")
@pytest.mark.parametrize("fmt", ["text", "json", "github", "sarif"])
def test_a_file_name_that_is_not_utf8_is_reported_escaped_in_every_format(
    tmp_path: Path, fmt: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Failure 18: a file name that is not valid UTF-8 → UnicodeEncodeError, no SARIF."""
    for var in ("GITHUB_ACTIONS", "GITHUB_STEP_SUMMARY", "GITHUB_WORKSPACE"):
        monkeypatch.delenv(var, raising=False)
    name = os.fsdecode(b"bad\xff\xfename.json")
    try:
        (tmp_path / name).write_text(GPT2)
    except (OSError, UnicodeEncodeError) as exc:
        pytest.skip(f"the file system refuses the name: {exc}")
    code, out, err = run(
        ".", "--format", fmt, "--output-file", "report.out", "--no-cache", cwd=tmp_path
    )
    assert code == 1, err
    report = (tmp_path / "report.out").read_bytes().decode("utf-8")  # valid UTF-8
    if fmt == "text":
        assert "bad\\xff\\xfename.json:5:17: SL101" in report
    if fmt == "github":
        assert "::warning file=bad\\xff\\xfename.json,line=5," in report
    if fmt == "sarif":
        sarif = json.loads(report)
        (result,) = sarif["runs"][0]["results"]
        uri = result["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]
        assert uri == "bad%FF%FEname.json"
    if fmt == "json":
        assert json.loads(report)["findings"][0]["path"] == "bad\\xff\\xfename.json"
    # Printed, not written to a file: the same text, valid UTF-8.
    code, out, err = run(".", "--format", fmt, "--no-cache", "-v", cwd=tmp_path)
    (out + err).encode("utf-8")


def test_a_file_name_that_is_not_utf8_as_the_console_script(tmp_path: Path) -> None:
    """Failure 18 through the real standard output (strict UTF-8)."""
    name = os.fsdecode(b"bad\xffname.json")
    try:
        (tmp_path / name).write_text(GPT2)
    except (OSError, UnicodeEncodeError) as exc:
        pytest.skip(f"the file system refuses the name: {exc}")
    for fmt in ("text", "json", "github", "sarif"):
        proc = subprocess.run(
            [SHAPELINT, ".", "--format", fmt, "--no-cache"],
            capture_output=True,
            cwd=tmp_path,
            timeout=120,
            env={**os.environ, "PYTHONIOENCODING": "utf-8", "GITHUB_STEP_SUMMARY": ""},
        )
        assert proc.returncode == 1, proc.stderr
        proc.stdout.decode("utf-8")
        assert b"Traceback" not in proc.stderr
