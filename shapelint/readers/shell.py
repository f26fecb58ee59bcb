"""Shell launch scripts (``*.sh``) that pass a model's shape as command-line flags.

A training framework is often configured by a script (here a Megatron-LM one)::

    HIDDEN=4096
    GPT_MODEL_ARGS=(
        --num-layers 32
        --hidden-size ${HIDDEN}
        --num-attention-heads 32
        --swiglu
    )
    torchrun pretrain_gpt.py ${GPT_MODEL_ARGS[@]} --seq-length 4096 \\
        --micro-batch-size 2

The script is never run. It is split into words as a shell would (quotes, ``\\`` line
continuations, comments, ``( ) ; | &`` as separators), and every ``--flag value`` or
``--flag=value`` becomes one entry of a single candidate (``kind="shell"``) keyed by the flag;
a flag with no value on its line is a switch (True). A value is a literal, or ``$VAR`` /
``${VAR}`` / ``${VAR:-default}`` resolved from a plain ``VAR=value`` assignment earlier in the
script (the value's span is then the assignment's, marked shared: editing it changes every
use), or the default when the script assigns none. Anything else (``$((…))``, a loop variable,
command substitution, ``$1``) is unknown. A flag written twice with different values is
unknown: which run the script launches is not for a reader to guess; so is a variable that an
``if``/``case``/loop body assigns when the script gives it another value elsewhere (sizes
picked by ``MODEL_SIZE`` or a debug switch).

Flags kept in an option string, ``GPT_ARGS="--num-layers $NLAYERS …"`` passed on as
``$GPT_ARGS``, are read where the string is assigned: a double-quoted string expands its
variables there; a single-quoted one expands them where it is used, so a value holding ``$``
is unknown. A string written in parts, ``"--tokenizer-model "$TOK" --num-layers 24"``, is one
string as the shell joins it.

A file the script sources (``. `pwd`/CONFIG.sh``, ``source ./env.sh``) is read where it is
sourced, with the script's variables, when the engine lets the reader read it (`OtherFiles`:
the same project, bounded); its values point at it.

Inside ``case … esac`` a word followed by ``)`` or ``|`` is a pattern (a script's own
argument parser: ``--seq-length) SEQ=$2 ;;``), not a flag.

A ``# shapelint: ignore[...]`` comment suppresses on its line wherever bash reads a comment:
a ``#`` that begins a word, outside quotes (inside an array's ``( … )`` too), or a comment in
backquotes (```# shapelint: ignore[SL104]```), a command substitution that expands to nothing
and so may stand before a line-continuation backslash. A comment cannot stand on a line a
command continues from: after ``\\`` and a space bash reads an escaped space, not a
continuation, and a backslash after the comment is part of the comment, so either way the
command ends at the comment and its next line runs as a command of its own. Such a comment
suppresses nothing; it is an SL008 problem that says to use the backquoted form.

What the flags mean is no part of the grammar: a dialect registers a `hooks.ShellFlags` that
names the flags making a script a model's config (its shape flags), the programs that read
them, and how its framework reads the entries (dummy sizes). A script holds a candidate only
when it passes a registered shape flag; any other script is no config and costs one scan.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

from shapelint.core.source import (
    Candidate,
    Document,
    Entry,
    LineIndex,
    Mapping,
    Problem,
    Scalar,
    Span,
    merge_suppressions,
    parse_suppression,
)
from shapelint.readers import hooks

if TYPE_CHECKING:
    from shapelint.readers import OtherFiles

_SEPARATORS = frozenset("();|&")
_FLAG = re.compile(r"--[A-Za-z][A-Za-z0-9_-]*\Z")
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
            after = min(_skip_quote(text, i), end)
            close = after - 1 if after - 1 > i and text[after - 1] == c else after
            chars.extend((text[j], j, c == "'", False) for j in range(i + 1, close))
            i = after
        elif c == "$" and text[i + 1 : i + 2] in ("{", "("):
            stop = min(_skip_expansion(text, i), end)
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


# Expansions nested deeper than this are not followed (the rest of the file is one word):
# hostile input must not exhaust the stack.
MAX_NESTING = 64


def _skip_quote(text: str, i: int, depth: int = 0) -> int:
    """The offset after the quoted string opening at ``i`` (expansions inside ``"…"`` are
    skipped whole, so a quote inside ``${X:-"…"}`` does not close it)."""
    quote, n = text[i], len(text)
    i += 1
    while i < n and text[i] != quote:
        if quote == '"' and text[i] == "\\":
            i += 2
        elif quote == '"' and text[i] == "$" and text[i + 1 : i + 2] in ("{", "("):
            i = _skip_expansion(text, i, depth + 1)
        else:
            i += 1
    return min(i + 1, n)


def _skip_expansion(text: str, i: int, depth: int = 0) -> int:
    """The offset after ``${…}``, ``$(…)`` or ``$((…))`` opening at ``i``, nesting counted."""
    if depth > MAX_NESTING:
        return len(text)
    opener = text[i + 1]
    closer = "}" if opener == "{" else ")"
    count, j, n = 1, i + 2, len(text)
    while j < n and count:
        c = text[j]
        if c in "'\"":
            j = _skip_quote(text, j, depth + 1)
            continue
        if c == "\\":
            j += 2
            continue
        if c == "$" and text[j + 1 : j + 2] in ("{", "("):
            j = _skip_expansion(text, j, depth + 1)
            continue
        if c == opener:
            count += 1
        elif c == closer:
            count -= 1
        j += 1
    return j


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
            end = _skip_quote(text, i)
            close = end - 1 if end <= n and text[end - 1 : end] == c and end - 1 > i else end
            parts.append(text[i + 1 : close])
            inner = (i + 1, close) if inner is None else inner
            quoted = True
            i = end
        elif c == "\\" and i + 1 < n:
            parts.append(text[i + 1])
            i += 2
        elif c == "$" and text[i + 1 : i + 2] in ("{", "("):
            end = _skip_expansion(text, i)
            parts.append(text[i:end])
            i = end
        else:
            parts.append(c)
            i += 1
    word = "".join(parts)
    vs, ve = inner if (quoted and len(parts) == 1 and inner is not None) else (start, i)
    return _Word(word, start, i, vs, ve, quoted), i


def _literal(text: str) -> object:
    if re.fullmatch(r"[+-]?\d+", text):
        return int(text)
    try:
        return float(text) if re.fullmatch(r"[+-]?(\d+\.\d*|\.\d+)([eE][+-]?\d+)?", text) else text
    except ValueError:
        return text


class _Reader:
    def __init__(self, path: str, text: str) -> None:
        self.path = path
        self.text = text
        self.index = LineIndex(text)
        self.vars: dict[str, Scalar] = {}

    def span(self, start: int, end: int) -> Span:
        return self.index.span(self.path, start, end)

    def scalar(self, word: _Word) -> Scalar:
        """The flag's value: a literal, a resolved variable, or unknown text."""
        m = _VAR.match(word.text)
        whole = self.span(word.start, word.end)
        unknown = Scalar(None, whole, expression=word.text, known=False)
        if m is not None:
            name = m.group(1) or m.group(2)
            if name in self.vars:
                found = self.vars[name]
                if not found.known:
                    return unknown
                if not word.quoted and isinstance(found.value, str) and found.value.split()[1:]:
                    # "64 64 128" unquoted splits into several arguments (Megatron-DeepSpeed's
                    # per-layer --num-experts list): not one value
                    return unknown
                return Scalar(found.value, found.span, shared=True, expression=word.text)
            default = m.group(3)
            if default and "$" not in default:
                at = self.text.find(default, word.start, word.end)
                span = self.span(at, at + len(default)) if at >= 0 else whole
                return Scalar(_literal(default), span, shared=True, expression=word.text)
            return unknown
        if "$" in word.text or "`" in word.text:
            return unknown
        return Scalar(_literal(word.text), self.span(word.value_start, word.value_end))

    def forget(self, name: str, word: _Word) -> None:
        """``name`` holds a value this reader cannot know (a loop variable, ``read``)."""
        self.vars[name] = Scalar(None, self.span(word.start, word.end), known=False)

    def assign(self, word: _Word, conditional: bool = False) -> None:
        """``NAME=value``. Inside ``if``/``case``/a loop (``conditional``) the assignment may
        not run: a name that holds another value already (an earlier assignment or another
        branch) becomes unknown, as no reader can say which branch the script takes."""
        m = _ASSIGN.match(word.text)
        assert m is not None
        name, raw = m.group(1), word.text[m.end() :]
        value = self._value(word, raw)
        before = self.vars.get(name)
        if (
            conditional
            and before is not None
            and (value is None or not before.known or (before.value != value.value))
        ):
            self.forget(name, word)
        elif value is None:
            self.forget(name, word)  # assigned something this reader cannot follow
        else:
            self.vars[name] = value

    def _value(self, word: _Word, raw: str) -> Scalar | None:
        fallback = _VAR.match(raw)
        if fallback is not None and fallback.group(3) and "$" not in fallback.group(3):
            # NAME=${NAME:-4096}: the default, unless the environment overrides it
            default = fallback.group(3)
            at = self.text.find(default, word.start, word.end)
            if at >= 0:
                return Scalar(_literal(default), self.span(at, at + len(default)))
        if not raw or "$" in raw or "`" in raw:
            return None
        offset = self.text.find("=", word.start, word.end) + 1
        start, end = offset, word.end
        if word.quoted and self.text[offset : offset + 1] in ("'", '"'):
            start, end = offset + 1, word.end - 1
        return Scalar(_literal(raw), self.span(start, end))


