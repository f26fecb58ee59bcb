"""Pinned wheels for the coverage benchmarks and corpus tests, in ``.cache/wheels``.

``pip download --no-deps`` only: nothing is installed, imported or executed, and nothing
fetched is committed. Offline, `download` raises `Unreachable` (the tests skip with the
reason). The benchmarks import this module as a sibling; the corpus tests find it through
``tests/corpus/conftest.py``.
"""

from __future__ import annotations

import re
import subprocess
import sys
import zipfile
from collections.abc import Mapping, Sequence
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
CACHE = REPO / ".cache" / "wheels"
NETWORK_ERRORS = re.compile(
    r"NewConnectionError|ConnectionError|Temporary failure in name resolution|"
    r"Name or service not known|Network is unreachable|Connection refused|timed out|"
    r"Could not fetch URL|ProxyError|SSLError|No route to host|No matching distribution",
)


class Unreachable(RuntimeError):
    """PyPI could not be reached to download a wheel."""


def _wheel(cache: Path, package: str, version: str) -> Path | None:
    stem = package.replace("-", "_")
    found = sorted(cache.glob(f"{stem}-{version}-*.whl"))
    return found[0] if found else None


def download(
    pins: Mapping[str, str], cache: Path = CACHE, extra: Sequence[str] = ()
) -> dict[str, Path]:
    """The wheels ``pins`` names (package → version), downloading those not cached;
    ``extra`` are more ``pip download`` options (``--only-binary=:all:``)."""
    cache.mkdir(parents=True, exist_ok=True)
    missing = [p for p, v in pins.items() if _wheel(cache, p, v) is None]
    if missing:
        command = [sys.executable, "-m", "pip", "download", "--no-deps", "--retries", "1"]
        command += ["--timeout", "20", "--dest", str(cache), *extra]
        command += [f"{p}=={pins[p]}" for p in missing]
        done = subprocess.run(command, capture_output=True, text=True, check=False)
        if done.returncode != 0:
            output = done.stdout + done.stderr
            if NETWORK_ERRORS.search(output):
                raise Unreachable(f"pip download failed (network): {output.strip()[-300:]}")
            raise RuntimeError(f"pip download failed: {output.strip()[-1000:]}")
    out: dict[str, Path] = {}
    for package, version in pins.items():
        wheel = _wheel(cache, package, version)
        assert wheel is not None, package
        out[package] = wheel
    return out


def unpack(wheel: Path, dest: Path, suffixes: tuple[str, ...] = (".py",)) -> Path:
    """The wheel's files ending in ``suffixes``, unpacked under ``dest`` (package tree kept)."""
    with zipfile.ZipFile(wheel) as archive:
        for name in archive.namelist():
            if name.endswith(suffixes) and ".." not in name and not name.startswith("/"):
                archive.extract(name, dest)
    return dest
