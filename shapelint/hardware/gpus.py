"""The GPU table: load, validate and look up GPUs by name or alias.

The built-in table is ``gpus.yaml`` beside this module; every figure in it carries a source.
A user may pass a YAML file of their own with the same layout: its entries are validated
against ``gpus.schema.json`` and merged over the built-in ones (a user entry with the name or an
alias of a built-in GPU replaces it for that name).

The built-in table is read from ``gpus_snapshot.json``, the YAML parsed once and stored with
the digest of the YAML text it came from (``python scripts/gen_gpu_snapshot.py`` writes it), so
a run neither imports PyYAML nor parses YAML for it. When ``gpus.yaml`` no longer matches the
digest, the YAML itself is parsed: an edited table is never read stale, only more slowly (and
``tests/perf/test_gpu_snapshot.py`` fails until the snapshot is regenerated).

Names are matched case-insensitively, with ``-``, ``_`` and spaces ignored, so ``h100``,
``H100_SXM`` and ``h100 sxm`` all find an entry when it has the matching name or alias.
"""

from __future__ import annotations

import functools
import json
import os
import re
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, TypeVar

from shapelint.core.digest import digest
from shapelint.core.limits import non_finite
from shapelint.core.text import one_line
from shapelint.hardware.arch import UNKNOWN, Cliff, Family, families_from, inherit

T = TypeVar("T")

_BUILTIN = "gpus.yaml"
_SNAPSHOT = "gpus_snapshot.json"
_SCHEMA = "gpus.schema.json"
_HERE = os.path.dirname(os.path.abspath(__file__))


class GPUTableError(ValueError):
    """A GPU table file is unreadable or violates the schema; the message names file and key."""


class UnknownGPUError(ValueError):
    """No GPU has this name or alias; the message lists the closest known names."""


class UnsupportedDtypeError(ValueError):
    """The GPU has no (tensor-core) rate for this dtype, e.g. fp8 on an A100."""


def normalize(name: str) -> str:
    """The lookup key of a GPU name: lower case, with ``-``, ``_`` and whitespace removed."""
    return re.sub(r"[-_\s]+", "", str(name).strip().lower())


@dataclass(frozen=True)
class GPU:
    """One GPU's figures. ``sms`` holds SMs (NVIDIA) or compute units (AMD).

    ``peak_tflops`` holds dense peak TFLOP/s per dtype; ``achievable_fraction`` the measured
    best-case fraction of that peak for large matmuls, or the table's default where no
    measurement exists (``measured_dtypes`` says which are measured). ``boost_mhz`` and
    ``l2_mb`` are None where the vendor does not publish them.
    """

    name: str
    vendor: str
    sms: int
    boost_mhz: float | None
    peak_tflops: Mapping[str, float]
    mem_bw_gbs: float
    mem_gb: float
    l2_mb: float | None
    best_align_bytes: int
    achievable_fraction: Mapping[str, float]
    # The family constants (hardware/arch.py, FAMILY_FIELDS): the entry's own, else its
    # family's (gpus.yaml, ``families``; gpus.schema.json describes each).
    memory_stream_fraction: float
    step_sustained_fraction: float
    attention_scale: Mapping[str, float]
    attention_figures: str
    align_factor: Mapping[int, float]
    kernel_cliffs: tuple[Cliff, ...]
    tile_overhead_k: float
    default_flash_kernel: str
    aliases: tuple[str, ...] = ()
    source: tuple[str, ...] = ()
    notes: str = ""
    measured_dtypes: frozenset[str] = field(default_factory=frozenset)
    # The GPU family (gpus.yaml, ``families``): the one stated, else the one the compute
    # capability names, else "unknown" (the defaults).
    arch: str = "unknown"
    # CUDA compute capability (major, minor), None where unknown (AMD, or not given).
    compute_capability: tuple[int, int] | None = None
    # What a GPU file's entry took from its family, in one line ("" when nothing, and always
    # for built-in entries); the commands print it as a note.
    family_note: str = ""
    # GPU-to-GPU bandwidth per direction in one node (GB/s), None where the table has none.
    interconnect_gbs: float | None = None
    # The reference system (a DGX) the two fields below describe, the GPUs one NVLink/NVSwitch
    # domain of it joins, and its scale-out network bandwidth per GPU, per direction (GB/s);
    # None where the table has none. Not used by the model yet.
    reference_node: str | None = None
    gpus_per_node: int | None = None
    inter_node_gbs: float | None = None

    def peak(self, dtype: str) -> float:
        """Dense peak TFLOP/s for ``dtype``; UnsupportedDtypeError if the GPU lacks it."""
        try:
            return self.peak_tflops[dtype]
        except KeyError:
            have = ", ".join(self.peak_tflops)
            raise UnsupportedDtypeError(
                f"{self.name} has no {dtype} rate in the GPU table (it has: {have})"
            ) from None

    def achievable_flops(self, dtype: str) -> float:
        """Best-case matmul FLOP/s: dense peak times the measured (or default) fraction."""
        return self.peak(dtype) * 1e12 * self.achievable_fraction[dtype]

    def ridge_point(self, dtype: str) -> float:
        """Roofline ridge in FLOP/byte: dense peak FLOP/s over memory bytes/s.

        This is the textbook ridge (NVIDIA's guide gives 138.9 for V100 fp16); below it a
        kernel cannot reach peak however well it is tiled.
        """
        return self.peak(dtype) * 1e12 / (self.mem_bw_gbs * 1e9)


