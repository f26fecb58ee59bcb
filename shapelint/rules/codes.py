"""Rule codes and names as users type them: validate selectors, find a rule, suggest the closest.

``--select``, ``--ignore``, ``per-file-ignores``, ``[severity]`` and baselines name rules by code
or code prefix (``SL1``). A selector that matches no rule in the registry cannot mean anything,
so it is refused with the closest known code rather than silently checking nothing.
"""

from __future__ import annotations

from collections.abc import Iterable

from shapelint.rules import REGISTRY, RuleModule


class UnknownCodeError(ValueError):
    """A rule code, prefix or name that matches no rule; the message is one line."""


def _prefixes() -> list[str]:
    out = {"ALL"}
    for code in REGISTRY:
        out.update(code[:i] for i in range(2, len(code) + 1))
    return sorted(out)


def _names() -> dict[str, str]:
    return {m.RULE.name: code for code, m in REGISTRY.items()}


def closest(text: str, *, prefixes: bool = True) -> str | None:
    """The known code closest to ``text`` (a prefix of the same length first, when
    ``prefixes``; a rule named like ``text`` gives its code), or None."""
    import difflib  # only once a code is unknown

    names = _names()
    upper = text.strip().upper()
    if text.strip().lower() in names:
        return names[text.strip().lower()]
    if upper.startswith("SL"):  # letters typed for digits: SL1O1, SL10l
        digits = upper[2:].translate(str.maketrans("OLI", "011"))
        if "SL" + digits in REGISTRY or (prefixes and is_selector("SL" + digits)):
            return "SL" + digits
    codes = sorted(REGISTRY)
    same_length = [p for p in _prefixes() if len(p) == len(upper)] if prefixes else []
    for pool in (same_length, codes):
        found = difflib.get_close_matches(upper, pool, n=1, cutoff=0.5)
        if found:
            return found[0]
    found = difflib.get_close_matches(text.strip().lower(), list(names), n=1, cutoff=0.6)
    return names[found[0]] if found else None


def is_selector(code: str) -> bool:
    """True when ``code`` is ``ALL`` or a prefix of at least one registered rule code."""
    upper = code.strip().upper()
    return upper == "ALL" or (upper.startswith("SL") and any(c.startswith(upper) for c in REGISTRY))


def check_selectors(codes: Iterable[str], where: str) -> None:
    """Raise `UnknownCodeError` (one line naming ``where``) for the first code or prefix in
    ``codes`` that matches no rule."""
    for code in codes:
        if is_selector(code):
            continue
        names = _names()
        if code.strip().lower() in names:
            hint = f"; it is the name of {names[code.strip().lower()]}, use the code"
        else:
            near = closest(code)
            hint = f"; did you mean {near!r}?" if near else ""
        raise UnknownCodeError(
            f"{where}: unknown rule code or prefix {code!r} (`shapelint rules` lists them){hint}"
        )


def find_rule(text: str) -> RuleModule | None:
    """The rule whose code (any case) or name is ``text``, or None."""
    key = text.strip()
    module = REGISTRY.get(key.upper())
    if module is not None:
        return module
    code = _names().get(key.lower())
    return REGISTRY[code] if code is not None else None


__all__ = ["UnknownCodeError", "check_selectors", "closest", "find_rule", "is_selector"]
