"""SECURITY.md's promises: every test it names exists, every promise names one, and the one
promise no other test keeps (no network)."""

from __future__ import annotations

import ast
import io
import re
import socket
from pathlib import Path

import pytest

from shapelint.cli.main import main

REPO = Path(__file__).resolve().parent.parent
NAMED = re.compile(r"`(tests/[\w/]+\.py)::(test_\w+)`")
GPT2 = '{\n  "n_embd": 768,\n  "n_head": 12,\n  "n_layer": 12,\n  "vocab_size": 50257\n}\n'


def promises() -> list[str]:
    """The bullets of SECURITY.md's "What shapelint promises", one string each."""
    text = (REPO / "SECURITY.md").read_text(encoding="utf-8")
    section = text.split("## What shapelint promises", 1)[1].split("\n## ", 1)[0]
    return [b for b in re.split(r"\n(?=- \*\*)", section.strip()) if b.startswith("- **")]


def test_security_md_has_promises() -> None:
    assert len(promises()) >= 6


@pytest.mark.parametrize("promise", promises(), ids=lambda p: p[4:40])
def test_every_promise_names_a_test_that_exists(promise: str) -> None:
    named = NAMED.findall(promise)
    assert named, "a promise without the test that keeps it"
    for path, name in named:
        tree = ast.parse((REPO / path).read_text(encoding="utf-8"))
        defined = {n.name for n in tree.body if isinstance(n, ast.FunctionDef)}
        assert name in defined, f"{path}::{name} named in SECURITY.md does not exist"


def test_a_run_opens_no_socket(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    opened: list[object] = []

    def refuse(*args: object, **kwargs: object) -> None:
        opened.append(args)
        raise OSError("the network was used")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)
    monkeypatch.setattr(socket, "getaddrinfo", refuse)
    (tmp_path / "config.json").write_text(GPT2, encoding="utf-8")
    (tmp_path / "model.py").write_text(
        "import torch\nn_embd = 768\nn_head = 12\nn_layer = 12\nvocab_size = 50257\n"
    )
    monkeypatch.chdir(tmp_path)
    for argv in (
        [".", "--no-cache"],
        [".", "--fix"],
        ["explain", "config.json"],
        ["suggest", "config.json"],
    ):
        out, err = io.StringIO(), io.StringIO()
        code = main(argv, out, err)
        assert code in (0, 1), (argv, err.getvalue())
    assert opened == []
