"""GPU families: the constants each family's GPUs share, and what a GPU entry takes from them.

The GPU table (``gpus.yaml``) has a ``families`` section beside its ``gpus``: for each family
(volta, ampere, ada, hopper, blackwell, cdna2, cdna3, and ``unknown`` for the defaults) the
CUDA compute capabilities that name it and every family constant, each a ``value`` with its
source or ``from`` another family that stands in. A GPU entry states its family (``arch``) or
lets its compute capability name it, and takes its family's value for each constant it does not
state itself; a GPU file's entry that inherits says so in its `Inheritance.note`.

The constants (`FAMILY_FIELDS`) and what reads them:

- ``memory_stream_fraction``: the memory-bound ops of a step (`shapelint.perf.ops`);
- ``step_sustained_fraction`` and ``attention_scale``: the whole-step calibration
  (`shapelint.perf.estimate`);
- ``attention_figures``: whose FlashAttention figures stand for the GPU
  (`shapelint.perf.attention`);
- ``align_factor``, ``kernel_cliffs`` and ``tile_overhead_k``: the GEMM model
  (`shapelint.perf.gemm`);
- ``default_flash_kernel``: the kernel ``--attention flash`` runs (`shapelint.perf.workload`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

# The family of a GPU whose family is neither stated nor named by its compute capability.
UNKNOWN = "unknown"

Capability = tuple[int, int]


def _fraction(raw: object) -> float:
    value = float(raw)  # type: ignore[arg-type]
    if not 0.0 < value <= 1.0:
        raise ValueError(f"{raw!r} is not a fraction in (0, 1]")
    return value


def _non_negative(raw: object) -> float:
    value = float(raw)  # type: ignore[arg-type]
    if value < 0:
        raise ValueError(f"{raw!r} is negative")
    return value


def _scales(raw: object) -> Mapping[str, float]:
    if not isinstance(raw, Mapping):
        raise ValueError(f"expected a mapping of kernel to scale, got {raw!r}")
    return MappingProxyType({str(k): float(v) for k, v in raw.items()})


def _align(raw: object) -> Mapping[int, float]:
    if not isinstance(raw, Mapping):
        raise ValueError(f"expected a mapping of bytes to factor, got {raw!r}")
    out: dict[int, float] = {}
    for k, v in raw.items():
        nbytes = int(str(k))
        if nbytes <= 0 or nbytes & (nbytes - 1):
            raise ValueError(f"alignment {k!r} is not a power of two")
        out[nbytes] = _fraction(v)
    return MappingProxyType(dict(sorted(out.items())))


Regime = str  # "tiled" (thread-block tiles) or "skinny" (M ≤ 64: GEMV and split-K kernels)
REGIMES = ("tiled", "skinny")
OPERANDS = ("A", "B", "C")
CLIFF_DTYPES = ("fp32", "tf32", "bf16", "fp16", "fp8")


@dataclass(frozen=True)
class Cliff:
    """One measured kernel-selection cliff: GEMMs of ``dtypes`` in ``regime`` whose leading
    dimension of one of ``operands`` (A, B, the output C) is aligned to at most
    ``ld_align_bytes`` bytes run in a slower kernel family, at ``factor`` of the aligned
    model's rate (compute and memory alike). ``measured`` names the measurement."""

    dtypes: tuple[str, ...]
    regime: Regime
    ld_align_bytes: int
    operands: tuple[str, ...]
    factor: float
    measured: str

    def as_dict(self) -> dict[str, Any]:
        """The row as a GPU table writes it."""
        return {
            "dtypes": list(self.dtypes),
            "regime": self.regime,
            "ld_align_bytes": self.ld_align_bytes,
            "operands": list(self.operands),
            "factor": self.factor,
            "measured": self.measured,
        }


def _pick(raw: Mapping[str, Any], key: str, allowed: tuple[str, ...]) -> tuple[str, ...]:
    values = raw.get(key)
    if not isinstance(values, (list, tuple)) or not values:
        raise ValueError(f"{key}: expected a non-empty list of {', '.join(allowed)}")
    out = tuple(str(v) for v in values)
    bad = [v for v in out if v not in allowed]
    if bad:
        raise ValueError(f"{key}: {', '.join(bad)} not one of {', '.join(allowed)}")
    return out