class GPUTable:
    """GPUs by canonical name, with alias lookup."""

    def __init__(self, gpus: Mapping[str, GPU], index: Mapping[str, str]) -> None:
        self._gpus = dict(gpus)
        self._index = dict(index)

    def lookup(self, name: str) -> GPU:
        """The GPU whose name or alias matches ``name``; UnknownGPUError if none does."""
        key = normalize(name)
        canonical = self._index.get(key)
        if canonical is None:
            raise UnknownGPUError(self._unknown_message(name))
        return self._gpus[canonical]

    def _unknown_message(self, name: str) -> str:
        import difflib  # only for an unknown name's suggestions

        close = difflib.get_close_matches(normalize(name), list(self._index), n=8, cutoff=0.5)
        suggestions: list[str] = []
        for key in close:
            canonical = self._index[key]
            if canonical not in suggestions:
                suggestions.append(canonical)
        msg = f"unknown GPU {name!r}"
        if suggestions:
            msg += "; did you mean " + ", ".join(suggestions[:4]) + "?"
        return msg + " (known: " + ", ".join(self.names) + ")"

    @property
    def names(self) -> tuple[str, ...]:
        """Canonical names, in table order."""
        return tuple(self._gpus)

    def __iter__(self) -> Iterator[GPU]:
        return iter(self._gpus.values())

    def __len__(self) -> int:
        return len(self._gpus)

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and normalize(name) in self._index


def _package_text(name: str) -> str:
    with open(os.path.join(_HERE, name), encoding="utf-8") as fh:
        return fh.read()


def _read_yaml(text: str, label: str) -> dict[str, Any]:
    import yaml  # only for a user's GPU file or a built-in table newer than its snapshot

    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # libyaml when PyYAML has it
    try:
        data = yaml.load(text, Loader=loader)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f":{mark.line + 1}:{mark.column + 1}" if mark is not None else ""
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise GPUTableError(f"{label}{where}: not valid YAML: {problem}") from None
    if not isinstance(data, dict):
        raise GPUTableError(f"{label}: expected a mapping with a 'gpus' key")
    return data


def _schema() -> dict[str, Any]:
    schema: dict[str, Any] = json.loads(_package_text(_SCHEMA))
    return schema


def _describe_path(path: list[object]) -> str:
    if len(path) >= 2 and path[0] == "gpus":
        where = f"entry {path[1]!r}"
        if len(path) > 2:
            where += ", key " + repr(".".join(str(p) for p in path[2:]))
        return where
    if path:
        return "key " + repr(".".join(str(p) for p in path))
    return "top level"