def self_text(value: Scalar) -> str:
    """A literal's text, for an unknown value's ``expression``."""
    return str(value.value)


def _case_pattern(text: str, word: _Word) -> bool:
    """A ``case`` arm's pattern: the word is followed by ``)`` or by ``|`` and another
    alternative (``-s|--seq-length)``), not by a value."""
    rest = text[word.end : word.end + 200].lstrip(" \t")
    return rest.startswith(")") or (rest.startswith("|") and not rest.startswith("||"))


_Flags = dict[str, list[tuple[Span, Scalar]]]


def _flag(
    reader: _Reader,
    tokens: list[_Token],
    i: int,
    tok: _Word,
    flags: _Flags,
    known: bool = True,
) -> int:
    """Records ``tok`` when it is a ``--flag`` (its value ``--flag=value``, the next word, or
    True for a switch); the index of the token after what it used. A value whose ``$`` an option
    string's single quotes keep (expanded where the string is used) is unknown; without
    ``known`` (a flag that may not be passed) every value is."""

    def scalar(word: _Word) -> Scalar:
        if word.literal and "$" in word.text:
            span = reader.span(word.start, word.end)
            return Scalar(None, span, expression=word.text, known=False)
        return reader.scalar(word)

    name, _, inline = tok.text.partition("=")
    if not _FLAG.match(name):
        return i
    key_span = reader.span(tok.start, tok.start + len(name))
    if inline or tok.text.endswith("="):
        at = tok.start + len(name) + 1
        value = scalar(_Word(inline, at, tok.end, at, tok.end, tok.quoted, literal=tok.literal))
    else:
        nxt = tokens[i] if i < len(tokens) else None
        if (isinstance(nxt, _Word) and not nxt.text.startswith("-")) or (
            isinstance(nxt, _Word) and re.fullmatch(r"-\d+(\.\d+)?", nxt.text)
        ):
            assert isinstance(nxt, _Word)
            value = scalar(nxt)
            i += 1
        else:
            value = Scalar(True, key_span, expression=name)
    if not known:
        text = value.expression or self_text(value)
        value = Scalar(None, value.span, expression=text, known=False)
    flags.setdefault(name, []).append((key_span, value))
    return i


