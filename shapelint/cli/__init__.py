"""Subcommands that live in their own module; `shapelint.cli.main` registers them."""
