"""LitGPT's name-variant loops in ``litgpt/config.py``, for the Python reader.

Split from `shapelint.dialects.litgpt` so that only a Python file imports them (and the
Python evaluator they need): a JSON, YAML or TOML run reads LitGPT's keys without them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from shapelint.core.source import Candidate, Mapping, Scalar
from shapelint.dialects.litgpt_loop_values import (
    Assignment,
    LoopScope,
    LoopValues,
    set_path,
    subscript_path,
)
from shapelint.readers.hooks import PythonHost
from shapelint.readers.python.evaluate import (
    Folded,
    has_placeholder,
    string_value,
)
from shapelint.readers.python.scope import suite_blocks
from shapelint.readers.python.values import is_dict_expression

if TYPE_CHECKING:
    import libcst as cst

# ---- Python source: the name-variant loops of ``litgpt/config.py`` -------------------------
#
# The LitGPT dialect registers `VariantLoops` with the Python reader as a module hook
# (`shapelint.readers.hooks.ModuleHook`): the reader shows it every module-level statement and
# config; the loops it recognises are LitGPT's, so the knowledge lives here.
#
# A module-level ``for`` (at most two deep) over a list of written ``dict(…)``/``{…}`` configs
# and/or a tuple of string literals (``for kind, hf in (("", "-x"), …)`` too), whose body is
# exactly ``copy = deepcopy(c)`` (or ``c.copy()`` / ``dict(c)``), assignments
# ``copy["name"] = …`` (required), ``copy["a"]["b"] = …``, then ``configs.append(copy)``. Each
# iteration is a candidate named by its template's label and the evaluated name
# (``llama_2[0] Llama-2-7b-chat-hf``); its entries are the template's (same spans, so a fix
# edits the template once) with the assignments applied. A string built from the template, the
# loop variables and literals (``c["name"].format(kind)``, ``f"{c['name']}-it"``,
# ``c["name"] + "-x"``) keeps the template entry's span; a literal (``copy["block_size"] =
# 4096``) has the assignment's span and is ``shared`` (editing it changes every config the loop
# builds). A template whose name has a ``{}`` placeholder is replaced by its variants; other
# templates are kept (LitGPT adds them too). A loop with anything else — a condition, another
# statement, a value that cannot be evaluated, a list changed in ways not followed — is not
# expanded at all. The lists are followed through ``x = [...]``, ``x.append(dict(…))`` and
# ``x.extend(y)``; any other use of a name in a module-level statement stops following it.

_WORD = re.compile(r"[^\W\d]\w*")
# A loop that would build more configs than this is not expanded.
_MAX_VARIANTS = 1024


@dataclass(frozen=True)
class _Template:
    """A module-level ``dict(…)``/``{…}`` config a loop may copy, with the label it was named by
    (``llama_2[0]``, without the ``name`` entry)."""

    candidate: Candidate
    label: str


@dataclass(frozen=True)
class _Loop:
    """A recognized variant loop: what it iterates and what each iteration assigns.

    ``levels`` is one item per ``for``, outermost first: None for the loop over the templates,
    else the loop variables and the rows of string literals they take.
    """

    templates: tuple[_Template, ...]
    template_var: str
    copy_var: str
    levels: tuple[tuple[tuple[str, ...], tuple[tuple[str, ...], ...]] | None, ...]
    assignments: tuple[Assignment, ...]
    bound: frozenset[str]
    read: frozenset[str]


class VariantLoops:
    """Follows a module's lists of written configs and expands the loops that copy them (a
    `shapelint.readers.hooks.ModuleHook`)."""

    def __init__(self, host: PythonHost, module: cst.Module) -> None:
        self.host = host
        # Module-level dict configs by their expression node, the lists and names of them
        # followed so far, the variants built from each template (by id of its candidate) and
        # the templates they replace.
        self.templates: dict[cst.CSTNode, _Template] = {}
        self.lists: dict[str, list[_Template]] = {}
        self.singles: dict[str, _Template] = {}
        self.variants: dict[int, list[Candidate]] = {}
        self.expanded: set[int] = set()
        self.deepcopy_names, self.copy_modules = _copy_imports(module)
        # The followed names the compound statement being read reads (`before`, `after`).
        self.read: frozenset[str] = frozenset()

    def config(self, expr: cst.BaseExpression, candidate: Candidate, label: str) -> None:
        """Record a module-level config a loop may copy (only ``dict(…)``/``{…}`` qualify)."""
        if is_dict_expression(expr):
            self.templates[expr] = _Template(candidate, label)

    def before(self, stmt: cst.BaseStatement, env: dict[str, Folded]) -> None:
        """Expand a variant loop (its variants follow their templates, `ordered`)."""
        import libcst as cst

        self.read = self.expand(stmt, env) if isinstance(stmt, cst.For) else frozenset()

    def after(self, stmt: cst.BaseSmallStatement | cst.BaseStatement) -> None:
        """Follow the lists a statement builds; stop following those it changes otherwise."""
        import libcst as cst

        if isinstance(stmt, cst.BaseSmallStatement):
            self.follow(stmt, self.follow_small(stmt))
        else:
            self.follow(stmt, self.read)
            self.read = frozenset()

    def ordered(self, candidates: list[Candidate]) -> list[Candidate]:
        """``candidates`` with each template's variants after it (a ``{}`` template replaced)."""
        if not self.variants:
            return candidates
        out: list[Candidate] = []
        for candidate in candidates:
            if id(candidate) not in self.expanded:
                out.append(candidate)
            out.extend(self.variants.get(id(candidate), ()))
        return out

    def follow(self, node: cst.CSTNode, handled: frozenset[str]) -> None:
        """Stop following the lists and configs a module-level statement may change: every name
        it mentions, except those it was understood to read or set (``handled``)."""
        if not self.lists and not self.singles:
            return
        # Words of the source text: a superset of the names (strings and comments add some).
        for name in set(_WORD.findall(self.host.source(node))):
            if name not in handled:
                self.lists.pop(name, None)
                self.singles.pop(name, None)

    def follow_small(self, small: cst.BaseSmallStatement) -> frozenset[str]:
        """Follow ``x = [dict(…), …]``, ``x = dict(…)``, ``x.append(dict(…))``, ``x.extend(y)``
        and ``x.extend([…])``; return the names the statement is understood to read or set."""
        import libcst as cst

        target: cst.BaseExpression | None = None
        value: cst.BaseExpression | None = None
        if isinstance(small, cst.Assign) and len(small.targets) == 1:
            target, value = small.targets[0].target, small.value
        elif isinstance(small, cst.AnnAssign):
            target, value = small.target, small.value
        if isinstance(target, cst.Name) and value is not None:
            name = target.value
            self.lists.pop(name, None)
            self.singles.pop(name, None)
            if isinstance(value, cst.List | cst.Tuple):
                items = self.template_items(value)
                if items is not None:
                    self.lists[name] = items[0]
                    return frozenset({name, *items[1]})
            elif value in self.templates:
                self.singles[name] = self.templates[value]
                return frozenset({name})
            return frozenset()
        if not (
            isinstance(small, cst.Expr)
            and isinstance(small.value, cst.Call)
            and isinstance(small.value.func, cst.Attribute)
            and isinstance(small.value.func.value, cst.Name)
            and small.value.func.attr.value in ("append", "extend")
            and len(small.value.args) == 1
            and small.value.args[0].keyword is None
            and not small.value.args[0].star
        ):
            return frozenset()
        owner = small.value.func.value.value
        method = small.value.func.attr.value
        arg = small.value.args[0].value
        followed = self.lists.get(owner)
        if method == "append":
            if followed is not None and arg in self.templates:
                followed.append(self.templates[arg])
                return frozenset({owner})
            return frozenset()
        if isinstance(arg, cst.Name) and arg.value in self.lists:
            # ``configs.extend(pythia)`` reads pythia (whether or not configs is followed).
            if followed is not None:
                followed.extend(self.lists[arg.value])
            return frozenset({owner, arg.value} if followed is not None else {arg.value})
        if followed is not None and isinstance(arg, cst.List | cst.Tuple):
            items = self.template_items(arg)
            if items is not None:
                followed.extend(items[0])
                return frozenset({owner, *items[1]})
        return frozenset()

    def template_items(
        self, literal: cst.List | cst.Tuple
    ) -> tuple[list[_Template], set[str]] | None:
        """The templates a list literal holds (``*other`` splices a followed list) and the
        lists it splices; None when an item is anything else."""
        import libcst as cst

        items: list[_Template] = []
        spliced: set[str] = set()
        for element in literal.elements:
            if isinstance(element, cst.Element) and element.value in self.templates:
                items.append(self.templates[element.value])
            elif (
                isinstance(element, cst.StarredElement)
                and isinstance(element.value, cst.Name)
                and element.value.value in self.lists
            ):
                items.extend(self.lists[element.value.value])
                spliced.add(element.value.value)
            else:
                return None
        return items, spliced

    def expand(self, loop: cst.For, env: dict[str, Folded]) -> frozenset[str]:
        """Add one candidate per iteration of a variant loop (see the module docstring) and
        return the followed names it reads; a loop not understood adds nothing."""
        plan = self.loop_plan(loop)
        if plan is None:
            return frozenset()
        # Without a loop over templates the loop copies one named config (``falcon180b``).
        start = None if None in plan.levels else plan.templates[0]
        iterations: list[tuple[_Template | None, dict[str, str]]] = [(start, {})]
        for level in plan.levels:
            if len(iterations) * len(plan.templates if level is None else level[1]) > _MAX_VARIANTS:
                return frozenset()
            if level is None:
                iterations = [(t, b) for _, b in iterations for t in plan.templates]
            else:
                names, rows = level
                iterations = [
                    (t, {**b, **dict(zip(names, row, strict=True))})
                    for t, b in iterations
                    for row in rows
                ]
        outside = {k: v for k, v in env.items() if k not in plan.bound}
        shared = len(iterations) > 1
        built: list[tuple[_Template, Mapping, str]] = []
        for template, strings in iterations:
            assert template is not None
            root = template.candidate.root
            scope = LoopScope(strings, plan.template_var, root, plan.copy_var, root, outside)
            for assignment in plan.assignments:
                value = LoopValues(self.host).value(assignment, replace(scope, copy=root), shared)
                if value is None:
                    return frozenset()
                changed = set_path(root, assignment.path, value, self.host.span(assignment.key))
                if changed is None:
                    return frozenset()
                root = changed
            named = root.get("name")
            if not (isinstance(named, Scalar) and named.known and isinstance(named.value, str)):
                return frozenset()
            built.append((template, root, named.value))
        for template, root, name in built:
            original = template.candidate
            variant = Candidate(
                name=self.host.unique(f"{template.label} {name}" if name else template.label),
                root=root,
                key_prefix=original.key_prefix,
                kind=original.kind,
            )
            self.variants.setdefault(id(original), []).append(variant)
            template_name = original.root.get("name")
            if isinstance(template_name, Scalar) and has_placeholder(template_name.value):
                self.expanded.add(id(original))
        return plan.read

    def loop_plan(self, loop: cst.For) -> _Loop | None:
        """The shape of a variant loop, or None when the loop is anything else."""
        import libcst as cst

        loops = [loop]
        body = _simple_body(loop.body)
        if body is None:
            inner = suite_blocks(loop.body)
            statements = list(inner[0]) if inner else []
            if len(statements) != 1 or not isinstance(statements[0], cst.For):
                return None
            loops.append(statements[0])
            body = _simple_body(statements[0].body)
            if body is None:
                return None
        levels: list[tuple[tuple[str, ...], tuple[tuple[str, ...], ...]] | None] = []
        bound: list[str] = []
        template_var: str | None = None
        templates: tuple[_Template, ...] = ()
        read: set[str] = set()
        for level in loops:
            if level.asynchronous is not None or level.orelse is not None:
                return None
            target, iterable = level.target, level.iter
            if (
                isinstance(target, cst.Name)
                and isinstance(iterable, cst.Name)
                and iterable.value in self.lists
            ):
                if template_var is not None:
                    return None
                template_var = target.value
                templates = tuple(self.lists[iterable.value])
                read.add(iterable.value)
                levels.append(None)
                bound.append(template_var)
                continue
            names = _loop_targets(target)
            rows = _string_rows(
                iterable, len(names) if isinstance(target, cst.Tuple | cst.List) else 0
            )
            if not names or rows is None:
                return None
            levels.append((names, rows))
            bound.extend(names)
        if len(body) < 3:
            return None
        copied = _copy_statement(body[0], self.deepcopy_names, self.copy_modules)
        appended = _appended(body[-1])
        if copied is None or appended is None:
            return None
        copy_var, source, copier = copied
        if template_var is None:
            single = self.singles.get(source)
            if single is None:
                return None
            template_var, templates = source, (single,)
            read.add(source)
        elif source != template_var:
            return None
        assignments: list[Assignment] = []
        for small in body[1:-1]:
            if not isinstance(small, cst.Assign) or len(small.targets) != 1:
                return None
            path = subscript_path(small.targets[0].target, copy_var)
            if path is None or (copier is None and len(path[0]) > 1):
                return None  # a shallow copy shares its nested dicts with the template
            assignments.append(Assignment(path[0], path[1], small.value))
        # Every name the loop binds or reads must be distinct, and the loop must not rebind the
        # ``deepcopy`` it calls or the list it appends to.
        names_used = [*bound, copy_var] + ([] if template_var in bound else [template_var])
        if (
            not templates
            or len(set(names_used)) != len(names_used)
            or appended[1] != copy_var
            or appended[0] in names_used
            or appended[0] in read  # appending to the list it walks never ends
            or copier in names_used
            or not any(a.path == ("name",) for a in assignments)
        ):
            return None
        return _Loop(
            templates=templates,
            template_var=template_var,
            copy_var=copy_var,
            levels=tuple(levels),
            assignments=tuple(assignments),
            bound=frozenset({*names_used, template_var}),
            # A name the loop rebinds (``for xs in xs``) is no longer the list afterwards.
            read=frozenset(read) - {*bound, copy_var},
        )


