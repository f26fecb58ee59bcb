"""Write the schema entries of the target fields from their declaration in
shapelint/core/target.py (``python scripts/gen_settings_schema.py``): the settings schema
(shapelint/engine/settings.schema.json) and the target of check's JSON output
(shapelint/report/schemas/check-v1.json).

With ``--check`` it writes nothing and exits 1 when either file is out of date.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

from shapelint.engine.settings_schema import SCHEMA_PATH, render
from shapelint.report.schemas import render_check, schema_path

FILES: tuple[tuple[Path, Callable[[str], str]], ...] = (
    (Path(SCHEMA_PATH), render),
    (Path(schema_path("check")), render_check),
)


def main() -> int:
    stale = 0
    for path, renderer in FILES:
        current = path.read_text(encoding="utf-8")
        text = renderer(current)
        if "--check" in sys.argv[1:]:
            if current != text:
                print(f"{path} is out of date: run python scripts/gen_settings_schema.py")
                stale = 1
            continue
        path.write_text(text, encoding="utf-8")
        print(f"wrote {path}")
    return stale


if __name__ == "__main__":
    raise SystemExit(main())
