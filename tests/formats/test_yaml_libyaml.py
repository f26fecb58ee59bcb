"""The YAML reader's libyaml path gives the very document PyYAML's pure-Python path gives."""

from __future__ import annotations

from pathlib import Path

import pytest

from shapelint.readers import yaml as reader

REPO = Path(__file__).resolve().parent.parent.parent
pytestmark = pytest.mark.skipif(reader._CLoader is None, reason="PyYAML without libyaml")

CASES = [
    "a: 1\nb: [1, 2, {c: 3}]\n",
    "hidden_size: 4096 # shapelint: ignore[SL103]\n# shapelint: ignore\nvocab_size: 50257\n",
    "base: &b {hidden_size: 4096, n: 1_000}\nmodel:\n  <<: *b\n  heads: *b\n",
    "x: |\n  block\n  text\n\ny: >-\n  folded\n  # not a comment\nz: 'q # no' # shapelint: ignore\n",
    "---\na: 1\n---\nb: on\n...\n",
    "a: !!python/object:os.system x\nb: !custom 3\nc: !!int '7'\n",
    "k: é€😀 # shapelint: ignore[SL101]\nv: 1e5\nw: 0x1F\nt: 2001-12-14\n",
    "a: 1\r\nb: 2 # shapelint: ignore\r\nc: |\r\n  x\r\n  y\r\nd: 3\r\n",
    "\ufeffa: 1\nb: 2 # shapelint: ignore\n",  # libyaml skips a BOM: PyYAML's path reads it
    "a: 1\x85b: 2\u2028c: 3\n",
    "a: *undefined\n",  # an error: both report PyYAML's
    "a: [1, 2\n",
    "a: b: c\n",
    "a: 1\na: 2\n",
    "a: &x [*x]\n",
]


def _files() -> list[Path]:
    roots = [REPO / "tests", REPO / "examples", REPO.parent / "shared" / "corpus"]
    out: list[Path] = []
    for root in roots:
        if root.is_dir():
            out += sorted(p for p in root.rglob("*") if p.suffix in (".yaml", ".yml"))
    return out


def _both(text: str) -> tuple[object, object]:
    python = reader._parse_with(reader._Loader, "f.yaml", text)
    fast = reader.parse_yaml("f.yaml", text)
    return python, fast


@pytest.mark.parametrize("text", CASES)
def test_cases(text: str) -> None:
    python, fast = _both(text)
    assert fast == python


def test_every_yaml_file_in_the_repository_and_corpus() -> None:
    files = _files()
    assert len(files) >= 5
    for path in files:
        text = path.read_text(encoding="utf-8-sig")
        python, fast = _both(text)
        assert fast == python, path


def test_the_c_path_is_taken(monkeypatch: pytest.MonkeyPatch) -> None:
    used: list[type] = []
    real = reader._parse_with

    def spy(cls: type[reader._Loader], path: str, text: str) -> object:
        used.append(cls)
        return real(cls, path, text)

    monkeypatch.setattr(reader, "_parse_with", spy)
    reader.parse_yaml("f.yaml", "a: 1\n")
    assert used == [reader._CLoader]
    used.clear()
    reader.parse_yaml("f.yaml", "a: [1\n")  # libyaml refuses it: PyYAML's reader reports it
    assert used == [reader._CLoader, reader._Loader]
