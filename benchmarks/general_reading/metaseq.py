"""facebookresearch/metaseq: OPT sizes as positional calls of a dataclass, and arch functions.

Units (metaseq at f7ffa5fd):

- each entry of ``MODEL_SIZES`` in metaseq/launcher/opt_job_constants.py, a positional call
  ``Size(n_layers, emb_size, n_heads, d_head, batch_size, lr, model_parallel)`` of the
  dataclass defined at opt_job_constants.py:10-17 (fields mapped by order). FFN is the
  ``ffn_size`` property, ``4 * emb_size`` (opt_job_constants.py:19-21), which
  opt_baselines.py:230 passes as ``--decoder-ffn-embed-dim``; KV heads = heads. The batch
  (``batch_size``) is a global batch in tokens (opt_baselines.py:121 divides it by the GPUs
  and the sequence): stated, no micro-batch. The sequence (``SEQ_LEN = 2048``) lives in
  opt_baselines.py, not in the unit: unknown; the vocabulary is GPT-2's file: unknown;
- each ``@register_model_architecture`` function of metaseq/models/transformer_lm.py, read
  as fairseq's (see ``fairseq.py``: the same ``getattr(args, k, default)`` chain).
"""

from __future__ import annotations

import ast
from pathlib import Path

from .core import Source, Unit
from .fairseq import arch_units
from .pyeval import as_int, chain, module_constants, parse, try_eval

SIZES = "metaseq/launcher/opt_job_constants.py"
FIELDS = ("n_layers", "emb_size", "n_heads", "d_head", "batch_size", "lr", "model_parallel")


def size_units(root: Path) -> list[Unit]:
    """The entries of ``MODEL_SIZES``."""
    tree = parse(root / SIZES)
    consts = module_constants(tree)
    out: list[Unit] = []
    for stmt in tree.body:
        if not (
            isinstance(stmt, ast.Assign)
            and isinstance(stmt.targets[0], ast.Name)
            and stmt.targets[0].id == "MODEL_SIZES"
            and isinstance(stmt.value, ast.Dict)
        ):
            continue
        for key, call in zip(stmt.value.keys, stmt.value.values, strict=True):
            if not (isinstance(key, ast.Constant) and isinstance(call, ast.Call)):
                continue
            vals = {
                f: as_int(try_eval(a, chain(consts)))
                for f, a in zip(FIELDS, call.args, strict=False)
            }
            hidden, heads = vals.get("emb_size"), vals.get("n_heads")
            out.append(
                Unit(
                    path=SIZES,
                    names=(str(key.value), f"MODEL_SIZES[{key.value}]"),
                    line=call.lineno,
                    expected={
                        "hidden": hidden,
                        "heads": heads,
                        "kv_heads": heads,
                        "head_dim": vals.get("d_head"),
                        "ffn": 4 * hidden if hidden else None,
                        "layers": vals.get("n_layers"),
                    },
                    patterns=("positional", "keys", "batch-form"),
                    batch_stated=True,
                )
            )
    return out


def units(root: Path) -> list[Unit]:
    """The OPT sizes and the architecture functions."""
    arches = arch_units(root, {"metaseq/models/transformer_lm.py": "decoder"})
    return size_units(root) + arches


SOURCE = Source(
    key="metaseq",
    repo="facebookresearch/metaseq",
    commit="f7ffa5fd61cf90f498a36d365c13dd7f1a912ff7",
    community="research codebase (fairseq fork)",
    formats="Python",
    collect=units,
)
