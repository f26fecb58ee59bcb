"""Python config reader: libcst, static only — the file is parsed, never imported or run.

A Python file can hold many configs. The reader turns each of these into a `Candidate`:

- ``kind="class"``: the body of a class (dataclass fields ``vocab_size: int = 50304``, class
  attributes ``model_type = "llama"``), e.g. transformers 5.x ``@strict`` config classes. A
  field written through a validating wrapper — ``positive_int_field(default=1024)``,
  ``interval(min=0.0, max=1.0)(default=0.02)``, ``field(default=…)`` — holds its ``default=``.
- ``kind="init"``: the same, for a class whose ``__init__`` takes keyword defaults
  (transformers 4.x: ``def __init__(self, vocab_size=32000, …)``); the class attributes come
  first, the ``__init__`` defaults after them. Named by the class. A class inherits the
  fields of its base classes, read statically (`inherit`); a base that cannot be read is
  listed in ``Candidate.open_bases``.
- ``kind="call"`` / ``kind="dict"``: a call with keyword arguments only (``GPTConfig(n_layer=12,
  …)``, ``dict(name=…, n_embd=…)``) or a dict literal with string keys. Collections of them are
  unpacked: list items are named ``configs[3]``, dict values ``llama3_configs["8B"]``,
  ``x.append(…)`` arguments ``x.append[0]``, and a string ``name=`` entry is added to the name
  (``llama_2[0] Llama-2-7b{}-hf``). A call or dict assigned to a name is named by the target
  (``config``, ``self.vision_config``); one that is not is named by its callee. Nested calls
  and dicts in keyword values become nested mappings (``hf_config=dict(…)``,
  ``text_config={…}``).
- Where configs are: module-level statements (including ``if``/``for``/``try`` blocks there)
  and class bodies. A dict or call inside a function body is code, not a config — a test
  that writes ``json.dumps({"vocab_size": …})`` holds no config — except what the function
  *returns* when it states at least one value: a model builder (torchtune's ``def
  llama3_8b(): return llama3(vocab_size=128_256, …)``, a ``@classmethod`` preset), named by
  the function (``llama3_8b``, ``Presets.tiny``). Every value of a builder's config is marked
  ``shared``: each model the function builds has it, so a fix there is unsafe. A local bound
  to a keyword call (``layers = _build_layers(n_layers=…)``) reads as that call where a keyword
  of the returned call names it (``layers=layers``), and ``config = M.Config(…); return
  config`` in a function annotated ``-> M.Config`` returns that call. A returned call
  made only of the function's parameters (``return TransformerDecoder(num_layers=num_layers,
  …)``) is a factory, not a config.
- ``kind="module"``: the module-level assignments of a training script (nanoGPT's
  ``config/*.py``: ``batch_size = 12``), one candidate named ``""``.

Values are constant-folded where that is exact: literals (``50_304``), arithmetic on them
(``4096 * 32``, ``8 * 1024 // 3``, ``-1``, ``2 ** 12``) and names bound earlier in the same scope
(module, class body or function body) to such values. A folded value keeps its source text in
``Scalar.expression``. Anything else — other calls, attribute access, names that are not such
constants, comprehensions — is a `Scalar` with ``known=False`` and value ``None``: unknown, never
guessed. Comprehensions are not expanded.

Configs that module-level code builds from written ones (LitGPT's name-variant loops, ``for c
in llama_2: copy = deepcopy(c); …``) are built by the module hooks a dialect registers
(`shapelint.readers.hooks.ModuleHook`); the reader shows them every module-level statement.

Syntax errors become an ``SL000`` problem (located with Python's own parser, as users see it
from ``python -c``); duplicate dict keys and repeated keyword arguments become ``SL001``.
``# shapelint: ignore[…]`` comments (libcst comment nodes, so a ``#`` inside a string is not
one) fill ``Document.suppressions``.

The package: `evaluate` (the static evaluator: constant folding, strings), `scope` (what a
statement binds, nested blocks), `values` (spans and tree nodes), `inherit` (base classes,
read in the package tree), `classes` (class bodies), `extract` (the `Reader` that finds the
candidates). `parse_python` is the one entry point.
"""

from __future__ import annotations

import ast
import re
import warnings

from shapelint.core.source import Document, LineIndex, Problem

_LIBCST_AT = re.compile(r"error at (\d+):(\d+)")


def parse_python(path: str, text: str) -> Document:
    """Parse Python source into a `Document` of config candidates; never raises on bad input."""
    doc = Document(path=path, text=text, format="python")
    import libcst as cst
    from libcst.metadata import MetadataWrapper, PositionProvider

    from shapelint.readers.python.extract import Reader

    try:
        module = cst.parse_module(text)
    except Exception as exc:  # ParserSyntaxError, CSTValidationError, RecursionError …
        doc.problems.append(_syntax_problem(path, text, exc))
        return doc
    try:
        positions = MetadataWrapper(module, unsafe_skip_copy=True).resolve(PositionProvider)
        reader = Reader(path, text, module, positions)
        reader.read()
    except RecursionError:
        span = LineIndex(text).span(path, 0, 0)
        doc.problems.append(Problem("SL000", "Python file too deeply nested to analyse", span))
        return doc
    doc.candidates.extend(reader.candidates)
    doc.problems.extend(reader.problems)
    doc.suppressions.update(reader.suppressions)
    return doc


def _syntax_problem(path: str, text: str, exc: Exception) -> Problem:
    """An SL000 problem at the position Python itself reports for the error."""
    index = LineIndex(text)
    line, column, message = 1, 1, str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # SyntaxWarning (invalid escapes) is not ours to show
            ast.parse(text)
    except SyntaxError as err:
        message = err.msg
        line = err.lineno or 1
        column = err.offset or 1
    except Exception:  # ValueError (NUL bytes), MemoryError, RecursionError: keep libcst's
        pass
    else:
        raw_line = getattr(exc, "raw_line", None)
        if isinstance(raw_line, int):
            line = raw_line
        match = _LIBCST_AT.search(str(exc))
        if match:
            line, column = int(match.group(1)), int(match.group(2))
    if "\x00" in text and message.startswith("source code string cannot contain null bytes"):
        line, column = index.position(text.index("\x00"))
    lines = text.split("\n")
    line = min(max(line, 1), len(lines))
    column = min(max(column, 1), len(lines[line - 1]) + 1)
    offset = index.offset(line, column)
    return Problem("SL000", f"invalid Python: {message}", index.span(path, offset, offset))
