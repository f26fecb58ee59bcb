"""Shell launch scripts (``*.sh``) that pass a model's shape as command-line flags.

Megatron-LM (and its forks, Megatron-DeepSpeed) is most often configured by a script::

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
``$GPT_ARGS`` (Megatron-DeepSpeed's and BigScience's scripts), are read where the string is
assigned: a double-quoted string expands its variables there; a single-quoted one expands
them where it is used, so a value holding ``$`` is unknown.

Inside ``case … esac`` a word followed by ``)`` or ``|`` is a pattern (a script's own
argument parser: ``--seq-length) SEQ=$2 ;;``), not a flag.

A script holds a candidate only when it passes a model-shape flag (`SHAPE_FLAGS`); any other
script is no config and costs one scan.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from shapelint.lint.source import Candidate, Document, Entry, LineIndex, Mapping, Scalar, Span

SHAPE_FLAGS = frozenset({"--hidden-size", "--num-layers", "--num-attention-heads"})
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


# A token is a word, or one of "\n" (end of a line: ends a flag's value) and ";" (end of a
# statement: a separator or a line outside parentheses).
_Token = _Word | str


def _tokens(text: str) -> list[_Token]:
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
            while i < n and text[i] != "\n":
                i += 1
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
    """The words of the quoted string ``text[start:end]`` as the shell splits it when the
    variable that holds it is expanded unquoted (``$GPT_ARGS``): at blanks and newlines, a
    ``\\`` before a newline dropped; quotes and separators inside it are plain characters."""
    out: list[_Word] = []
    for m in re.finditer(r"(?:[^\s\\]|\\(?!\r?\n))+", text[start:end]):
        at, stop = start + m.start(), start + m.end()
        out.append(_Word(text[at:stop], at, stop, at, stop))
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
    expand: bool = True,
    known: bool = True,
) -> int:
    """Records ``tok`` when it is a ``--flag`` (its value ``--flag=value``, the next word, or
    True for a switch); the index of the token after what it used. Without ``expand`` (a
    single-quoted string, expanded where it is used) a value holding ``$`` is unknown; without
    ``known`` (a flag that may not be passed) every value is."""

    def scalar(word: _Word) -> Scalar:
        if not expand and "$" in word.text:
            span = reader.span(word.start, word.end)
            return Scalar(None, span, expression=word.text, known=False)
        return reader.scalar(word)

    name, _, inline = tok.text.partition("=")
    if not _FLAG.match(name):
        return i
    key_span = reader.span(tok.start, tok.start + len(name))
    if inline or tok.text.endswith("="):
        at = tok.start + len(name) + 1
        value = scalar(_Word(inline, at, tok.end, at, tok.end, tok.quoted))
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
    quote = text[at : at + 1]
    if quote not in ("'", '"') or _skip_quote(text, at) != word.end or word.end - at < 2:
        return  # not exactly one quoted string
    words = _string_words(text, at + 1, word.end - 1)
    if not any(_FLAG.match(w.text.partition("=")[0]) for w in words):
        return
    tokens: list[_Token] = list(words)
    i = 0
    while i < len(tokens):
        tok = tokens[i]
        i += 1
        assert isinstance(tok, _Word)
        i = _flag(reader, tokens, i, tok, flags, expand=quote == '"', known=not conditional)


# Sizes a Megatron program must be given even when it builds no model from them: its parser
# requires --num-layers, --hidden-size, --num-attention-heads and --max-position-embeddings
# (megatron/arguments.py:279-283 in microsoft/Megatron-DeepSpeed at f4157bea), so data tools
# (examples_deepspeed/data_efficiency/analyze_data.py) and checkpoint converters, which take the
# shape from the checkpoint (Pai-Megatron-Patch's hf2mcore.py:209-219 at a098ca5a), pass 1s.
PLACEHOLDER_FLAGS = frozenset(
    {
        "--hidden-size",
        "--num-attention-heads",
        "--num-layers",
        "--ffn-hidden-size",
        "--num-query-groups",
        "--kv-channels",
        "--max-position-embeddings",
        "--seq-length",
        "--vocab-size",
        "--make-vocab-size-divisible-by",
    }
)


def _placeholders(entries: list[Entry]) -> list[Entry]:
    """A hidden size of 1 is no model's: the script's sizes of 1 are placeholders (unknown),
    the real shape comes from elsewhere. Other values stay as written."""
    hidden = next((e.value for e in entries if e.key == "--hidden-size"), None)
    if not isinstance(hidden, Scalar) or not hidden.known or hidden.value != 1:
        return entries
    out = []
    for entry in entries:
        value = entry.value
        if (
            entry.key in PLACEHOLDER_FLAGS
            and isinstance(value, Scalar)
            and value.known
            and value.value == 1
        ):
            placeholder = Scalar(None, value.span, expression="1 (a placeholder)", known=False)
            entry = Entry(entry.key, entry.key_span, placeholder)
        out.append(entry)
    return out


# A checkpoint converter builds the model its flags describe to copy weights into it, but runs
# no training step: its batch and sequence flags are dummies (Pai-Megatron-Patch's converters
# pass ``--micro-batch-size 1 --seq-length 1``, toolkits/model_checkpoints_convertor and
# distributed_checkpoints_convertor at a098ca5a). Recognised by the Python program the script
# runs, when it runs no training or inference one.
_CONVERTER = re.compile(
    r"(?:^|[/\s])(?:hf2mcore|mcore2hf|hf2megatron|megatron2hf|hf2megablocks|convert|checkpoint_util)"
    r"[\w.-]*\.py\b"
)
_RUNNER = re.compile(
    r"(?:^|[/\s])[\w.-]*(?:pretrain|finetune|train|generat|infer|eval)[\w.-]*\.py\b"
)
RUN_FLAGS = frozenset(
    {"--seq-length", "--decoder-seq-length", "--micro-batch-size", "--global-batch-size"}
)


def _converts_checkpoints(text: str) -> bool:
    return bool(_CONVERTER.search(text)) and not _RUNNER.search(text)


def _not_a_run(entries: list[Entry]) -> list[Entry]:
    """A converter's batch and sequence flags: unknown (the model shape stays)."""
    out = []
    for entry in entries:
        value = entry.value
        if entry.key in RUN_FLAGS and isinstance(value, Scalar) and value.known:
            text = f"{value.value} (a checkpoint converter's: it runs no training step)"
            entry = Entry(
                entry.key, entry.key_span, Scalar(None, value.span, expression=text, known=False)
            )
        out.append(entry)
    return out


