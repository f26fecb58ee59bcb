"""The shell grammar for `shell`: a script split into words and separators as bash splits
it (quotes, ``\\`` continuations, comments, arrays, substitutions), ``$(( … ))`` integer
arithmetic, where statements start, and the ``if``/``case`` chains that pick a model size.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass

from shapelint.core.source import Scalar

_SEPARATORS = frozenset("();|&")
_ASSIGN = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)=")
_VAR = re.compile(r"\$(?:([A-Za-z_][A-Za-z0-9_]*)|\{([A-Za-z_][A-Za-z0-9_]*)(?::?-([^}]*))?\})\Z")
_ASSIGN_PREFIXES = frozenset({"export", "local", "readonly", "declare"})
# Compound commands: an assignment between an opener and its closer may not run.
_OPENERS = frozenset({"if", "case", "for", "while", "until", "select"})
_CLOSERS = frozenset({"fi", "esac", "done"})
# Words after which a statement starts (``then HIDDEN=1024``).
_RESERVED = _OPENERS | _CLOSERS | {"then", "else", "elif", "do", "{", "}", "!"}


@dataclass
class _Word:
    text: str  # quotes removed
    start: int  # offset of the word's first character (its opening quote included)
    end: int
    value_start: int  # offset of the text inside quotes
    value_end: int
    quoted: bool = False
    # A word of an option string whose ``$`` sits inside single quotes: expanded where the
    # string is used, not where it is assigned (unknown to the reader).
    literal: bool = False


@dataclass(frozen=True)
class _Comment:
    start: int  # offset of its ``#``
    end: int  # offset of the newline or the closing backquote
    depth: int  # parentheses open around it (an array's elements)
    backquoted: bool = False  # ```# …``` : a command substitution that expands to nothing


# A token is a word, or one of "\n" (end of a line: ends a flag's value) and ";" (end of a
# statement: a separator or a line outside parentheses).
_Token = _Word | str


def _backquoted_comment(text: str, i: int) -> int:
    """The offset of the closing backquote of a ```# comment``` opening at ``i`` on the same
    line, or -1 when ``text[i]`` opens no such thing."""
    hash_at = i + 1 + len(text[i + 1 :]) - len(text[i + 1 :].lstrip(" \t"))
    if not text.startswith("#", hash_at):
        return -1
    close, newline = text.find("`", hash_at), text.find("\n", hash_at)
    return close if close != -1 and (newline == -1 or close < newline) else -1


def _tokens(text: str, comments: list[_Comment] | None = None) -> list[_Token]:
    """The words and separators of ``text``; the comments found go to ``comments``."""
    out: list[_Token] = []
    i, n, depth = 0, len(text), 0
    while i < n:
        c = text[i]
        if c == "\\" and text.startswith("\n", i + 1):
            i += 2  # a line continuation joins the lines
            continue
        if c == "\\" and text.startswith("\r\n", i + 1):
            i += 3
            continue
        if c == "\n":
            out.append("\n")
            if depth == 0:
                out.append(";")
            i += 1
            continue
        if c in " \t\r":
            i += 1
            continue
        if c == "#":
            start = i
            while i < n and text[i] != "\n":
                i += 1
            if comments is not None:
                comments.append(_Comment(start, i, depth))
            continue
        if c == "`" and (close := _backquoted_comment(text, i)) != -1:
            if comments is not None:
                comments.append(_Comment(text.index("#", i), close, depth, backquoted=True))
            i = close + 1  # it expands to nothing: no word
            continue
        if c in _SEPARATORS:
            depth += 1 if c == "(" else -1 if c == ")" and depth > 0 else 0
            out.append(";")
            i += 1
            continue
        word, i = _word(text, i)
        out.append(word)
    return out


def _string_words(text: str, start: int, end: int) -> list[_Word]:
    """The words of the value ``text[start:end]`` of an option string as the shell splits it
    when the variable that holds it is expanded unquoted (``$GPT_ARGS``): at blanks and
    newlines, a ``\\`` before a newline dropped. The value is one or more quoted strings and
    unquoted expansions written together (``"--tokenizer-model "$TOK" --num-layers 24"`` is
    one string holding ``$TOK``'s value): the quotes between them are no part of the words,
    and quotes and separators inside them are plain characters. A word whose ``$`` is inside
    single quotes is ``literal`` (expanded only where the string is used)."""
    # (character, offset, inside single quotes, inside an unquoted expansion)
    chars: list[tuple[str, int, bool, bool]] = []
    i = start
    while i < end:
        c = text[i]
        if c in "'\"":
            after = min(_skip(text, i), end)
            close = after - 1 if after - 1 > i and text[after - 1] == c else after
            chars.extend((text[j], j, c == "'", False) for j in range(i + 1, close))
            i = after
        elif c == "$" and text[i + 1 : i + 2] in ("{", "("):
            stop = min(_skip(text, i), end)
            chars.extend((text[j], j, False, True) for j in range(i, stop))
            i = stop
        else:
            chars.append((c, i, False, False))
            i += 1
    out: list[_Word] = []
    run: list[tuple[str, int, bool, bool]] = []

    def flush() -> None:
        if run:
            at, stop = run[0][1], run[-1][1] + 1
            word = "".join(ch for ch, *_ in run)
            literal = any(ch == "$" and single for ch, _, single, _ in run)
            out.append(_Word(word, at, stop, at, stop, literal=literal))
            run.clear()

    k = 0
    while k < len(chars):
        ch, _, _, glued = chars[k]
        nxt = chars[k + 1][0] if k + 1 < len(chars) else ""
        crlf = nxt == "\r" and k + 2 < len(chars) and chars[k + 2][0] == "\n"
        continuation = ch == "\\" and (nxt == "\n" or crlf)
        if not glued and (ch.isspace() or continuation):
            flush()
        else:
            run.append(chars[k])
        k += 1
    flush()
    return out


def _skip(text: str, i: int) -> int:
    """The offset after the quoted string (``'…'``, ``"…"``) or expansion (``${…}``,
    ``$(…)``, ``$((…))``) opening at ``i``.

    Nesting is followed to any depth with a stack of open constructs, not recursion: a script
    whose ``$(`` nests 70 deep before its ``torchrun`` line is read to that line (a depth cap
    made the rest of such a file one word, and its configs silently unread). Expansions
    inside ``"…"`` are skipped whole, so a quote inside ``${X:-"…"}`` does not close it.
    """
    n = len(text)
    # The open constructs, innermost last: a quote character for a string, the opening
    # bracket (``{`` or ``(``) for an expansion, with that bracket's open count beside it.
    kinds: list[str] = []
    counts: list[int] = []

    def open_at(j: int) -> int:
        if text[j] in "'\"":
            kinds.append(text[j])
            counts.append(0)
            return j + 1
        kinds.append(text[j + 1])
        counts.append(1)
        return j + 2

    def expansion_at(j: int) -> bool:
        return text[j] == "$" and text[j + 1 : j + 2] in ("{", "(")

    j = open_at(i)
    while kinds and j < n:
        kind, c = kinds[-1], text[j]
        if kind in "'\"":  # inside a quoted string
            if c == kind:
                kinds.pop()
                counts.pop()
                j += 1
            elif kind == '"' and c == "\\":
                j += 2
            elif kind == '"' and expansion_at(j):
                j = open_at(j)
            else:
                j += 1
            continue
        if c in "'\"" or expansion_at(j):
            j = open_at(j)
            continue
        if c == "\\":
            j += 2
            continue
        if c == kind:
            counts[-1] += 1
        elif c == ("}" if kind == "{" else ")"):
            counts[-1] -= 1
            if counts[-1] == 0:
                kinds.pop()
                counts.pop()
        j += 1
    return min(j, n)


def _word(text: str, i: int) -> tuple[_Word, int]:
    """One word from ``i``: unquoted runs, quoted parts and expansions, up to whitespace or a
    separator."""
    start, n = i, len(text)
    parts: list[str] = []
    inner: tuple[int, int] | None = None
    quoted = False
    while i < n and text[i] not in " \t\r\n" and text[i] not in _SEPARATORS:
        c = text[i]
        if c in "'\"":
            end = _skip(text, i)
            close = end - 1 if end <= n and text[end - 1 : end] == c and end - 1 > i else end
            parts.append(text[i + 1 : close])
            inner = (i + 1, close) if inner is None else inner
            quoted = True
            i = end
        elif c == "\\" and i + 1 < n:
            parts.append(text[i + 1])
            i += 2
        elif c == "$" and text[i + 1 : i + 2] in ("{", "("):
            end = _skip(text, i)
            parts.append(text[i:end])
            i = end
        else:
            parts.append(c)
            i += 1
    word = "".join(parts)
    vs, ve = inner if (quoted and len(parts) == 1 and inner is not None) else (start, i)
    return _Word(word, start, i, vs, ve, quoted), i


# ``$(( … ))`` whole, and the words of its expression: numbers, names (``PP``, ``$PP``,
# ``${PP}``), operators. Longer or other expressions (``**``, shifts, ``?:``, assignments,
# ``$1``) are not evaluated.
_ARITHMETIC = re.compile(r"\$\(\((.{1,200})\)\)\Z", re.DOTALL)
_ARITH_TOKEN = re.compile(r"\s*(?:(\d+)|\$?\{?([A-Za-z_][A-Za-z0-9_]*)\}?|([-+*/%()]))")
_ARITH_LIMIT = 1 << 62  # bash's integers are 64-bit; anything near that is no model size


def _arithmetic(text: str, variables: dict[str, Scalar]) -> int | None:
    """The value of ``text`` when it is one ``$(( … ))`` of integers, known integer variables
    and ``+ - * / %`` with parentheses, computed as bash does (division and remainder truncate
    toward zero); None otherwise, or when a variable is unknown or not an integer (bash would
    take an unset one as 0: the reader cannot know it is unset) or a divisor is 0."""
    m = _ARITHMETIC.match(text.strip())
    if m is None:
        return None
    tokens: list[int | str] = []
    expr, at = m.group(1), 0
    while at < len(expr):
        if expr[at:].strip() == "":
            break
        t = _ARITH_TOKEN.match(expr, at)
        if t is None or t.end() == at:
            return None
        at = t.end()
        if t.group(1) is not None:
            if len(t.group(1)) > 1 and t.group(1).startswith("0"):
                return None  # bash reads a leading 0 as octal: not a size anyone writes
            tokens.append(int(t.group(1)))
        elif t.group(2) is not None:
            found = variables.get(t.group(2))
            if found is None or not found.known or isinstance(found.value, bool):
                return None
            value = found.value
            if isinstance(value, str) and re.fullmatch(r"[+-]?\d+", value.strip()):
                value = int(value)
            if not isinstance(value, int):
                return None
            tokens.append(value)
        else:
            tokens.append(t.group(3))
    return _ArithmeticParser(tokens).parse()


class _ArithmeticParser:
    """Precedence climbing over ``+ - * / %``, unary ``+ -`` and parentheses."""

    def __init__(self, tokens: list[int | str]) -> None:
        self.tokens = tokens
        self.at = 0

    def parse(self) -> int | None:
        try:
            value = self.sum()
        except (ArithmeticError, IndexError, ValueError):
            return None
        return value if self.at == len(self.tokens) and abs(value) < _ARITH_LIMIT else None

    def sum(self) -> int:
        value = self.product()
        while self.peek() in ("+", "-"):
            op = self.take()
            right = self.product()
            value = value + right if op == "+" else value - right
        return value

    def product(self) -> int:
        value = self.unary()
        while self.peek() in ("*", "/", "%"):
            op = self.take()
            right = self.unary()
            if op == "*":
                value *= right
            elif right == 0:
                raise ZeroDivisionError
            else:
                quotient = abs(value) // abs(right) * (1 if (value >= 0) == (right >= 0) else -1)
                value = quotient if op == "/" else value - right * quotient
            if abs(value) >= _ARITH_LIMIT:
                raise OverflowError
        return value

    def unary(self) -> int:
        if self.peek() in ("+", "-"):
            return -self.unary() if self.take() == "-" else self.unary()
        token = self.take()
        if token == "(":
            value = self.sum()
            if self.take() != ")":
                raise ValueError
            return value
        if isinstance(token, int):
            return token
        raise ValueError

    def peek(self) -> int | str | None:
        return self.tokens[self.at] if self.at < len(self.tokens) else None

    def take(self) -> int | str:
        token = self.tokens[self.at]
        self.at += 1
        return token


# -- sizes picked by a variable: one config per model size -------------------------------------
#
# Pai-Megatron-Patch's and many other launch scripts take the model size as an argument and
# pick the shape in an ``if`` chain of plain string tests:
#
#     MODEL_SIZE=$2
#     if [ $MODEL_SIZE = 7B ]; then
#         HIDDEN_SIZE=4096 …
#     elif [ $MODEL_SIZE = 13B ]; then
#         HIDDEN_SIZE=5120 …
#     fi
#
# No reader can say which size a run is given, but each size the script offers is a config of
# its own: the script is read once per tested value, with every chain of tests on that variable
# taking the arm the value selects (the other arms do not run). Chains whose tests are anything
# else (another variable, ``-eq``, ``||``, a pattern) stay conditional, as before.

_TEST_OPERATORS = frozenset({"=", "=="})
_TEST_BRACKETS = {"[": "]", "[[": "]]"}
# More sizes than this in one script are not read one by one (a stress test, not a script).
MAX_SIZES = 16


@functools.lru_cache(maxsize=16)
def _shape_value(shape_flags: frozenset[str]) -> re.Pattern[str]:
    """``--hidden-size ${HIDDEN_SIZE}`` for each shape flag (a flag, or one in an option
    string): the variables whose assignments make a branch a choice of model size."""
    names = "|".join(re.escape(f) for f in sorted(shape_flags, key=lambda f: (-len(f), f)))
    return re.compile(rf"(?:{names})(?:=|[ \t]+)[\"']?\$\{{?([A-Za-z_][A-Za-z0-9_]*)")


@dataclass
class _Arm:
    """One arm of an ``if`` chain: its test (variable, literal), None for ``else``, or
    ``_COMPLEX`` for any other test; the token range of its body."""

    test: tuple[str, str] | str | None
    body: tuple[int, int]


_COMPLEX = "complex"


@dataclass
class _Chain:
    """``if … fi`` from token ``start`` to ``end`` (exclusive)."""

    start: int
    end: int
    arms: list[_Arm]

    @property
    def variable(self) -> str | None:
        """The one variable every test of the chain compares, or None."""
        names = {a.test[0] for a in self.arms if isinstance(a.test, tuple)}
        plain = all(a.test is None or isinstance(a.test, tuple) for a in self.arms)
        return names.pop() if plain and len(names) == 1 else None

    def taken(self, value: str) -> _Arm | None:
        """The arm that runs when the chain's variable holds ``value``."""
        for arm in self.arms:
            if arm.test is None or (isinstance(arm.test, tuple) and arm.test[1] == value):
                return arm
        return None


def _statement_starts(tokens: list[_Token]) -> list[bool]:
    """For each token, whether it is a word at the start of a statement (where ``if``,
    ``then``, ``fi`` are keywords and ``NAME=value`` assigns): after a separator or a line's
    end, a reserved word, an assignment or ``export``/``local``…; the words `_read_flags`
    and the ``if`` chains read as keywords."""
    starts = [False] * len(tokens)
    at_start = True
    for k, tok in enumerate(tokens):
        if isinstance(tok, str):
            at_start = at_start or tok == ";"
            continue
        starts[k] = at_start
        if at_start and not tok.quoted and tok.text in _RESERVED:
            continue
        if at_start and (
            tok.text in _ASSIGN_PREFIXES
            or (_ASSIGN.match(tok.text) and not tok.text.startswith("--"))
        ):
            continue
        at_start = False
    return starts


def _keyword(tokens: list[_Token], starts: list[bool], k: int) -> str:
    tok = tokens[k]
    return tok.text if isinstance(tok, _Word) and starts[k] and not tok.quoted else ""


def _test(tokens: list[_Token]) -> tuple[str, str] | str:
    """``[ $VAR = literal ]`` (or ``[[ … == … ]]``, either side) as (VAR, literal)."""
    while tokens and isinstance(tokens[-1], str):
        tokens = tokens[:-1]  # the ``;`` or newline before ``then``
    if len(tokens) != 5 or not all(isinstance(t, _Word) for t in tokens):
        return _COMPLEX
    words = [t.text for t in tokens if isinstance(t, _Word)]
    if _TEST_BRACKETS.get(words[0]) != words[4] or words[2] not in _TEST_OPERATORS:
        return _COMPLEX
    for var, lit in ((words[1], words[3]), (words[3], words[1])):
        m = _VAR.match(var)
        plain = lit and not any(c in lit for c in "$`*?[")
        if m is not None and not m.group(3) and plain:
            return (m.group(1) or m.group(2), lit)
    return _COMPLEX


def _chain(tokens: list[_Token], starts: list[bool], k: int) -> _Chain | None:
    """The ``if`` chain opening at token ``k``, or None when it does not close."""
    arms: list[_Arm] = []
    depth, i, n = 0, k + 1, len(tokens)
    in_test, test_start, body_start = True, k + 1, k + 1
    test: tuple[str, str] | str | None = _COMPLEX
    while i < n:
        word = _keyword(tokens, starts, i)
        if depth == 0 and in_test and word == "then":
            test, body_start, in_test = _test(tokens[test_start:i]), i + 1, False
        elif depth == 0 and not in_test and word in ("elif", "else", "fi"):
            arms.append(_Arm(test, (body_start, i)))
            if word == "fi":
                return _Chain(k, i + 1, arms)
            if word == "elif":
                in_test, test_start = True, i + 1
            else:
                test, body_start = None, i + 1
        elif word in _OPENERS:
            depth += 1
        elif word in _CLOSERS and depth:
            depth -= 1
        i += 1
    return None


@dataclass
class _Selector:
    """The variable a script picks its model size by, and the sizes it tests."""

    name: str
    values: list[str]
    chains: dict[int, _Chain]
    # True when the values are the ones the script tests (a run is given the variable), so
    # each config is named by its value; False when the script assigns the one it runs.
    enumerated: bool = True

    def runs(self, tokens: list[_Token]) -> list[tuple[str, list[_Token]]]:
        """(value, the script's tokens as they run with the variable holding it)."""
        return [(v, self._resolve(tokens, 0, len(tokens), v)) for v in self.values]

    def _resolve(self, tokens: list[_Token], lo: int, hi: int, value: str) -> list[_Token]:
        out: list[_Token] = []
        i = lo
        while i < hi:
            chain = self.chains.get(i)
            if chain is None or chain.end > hi:
                out.append(tokens[i])
                i += 1
                continue
            arm = chain.taken(value)
            out.append(";")
            if arm is not None:
                out.extend(self._resolve(tokens, arm.body[0], arm.body[1], value))
            out.append(";")
            i = chain.end
        return out


def _selector(tokens: list[_Token], text: str, shape_flags: frozenset[str]) -> _Selector | None:
    """The variable whose plain tests choose the values of the shape flags, or None."""
    shape_vars = set(_shape_value(shape_flags).findall(text)) if shape_flags else set()
    if not shape_vars or "if" not in text:
        return None
    starts = _statement_starts(tokens)
    chains: dict[str, dict[int, _Chain]] = {}
    sizes: dict[str, list[str]] = {}
    for k in range(len(tokens)):
        if _keyword(tokens, starts, k) != "if":
            continue
        chain = _chain(tokens, starts, k)
        name = chain.variable if chain is not None else None
        if chain is None or name is None:
            continue
        chains.setdefault(name, {})[k] = chain
        assigned = {
            m.group(1)
            for arm in chain.arms
            for j in range(*arm.body)
            if (word := _keyword(tokens, starts, j)) and (m := _ASSIGN.match(word))
        }
        if assigned & shape_vars:
            for arm in chain.arms:
                if isinstance(arm.test, tuple) and arm.test[1] not in sizes.setdefault(name, []):
                    sizes[name].append(arm.test[1])
    if not sizes:
        return None
    name = max(sizes, key=lambda v: len(sizes[v]))
    readable, given = _given(tokens, starts, name, text)
    if not readable:
        return None
    values = sizes[name] if given is None else [given]
    if len(values) > MAX_SIZES:
        return None
    return _Selector(name, values, chains[name], enumerated=given is None)


def _given(
    tokens: list[_Token], starts: list[bool], name: str, text: str
) -> tuple[bool, str | None]:
    """How the script sets the selector ``name``: (True, None) when a run is given it
    (assigned ``$2`` or another expansion, or not at all: the environment's), (True, its
    literal) when one assignment outside any block sets it, (False, None) when the script
    sets it otherwise (in a branch or more than once: no reader can say which)."""
    found: list[tuple[bool, str]] = []
    depth = 0
    for k, tok in enumerate(tokens):
        word = _keyword(tokens, starts, k)
        if word in _OPENERS:
            depth += 1
        elif word in _CLOSERS:
            depth = max(0, depth - 1)
        elif (
            isinstance(tok, _Word)
            and starts[k]
            and text.startswith(name + "=", tok.start)  # ``NAME=""``: a quoted value
        ):
            found.append((depth > 0, tok.text[len(name) + 1 :]))
    if not found:
        return True, None
    if len(found) > 1 and all("$" in raw or raw in ("", '""', "''") for _, raw in found):
        # an argument parser's ``MODEL_SIZE=$1`` after ``MODEL_SIZE=""``: the run's to give
        return True, None
    if len(found) > 1 or found[0][0]:
        return False, None
    raw = found[0][1]
    fallback = _VAR.match(raw)
    if fallback is not None and fallback.group(3) and "$" not in fallback.group(3):
        return True, fallback.group(3)  # NAME=${NAME:-7B}: the default, as the reader takes it
    if "$" in raw or "`" in raw:
        return True, None
    return True, raw
