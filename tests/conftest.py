"""Shared test helpers: build documents and configs from text, find the shared corpus."""

from __future__ import annotations

import os
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
