"""``python -m shapelint``."""

from shapelint.cli.main import main

raise SystemExit(main())
