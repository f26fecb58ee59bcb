"""A small regex reading of launch scripts for the benchmark: variables and ``--flag value``.

Comments are dropped, backslash-newlines joined; ``NAME=value`` assignments (at a line start
or after ``;``, ``then``, ``else``, ``do``; quoted values may span lines) are collected in
order, and ``$NAME``, ``${NAME}``, ``${NAME:-default}`` and ``$((integer arithmetic))`` are
expanded. A variable assigned different values in one file, or set from a positional
parameter or a command, is unknown, and so is any flag whose value depends on it. Nothing is
executed.
"""

from __future__ import annotations

import re

from .pyeval import as_int, try_eval

_ASSIGN = re.compile(
    r"(?m)(?:^|[;&]|\bthen\b|\belse\b|\bdo\b)[ \t]*"
    r"(?:export[ \t]+|local[ \t]+|declare[ \t]+)?([A-Za-z_]\w*)="
    r"""("(?:[^"\\]|\\.)*"|'[^']*'|[^\s;]*)"""
)
_VAR = re.compile(r"\$\{([A-Za-z_]\w*)(?::?-([^}]*))?\}|\$([A-Za-z_]\w*)|\$(\d|\{\d+\})")
_ARITH = re.compile(r"\$\(\(([^()]*)\)\)")


def clean(text: str) -> str:
    """The script without comments and with backslash-newlines joined."""
    lines = []
    for line in text.splitlines():
        stripped = line.lstrip()
        if stripped.startswith("#"):
            continue
        line = re.sub(r"(^|\s)#.*$", "", line) if '"' not in line and "'" not in line else line
        lines.append(line)
    return re.sub(r"\\\n", " ", "\n".join(lines))


def variables(text: str) -> dict[str, str | None]:
    """``NAME → value`` (None when assigned differently more than once or not literal)."""
    env: dict[str, str | None] = {}
    for m in _ASSIGN.finditer(text):
        name, raw = m.group(1), m.group(2)
        value = raw[1:-1] if raw[:1] in "\"'" and len(raw) >= 2 else raw
        if raw[:1] != "'":
            value = expand(value, env)  # type: ignore[assignment]
        if "$(" in raw and value is not None and not _ARITH.search(raw):
            value = None  # command substitution
        if name in env and env[name] != value:
            env[name] = None
        else:
            env[name] = value
    return env


def expand(value: str | None, env: dict[str, str | None]) -> str | None:
    """Expand variables and integer arithmetic; None when something is unknown."""
    if value is None:
        return None
    unknown = False

    def arith(m: re.Match[str]) -> str:
        nonlocal unknown
        inner = expand(m.group(1).replace("$", ""), env) if "$" in m.group(1) else m.group(1)
        # Bare names inside $(( )) are variables too.
        if inner is not None:
            inner = re.sub(r"[A-Za-z_]\w*", lambda v: str(env.get(v.group(0)) or "?"), inner)
        result = as_int(try_eval(_parse(inner))) if inner and "?" not in inner else None
        if result is None:
            unknown = True
            return ""
        return str(result)

    def var(m: re.Match[str]) -> str:
        nonlocal unknown
        if m.group(4):
            unknown = True
            return ""
        name = m.group(1) or m.group(3)
        if name in env and env[name] is not None:
            return str(env[name])
        if m.group(1) and m.group(2) is not None and name not in env:
            return m.group(2)
        unknown = True
        return ""

    out = _ARITH.sub(arith, value)
    out = _VAR.sub(var, out)
    return None if unknown else out


def _parse(expr: str | None):  # type: ignore[no-untyped-def]
    import ast

    if expr is None:
        return None
    try:
        return ast.parse(expr.replace("/", "//"), mode="eval").body
    except SyntaxError:
        return None


def flag(text: str, name: str, env: dict[str, str | None]) -> str | None:
    """The value of ``--name`` (``--name v`` or ``--name=v``); None when absent or unknown.

    A flag given several times with different values is unknown; a flag given without a
    value (a switch) reads as ``""``.
    """
    values = set()
    for m in re.finditer(
        rf"(?<![\w-]){re.escape(name)}(?![\w-])(?:[ \t]*=[ \t]*|[ \t]+)?(\S*)", text
    ):
        raw = m.group(1).strip("\"'")
        if raw.startswith("--") or raw == "":
            values.add("")
            continue
        values.add(expand(raw, env))
    if len(values) != 1:
        return None
    return values.pop()


def int_flag(text: str, name: str, env: dict[str, str | None]) -> int | None:
    """An integer flag value, else None."""
    v = flag(text, name, env)
    try:
        return int(v) if v not in (None, "") else None
    except ValueError:
        return None


def has_flag(text: str, name: str) -> bool:
    """Whether ``--name`` occurs at all."""
    return re.search(rf"(?<![\w-]){re.escape(name)}(?![\w-])", text) is not None
