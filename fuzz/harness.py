"""Shared body of the atheris harnesses: one input → parse → extract → rules, never a raise.

Each ``fuzz_<reader>.py`` calls `main` with its file kind. Any exception that escapes the
reader, the dialects or the rules is a crash (libFuzzer saves the input as ``crash-*``); so is
an input that runs longer than ``-timeout`` seconds (``timeout-*``) or a segfault.
"""

from __future__ import annotations

import sys

import atheris

with atheris.instrument_imports(include=["shapelint"]):
    from shapelint.engine.runner import LintOptions, lint_document
    from shapelint.hardware.gpus import load_table
    from shapelint.readers import parse

NAMES = {"json": "config.json", "yaml": "config.yaml", "toml": "config.toml", "python": "model.py"}


def main(kind: str) -> None:
    """Run libFuzzer on the reader of ``kind`` with the command line's libFuzzer flags."""
    options = LintOptions(gpus=(load_table().lookup("H100-SXM"),))
    name = NAMES[kind]

    def one_input(data: bytes) -> None:
        doc = parse(name, data, kind)
        lint_document(doc, options)

    atheris.Setup(sys.argv, one_input)
    atheris.Fuzz()
