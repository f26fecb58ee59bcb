"""How much work one file may cost, and the cheap checks that enforce it before parsing.

libcst's native parser crashes the whole process (a segfault, not an exception) on a few
thousand nested brackets, and its time grows faster than quadratically with the length of
one operator chain (``x = 1 + 1 + …``: 2,000 terms 0.6 s, 4,000 terms 4 s). So a Python file
is first read by the standard library's pure-Python ``tokenize``, which keeps no stack and
cannot crash, and stops at the first limit it passes; only a file within every limit reaches
libcst. A file over a limit gets one SL000 finding ("too complex to read statically") naming
the limit and the setting that raises it, instead of a hang or a crash.

The limits:

- bracket nesting: 200 levels, Python's own limit (``too many nested parentheses``), so no
  file that Python accepts is refused for it;
- indentation: 100 levels, Python's own limit;
- tokens in one operator chain (the tokens between two commas, colons or ``=`` at one bracket
  level; a bracketed group counts as one): `Budget.max_expression_tokens`, the setting
  ``max-expression-tokens``;
- tokens in the file: `Budget.max_python_tokens`, the setting ``max-python-tokens``.

The byte limit of every file (``max-file-size-mb``) is applied when the file is opened,
before anything is read (`shapelint.engine.runner`). Every file, of any format, also has a
CPU-time limit for reading and checking it (``max-seconds-per-file``, `cpu_limit`): the
limits above keep libcst's native parser within bounds, and this one stops any pure-Python
stage (YAML composition, constant folding, dialects, rules) that runs away on some input.
CPU time, not wall time, so a busy machine does not make a file "too complex".
"""

from __future__ import annotations

import io
import math
import signal
import threading
import tokenize
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from types import FrameType

# Python's own parser limits (CPython's tokenizer: MAXLEVEL and MAXINDENT).
MAX_NESTING = 200
MAX_INDENT = 100
# Nesting of YAML, settings, baselines and GPU files beyond which a file is reported as too
# deep (PyYAML, tomllib and jsonschema recurse), and the nodes YAML aliases may expand to
# before a file is reported instead of expanded ("billion laughs"). Configs, settings, GPU
# files and baselines share them.
MAX_DEPTH = 200
MAX_ALIAS_NODES = 100_000
# The largest dimension, count or size shapelint computes with (2³¹: 2,147,483,648, past
# any model dim, sequence, batch or parallel size, and small enough that every product the
# performance model forms stays a finite float). A config value beyond it is SL002; a flag or
# setting beyond it is a usage error naming it.
MAX_DIM = 2**31

_OPEN = frozenset("([{")
_CLOSE = frozenset(")]}")
# Tokens that end one operand chain at their bracket level.
_SEPARATORS = frozenset({",", ":", "=", ";", ":=", "->"})
_IGNORED = frozenset(
    {tokenize.NL, tokenize.COMMENT, tokenize.INDENT, tokenize.DEDENT, tokenize.ENCODING}
)


@dataclass(frozen=True)
class Budget:
    """The most work one file may cost; each limit is a setting of the same name."""

    max_file_size_mb: int = 64
    max_python_tokens: int = 100_000
    max_expression_tokens: int = 2_000
    max_seconds_per_file: float = 10.0

    @property
    def max_file_bytes(self) -> int:
        """``max_file_size_mb`` in bytes."""
        return self.max_file_size_mb * 1024 * 1024


DEFAULT = Budget()


def too_deep(data: object, limit: int = MAX_DEPTH) -> str | None:
    """Why ``data`` (parsed JSON, TOML or YAML: dicts, lists, scalars) is nested too deeply
    to be checked, or None. Iterative, so any depth is measured without recursing."""
    stack: list[tuple[object, int]] = [(data, 0)]
    while stack:
        value, depth = stack.pop()
        if depth > limit:
            return f"nested more than {limit} levels deep"
        if isinstance(value, dict):
            stack.extend((v, depth + 1) for v in value.values())
        elif isinstance(value, list):
            stack.extend((v, depth + 1) for v in value)
    return None


def beyond_max_dim(value: object) -> str | None:
    """How a whole number beyond `MAX_DIM` is shown in a message (``1e+308``,
    ``9223372036854775808``, ``a number of about 400 digits``), or None when ``value`` is not
    one (a bool, a fraction, a number within the bound)."""
    if isinstance(value, bool):
        return None
    if isinstance(value, float) and math.isfinite(value) and value.is_integer():
        return repr(value) if abs(value) > MAX_DIM else None
    if isinstance(value, int) and abs(value) > MAX_DIM:
        if value.bit_length() <= 100:  # up to 31 digits: shown whole
            return str(value)
        # str() of a number past 4,300 digits raises: the size comes from its bits.
        return f"a number of about {int(value.bit_length() * math.log10(2)) + 1} digits"
    return None