def validate(data: Mapping[str, Any], label: str) -> None:
    """Check ``data`` against the GPU table schema; GPUTableError naming file, entry and key."""
    import jsonschema  # imported here: it costs ~0.13 s and the built-in table needs no check

    bad = non_finite(data)
    if bad is not None:  # the schema's bounds cannot refuse NaN: every comparison is false
        path, value = bad
        where = _describe_path(list(path))
        raise GPUTableError(f"{label}: {where}: expected a finite number, got {value}")
    validator = jsonschema.Draft202012Validator(_schema())
    errors = sorted(validator.iter_errors(data), key=lambda e: [str(p) for p in e.absolute_path])
    if not errors:
        return
    # One line per problem, each cut to a readable length (a message quotes the value).
    lines = [
        one_line(f"{label}: {_describe_path(list(e.absolute_path))}: {e.message}")
        for e in errors[:20]
    ]
    if len(errors) > 20:
        lines.append(f"{label}: and {len(errors) - 20} more problems")
    raise GPUTableError("\n".join(lines))


def _optional(raw: Mapping[str, Any], key: str, kind: Callable[[Any], T]) -> T | None:
    value = raw.get(key)
    return None if value is None else kind(value)


def _gpus_from(
    data: Mapping[str, Any],
    label: str,
    default: float,
    families: Mapping[str, Family],
    notes: bool,
) -> dict[str, GPU]:
    out: dict[str, GPU] = {}
    for name, raw in (data.get("gpus") or {}).items():
        try:
            vendor = str(raw["vendor"])
            try:
                taken = inherit(raw, vendor, families)
            except ValueError as exc:
                raise GPUTableError(f"{label}: entry {name!r}: {exc}") from None
            constants = taken.constants
            peak = {str(k): float(v) for k, v in raw["peak_tflops"].items()}
            measured = {str(k): float(v) for k, v in (raw.get("achievable_fraction") or {}).items()}
            source = raw["source"]
            out[str(name)] = GPU(
                name=str(name),
                vendor=vendor,
                sms=int(raw["sms"]),
                boost_mhz=None if raw.get("boost_mhz") is None else float(raw["boost_mhz"]),
                peak_tflops=MappingProxyType(peak),
                mem_bw_gbs=float(raw["mem_bw_gbs"]),
                mem_gb=float(raw["mem_gb"]),
                l2_mb=None if raw.get("l2_mb") is None else float(raw["l2_mb"]),
                best_align_bytes=int(raw["best_align_bytes"]),
                achievable_fraction=MappingProxyType({d: measured.get(d, default) for d in peak}),
                aliases=tuple(str(a) for a in raw.get("aliases") or ()),
                source=(str(source),) if isinstance(source, str) else tuple(map(str, source)),
                notes=str(raw.get("notes", "")),
                measured_dtypes=frozenset(d for d in measured if d in peak),
                memory_stream_fraction=constants["memory_stream_fraction"],
                step_sustained_fraction=constants["step_sustained_fraction"],
                attention_scale=constants["attention_scale"],
                attention_figures=constants["attention_figures"],
                align_factor=constants["align_factor"],
                kernel_cliffs=constants["kernel_cliffs"],
                tile_overhead_k=constants["tile_overhead_k"],
                default_flash_kernel=constants["default_flash_kernel"],
                arch=taken.family,
                compute_capability=taken.capability,
                family_note=taken.note(str(name), label) if notes else "",
                interconnect_gbs=_optional(raw, "interconnect_gbs", float),
                reference_node=_optional(raw, "reference_node", str),
                gpus_per_node=_optional(raw, "gpus_per_node", int),
                inter_node_gbs=_optional(raw, "inter_node_gbs", float),
            )
        except GPUTableError:
            raise
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise GPUTableError(f"{label}: entry {name!r}: malformed ({exc})") from None
    return out


def _families(
    data: Mapping[str, Any], label: str, base: Mapping[str, Family] | None
) -> dict[str, Family]:
    raw = data.get("families") or {}
    try:
        if not isinstance(raw, Mapping):
            raise ValueError("'families' is not a mapping")
        families = families_from(raw, base)
    except ValueError as exc:
        raise GPUTableError(f"{label}: {exc}") from None
    if UNKNOWN not in families:
        raise GPUTableError(f"{label}: no {UNKNOWN!r} family (the defaults)")
    return families