def _string_flags(reader: _Reader, word: _Word, flags: _Flags, conditional: bool = False) -> None:
    """The ``--flag value`` pairs of an option string, ``GPT_ARGS="--num-layers 24 …"``
    (Megatron-DeepSpeed's and BigScience's scripts keep their flags in such strings and pass
    ``$GPT_ARGS`` to the launcher). A double-quoted string expands its variables where it is
    assigned, so they resolve as there; a single-quoted one expands them where it is used,
    so a value holding ``$`` is unknown. Flags of a ``conditional`` assignment, one inside
    ``if``/``case``/a loop, may not be passed: unknown, whether the branch appends them
    (``ds_args="--no-pipeline-parallel ${ds_args}"`` under ``if [[ $PP_SIZE -eq 1 ]]``) or
    sets the whole string (Pai-Megatron-Patch picks ``pr_options="--bf16"`` or
    ``"--bf16 --fp8-format hybrid"`` by ``$PR``, and ``moe_options="--num-experts 8"`` only
    for an ``8x7B`` ``$MODEL_SIZE``)."""
    text = reader.text
    at = text.find("=", word.start, word.end) + 1
    if text[at : at + 1] not in ("'", '"') or word.end - at < 2:
        return  # not a quoted string
    words = _string_words(text, at, word.end)
    if not any(_FLAG.match(w.text.partition("=")[0]) for w in words):
        return
    tokens: list[_Token] = list(words)
    i = 0
    while i < len(tokens):
        tok = tokens[i]
        i += 1
        assert isinstance(tok, _Word)
        i = _flag(reader, tokens, i, tok, flags, known=not conditional)


