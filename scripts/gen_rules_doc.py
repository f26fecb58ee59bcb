"""Write docs/rules.md from the rule modules (``python scripts/gen_rules_doc.py``).

With ``--check`` it writes nothing and exits 1 when docs/rules.md is out of date.
"""

from __future__ import annotations

import sys
from pathlib import Path

from shapelint.rules.render import render_all

DOC = Path(__file__).resolve().parent.parent / "docs" / "rules.md"


def main() -> int:
    text = render_all()
    if "--check" in sys.argv[1:]:
        current = DOC.read_text(encoding="utf-8") if DOC.exists() else ""
        if current != text:
            print(f"{DOC} is out of date: run python scripts/gen_rules_doc.py")
            return 1
        return 0
    DOC.write_text(text, encoding="utf-8")
    print(f"wrote {DOC}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
