"""tensorflow/tensor2tensor: hparams sets built by attribute assignment on chained builders.

Units: every ``@registry.register_hparams`` function of tensor2tensor/models/transformer.py
that assigns a model key itself (a set changing only dropout, learning rate or TPU flags
repeats its base's model and is not counted again).
Each is run with `ast` (see :class:`pyeval.Builder`): ``hparams = base()`` runs the base set
first (across modules: ``common_hparams.basic_params1()`` returns ``HParams(k=v, ...)``),
then ``hparams.k = e``, ``hparams.add_hparam("k", e)`` and helpers of the package that take
``hparams`` apply in order. Dims (tensor2tensor at bafdc1b6):

- hidden ``hidden_size``; heads ``num_heads`` (KV heads the same); head dim
  ``(attention_key_channels or hidden_size) // num_heads`` (models/transformer.py:934,
  layers/transformer_layers.py:186);
- FFN ``filter_size`` when ``ffn_layer`` is ``dense_relu_dense`` (transformer_layers.py:309-
  314), otherwise unknown;
- layers: ``num_decoder_layers or num_hidden_layers`` (models/transformer.py:1697-1698) when
  the encoder has as many (``num_encoder_layers or num_hidden_layers``), otherwise unknown.

The vocabulary comes from the problem and the batch is in tokens per shard
(data_generators/problem.py:288-291): vocab unknown, batch stated.
"""

from __future__ import annotations

import ast
from pathlib import Path

from .core import Source, Unit
from .pyeval import UNKNOWN, Builder, ClassWorld, as_int

FILE = "tensor2tensor/models/transformer.py"


# The model keys; a set that assigns none of them itself only changes training settings of
# its base (dropout, learning rate, TPU flags) and repeats its base's model: not a unit.
MODEL_KEYS = frozenset(
    {
        "hidden_size",
        "num_heads",
        "filter_size",
        "num_hidden_layers",
        "num_encoder_layers",
        "num_decoder_layers",
        "attention_key_channels",
        "ffn_layer",
    }
)


def _own_model_keys(fn: ast.FunctionDef) -> set[str]:
    own = set()
    for node in ast.walk(fn):
        if isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
            own.add(node.attr)
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr in ("add_hparam", "set_hparam")
            and node.args
            and isinstance(node.args[0], ast.Constant)
        ):
            own.add(str(node.args[0].value))
    return own & MODEL_KEYS


def _registered(fn: ast.FunctionDef) -> bool:
    return any(
        isinstance(d, ast.Attribute) and d.attr == "register_hparams" for d in fn.decorator_list
    )


def units(root: Path) -> list[Unit]:
    """The hparams sets of :data:`FILE`."""
    files = [
        p
        for sub in ("models", "layers", "utils")
        for p in sorted((root / "tensor2tensor" / sub).glob("*.py"))
        if not p.name.endswith("_test.py")
    ]
    world = ClassWorld(root, files)
    builder = Builder(world, frozenset({"HParams"}))
    mod = "tensor2tensor.models.transformer"
    out: list[Unit] = []
    for qual, fn in world.functions.items():
        if not qual.startswith(mod + ":") or not _registered(fn) or not _own_model_keys(fn):
            continue
        state = builder.build(qual)
        if state is None:
            continue

        def num(key: str, state: dict[str, object] = state) -> int | None:
            v = state.get(key)
            return None if v is UNKNOWN else as_int(v)

        hidden, heads = num("hidden_size"), num("num_heads")
        key_ch = state.get("attention_key_channels", 0)
        if key_ch is UNKNOWN:
            head_dim = None
        else:
            width = as_int(key_ch) or hidden
            head_dim = width // heads if width and heads else None
        ffn = num("filter_size") if state.get("ffn_layer") == "dense_relu_dense" else None
        enc = num("num_encoder_layers")
        dec = num("num_decoder_layers")
        base = num("num_hidden_layers")
        layers = None
        if None not in (enc, dec, base) and (enc or base) == (dec or base):
            layers = dec or base
        exp = {
            "hidden": hidden,
            "heads": heads,
            "kv_heads": heads,
            "head_dim": head_dim,
            "ffn": ffn,
            "layers": layers,
        }
        if all(v is None for v in exp.values()):
            continue
        out.append(
            Unit(
                path=FILE,
                names=(fn.name,),
                line=fn.lineno,
                expected=exp,
                patterns=("attr-assign", "keys", "batch-form"),
                batch_stated=True,
            )
        )
    return out


SOURCE = Source(
    key="tensor2tensor",
    repo="tensorflow/tensor2tensor",
    commit="bafdc1b67730430d38d6ab802cbd51f9d053ba2e",
    community="research codebase (TF)",
    formats="Python",
    collect=units,
)