def non_finite(data: object) -> tuple[tuple[object, ...], float] | None:
    """The key path and value of the first NaN or infinite number in ``data`` (parsed JSON,
    TOML or YAML), or None. A JSON schema cannot refuse NaN (every comparison with it is
    false, so ``minimum`` and ``maximum`` pass it): settings and GPU files are checked with
    this before their schema."""
    stack: list[tuple[object, tuple[object, ...]]] = [(data, ())]
    while stack:
        value, path = stack.pop()
        if isinstance(value, float) and not math.isfinite(value):
            return path, value
        if isinstance(value, dict):
            stack.extend((v, (*path, k)) for k, v in reversed(list(value.items())))
        elif isinstance(value, list):
            stack.extend((v, (*path, i)) for i, v in reversed(list(enumerate(value))))
    return None


@dataclass(frozen=True)
class OverBudget:
    """Why a file is not handed to the full parser, and where the limit was passed."""

    message: str
    line: int
    column: int


def check_python(text: str, budget: Budget = DEFAULT) -> OverBudget | None:
    """The first limit of ``budget`` that ``text`` passes, or None when it is within all.

    Tokenizing stops at the first limit passed, so this costs at most the budget's tokens.
    A text that does not tokenize is left to the parser, which reports the syntax error:
    tokenize stops at the error, having checked everything before it, and the parser reads
    nothing past an error either.
    """
    depth = indent = 0
    # Tokens in the current operand chain, one counter per open bracket level.
    chain = [0]
    tokens = 0
    readline = io.StringIO(text).readline
    try:
        for tok in tokenize.generate_tokens(readline):
            kind, string = tok.type, tok.string
            if kind == tokenize.INDENT:
                indent += 1
                if indent > MAX_INDENT:
                    message = f"more than {MAX_INDENT} levels of indentation (Python's own limit)"
                    return _over(message, tok.start)
                continue
            if kind == tokenize.DEDENT:
                indent -= 1
                continue
            if kind in _IGNORED:
                continue
            tokens += 1
            if tokens > budget.max_python_tokens:
                return _over(
                    f"more than {budget.max_python_tokens} tokens in the file; "
                    "the setting max-python-tokens raises the limit",
                    tok.start,
                )
            if kind == tokenize.NEWLINE:
                chain = [0] * len(chain)
                continue
            if kind == tokenize.OP and string in _OPEN:
                chain[-1] += 1
                depth += 1
                if depth > MAX_NESTING:
                    return _over(
                        f"more than {MAX_NESTING} nested brackets (Python's own limit)", tok.start
                    )
                chain.append(0)
                continue
            if kind == tokenize.OP and string in _CLOSE:
                if depth > 0:
                    depth -= 1
                    chain.pop()
                continue
            if kind == tokenize.OP and string in _SEPARATORS:
                chain[-1] = 0
                continue
            chain[-1] += 1
            if chain[-1] > budget.max_expression_tokens:
                return _over(
                    f"an expression longer than {budget.max_expression_tokens} tokens; "
                    "the setting max-expression-tokens raises the limit",
                    tok.start,
                )
    except (tokenize.TokenError, SyntaxError):
        return None
    return None


def _over(what: str, start: tuple[int, int]) -> OverBudget:
    line, column = start
    return OverBudget(f"too complex to read statically: {what}", line, column + 1)


class OverTime(BaseException):
    """Raised inside `cpu_limit` when the block has used up its CPU time.

    A BaseException, as KeyboardInterrupt is, so that the readers' ``except Exception``
    around a third-party parser cannot turn it into a syntax error and run on unlimited.
    """

    def __init__(self, seconds: float) -> None:
        super().__init__(f"more than {seconds:g} s of CPU time")
        self.seconds = seconds

    @property
    def message(self) -> str:
        """The SL000 message for the file."""
        return (
            f"too complex to read statically: {self}; "
            "the setting max-seconds-per-file raises the limit"
        )


@contextmanager
def cpu_limit(seconds: float) -> Iterator[None]:
    """Raise `OverTime` in the block once the process has spent ``seconds`` of CPU in it.

    Uses the POSIX virtual timer (``SIGVTALRM``), so it works only in the main thread of a
    POSIX process; elsewhere the block runs without a limit. The previous handler and timer
    state are restored on the way out.
    """
    usable = hasattr(signal, "setitimer") and threading.current_thread() is threading.main_thread()
    if not usable or seconds <= 0:
        yield
        return

    def expired(signum: int, frame: FrameType | None) -> None:
        raise OverTime(seconds)

    previous = signal.signal(signal.SIGVTALRM, expired)
    # Again every half second after the first, should something swallow the first.
    signal.setitimer(signal.ITIMER_VIRTUAL, seconds, 0.5)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_VIRTUAL, 0)
        signal.signal(signal.SIGVTALRM, previous)
