"""Shared test helpers: build documents and configs from text, find the shared corpus."""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import ValuesView
from pathlib import Path

import pytest

from shapelint import dialects
from shapelint.core.model import ModelConfig
from shapelint.core.source import Document
from shapelint.readers import parse

REPO = Path(__file__).resolve().parent.parent


def corpus_dir() -> Path | None:
    """The shared corpus of real configs (``$SHAPELINT_CORPUS`` or ``../shared/corpus``)."""
    env = os.environ.get("SHAPELINT_CORPUS")
    path = Path(env) if env else REPO.parent / "shared" / "corpus"
    return path if path.is_dir() else None


@pytest.fixture
def corpus() -> Path:
    """The corpus folder, or skip with the reason."""
    path = corpus_dir()
    if path is None:
        pytest.skip(
            "shared corpus not found (set SHAPELINT_CORPUS or place it at ../shared/corpus)"
        )
    return path


def parse_text(text: str, fmt: str = "json", path: str = "config.json") -> Document:
    """Parse ``text`` as if read from ``path``."""
    return parse(path, text.encode("utf-8"), fmt)


def configs_of(text: str, fmt: str = "json", path: str = "config.json") -> list[ModelConfig]:
    """Every config in ``text``."""
    return dialects.extract(parse_text(text, fmt, path))


@pytest.fixture(autouse=True)
def _own_lint_cache(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each test gets an empty lint cache of its own (never the checkout's .shapelint_cache)."""
    monkeypatch.setenv("SHAPELINT_CACHE_DIR", str(tmp_path_factory.mktemp("lint-cache")))


class ParseLog:
    """Every parse, counted by file name across processes (a Python file, or any file under
    ``--jobs``, is parsed in a worker process): a Counter-like view of a log file."""

    def __init__(self, log: Path) -> None:
        self.log = log
        log.write_text("")

    def counts(self) -> Counter[str]:
        """Parses so far, by file name."""
        return Counter(self.log.read_text().split("\n")[:-1])

    def clear(self) -> None:
        """Forget the parses so far."""
        self.log.write_text("")

    def values(self) -> ValuesView[int]:
        """As `Counter.values`."""
        return self.counts().values()

    def __len__(self) -> int:
        return len(self.counts())

    def __eq__(self, other: object) -> bool:
        return self.counts() == other

    __hash__ = None  # type: ignore[assignment]


@pytest.fixture
def parses(monkeypatch: pytest.MonkeyPatch, tmp_path_factory: pytest.TempPathFactory) -> ParseLog:
    """Counts every parse, by file name (all readers go through `readers._parse_text`)."""
    from shapelint import readers

    log = ParseLog(tmp_path_factory.mktemp("parses") / "log")
    real = readers._parse_text

    def counting(path: str, text: str, kind: str, files: object = None) -> object:
        # One write of one line with O_APPEND: whole lines, whichever process writes.
        fd = os.open(log.log, os.O_WRONLY | os.O_APPEND)
        try:
            os.write(fd, (Path(path).name + "\n").encode("utf-8", "surrogateescape"))
        finally:
            os.close(fd)
        return real(path, text, kind, files)  # type: ignore[arg-type]

    monkeypatch.setattr(readers, "_parse_text", counting)
    return log
