"""The static evaluator: constant folding and string building, never executing anything.

`fold` evaluates an expression exactly where that is certain: literals (``50_304``), arithmetic
on them (``4096 * 32``, ``8 * 1024 // 3``, ``-1``, ``2 ** 12``), ``int()``/``float()`` of a
number, names bound (in ``env``) to such values, and the known values of a config object the
code builds (``args.decoder_embed_dim``, ``config["dim"]``: `objects.Obj`). Anything else is
`UNKNOWN`. Results are bounded (`MAX_BITS`, `MAX_STRING`) so a
hostile expression (``10 ** 10 ** 10``) cannot blow up; deep nesting stops at `MAX_DEPTH`.
The string helpers (`format_fields`, `fstring_text`, `joined`) evaluate ``str.format`` and
f-string pieces with the same certainty rule.
"""

from __future__ import annotations

import ast
import math
import re
import string
import warnings
from collections.abc import Mapping as AbcMapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from shapelint.core.source import Scalar
from shapelint.readers.python.objects import Obj

if TYPE_CHECKING:
    import libcst as cst

# Nesting deeper than this is reported as unknown rather than walked (recursion guard).
MAX_DEPTH = 60
# Folded integers larger than this (in bits) are not computed: ``10 ** 10 ** 10`` is unknown.
MAX_BITS = 512
MAX_STRING = 10_000
NO_VALUE = object()


@dataclass(frozen=True)
class Folded:
    """A statically evaluated expression: its value, or ``known=False``.

    ``computed`` is True when the value is not the literal as written (arithmetic, a name).
    """

    value: object
    known: bool
    computed: bool


UNKNOWN = Folded(None, False, False)


def fold(expr: cst.BaseExpression, env: AbcMapping[str, Folded], depth: int = 0) -> Folded:
    """Evaluate a constant expression exactly, or return unknown."""
    import libcst as cst

    if depth > MAX_DEPTH:
        return UNKNOWN
    if isinstance(expr, cst.Integer | cst.Float):
        try:
            return Folded(expr.evaluated_value, True, False)
        except Exception:
            return UNKNOWN
    if isinstance(expr, cst.SimpleString | cst.ConcatenatedString):
        value = string_value(expr)
        return Folded(value, True, False) if value is not None else UNKNOWN
    if isinstance(expr, cst.Name):
        constant = {"True": True, "False": False, "None": None}
        if expr.value in constant:
            return Folded(constant[expr.value], True, False)
        bound = env.get(expr.value)
        return Folded(bound.value, True, True) if bound is not None and bound.known else UNKNOWN
    if isinstance(expr, cst.UnaryOperation):
        inner = fold(expr.expression, env, depth + 1)
        if not inner.known or not is_number(inner.value):
            return UNKNOWN
        result = unary(expr.operator, inner.value)
        if result is NO_VALUE:
            return UNKNOWN
        literal = isinstance(expr.operator, cst.Minus | cst.Plus) and not inner.computed
        return Folded(result, True, not literal)
    if isinstance(expr, cst.BinaryOperation):
        left = fold(expr.left, env, depth + 1)
        if not left.known:
            return UNKNOWN
        right = fold(expr.right, env, depth + 1)
        if not right.known:
            return UNKNOWN
        result = binary(expr.operator, left.value, right.value)
        return UNKNOWN if result is NO_VALUE else Folded(result, True, True)
    if isinstance(expr, cst.Attribute | cst.Subscript):
        held = member(expr, env, depth)
        if isinstance(held, Scalar) and held.known:
            return Folded(held.value, True, True)
        return UNKNOWN
    if isinstance(expr, cst.Call) and isinstance(expr.func, cst.Name):
        return builtin(expr, env, depth)
    return UNKNOWN


def member(
    expr: cst.BaseExpression, env: AbcMapping[str, Folded], depth: int = 0
) -> Scalar | Obj | None:
    """What ``obj.key`` or ``obj["key"]`` holds when ``obj`` is a config object in ``env``
    (`objects.Obj`) that holds ``key``; None otherwise."""
    import libcst as cst

    if depth > MAX_DEPTH:
        return None
    if isinstance(expr, cst.Name):
        bound = env.get(expr.value)
        return bound.value if bound is not None and isinstance(bound.value, Obj) else None
    key: str | None = None
    owner: cst.BaseExpression
    if isinstance(expr, cst.Attribute):
        owner, key = expr.value, expr.attr.value
    elif (
        isinstance(expr, cst.Subscript)
        and len(expr.slice) == 1
        and isinstance(expr.slice[0].slice, cst.Index)
    ):
        owner = expr.value
        index = fold(expr.slice[0].slice.value, env, depth + 1)
        key = index.value if index.known and isinstance(index.value, str) else None
    else:
        return None
    held = member(owner, env, depth + 1)
    if not isinstance(held, Obj) or held.opaque or key is None:
        return None
    value = held.get(key)
    return value if isinstance(value, Scalar | Obj) else None


_CONVERSIONS = {"int": int, "float": float}


def builtin(call: cst.Call, env: AbcMapping[str, Folded], depth: int) -> Folded:
    """``int(x)`` / ``float(x)`` of a known number (``int(0.125 * M)``); else unknown."""
    import libcst as cst

    assert isinstance(call.func, cst.Name)
    convert = _CONVERSIONS.get(call.func.value)
    if convert is None or len(call.args) != 1 or call.args[0].keyword or call.args[0].star:
        return UNKNOWN
    if call.func.value in env:
        return UNKNOWN  # a local or module name that shadows the builtin
    inner = fold(call.args[0].value, env, depth + 1)
    if not inner.known or not is_number(inner.value):
        return UNKNOWN
    assert isinstance(inner.value, int | float)
    try:
        return Folded(convert(inner.value), True, True)
    except (ArithmeticError, ValueError):  # int(inf), int(nan)
        return UNKNOWN