def parse_shell(path: str, text: str, files: OtherFiles | None = None) -> Document:
    """A shell script as a `Document`: one candidate of its ``--flag value`` pairs (one per
    model size when the script picks its sizes by a variable it is given), or none. Which
    flags make a config is the registered `ShellFlags`' (the first that finds one reads it).
    ``files``: what the script may source (none without it)."""
    doc = Document(path=path, text=text, format="shell")
    comments: list[_Comment] = []
    tokens = _tokens(text, comments)
    if "shapelint" in text:
        _suppressions(doc, comments)
    if not hooks.SHELL:
        return doc
    sourced: _SourcedFiles = {}
    if files is not None and ("source" in text or ". " in text):
        _find_sourced(path, tokens, files, sourced)
    for grammar in hooks.SHELL:
        doc.candidates.extend(_candidates(path, text, tokens, grammar, sourced))
        if doc.candidates:
            break
    return doc


def _suppressions(doc: Document, comments: list[_Comment]) -> None:
    """Fill ``doc.suppressions`` from the script's ``# shapelint: ignore`` comments; one that
    ends a command the line continues is an SL008 problem saying how to write it there."""
    text, index = doc.text, LineIndex(doc.text)
    for comment in comments:
        body = text[comment.start : comment.end]
        codes = parse_suppression(body)
        if codes is None:
            continue
        before = text[text.rfind("\n", 0, comment.start) + 1 : comment.start]
        why = (
            None if comment.backquoted or comment.depth else _ends_a_continued_command(before, body)
        )
        if why is None:
            line, _ = index.position(comment.start)
            doc.suppressions[line] = merge_suppressions(doc.suppressions.get(line), codes)
            continue
        written = body.rstrip().removesuffix("\\").rstrip()
        doc.problems.append(
            Problem(
                "SL008",
                f"this comment ends the command: {why}, so bash runs the next line as a command "
                "of its own, and the ignore is not applied; on a continued line, put it in "
                f"backquotes before the backslash: `{written}` \\",
                index.span(doc.path, comment.start, comment.end),
            )
        )


def _ends_a_continued_command(before: str, body: str) -> str | None:
    """Why a comment outside parentheses ends a command its line was meant to continue (the
    text ``before`` it on its line, its own text ``body``), or None."""
    stripped = before.rstrip(" \t")
    backslashes = len(stripped) - len(stripped.rstrip("\\"))
    if stripped != before and backslashes % 2:
        return (
            "after `\\ ` (an escaped space, not a line continuation) the comment runs to the "
            "end of the line"
        )
    if body.rstrip().endswith("\\"):
        return "the backslash at its end is part of the comment, not a line continuation"
    return None