def _default_fraction(data: Mapping[str, Any], fallback: float) -> float:
    entry = data.get("default_achievable_fraction")
    if isinstance(entry, Mapping) and isinstance(entry.get("value"), (int, float)):
        return float(entry["value"])
    return fallback


def _index(gpus: Mapping[str, GPU], label: str) -> dict[str, str]:
    index: dict[str, str] = {}
    for gpu in gpus.values():
        for key in {normalize(gpu.name), *(normalize(a) for a in gpu.aliases)}:
            other = index.get(key)
            if other is not None and other != gpu.name:
                raise GPUTableError(
                    f"{label}: entry {gpu.name!r}: name or alias {key!r} is also used by {other!r}"
                )
            index[key] = gpu.name
    return index


def snapshot_text(yaml_text: str) -> str:
    """The snapshot file for the GPU table ``yaml_text``: its digest and parsed data, as JSON."""
    data = _read_yaml(yaml_text, _BUILTIN)
    snapshot = {"yaml_digest": digest(yaml_text.encode("utf-8")), "data": data}
    return json.dumps(snapshot, indent=1, ensure_ascii=False) + "\n"


def data_from(yaml_text: str, snapshot: str | None) -> dict[str, Any]:
    """The table in ``yaml_text``: from ``snapshot`` when it was made from this very text,
    else parsed from the YAML."""
    if snapshot is not None:
        try:
            stored = json.loads(snapshot)
        except ValueError:
            stored = None
        if (
            isinstance(stored, dict)
            and isinstance(stored.get("data"), dict)
            and stored.get("yaml_digest") == digest(yaml_text.encode("utf-8"))
        ):
            data: dict[str, Any] = stored["data"]
            return data
    return _read_yaml(yaml_text, _BUILTIN)


def builtin_data() -> dict[str, Any]:
    """The built-in table's data (from its snapshot when current, else from the YAML)."""
    try:
        snapshot: str | None = _package_text(_SNAPSHOT)
    except OSError:
        snapshot = None
    return data_from(_package_text(_BUILTIN), snapshot)


@functools.lru_cache(maxsize=1)
def _builtin_table() -> tuple[dict[str, GPU], dict[str, str], float, dict[str, Family]]:
    data = builtin_data()
    default = _default_fraction(data, 0.776)
    families = _families(data, _BUILTIN, None)
    gpus = _gpus_from(data, _BUILTIN, default, families, notes=False)
    return gpus, _index(gpus, _BUILTIN), default, families


def load_table(extra: Mapping[str, Any] | None = None, label: str = "GPU file") -> GPUTable:
    """The built-in GPU table, with the entries of ``extra`` (a GPU file's data; ``label``
    names the file in errors) validated and merged over it. A GPU file is read with
    `shapelint.engine.gpu_file.load_table`, the bounded reader every input goes through."""
    gpus, index, default, families = _builtin_table()
    if extra is None:
        return GPUTable(gpus, index)
    if not isinstance(extra, Mapping):
        raise TypeError("a GPU file is read by shapelint.engine.gpu_file.load_table(path)")
    data = extra
    validate(data, label)
    user_families = _families(data, label, families)
    user = _gpus_from(data, label, _default_fraction(data, default), user_families, notes=True)
    user_index = _index(user, label)
    # A user entry with a built-in entry's name replaces it; a user alias that a built-in
    # entry also claims now finds the user's entry.
    replaced = {normalize(g.name) for g in user.values()}
    merged = {n: g for n, g in gpus.items() if normalize(n) not in replaced}
    merged_index = {k: v for k, v in index.items() if v in merged}
    merged_index.update(user_index)
    merged.update(user)
    return GPUTable(merged, merged_index)


def lookup(name: str) -> GPU:
    """Look up one built-in GPU by name or alias."""
    return load_table().lookup(name)
