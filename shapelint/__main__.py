"""``python -m shapelint``."""

from shapelint.cli import main

raise SystemExit(main())
