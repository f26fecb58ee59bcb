"""Python configs from sources the reader was not tuned on: megatron-bridge and torchtune.

The wheels (pinned) are downloaded at test time with ``pip download --no-deps`` into
``.cache/wheels`` and unpacked into a temporary directory (the reader follows base classes
into sibling modules, so the files must sit in their package tree); nothing is installed,
imported or executed, and nothing fetched is committed. Offline, the tests are skipped with
the reason.

The truth comes from an independent reading written here with `ast` — not shapelint's reader:

- megatron-bridge: every class under ``megatron/bridge/models`` whose fields (its own and
  inherited, by Python's C3 order, bases resolved through the package's imports) state
  ``hidden_size``, ``num_attention_heads`` and ``num_layers`` as integers is a model
  provider. Its dims follow Megatron-core's ``TransformerConfig.__post_init__``:
  ``num_query_groups`` (None: the heads), ``kv_channels`` (None: hidden // heads),
  ``ffn_hidden_size`` (None: 4 · hidden), ``vocab_size``, ``num_moe_experts``,
  ``moe_ffn_hidden_size``, ``moe_router_topk``. A class whose chain reaches a base outside the
  wheel other than Megatron-core's ``TransformerConfig`` (MLA's ``MLATransformerConfig``) has
  no derived dims in the truth: only what the wheel states.
- torchtune: every module-level function of ``models/*/_model_builders.py`` that returns a
  call stating ``embed_dim``, ``num_heads`` and ``num_layers`` as integers is a model builder;
  its dims are the keywords it states (``num_kv_heads``, ``intermediate_dim``,
  ``vocab_size``, ``head_dim``).

For each source the coverage is printed (``pytest -s``, or
``python benchmarks/python_corpora_coverage.py``): configs in the truth, found by shapelint,
fully right (every dim of the truth, known and equal), unknown (none wrong, some missing or
unknown), wrong (a known dim that differs). The test asserts no wrong value and the named
models; the ≥ 95 % fully-right target lives in the benchmark.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest
import wheels
from wheels import CACHE, Unreachable, unpack

from shapelint.core.model import Dim, ModelConfig
from shapelint.dialects import extract
from shapelint.readers import parse

pytestmark = [pytest.mark.corpus, pytest.mark.network]

# Pinned so that the numbers are reproducible.
WHEELS = {"megatron-bridge": "0.3.1", "torchtune": "0.6.1"}
DIMS = {
    "hidden": Dim.HIDDEN,
    "heads": Dim.HEADS,
    "kv_heads": Dim.KV_HEADS,
    "head_dim": Dim.HEAD_DIM,
    "ffn": Dim.FFN,
    "layers": Dim.LAYERS,
    "vocab": Dim.VOCAB,
    "experts": Dim.EXPERTS,
    "moe_ffn": Dim.MOE_FFN,
    "experts_per_token": Dim.EXPERTS_PER_TOKEN,
}


def download(cache: Path = CACHE) -> dict[str, Path]:
    """The pinned wheels, downloading those not cached. Raises `Unreachable` when offline."""
    return wheels.download(WHEELS, cache)


# ---- the independent reading (ast) ---------------------------------------------------------

_UNSET = object()  # a field whose value is not a literal


@dataclass
class _Class:
    module: str
    name: str
    fields: dict[str, object]
    bases: list[str]  # as written: "Base", "m.Base"


@dataclass
class _Module:
    dotted: str
    imports: dict[str, str] = field(default_factory=dict)  # local name → "module:Name"
    classes: dict[str, _Class] = field(default_factory=dict)


def _literal(node: ast.expr) -> object:
    try:
        return ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return _UNSET


def _dotted(node: ast.expr) -> str | None:
    if isinstance(node, ast.Subscript):
        node = node.value
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        head = _dotted(node.value)
        return f"{head}.{node.attr}" if head else None
    return None


def _read_module(path: Path, root: Path) -> _Module:
    dotted = ".".join(path.relative_to(root).with_suffix("").parts)
    package = dotted if path.name == "__init__.py" else dotted.rpartition(".")[0]
    dotted = dotted.removesuffix(".__init__")
    module = _Module(dotted)
    tree = ast.parse(path.read_text(encoding="utf-8"))
    for stmt in tree.body:
        if isinstance(stmt, ast.ImportFrom):
            base = package.removesuffix(".__init__")
            if stmt.level:
                parts = base.split(".")
                base = ".".join(parts[: len(parts) - (stmt.level - 1)])
                source = f"{base}.{stmt.module}" if stmt.module else base
            else:
                source = stmt.module or ""
            for alias in stmt.names:
                module.imports[alias.asname or alias.name] = f"{source}:{alias.name}"
        elif isinstance(stmt, ast.Import):
            for alias in stmt.names:
                module.imports[alias.asname or alias.name.split(".")[0]] = (
                    f"{alias.name if alias.asname else alias.name.split('.')[0]}:"
                )
        elif isinstance(stmt, ast.ClassDef):
            fields: dict[str, object] = {}
            for item in stmt.body:
                if isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name):
                    if item.value is not None:
                        fields[item.target.id] = _literal(item.value)
                elif (
                    isinstance(item, ast.Assign)
                    and len(item.targets) == 1
                    and isinstance(item.targets[0], ast.Name)
                ):
                    fields[item.targets[0].id] = _literal(item.value)
            bases = [b for b in (_dotted(x) for x in stmt.bases) if b]
            module.classes[stmt.name] = _Class(dotted, stmt.name, fields, bases)
    return module


class _Tree:
    """Classes of a package tree, with their bases resolved through its imports."""

    def __init__(self, root: Path, under: str) -> None:
        self.modules: dict[str, _Module] = {}
        for path in sorted((root / under).rglob("*.py")):
            module = _read_module(path, root)
            self.modules[module.dotted] = module

    def find(self, module: str, name: str, hops: int = 0) -> _Class | str:
        """The class ``name`` means in ``module``, or its full name when outside the tree."""
        mod = self.modules.get(module)
        if mod is None or hops > 20:
            return f"{module}.{name}"
        head, _, rest = name.partition(".")
        if not rest and head in mod.classes:
            return mod.classes[head]
        target = mod.imports.get(head)
        if target is None:
            return name
        source, _, imported = target.partition(":")
        if imported and not rest:
            return self.find(source, imported, hops + 1)
        parts = ([imported] if imported else []) + rest.split(".")
        return self.find(".".join([source, *parts[:-1]]), parts[-1], hops + 1)

    def mro(self, cls: _Class) -> tuple[list[_Class], list[str]]:
        """Python's C3 linearization of ``cls`` within the tree, and the bases outside it."""
        outside: list[str] = []

        def linear(c: _Class, depth: int) -> list[_Class]:
            if depth > 50:
                raise RecursionError
            bases: list[_Class] = []
            for written in c.bases:
                found = self.find(c.module, written)
                if isinstance(found, _Class):
                    bases.append(found)
                else:
                    outside.append(found)
            seqs = [linear(b, depth + 1) for b in bases] + [bases]
            out = [c]
            while any(seqs):
                for seq in seqs:
                    if not seq:
                        continue
                    head = seq[0]
                    if not any(head in s[1:] for s in seqs):
                        break
                else:
                    raise TypeError("no consistent MRO")
                out.append(head)
                seqs = [s[1:] if s and s[0] is head else s for s in seqs]
            return out

        return linear(cls, 0), outside

    def fields(self, cls: _Class) -> tuple[dict[str, object], list[str]]:
        """Every field of ``cls`` as Python resolves it, and the bases outside the tree."""
        order, outside = self.mro(cls)
        merged: dict[str, object] = {}
        for c in reversed(order):
            merged.update(c.fields)
        return merged, outside


