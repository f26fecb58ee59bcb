"""--fix under faults (issue 12, item 4): a full disk, a read-only directory, a file swapped
for a symlink or a FIFO between read and write, two shapelint processes fixing one file.

Each leaves the file byte-identical or correctly fixed, no temporary file behind, and says
what happened.
"""

from __future__ import annotations

import errno
import io
import os
import subprocess
import sys
from pathlib import Path

import pytest

from shapelint.cli.main import main
from shapelint.engine import writer

GPT2 = '{\n  "n_embd": 768,\n  "n_head": 12,\n  "n_layer": 12,\n  "vocab_size": 50257\n}\n'
GPT2_FIXED = GPT2.replace("50257", "50304")


def run(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = main(list(argv), out, err)
    return code, out.getvalue(), err.getvalue()


def no_space(*args: object) -> None:
    raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))


@pytest.mark.parametrize("where", ["fsync", "write"])
def test_disk_full_leaves_the_original(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, where: str
) -> None:
    path = tmp_path / "config.json"
    path.write_text(GPT2)
    if where == "fsync":
        monkeypatch.setattr(writer.os, "fsync", no_space)
    else:
        monkeypatch.setattr(writer, "_write_all", no_space)
    code, out, err = run("--fix", str(path))
    assert code == 1
    assert path.read_text() == GPT2
    assert sorted(os.listdir(tmp_path)) == ["config.json"]
    assert "not written: cannot write file: No space left on device" in err
    assert "SL101" in out  # still reported: nothing was fixed


def test_read_only_directory_is_reported(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "config.json"
    path.write_text(GPT2)

    real_open = os.open

    def denied(name: str, flags: int, *args: object, **kwargs: object) -> int:
        if flags & os.O_CREAT:  # a new file in the directory: refused, as in a read-only one
            raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), name)
        return real_open(name, flags, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(writer.os, "open", denied)
    code, out, err = run("--fix", str(path))
    assert code == 1 and path.read_text() == GPT2
    assert f"not written: cannot create a temporary file in {tmp_path}: Permission denied" in err
    assert "SL101" in out


@pytest.mark.skipif(os.geteuid() == 0, reason="root may write in a read-only directory")
def test_read_only_directory_on_disk(tmp_path: Path) -> None:
    folder = tmp_path / "ro"
    folder.mkdir()
    path = folder / "config.json"
    path.write_text(GPT2)
    folder.chmod(0o555)
    try:
        code, _, err = run("--fix", str(path))
    finally:
        folder.chmod(0o755)
    assert code == 1 and path.read_text() == GPT2
    assert "cannot create a temporary file" in err


def _swap_before_write(monkeypatch: pytest.MonkeyPatch, path: Path, swap: object) -> None:
    real = writer.write_atomic

    def swapped(*args: object, **kwargs: object) -> None:
        swap()  # type: ignore[operator]
        real(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(writer, "write_atomic", swapped)


def test_file_replaced_by_a_symlink_out_of_the_tree(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    tree, outside = tmp_path / "tree", tmp_path / "outside"
    tree.mkdir()
    outside.mkdir()
    path = tree / "config.json"
    path.write_text(GPT2)
    victim = outside / "victim.json"
    victim.write_text(GPT2)

    def swap() -> None:
        path.unlink()
        path.symlink_to(victim)

    _swap_before_write(monkeypatch, path, swap)
    code, _, err = run("--fix", str(tree))
    assert code == 1
    assert victim.read_text() == GPT2  # never written through a link out of the tree
    assert "outside the paths being linted" in err
    assert sorted(os.listdir(tree)) == ["config.json"]


def test_file_replaced_by_a_symlink_to_other_content(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "config.json"
    path.write_text(GPT2)
    other = tmp_path / "other.json"
    other.write_text(GPT2.replace("768", "1024"))

    def swap() -> None:
        path.unlink()
        path.symlink_to(other)

    _swap_before_write(monkeypatch, path, swap)
    code, _, err = run("--fix", str(path))
    assert code == 1
    assert other.read_text() == GPT2.replace("768", "1024")
    assert "changed on disk since it was read" in err


def test_file_replaced_by_a_fifo_does_not_hang(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "config.json"
    path.write_text(GPT2)

    def swap() -> None:
        path.unlink()
        os.mkfifo(path)

    _swap_before_write(monkeypatch, path, swap)
    code, _, err = run("--fix", str(path))
    assert code == 1
    assert "not written: it is not a regular file" in err


def test_fifo_swapped_in_after_the_temporary_file_is_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "config.json"
    path.write_text(GPT2)
    real_chmod = os.fchmod

    def chmod_then_swap(fd: int, mode: int) -> None:
        real_chmod(fd, mode)
        path.unlink()
        os.mkfifo(path)

    monkeypatch.setattr(writer.os, "fchmod", chmod_then_swap)
    code, _, err = run("--fix", "--no-cache", str(path))  # the cache's writes use fchmod too
    assert code == 1
    assert "not written: cannot read file again: it is no longer a regular file" in err
    assert sorted(os.listdir(tmp_path)) == ["config.json"]


def test_two_processes_fixing_one_file(tmp_path: Path) -> None:
    """Both end with the file correctly fixed once; neither leaves a temporary file."""
    script = Path(sys.executable).parent / "shapelint"
    for attempt in range(6):
        folder = tmp_path / str(attempt)
        folder.mkdir()
        path = folder / "config.json"
        path.write_text(GPT2)
        procs = [
            subprocess.Popen(
                [str(script), "--fix", str(path)],
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
            for _ in range(2)
        ]
        results = [(p.wait(timeout=120), *p.communicate()) for p in procs]
        assert path.read_text() == GPT2_FIXED
        assert sorted(os.listdir(folder)) == ["config.json"]
        for code, out, err in results:
            assert "Traceback" not in err
            # Fixed it, found it already fixed, or saw it change and said so.
            assert code in (0, 1)
            if code == 1:
                assert "changed on disk since it was read" in err or "SL101" not in out