def _candidates(
    path: str,
    text: str,
    tokens: list[_Token],
    grammar: hooks.ShellFlags,
    sourced: _SourcedFiles | None = None,
) -> list[Candidate]:
    """The script's candidates as ``grammar`` reads them: none without one of its shape flags."""
    others = [found for found in (sourced or {}).values() if found is not None]
    every = tokens + [tok for found in others for tok in found.tokens]
    programs = _runs(every, _compiled(grammar.programs))
    texts = "\n".join([text, *(found.text for found in others)])
    selector = _selector(tokens, texts, grammar.shape_flags)
    if selector is None:
        runs: list[tuple[str, list[_Token]]] = [("", tokens)]
    else:
        runs = [
            (f"{selector.name}={value}" if selector.enumerated else "", resolved)
            for value, resolved in selector.runs(tokens)
        ]
    out = []
    for name, stream in runs:
        reader = _Reader(path, text)
        flags = _read_flags(reader, stream, sourced)
        if not grammar.shape_flags & flags.keys():
            continue
        entries = []
        for flag, uses in flags.items():
            key_span, value = uses[-1]
            if len({(v.value, v.known) for _, v in uses}) > 1:
                shown = value.expression or self_text(value)
                value = Scalar(None, value.span, expression=shown, known=False)
            entries.append(Entry(flag, key_span, value))
        root = Mapping(tuple(grammar.finish(text, entries)), reader.span(0, len(text)))
        out.append(Candidate(name=name, root=root, kind="shell", callee=programs))
    return out


@functools.lru_cache(maxsize=16)
def _compiled(pattern: str) -> re.Pattern[str]:
    return re.compile(pattern)


def _runs(tokens: list[_Token], programs: re.Pattern[str]) -> str:
    """The programs the script names outside comments, as ``programs`` matches them (group 1,
    the file name; sorted, one space between), for the dialect: which program reads the
    flags decides the defaults of those left out."""
    names: set[str] = set()
    for tok in tokens:
        if isinstance(tok, _Word):
            names.update(m.group(1) for m in programs.finditer(tok.text))
    return " ".join(sorted(names))


def _read_flags(
    reader: _Reader,
    tokens: list[_Token],
    sourced: _SourcedFiles | None = None,
    flags: _Flags | None = None,
    outer_blocks: int = 0,
    active: tuple[str, ...] = (),
) -> _Flags:
    """Every ``--flag value`` of the token stream, variables resolved as the script assigns
    them; a file the script sources (``sourced``) is read where it is sourced, with the
    script's variables (and its assignments are the script's from there on). ``flags``: the
    dict to add to; ``outer_blocks``: the ``if``/loop blocks open around a sourced file;
    ``active``: the files being read (a file sourcing itself is not read again)."""
    text = reader.text
    flags = {} if flags is None else flags
    starts = _statement_starts(tokens)
    cases = 0  # open ``case … esac`` blocks
    blocks = outer_blocks  # open ``if``/``case``/loop blocks: an assignment there may not run
    i = 0
    while i < len(tokens):
        tok, statement_start = tokens[i], starts[i]
        i += 1
        if isinstance(tok, str):
            continue
        keyword = statement_start and not tok.quoted
        if keyword and tok.text in ("case", "esac"):
            cases = cases + 1 if tok.text == "case" else max(0, cases - 1)
        if keyword and tok.text in _OPENERS:
            blocks += 1
            nxt = tokens[i] if i < len(tokens) else None
            if tok.text in ("for", "select") and isinstance(nxt, _Word):
                reader.forget(nxt.text, nxt)  # the loop variable
        elif keyword and tok.text in _CLOSERS:
            blocks = max(0, blocks - 1)
        if keyword and tok.text in _RESERVED:
            continue  # ``then X=1``: a statement follows
        if cases and _case_pattern(text, tok):
            continue  # ``--seq-length)`` in an argument parser's case: a pattern, no flag
        if statement_start and tok.text in _ASSIGN_PREFIXES:
            continue
        if statement_start and _ASSIGN.match(tok.text) and not tok.text.startswith("--"):
            _string_flags(reader, tok, flags, conditional=blocks > 0)
            reader.assign(tok, conditional=blocks > 0)
            continue
        if keyword and tok.text in _SOURCE_WORDS and sourced:
            nxt = tokens[i] if i < len(tokens) else None
            found = sourced.get((reader.path, nxt.text)) if isinstance(nxt, _Word) else None
            if found is not None and found.path not in active:
                child = _Reader(found.path, found.text)
                child.vars = reader.vars  # the same shell: its variables, both ways
                chain = (*active, reader.path)
                _read_flags(child, found.tokens, sourced, flags, blocks, chain)
                i += 1
                continue
        i = _flag(reader, tokens, i, tok, flags)
    return flags