_MCORE_ROOTS = {
    "megatron.core.transformer.transformer_config.TransformerConfig",
    "megatron.core.transformer.transformer_config.ModelParallelConfig",
    "megatron.core.model_parallel_config.ModelParallelConfig",
}
_NEUTRAL = {"ABC", "Generic", "abc.ABC", "object", "TypedDict", "Protocol"}


def _int(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


@dataclass(frozen=True)
class Truth:
    """One config of a source as the independent reading sees it."""

    file: str
    name: str
    dims: dict[str, int]


def megatron_truth(root: Path) -> list[Truth]:
    """Model providers of megatron-bridge, with Megatron-core's own defaults applied."""
    tree = _Tree(root, "megatron/bridge/models")
    out: list[Truth] = []
    for module in tree.modules.values():
        for cls in module.classes.values():
            try:
                fields, outside = tree.fields(cls)
            except (RecursionError, TypeError):
                continue
            hidden, heads = _int(fields.get("hidden_size")), _int(fields.get("num_attention_heads"))
            layers = _int(fields.get("num_layers"))
            if not (hidden and heads and layers):
                continue
            unknown_root = [
                o for o in outside if o not in _MCORE_ROOTS and o.rsplit(".", 1)[-1] not in _NEUTRAL
            ]
            dims = {"hidden": hidden, "heads": heads, "layers": layers}
            mla = any("MLATransformerConfig" in o for o in outside) or "q_lora_rank" in fields
            stated = {
                "kv_heads": "num_query_groups",
                "ffn": "ffn_hidden_size",
                "vocab": "vocab_size",
                "experts": "num_moe_experts",
                "moe_ffn": "moe_ffn_hidden_size",
            }
            for dim, key in stated.items():
                value = _int(fields.get(key))
                if value:
                    dims[dim] = value
            if _int(fields.get("num_moe_experts")) and _int(fields.get("moe_router_topk")):
                dims["experts_per_token"] = _int(fields["moe_router_topk"]) or 0
            if mla:
                qk, rope = _int(fields.get("qk_head_dim")), _int(fields.get("qk_pos_emb_head_dim"))
                if qk and rope:
                    dims["head_dim"] = qk + rope
                dims.pop("kv_heads", None)  # MLA: no KV-head count in the GQA sense
            elif _int(fields.get("kv_channels")):
                dims["head_dim"] = _int(fields["kv_channels"]) or 0
            if not unknown_root and not mla:
                # Megatron-core TransformerConfig.__post_init__ for what is left None.
                if fields.get("num_query_groups", None) is None:
                    dims.setdefault("kv_heads", heads)
                if fields.get("kv_channels", None) is None and hidden % heads == 0:
                    dims.setdefault("head_dim", hidden // heads)
                if fields.get("ffn_hidden_size", None) is None:
                    dims.setdefault("ffn", 4 * hidden)
            relative = str(Path(module.dotted.replace(".", "/") + ".py"))
            if not (root / relative).exists():
                relative = str(Path(module.dotted.replace(".", "/")) / "__init__.py")
            out.append(Truth(relative, cls.name, dims))
    return out


def torchtune_truth(root: Path) -> list[Truth]:
    """Model builders of torchtune: the keywords their returned call states."""
    keys = {
        "embed_dim": "hidden",
        "num_heads": "heads",
        "num_kv_heads": "kv_heads",
        "num_layers": "layers",
        "intermediate_dim": "ffn",
        "vocab_size": "vocab",
        "head_dim": "head_dim",
    }
    out: list[Truth] = []
    for path in sorted((root / "torchtune" / "models").glob("*/_model_builders.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for fn in tree.body:
            if not isinstance(fn, ast.FunctionDef):
                continue
            for node in ast.walk(fn):
                if isinstance(node, ast.Return) and isinstance(node.value, ast.Call):
                    stated = {
                        k.arg: _literal(k.value) for k in node.value.keywords if k.arg is not None
                    }
                    dims = {keys[k]: v for k, v in stated.items() if k in keys and _int(v)}
                    if {"hidden", "heads", "layers"} <= set(dims):
                        ints = {k: v for k, v in dims.items() if isinstance(v, int)}
                        out.append(Truth(str(path.relative_to(root)), fn.name, ints))
                    break
    return out


# ---- shapelint's reading and the comparison -------------------------------------------------


@dataclass
class Coverage:
    """How shapelint's reading of one source compares with the truth."""

    source: str
    truth: int = 0
    found: int = 0
    right: int = 0
    unknown: int = 0
    wrong: list[str] = field(default_factory=list)  # "file Name dim: shapelint ≠ truth"
    missing: list[str] = field(default_factory=list)  # truth configs shapelint did not find
    incomplete: list[str] = field(default_factory=list)  # "Name: dims unknown"
    configs: dict[str, ModelConfig] = field(default_factory=dict)  # by truth name
    truths: list[Truth] = field(default_factory=list)
    root: Path = Path()

    @property
    def right_pct(self) -> float:
        return 100.0 * self.right / self.truth if self.truth else 0.0


def measure(
    source: str, root: Path, truths: list[Truth], keys: dict[Dim, tuple[str, ...]] | None = None
) -> Coverage:
    """Read every file of ``truths`` with shapelint (``keys``: a settings key map) and compare
    each config with its truth."""
    cov = Coverage(source, truth=len(truths), truths=truths, root=root)
    by_file: dict[str, list[ModelConfig]] = {}
    for truth in truths:
        if truth.file not in by_file:
            path = root / truth.file
            doc = parse(str(path), path.read_bytes(), "python")
            by_file[truth.file] = extract(doc, keys) if doc.ok else []
        hits = [c for c in by_file[truth.file] if c.name == truth.name]
        if not hits:
            cov.missing.append(f"{truth.file} {truth.name}")
            cov.unknown += 1
            continue
        config = hits[0]
        cov.found += 1
        cov.configs[truth.name] = config
        wrong, unknown = [], []
        for dim, expected in truth.dims.items():
            value = config.dims.get(DIMS[dim])
            if value is None or not value.known:
                unknown.append(dim)
            elif value.as_int != expected:
                wrong.append(f"{truth.file} {truth.name} {dim}: {value.value} ≠ {expected}")
        if wrong:
            cov.wrong.extend(wrong)
        elif unknown:
            cov.unknown += 1
            cov.incomplete.append(f"{truth.name}: {', '.join(unknown)}")
        else:
            cov.right += 1
    return cov


def table(coverages: list[Coverage]) -> str:
    """The coverage table, one row per source."""
    head = "| source | configs | found | fully right | unknown | wrong (configs) |"
    lines = [head, "|---|---|---|---|---|---|"]
    for c in coverages:
        wrong_configs = len({w.rsplit(" ", 3)[0] for w in c.wrong})
        lines.append(
            f"| {c.source} | {c.truth} | {c.found} | {c.right} ({c.right_pct:.1f}%) "
            f"| {c.unknown} | {wrong_configs} |"
        )
    return "\n".join(lines)


def details(coverages: list[Coverage], limit: int = 15) -> Iterator[str]:
    """What is not fully right, per source (at most ``limit`` lines of each kind)."""
    for c in coverages:
        for title, items in (("wrong", c.wrong), ("missing", c.missing), ("unknown", c.incomplete)):
            if items:
                yield f"{c.source} {title} ({len(items)}):"
                yield from (f"  {item}" for item in items[:limit])


def corpora(workdir: Path) -> list[Coverage]:
    """Download (if needed), unpack and measure both sources."""
    wheels = download()
    out = []
    for source, truth in (("megatron-bridge", megatron_truth), ("torchtune", torchtune_truth)):
        root = unpack(wheels[source], workdir / source)
        out.append(measure(source, root, truth(root)))
    return out


# ---- the tests ---------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def coverage(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Coverage]:
    try:
        measured = corpora(tmp_path_factory.mktemp("python-corpora"))
    except Unreachable as exc:
        pytest.skip(f"PyPI unreachable, wheels not cached: {exc}")
    print("\n" + table(measured))
    for line in details(measured):
        print(line)
    return {c.source: c for c in measured}


def test_truth_reads_published_shapes(coverage: dict[str, Coverage]) -> None:
    # The independent reading agrees with the models' published shapes (model cards).
    mb = {t.name: t.dims for t in coverage["megatron-bridge"].truths}
    assert mb["Llama3ModelProvider8B"] == {
        "hidden": 4096,
        "heads": 32,
        "layers": 32,
        "kv_heads": 8,
        "ffn": 14336,
        "head_dim": 128,
    }
    assert mb["Llama2ModelProvider70B"]["kv_heads"] == 8
    assert mb["Qwen3ModelProvider8B"]["head_dim"] == 128  # kv_channels, inherited
    assert mb["Qwen3ModelProvider8B"]["vocab"] == 151936
    tt = {t.name: t.dims for t in coverage["torchtune"].truths}
    assert tt["llama3_8b"] == {
        "vocab": 128256,
        "layers": 32,
        "heads": 32,
        "kv_heads": 8,
        "hidden": 4096,
        "ffn": 14336,
    }
    assert coverage["megatron-bridge"].truth >= 60
    assert coverage["torchtune"].truth >= 40


def test_no_wrong_values(coverage: dict[str, Coverage]) -> None:
    # Unknown, not wrong: a dim shapelint reads is the value the source states or derives.
    for source in coverage.values():
        assert source.wrong == [], source.source


def test_named_megatron_providers(coverage: dict[str, Coverage]) -> None:
    configs = coverage["megatron-bridge"].configs
    llama3 = configs["Llama3ModelProvider8B"]
    assert {d: llama3.int(DIMS[d]) for d in ("hidden", "heads", "kv_heads", "ffn", "layers")} == {
        "hidden": 4096,
        "heads": 32,
        "kv_heads": 8,
        "ffn": 14336,
        "layers": 32,
    }
    assert configs["Llama2ModelProvider70B"].int(Dim.KV_HEADS) == 8
    qwen3 = configs["Qwen3ModelProvider8B"]
    # kv_channels=128 and the vocab are inherited from Qwen3ModelProvider; head dim is not 4096/32.
    assert qwen3.int(Dim.HEAD_DIM) == 128
    assert qwen3.int(Dim.VOCAB) == 151936
    assert qwen3.dims[Dim.VOCAB].span.path.endswith("qwen_provider.py")


def test_named_torchtune_builders(coverage: dict[str, Coverage]) -> None:
    # Every builder is a candidate named by its function, holding what it states, read by the
    # torchtune dialect without any settings.
    root = coverage["torchtune"].root
    path = root / "torchtune" / "models" / "llama3" / "_model_builders.py"
    doc = parse(str(path), path.read_bytes(), "python")
    (builder,) = [c for c in doc.candidates if c.name == "llama3_8b"]
    stated = {e.key: getattr(e.value, "value", None) for e in builder.root.entries}
    assert {k: stated[k] for k in ("embed_dim", "num_heads", "num_kv_heads", "vocab_size")} == {
        "embed_dim": 4096,
        "num_heads": 32,
        "num_kv_heads": 8,
        "vocab_size": 128256,
    }
    (llama3,) = [c for c in extract(doc) if c.name == "llama3_8b"]
    assert llama3.dialect == "torchtune" and llama3.gated_mlp is True
    assert (llama3.int(Dim.HIDDEN), llama3.int(Dim.FFN), llama3.int(Dim.KV_HEADS)) == (
        4096,
        14336,
        8,
    )
    # A builder's values are shared by every model it builds: fixes there are unsafe.
    assert llama3.dims[Dim.VOCAB].shared


def test_builder_table_matches_the_wheels_builders(coverage: dict[str, Coverage]) -> None:
    # The torchtune dialect's table of named builders (read at torchtune bd2a0fc, 0.7.0) holds
    # the keywords the released wheel's builders state, for every builder both have (33 of the
    # 45: 0.6.1 has no Qwen3 builders, and llama3_3_70b is an alias, not a def).
    from shapelint.dialects.torchtune_builders import BUILDERS

    checked = 0
    for truth in coverage["torchtune"].truths:
        entry = BUILDERS.get(f"{Path(truth.file).parent.name}.{truth.name}")
        if entry is None:
            continue
        table = {
            "hidden": entry.embed_dim,
            "heads": entry.num_heads,
            "kv_heads": entry.num_kv_heads,
            "layers": entry.num_layers,
            "ffn": entry.intermediate_dim,
            "vocab": entry.vocab_size,
            "head_dim": entry.head_dim,
        }
        assert {k: table[k] for k in truth.dims} == truth.dims, truth.name
        checked += 1
    assert checked >= 30