def _copy_statement(
    small: cst.BaseSmallStatement, deepcopy_names: frozenset[str], copy_modules: frozenset[str]
) -> tuple[str, str, str | None] | None:
    """``copy = deepcopy(c)`` / ``copy.deepcopy(c)`` (deep), ``c.copy()`` / ``dict(c)``
    (shallow): (the copy's name, the copied name, the name of the deep copier or None)."""
    import libcst as cst

    if not (
        isinstance(small, cst.Assign)
        and len(small.targets) == 1
        and isinstance(small.targets[0].target, cst.Name)
        and isinstance(small.value, cst.Call)
    ):
        return None
    copy_var = small.targets[0].target.value
    call = small.value
    func = call.func
    args = call.args
    if isinstance(func, cst.Attribute) and func.attr.value == "copy" and not args:
        if isinstance(func.value, cst.Name):
            return copy_var, func.value.value, None
        return None
    if len(args) != 1 or args[0].keyword is not None or args[0].star:
        return None
    source = args[0].value
    if not isinstance(source, cst.Name):
        return None
    if isinstance(func, cst.Name) and func.value == "dict":
        return copy_var, source.value, None
    if isinstance(func, cst.Name) and func.value in deepcopy_names:
        return copy_var, source.value, func.value
    if (
        isinstance(func, cst.Attribute)
        and func.attr.value == "deepcopy"
        and isinstance(func.value, cst.Name)
        and func.value.value in copy_modules
    ):
        return copy_var, source.value, func.value.value
    return None


