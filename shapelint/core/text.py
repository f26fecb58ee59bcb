"""Text shapelint prints that comes from outside: file names and parts of hostile files.

A file name is any bytes but ``/`` and NUL: it may hold a line break (``zz\\n::error …``), a
terminal escape, or bytes that are not UTF-8 (Python keeps those as lone surrogates, which
no UTF-8 stream can write). `shown_path` renders any name as one line of valid UTF-8 that
says which bytes it holds; every report format prints names through it. `one_line` cuts a
message built from file content (a parser's error quoting a value) to one readable line.
"""

from __future__ import annotations

import math
import os
import re

# C0 and C1 control characters, DEL, and the Unicode line and paragraph separators.
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029]")
_SURROGATE = re.compile("[\ud800-\udfff]")
# The longest message built from a file's content that is printed whole.
MAX_MESSAGE = 300


def _escape_control(match: re.Match[str]) -> str:
    ch = match.group()
    named = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}
    if ch in named:
        return named[ch]
    code = ord(ch)
    return f"\\x{code:02x}" if code <= 0xFF else f"\\u{code:04x}"


def shown_path(path: str, *, control: bool = True) -> str:
    """``path`` as one line of valid UTF-8: bytes that are not UTF-8 as ``\\xff``, control
    characters as ``\\n``, ``\\x1b`` … (kept with ``control=False``, for a format that
    escapes them itself); a normal name is returned unchanged."""
    if _SURROGATE.search(path):
        try:
            raw = os.fsencode(path)
        except UnicodeError:  # a surrogate not from the file system: escape it as it is
            path = _SURROGATE.sub(lambda m: f"\\u{ord(m.group()):04x}", path)
        else:
            path = raw.decode("utf-8", "backslashreplace")
    return _CONTROL.sub(_escape_control, path) if control else path


def clean(text: str) -> str:
    """``text`` as one line of valid UTF-8: control characters escaped as `shown_path`
    escapes them, a lone surrogate as ``\udcff``; normal text is returned unchanged."""
    if _SURROGATE.search(text):
        text = _SURROGATE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)
    return _CONTROL.sub(_escape_control, text)


def one_line(text: str, limit: int = MAX_MESSAGE) -> str:
    """`clean` ``text``, at most ``limit`` characters, the cut marked with how much was left
    out."""
    text = clean(text)
    if len(text) > limit:
        text = f"{text[: limit - 1]}… ({len(text) - limit + 1} more characters)"
    return text


__all__ = ["MAX_MESSAGE", "clean", "one_line", "shown_path"]


# Python refuses to write an int of more than 4300 decimal digits (sys.get_int_max_str_digits);
# about 14 284 bits. Past this many bits an int is written in hexadecimal, which has no limit.
_MAX_DECIMAL_BITS = 14_000


def json_value(value: object) -> object:
    """A JSON-safe form of a value read from a file: NaN and infinities as strings, an
    integer too long to write in decimal (a hostile ``0xfff…`` of thousands of digits) as a
    hexadecimal string, anything that is not a JSON scalar as its ``str``."""
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    if isinstance(value, int) and not isinstance(value, bool):
        return value if value.bit_length() <= _MAX_DECIMAL_BITS else f"{value:#x}"
    if value is None or isinstance(value, bool | float | str):
        return value
    return str(value)