def string_value(expr: cst.BaseExpression | None) -> str | None:
    import libcst as cst

    if isinstance(expr, cst.SimpleString | cst.ConcatenatedString):
        try:
            value = expr.evaluated_value
        except Exception:
            return None
        return value if isinstance(value, str) else None
    return None


def is_number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def unary(op: cst.BaseUnaryOp, value: object) -> object:
    import libcst as cst

    if not isinstance(value, int | float):
        return NO_VALUE
    if isinstance(op, cst.Minus):
        return -value
    if isinstance(op, cst.Plus):
        return +value
    if isinstance(op, cst.BitInvert) and isinstance(value, int):
        return ~value
    return NO_VALUE


def binary(op: cst.BaseBinaryOp, left: object, right: object) -> object:
    """``left op right`` for numbers (and ``+`` on strings), bounded so it cannot blow up."""
    import libcst as cst

    if isinstance(left, str) and isinstance(right, str):
        if isinstance(op, cst.Add) and len(left) + len(right) <= MAX_STRING:
            return left + right
        return NO_VALUE
    if not (is_number(left) and is_number(right)):
        return NO_VALUE
    assert isinstance(left, int | float) and isinstance(right, int | float)
    try:
        if isinstance(op, cst.Power):
            big = isinstance(left, int) and isinstance(right, int) and right > 0
            if big and right * max(abs(int(left)), 2).bit_length() > MAX_BITS:
                return NO_VALUE
            result: object = left**right
        elif isinstance(op, cst.Add):
            result = left + right
        elif isinstance(op, cst.Subtract):
            result = left - right
        elif isinstance(op, cst.Multiply):
            result = left * right
        elif isinstance(op, cst.Divide):
            result = left / right
        elif isinstance(op, cst.FloorDivide):
            result = left // right
        elif isinstance(op, cst.Modulo):
            result = left % right
        elif isinstance(op, cst.LeftShift | cst.RightShift | cst.BitAnd | cst.BitOr | cst.BitXor):
            if not (isinstance(left, int) and isinstance(right, int)):
                return NO_VALUE
            if isinstance(op, cst.LeftShift):
                if right < 0 or right > MAX_BITS:
                    return NO_VALUE
                result = left << right
            elif isinstance(op, cst.RightShift):
                result = left >> right if right >= 0 else NO_VALUE
            elif isinstance(op, cst.BitAnd):
                result = left & right
            elif isinstance(op, cst.BitOr):
                result = left | right
            else:
                result = left ^ right
        else:
            return NO_VALUE
    except (ArithmeticError, ValueError):
        return NO_VALUE
    if isinstance(result, int) and result.bit_length() > MAX_BITS:
        return NO_VALUE
    if isinstance(result, complex) or (isinstance(result, float) and not math.isfinite(result)):
        return NO_VALUE
    return result


def joined(left: str | None, right: str | None) -> str | None:
    if left is None or right is None or len(left) + len(right) > MAX_STRING:
        return None
    return left + right


_FIELD = re.compile(r"(?:\d+|[A-Za-z_]\w*)?")


def format_fields(template: str, positional: list[str], keywords: dict[str, str]) -> str | None:
    """``template.format(*positional, **keywords)`` for plain fields (``{}``, ``{0}``,
    ``{kind}``); None for conversions, format specs, attribute/index fields or errors."""
    try:
        parsed = list(string.Formatter().parse(template))
    except ValueError:
        return None
    out: list[str] = []
    size = 0
    automatic: int | None = None
    manual = False
    for literal, field, spec, conversion in parsed:
        out.append(literal)
        size += len(literal)
        if field is None:
            continue
        if spec or conversion is not None or not _FIELD.fullmatch(field):
            return None
        if field == "":
            automatic = 0 if automatic is None else automatic + 1
            field = str(automatic)
        else:
            manual = manual or field.isdigit()
        if automatic is not None and manual:
            return None  # Python refuses to mix automatic and manual numbering
        if field.isdigit():
            if int(field) >= len(positional):
                return None
            value = positional[int(field)]
        elif field in keywords:
            value = keywords[field]
        else:
            return None
        out.append(value)
        size += len(value)
        if size > MAX_STRING:
            return None
    return "".join(out)


def fstring_text(raw: str, prefix: str, quote: str) -> str | None:
    """The value of an f-string's literal text (``{{`` is ``{``, escapes as in a string)."""
    text = raw.replace("{{", "{").replace("}}", "}")
    if "\\" not in text or "r" in prefix:
        return text
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # SyntaxWarning (invalid escapes) is not ours to show
            value = ast.literal_eval(f"{prefix}{quote}{text}{quote}")
    except Exception:  # SyntaxError, ValueError, MemoryError …: not certain, so not a string
        return None
    return value if isinstance(value, str) else None


def has_placeholder(value: object) -> bool:
    """A ``str.format`` field in a name (``"Llama-2-7b{}-hf"``): a template, not a config."""
    if not isinstance(value, str):
        return False
    try:
        return any(field is not None for _, field, _, _ in string.Formatter().parse(value))
    except ValueError:
        return False