def _copy_imports(module: cst.Module) -> tuple[frozenset[str], frozenset[str]]:
    """Names a module binds at top level to ``copy.deepcopy`` and to the ``copy`` module."""
    import libcst as cst

    deepcopy: set[str] = set()
    modules: set[str] = set()
    for stmt in module.body:
        if not isinstance(stmt, cst.SimpleStatementLine):
            continue
        for small in stmt.body:
            if isinstance(small, cst.ImportFrom) and not small.relative:
                if (
                    isinstance(small.module, cst.Name)
                    and small.module.value == "copy"
                    and not isinstance(small.names, cst.ImportStar)
                ):
                    for alias in small.names:
                        if alias.evaluated_name == "deepcopy":
                            deepcopy.add(alias.evaluated_alias or "deepcopy")
            elif isinstance(small, cst.Import):
                for alias in small.names:
                    if alias.evaluated_name == "copy":
                        modules.add(alias.evaluated_alias or "copy")
    return frozenset(deepcopy), frozenset(modules)


def _simple_body(suite: cst.BaseSuite) -> list[cst.BaseSmallStatement] | None:
    """The small statements of a block made only of simple statement lines, else None."""
    import libcst as cst

    if isinstance(suite, cst.SimpleStatementSuite):
        return list(suite.body)
    if not isinstance(suite, cst.IndentedBlock):
        return None
    smalls: list[cst.BaseSmallStatement] = []
    for stmt in suite.body:
        if not isinstance(stmt, cst.SimpleStatementLine):
            return None
        smalls.extend(stmt.body)
    return smalls


