"""Write the target fields' entries of shapelint/engine/settings.schema.json from their
declaration in shapelint/core/target.py (``python scripts/gen_settings_schema.py``).

With ``--check`` it writes nothing and exits 1 when the schema file is out of date.
"""

from __future__ import annotations

import sys
from pathlib import Path

from shapelint.engine.settings_schema import SCHEMA_PATH, render

SCHEMA = Path(SCHEMA_PATH)


def main() -> int:
    current = SCHEMA.read_text(encoding="utf-8")
    text = render(current)
    if "--check" in sys.argv[1:]:
        if current != text:
            print(f"{SCHEMA} is out of date: run python scripts/gen_settings_schema.py")
            return 1
        return 0
    SCHEMA.write_text(text, encoding="utf-8")
    print(f"wrote {SCHEMA}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
