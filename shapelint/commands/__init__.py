"""Subcommands that live in their own module; `shapelint.cli` registers them."""
