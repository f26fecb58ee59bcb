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
use), or the default when the script assigns none. Integer arithmetic ``$((3 * PP))`` of
literals and such variables is computed as bash computes it (`shell_syntax._arithmetic`),
never fixed in place. Anything else (a loop variable, command substitution, ``$1``,
arithmetic on any of them) is unknown. A flag written twice with different values is
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
from shapelint.readers.shell_syntax import (
    _ASSIGN,
    _ASSIGN_PREFIXES,
    _CLOSERS,
    _OPENERS,
    _RESERVED,
    _VAR,
    _arithmetic,
    _Comment,
    _selector,
    _statement_starts,
    _string_words,
    _Token,
    _tokens,
    _Word,
)

if TYPE_CHECKING:
    from shapelint.readers import OtherFiles

_FLAG = re.compile(r"--[A-Za-z][A-Za-z0-9_-]*\Z")


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
        computed = _arithmetic(word.text, self.vars)
        if computed is not None:
            return Scalar(computed, whole, expression=word.text)
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
        offset = self.text.find("=", word.start, word.end) + 1
        computed = _arithmetic(raw, self.vars)
        if computed is not None:
            return Scalar(computed, self.span(offset, word.end), expression=raw)
        if not raw or "$" in raw or "`" in raw:
            return None
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
