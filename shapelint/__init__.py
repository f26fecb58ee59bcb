"""shapelint: a static linter for transformer model configs that makes them GPU-friendly."""

__version__ = "0.1.0"