def _loop_targets(target: cst.BaseAssignTargetExpression) -> tuple[str, ...]:
    """``kind`` or ``kind, postfix`` (plain names only); empty for anything else."""
    import libcst as cst

    if isinstance(target, cst.Name):
        return (target.value,)
    if isinstance(target, cst.Tuple | cst.List):
        names: list[str] = []
        for element in target.elements:
            if not (isinstance(element, cst.Element) and isinstance(element.value, cst.Name)):
                return ()
            names.append(element.value.value)
        return tuple(names)
    return ()


def _string_rows(iterable: cst.BaseExpression, arity: int) -> tuple[tuple[str, ...], ...] | None:
    """The rows a tuple/list literal of strings gives a loop: ``("", "-chat")`` for one name
    (``arity`` 0), ``(("", "-x"), ("-chat", "-y"))`` for ``arity`` names; None otherwise."""
    import libcst as cst

    if not isinstance(iterable, cst.Tuple | cst.List) or not iterable.elements:
        return None
    rows: list[tuple[str, ...]] = []
    for element in iterable.elements:
        if not isinstance(element, cst.Element):
            return None
        if arity == 0:
            items: list[cst.BaseExpression] = [element.value]
        elif isinstance(element.value, cst.Tuple | cst.List):
            items = []
            for item in element.value.elements:
                if not isinstance(item, cst.Element):
                    return None
                items.append(item.value)
            if len(items) != arity:
                return None
        else:
            return None
        row = tuple(string_value(item) for item in items)
        if any(value is None for value in row):
            return None
        rows.append(tuple(value for value in row if value is not None))
    return tuple(rows)


def _appended(small: cst.BaseSmallStatement) -> tuple[str, str] | None:
    """``configs.append(copy)``: (the list's name, the appended name)."""
    import libcst as cst

    if not (isinstance(small, cst.Expr) and isinstance(small.value, cst.Call)):
        return None
    call = small.value
    if not (
        isinstance(call.func, cst.Attribute)
        and isinstance(call.func.value, cst.Name)
        and call.func.attr.value == "append"
        and len(call.args) == 1
        and call.args[0].keyword is None
        and not call.args[0].star
        and isinstance(call.args[0].value, cst.Name)
    ):
        return None
    return call.func.value.value, call.args[0].value.value