# -- files a script sources --------------------------------------------------------------------
#
# A script may set the model's variables and leave the flags to a file it sources, ``.
# `pwd`/CONFIG.sh`` (Megatron-LM's examples/sc21 scripts: each run_*.sh sets NLS, HS, NAH, MBS,
# and CONFIG.sh turns them into ``--num-layers ${NLS}`` …). Such a file is read where it is
# sourced, as the shell runs it: with the script's variables, its assignments the script's from
# there on. Only a file named by a plain relative path, or one under the script's own directory
# written as `` `pwd`/ ``, ``$(pwd)/``, ``$PWD/``, ``$(dirname "$0")/`` or
# ``${BASH_SOURCE%/*}/`` (a script that sources `` `pwd`/CONFIG.sh `` is run from its own
# directory), and only what the engine's `OtherFiles` lets the reader read (the same project,
# bounded); at most `MAX_SOURCE_DEPTH` files deep, each file once on a chain.

_SOURCE_WORDS = frozenset({"source", "."})
_HERE = re.compile(
    r"(?:`pwd`|\$\(pwd\)|\$\{?PWD\}?|\$\(dirname\s+\"?\$\{?(?:0|BASH_SOURCE(?:\[0\])?)\}?\"?\)"
    r"|\$\{BASH_SOURCE(?:\[0\])?%/\*\}|\.)/+"
)
MAX_SOURCE_DEPTH = 4


@dataclass
class _Sourced:
    path: str
    text: str
    tokens: list[_Token]


# By (the sourcing file's path, the word that names the file): the file, or None.
_SourcedFiles = dict[tuple[str, str], "_Sourced | None"]


def _source_name(word: str) -> str | None:
    """The relative path a ``source`` word names, or None when it is not one to follow."""
    here = _HERE.match(word)
    rest = word[here.end() :] if here is not None else word
    if not rest or rest.startswith("/") or any(c in rest for c in "$`*?[~"):
        return None
    return rest


def _find_sourced(
    path: str, tokens: list[_Token], files: OtherFiles, found: _SourcedFiles, depth: int = 0
) -> None:
    """Add to ``found`` every file the tokens source, and the files those source."""
    if depth >= MAX_SOURCE_DEPTH:
        return
    starts = _statement_starts(tokens)
    for k, tok in enumerate(tokens[:-1]):
        nxt = tokens[k + 1]
        if not (
            isinstance(tok, _Word)
            and starts[k]
            and not tok.quoted
            and tok.text in _SOURCE_WORDS
            and isinstance(nxt, _Word)
        ):
            continue
        key = (path, nxt.text)
        name = _source_name(nxt.text)
        if key in found or name is None:
            continue
        got = files.read(name, path)
        found[key] = None if got is None else _Sourced(got[0], got[1], _tokens(got[1]))
        inner = found[key]
        if inner is not None:
            _find_sourced(inner.path, inner.tokens, files, found, depth + 1)


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
