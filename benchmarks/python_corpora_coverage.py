"""Coverage of shapelint's Python reading on megatron-bridge and torchtune (not tuned on).

Prints, per source, the configs an independent `ast` reading finds (model providers of
megatron-bridge, model builders of torchtune), how many shapelint finds, reads fully right,
leaves partly unknown, and reads wrong, then what is not fully right. Target: ≥ 95 % fully
right and no wrong value on each source.

The wheels are pinned and downloaded with ``pip download --no-deps`` into ``.cache/wheels``;
the truth, the comparison and the table are those of ``tests/corpus/test_python_corpora.py``
(which asserts no wrong value and the named models).

Run: ``.venv/bin/python benchmarks/python_corpora_coverage.py``
"""

from __future__ import annotations

import importlib.util
import sys
import tempfile
from pathlib import Path

TEST = Path(__file__).resolve().parent.parent / "tests" / "corpus" / "test_python_corpora.py"
TARGET_PCT = 95.0


def main() -> int:
    """Print the table; exit 1 when a source misses the target or reads a value wrong."""
    spec = importlib.util.spec_from_file_location("python_corpora", TEST)
    assert spec is not None and spec.loader is not None
    corpora = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = corpora  # dataclasses look their module up by name
    spec.loader.exec_module(corpora)
    with tempfile.TemporaryDirectory() as workdir:
        try:
            measured = corpora.corpora(Path(workdir))
        except corpora.Unreachable as exc:
            print(f"PyPI unreachable, wheels not cached: {exc}")
            return 2
    print(corpora.table(measured))
    for line in corpora.details(measured):
        print(line)
    failed = [c.source for c in measured if c.wrong or c.right_pct < TARGET_PCT]
    print(
        f"target ≥ {TARGET_PCT:.0f}% fully right, 0 wrong: "
        + ("missed by " + ", ".join(failed) if failed else "met")
    )
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
