"""Write shapelint/hardware/gpus_snapshot.json from gpus.yaml
(``python scripts/gen_gpu_snapshot.py``).

The snapshot lets a run read the built-in GPU table without PyYAML. With ``--check`` it writes
nothing and exits 1 when the snapshot is out of date.
"""

from __future__ import annotations

import sys
from pathlib import Path

from shapelint.hardware.gpus import snapshot_text

HARDWARE = Path(__file__).resolve().parent.parent / "shapelint" / "hardware"
SNAPSHOT = HARDWARE / "gpus_snapshot.json"


def main() -> int:
    text = snapshot_text((HARDWARE / "gpus.yaml").read_text(encoding="utf-8"))
    if "--check" in sys.argv[1:]:
        current = SNAPSHOT.read_text(encoding="utf-8") if SNAPSHOT.exists() else ""
        if current != text:
            print(f"{SNAPSHOT} is out of date: run python scripts/gen_gpu_snapshot.py")
            return 1
        return 0
    SNAPSHOT.write_text(text, encoding="utf-8")
    print(f"wrote {SNAPSHOT}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