def parse_shell(path: str, text: str) -> Document:
    """A shell script as a `Document`: one candidate of its ``--flag value`` pairs, or none."""
    doc = Document(path=path, text=text, format="shell")
    reader = _Reader(path, text)
    tokens = _tokens(text)
    flags: _Flags = {}
    statement_start = True
    cases = 0  # open ``case … esac`` blocks
    blocks = 0  # open ``if``/``case``/loop blocks: an assignment there may not run
    i = 0
    while i < len(tokens):
        tok = tokens[i]
        i += 1
        if isinstance(tok, str):
            statement_start = statement_start or tok == ";"
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
        statement_start = False
        i = _flag(reader, tokens, i, tok, flags)
    if not SHAPE_FLAGS & flags.keys():
        return doc
    entries = []
    for name, uses in flags.items():
        key_span, value = uses[-1]
        if len({(v.value, v.known) for _, v in uses}) > 1:
            text = value.expression or self_text(value)
            value = Scalar(None, value.span, expression=text, known=False)
        entries.append(Entry(name, key_span, value))
    entries = _placeholders(entries)
    if _converts_checkpoints(reader.text):
        entries = _not_a_run(entries)
    root = Mapping(tuple(entries), reader.span(0, len(text)))
    doc.candidates.append(Candidate(name="", root=root, kind="shell"))
    return doc
