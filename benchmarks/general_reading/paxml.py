"""google/paxml: experiment classes of upper-case attributes, inherited across modules.

Units: every class of the LM experiment files below whose C3 order (bases resolved through
the package's imports, read with `ast`) reaches one of paxml's decoder-LM bases in
``paxml/tasks/lm/model_params.py`` and that sets a model attribute itself (a class changing
only steps, mesh or batch repeats its base's model and is not counted again). Dims, with the
framework's own rules (paxml at b397693f, praxis at feeaff19):

- hidden ``MODEL_DIMS``, FFN ``HIDDEN_DIMS`` (model_params.py:658-659 give them to
  ``StackedTransformer.model_dims`` / ``hidden_dims``; a gated FFN has two ``hidden_dims``
  wide inputs, so the width is ``HIDDEN_DIMS`` either way), layers ``NUM_LAYERS``
  (model_params.py:660), vocab ``VOCAB_SIZE`` (model_params.py:635);
- heads ``NUM_HEADS``, or ``MODEL_DIMS // DIMS_PER_HEAD`` when it is None
  (model_params.py:619-628); head dim ``DIMS_PER_HEAD``, or ``MODEL_DIMS // heads`` when None
  (praxis/layers/transformers.py:1640-1641);
- KV heads ``NUM_KV_HEADS`` where the class's ``task`` uses it: always in nvidia.py's
  Llama2 classes (nvidia.py:532), behind ``USE_MQA`` in contrib llama_utils.py:124-127;
  otherwise the heads;
- experts ``NUM_EXPERTS`` where stated (nvidia.py:633, configs.py GLaM classes), each expert
  ``HIDDEN_DIMS`` wide (the expert FFN); whether every layer or every other one is MoE
  differs per class, so the dense FFN of such a class is left unknown;
- sequence ``MAX_SEQ_LEN`` of the dataset mixin (lm_cloud.py:58, c4.py:161); the batch is
  stated per core (``PERCORE_BATCH_SIZE``, lm_cloud.py:42-49: times the local devices), which
  is no micro-batch without the mesh: ``batch_stated`` only.
"""

from __future__ import annotations

from pathlib import Path

from .core import Source, Unit
from .pyeval import UNKNOWN, ClassWorld, as_int

FILES = (
    "paxml/tasks/lm/params/lm_cloud.py",
    "paxml/tasks/lm/params/c4.py",
    "paxml/tasks/lm/params/c4_multislice.py",
    "paxml/tasks/lm/params/nvidia.py",
    "paxml/contrib/gpu/scripts_gpu/configs.py",
)
# The model attributes; a class that sets none of them only changes its base's training
# settings (steps, mesh, batch) and repeats its base's model: not a unit of its own.
MODEL_ATTRS = frozenset(
    {
        "NUM_LAYERS",
        "MODEL_DIMS",
        "HIDDEN_DIMS",
        "NUM_HEADS",
        "DIMS_PER_HEAD",
        "VOCAB_SIZE",
        "NUM_KV_HEADS",
        "USE_MQA",
        "NUM_EXPERTS",
    }
)
SPMD = "paxml.tasks.lm.model_params:TransformerLmSpmdAdafactor"
LM_BASES = {
    "paxml.tasks.lm.model_params:TransformerLmPmapAdam",
    "paxml.tasks.lm.model_params:TransformerLmSpmdAdafactor",
    "paxml.tasks.lm.model_params:TransformerLmSpmdPipelineAdafactor",
}


def _get(world: ClassWorld, qual: str, name: str) -> object:
    try:
        return world.attr(qual, name)
    except KeyError:
        return None


def units(root: Path) -> list[Unit]:
    """The LM experiment classes of :data:`FILES`."""
    files = [p for p in sorted((root / "paxml").rglob("*.py")) if not p.name.endswith("_test.py")]
    world = ClassWorld(root, files)
    out: list[Unit] = []
    wanted = {str(Path(f).with_suffix("")).replace("/", ".") for f in FILES}
    for info in world.subclasses_of(LM_BASES):
        if info.module not in wanted or not MODEL_ATTRS & set(info.attrs):
            continue
        q = info.qual

        def num(name: str, q: str = q) -> int | None:
            v = _get(world, q, name)
            return None if v is UNKNOWN else as_int(v)

        spmd = any(c.qual == SPMD for c in world.mro(q))
        # The Pmap base never reads DIMS_PER_HEAD (model_params.py:513-517).
        hidden, per_head = num("MODEL_DIMS"), num("DIMS_PER_HEAD") if spmd else None
        raw_heads = _get(world, q, "NUM_HEADS")
        heads = None if raw_heads is UNKNOWN else as_int(raw_heads)
        if raw_heads is None and per_head and hidden:
            heads = hidden // per_head
        head_dim = per_head if per_head else (hidden // heads if hidden and heads else None)
        if heads and per_head and hidden and heads * per_head != hidden:
            # model_params.py:627 asserts MODEL_DIMS == NUM_HEADS * DIMS_PER_HEAD: the class
            # cannot be built as written (a base its subclasses complete).
            heads = head_dim = None
        kv: int | None = heads
        if heads is None:
            kv = None
        mqa = _get(world, q, "USE_MQA")
        if _get(world, q, "NUM_KV_HEADS") is not None and mqa is not False:
            kv = num("NUM_KV_HEADS")
        if mqa is UNKNOWN:
            kv = None
        exp: dict[str, int | None] = {
            "hidden": hidden,
            "heads": heads,
            "kv_heads": kv,
            "head_dim": head_dim,
            "ffn": num("HIDDEN_DIMS"),
            "vocab": num("VOCAB_SIZE"),
            "layers": num("NUM_LAYERS"),
        }
        if _get(world, q, "MAX_SEQ_LEN") is not None:
            exp["seq_len"] = num("MAX_SEQ_LEN")
        if _get(world, q, "NUM_EXPERTS") is not None:
            # Experts are HIDDEN_DIMS wide too; which layers are MoE varies (GLaM every
            # other layer): the dense FFN is left unknown, the expert FFN is HIDDEN_DIMS.
            exp["experts"] = num("NUM_EXPERTS")
            exp["moe_ffn"] = exp.pop("ffn")
            exp["ffn"] = None
        stated = _get(world, q, "PERCORE_BATCH_SIZE") is not None
        pats = ("upper-attrs", "batch-form") if stated else ("upper-attrs",)
        out.append(
            Unit(
                path=str(info.path.relative_to(root)),
                names=(info.name,),
                line=info.line,
                expected=exp,
                patterns=pats,
                batch_stated=stated,
            )
        )
    out.sort(key=lambda u: (u.path, u.line))
    return out


SOURCE = Source(
    key="paxml",
    repo="google/paxml",
    commit="b397693fb4dd7b49e90ae549105d024644a03665",
    community="JAX/TPU trainer",
    formats="Python",
    collect=units,
)
