"""The kernel fusions a training step may use (the target's ``fused`` option).

Standard library only: the command line validates ``--fused`` with `fusions` without loading
the performance model.
"""

from __future__ import annotations

FUSIONS: tuple[str, ...] = (
    "norm",
    "swiglu",
    "rope",
    "softmax",
    "dropout",
    "adamw",
    "cross_entropy",
    "fp8_cast",
)
DEFAULT_FUSED: frozenset[str] = frozenset(
    {"norm", "swiglu", "rope", "softmax", "dropout", "adamw", "fp8_cast"}
)


def fusions(spec: str) -> frozenset[str]:
    """The fused ops a target's ``fused`` option names: ``default``, ``none``, ``all``, or a
    comma list of `FUSIONS`; ``+name``/``-name`` add to or remove from what precedes
    (``default,+cross_entropy``). Raises ValueError naming an unknown entry."""
    out: set[str] = set()
    for raw in spec.split(","):
        item = raw.strip().lower()
        sign = item[:1] if item[:1] in "+-" else ""
        name = item[len(sign) :].strip().replace("-", "_")
        if not name:
            continue
        if name in ("default", "all", "none") and not sign:
            out = set({"default": DEFAULT_FUSED, "all": FUSIONS, "none": ()}[name]) | (
                out if name == "default" else set()
            )
        elif name in FUSIONS:
            if sign == "-":
                out.discard(name)
            else:
                out.add(name)
        else:
            known = ", ".join(("default", "none", "all", *FUSIONS))
            raise ValueError(f"unknown fusion {raw.strip()!r} (known: {known})")
    return frozenset(out)


def fused_spec(spec: str) -> str:
    """``spec`` checked and written the one way: ``default``/``none``/``all`` when it names
    exactly one of those sets, else the sorted list of fused ops (``norm,rope``), or
    ``none``. Raises ValueError as `fusions` does."""
    chosen = fusions(spec)
    for name, ops in (("default", DEFAULT_FUSED), ("all", frozenset(FUSIONS))):
        if chosen == ops:
            return name
    return ",".join(f for f in FUSIONS if f in chosen) or "none"


__all__ = ["DEFAULT_FUSED", "FUSIONS", "fused_spec", "fusions"]