def _cliffs(raw: object) -> tuple[Cliff, ...]:
    if not isinstance(raw, (list, tuple)):
        raise ValueError(f"expected a list of cliffs, got {raw!r}")
    out: list[Cliff] = []
    for i, row in enumerate(raw):
        try:
            if not isinstance(row, Mapping):
                raise ValueError("expected a mapping")
            regime = str(row.get("regime"))
            if regime not in REGIMES:
                raise ValueError(f"regime {regime!r} not one of {', '.join(REGIMES)}")
            nbytes = int(row["ld_align_bytes"])
            if nbytes <= 0 or nbytes & (nbytes - 1):
                raise ValueError(f"ld_align_bytes {nbytes} is not a power of two")
            measured = row.get("measured")
            if not isinstance(measured, str) or not measured:
                raise ValueError("measured: the measurement the factor comes from is required")
            out.append(
                Cliff(
                    dtypes=_pick(row, "dtypes", CLIFF_DTYPES),
                    regime=regime,
                    ld_align_bytes=nbytes,
                    operands=_pick(row, "operands", OPERANDS),
                    factor=_fraction(row.get("factor")),
                    measured=measured,
                )
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise ValueError(f"cliff {i}: {exc}") from None
    return tuple(out)


def _name(raw: object) -> str:
    if not isinstance(raw, str) or not raw:
        raise ValueError(f"expected a name, got {raw!r}")
    return raw


# Each family constant with the reading of its value (gpus.schema.json describes each).
FAMILY_FIELDS: Mapping[str, Callable[[object], Any]] = MappingProxyType(
    {
        "memory_stream_fraction": _fraction,
        "step_sustained_fraction": _fraction,
        "attention_scale": _scales,
        "attention_figures": _name,
        "align_factor": _align,
        "kernel_cliffs": _cliffs,
        "tile_overhead_k": _non_negative,
        "default_flash_kernel": _name,
    }
)


def capability(raw: object) -> Capability:
    """``(9, 0)`` for ``"9.0"`` or ``9.0``; ValueError for anything else."""
    if isinstance(raw, bool) or not isinstance(raw, (str, int, float)):
        raise ValueError(f"compute capability {raw!r} is not major.minor")
    major, dot, minor = str(raw).strip().partition(".")
    if not (major.isdigit() and (not dot or minor.isdigit())):
        raise ValueError(f"compute capability {raw!r} is not major.minor")
    return int(major), int(minor or 0)


def sm(cap: Capability) -> str:
    """``sm90`` for (9, 0)."""
    return f"sm{cap[0]}{cap[1]}"


@dataclass(frozen=True)
class Family:
    """One family: the compute capabilities that name it and its constants (`FAMILY_FIELDS`
    → value), ``from`` references resolved."""

    name: str
    capabilities: tuple[Capability, ...]
    constants: Mapping[str, Any]


def families_from(
    raw: Mapping[str, Any], base: Mapping[str, Family] | None = None
) -> dict[str, Family]:
    """The families of a table's ``families`` section, over ``base`` (a family of the same
    name replaces the base one; ``from`` may name a family here or in ``base``). ValueError
    naming family and constant on a malformed value, an unknown ``from`` or a cycle."""
    out = dict(base or {})

    def resolve(name: str, key: str, seen: tuple[str, ...]) -> Any:
        if name in seen:
            raise ValueError(f"family {seen[0]!r}: {key}: 'from' goes round ({' → '.join(seen)})")
        if name not in raw:
            if name in out and name not in seen:
                return out[name].constants[key]
            raise ValueError(f"family {seen[-1]!r}: {key}: from unknown family {name!r}")
        spec = raw[name].get(key) if isinstance(raw[name], Mapping) else None
        if not isinstance(spec, Mapping):
            raise ValueError(f"family {name!r}: {key} missing")
        if "value" in spec:
            try:
                return FAMILY_FIELDS[key](spec["value"])
            except (TypeError, ValueError) as exc:
                raise ValueError(f"family {name!r}: {key}: {exc}") from None
        return resolve(str(spec.get("from")), key, (*seen, name))

    resolved: dict[str, Family] = {}
    for name, spec in raw.items():
        caps = spec.get("compute_capabilities") if isinstance(spec, Mapping) else None
        try:
            listed = tuple(capability(c) for c in (caps or {}).get("value", ()))
        except (TypeError, ValueError, AttributeError) as exc:
            raise ValueError(f"family {name!r}: compute_capabilities: {exc}") from None
        constants = {key: resolve(str(name), key, ()) for key in FAMILY_FIELDS}
        resolved[str(name)] = Family(str(name), listed, MappingProxyType(constants))
    out.update(resolved)
    return out


def family_of(cap: Capability, families: Mapping[str, Family]) -> str | None:
    """The family whose compute capabilities list ``cap``, or None."""
    for family in families.values():
        if cap in family.capabilities:
            return family.name
    return None


@dataclass(frozen=True)
class Inheritance:
    """What one GPU entry takes from its family: the family and how it was found, the
    compute capability, and every constant (its own where stated)."""

    family: str
    found_by: str  # "arch", "compute capability 9.0", or "" (undetermined: the defaults)
    capability: Capability | None
    constants: Mapping[str, Any]
    inherited: tuple[str, ...]  # the fields taken from the family, compute_capability first

    def note(self, gpu: str, label: str) -> str:
        """One line on what ``gpu`` of table ``label`` took from its family ("" for none)."""
        if not self.inherited and self.found_by and self.capability is not None:
            return ""
        taken = ", ".join(
            f"compute capability {self.capability[0]}.{self.capability[1]}"
            if f == "compute_capability" and self.capability
            else f
            for f in self.inherited
        )
        if self.found_by:
            text = f"GPU {gpu!r} ({label}) takes {taken} from the {self.family} family"
            text += "" if self.found_by == "arch" else f" (named by its {self.found_by})"
        else:
            text = (
                f"GPU {gpu!r} ({label}) states no arch and no compute capability that names "
                f"a family: the defaults apply ({taken or 'nothing inherited'})"
            )
        if self.capability is None:
            text += "; compute capability unknown: rules that choose kernels by it skip this GPU"
        return text


def inherit(entry: Mapping[str, Any], vendor: str, families: Mapping[str, Family]) -> Inheritance:
    """What ``entry`` (one GPU of a table) takes from its family: the stated ``arch``, else the
    family its ``compute_capability`` names, else `UNKNOWN`. The compute capability is
    inherited only from an NVIDIA family that has a single one. ValueError on an unknown
    ``arch``, a malformed compute capability or constant."""
    cap = (
        None if entry.get("compute_capability") is None else capability(entry["compute_capability"])
    )
    stated = entry.get("arch")
    if stated is not None:
        name, found_by = str(stated), "arch"
        if name not in families:
            known = ", ".join(sorted(families))
            raise ValueError(f"arch {name!r} is not a family of the table (known: {known})")
    else:
        named = family_of(cap, families) if cap is not None else None
        name = named or UNKNOWN
        found_by = f"compute capability {cap[0]}.{cap[1]}" if named and cap else ""
    family = families[name]
    inherited: list[str] = []
    if cap is None and vendor == "nvidia" and len(family.capabilities) == 1:
        cap = family.capabilities[0]
        inherited.append("compute_capability")
    constants: dict[str, Any] = {}
    for key, read in FAMILY_FIELDS.items():
        if key in entry:
            try:
                constants[key] = read(entry[key])
            except (TypeError, ValueError) as exc:
                raise ValueError(f"{key}: {exc}") from None
        else:
            constants[key] = family.constants[key]
            inherited.append(key)
    return Inheritance(name, found_by, cap, MappingProxyType(constants), tuple(inherited))
