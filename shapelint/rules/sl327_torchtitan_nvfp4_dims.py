"""torchtitan's NVFP4 training refuses Linear layers whose dims are not multiples of 128.

Guideline: torchtitan's NVFP4 recipe (``NVFP4LinearConverter``) swaps ``Linear`` layers for
``NVFP4Linear``, whose TorchAO Triton kernels need every GEMM dim to be a multiple of 128; the
layer's config checks ``in_features`` and ``out_features`` when it is built and raises
``ValueError`` ("NVFP4 requires in_features divisible by 128 ... exclude it from the converter
fqns"). With no ``fqns`` the converter takes every Linear, the output layer (hidden × vocab)
included, so Phi-3-mini's vocab of 32064 (32064 = 250·128 + 64) is refused. The check is on
the whole layer, before tensor parallelism shards it (TorchAO's kernel checks the per-GPU
shard again at run time; that is not checked here).

The rule runs for FP8-family targets with the NVFP4 recipe (``--dtype fp8 --fp8-recipe nvfp4``)
that name torchtitan. Unlike its Float8/MXFP8 converter (SL314, which leaves such layers in
BF16 without a word) the NVFP4 converter raises. Its other refusal, a GPU older than SM100
("NVFP4 is only supported on SM100 or later architectures"), is not a property of the config
and is not reported.

Source: torchtitan commit b5bcd76c (2026-08-21, newer than the 0.2.0 wheel the engine registry
names, which SL314 was checked against and which has no NVFP4 recipe: the wheel's
``torchtitan/components/quantization/`` holds float8.py, mx.py and utils.py only)
``torchtitan/components/quantization/nvfp4.py:39`` (``_NVFP4_BLOCK = 128``), ``:97-110`` (``NVFP4Linear.Config.__post_init__``), ``:277`` and
``:300-306`` (``NVFP4LinearConverter.convert``: every Linear when ``fqns`` is empty),
``:291-292`` (the SM100 check).
"""

from __future__ import annotations

from collections.abc import Iterator

from shapelint.core.model import Dim, Finding, ModelConfig, Target, Value
from shapelint.hardware.engines import get
from shapelint.rules.base import Example, Expect, Rule
from shapelint.rules.engine_shapes import engines_for, is_mla

RULE = Rule(
    code="SL327",
    name="torchtitan-nvfp4-dims",
    severity="error",
    summary="torchtitan's NVFP4 recipe refuses Linear layers with dims not multiples of 128",
    source="torchtitan b5bcd76c torchtitan/components/quantization/nvfp4.py",
    family="engine",
)

VERIFIED = {
    "torchtitan": "torchtitan/components/quantization/nvfp4.py:39, 97-110, 277, 300-306 (b5bcd76c)",
}

BLOCK = 128
# Where NVFP4 was read: newer than the release the engine registry names, which lacks it.
COMMIT = "b5bcd76c"

_NVFP4: dict[str, object] = {
    "dtype": "fp8",
    "fp8_recipe": "nvfp4",
    "engines": ("torchtitan",),
}
EXAMPLES = [
    Example(
        '{"hidden_size": 4096, "num_attention_heads": 32, "num_key_value_heads": 8,'
        ' "intermediate_size": 14336, "num_hidden_layers": 32, "vocab_size": 128256}\n',
        True,
        target=_NVFP4,
        note="Llama-3-8B: every dim a multiple of 128",
    ),
    Example(
        '{"hidden_size": 3072, "num_attention_heads": 32, "num_key_value_heads": 32,'
        ' "intermediate_size": 8192, "num_hidden_layers": 32, "vocab_size": 32064}\n',
        False,
        target=_NVFP4,
        note="Phi-3-mini: the output layer's 32064 rows",
        expect=(Expect(1, "32064", "NVFP4 requires out_features divisible by 128; got"),),
    ),
]


def _layers(config: ModelConfig) -> list[tuple[str, int, int, Value]]:
    """(layer, in_features, out_features, value) of torchtitan's Llama-style model."""
    out: list[tuple[str, int, int, Value]] = []
    h, a = config.int(Dim.HIDDEN), config.int(Dim.HEADS)
    d, kv = config.int(Dim.HEAD_DIM), config.int(Dim.KV_HEADS)
    heads, kv_value = config.get(Dim.HEADS), config.get(Dim.KV_HEADS)
    if h and a and d and heads is not None and not is_mla(config):
        out.append(("attention.wq", h, a * d, heads))
        if kv and kv_value is not None:
            out.append(("attention.wk/wv", h, kv * d, kv_value))
        out.append(("attention.wo", a * d, h, heads))
    f, ffn = config.int(Dim.FFN), config.get(Dim.FFN)
    if h and f and ffn is not None:
        out.append(("feed_forward.w1/w3", h, f, ffn))
        out.append(("feed_forward.w2", f, h, ffn))
    vocab = config.vocab_value
    v = vocab.as_int if vocab is not None else None
    if h and v and vocab is not None:
        out.append(("output", h, v, vocab))
    return out


def check(config: ModelConfig, target: Target) -> Iterator[Finding]:
    """Report the first Linear torchtitan's NVFP4 converter refuses, with every other one."""
    engines = engines_for(target, VERIFIED)
    if not engines or target.dtype != "fp8" or target.fp8_recipe != "nvfp4":
        return
    if "torchtitan" not in target.engines:
        return  # named only, as SL314
    bad = [(n, i, o, value) for n, i, o, value in _layers(config) if i % BLOCK or o % BLOCK]
    if not bad:
        return
    _, i, o, _ = bad[0]
    which, got = ("in_features", i) if i % BLOCK else ("out_features", o)
    shown = ", ".join(f"{n} ({o_}×{i_})" for n, i_, o_, _ in bad)
    yield RULE.finding(
        config,
        bad[0][3],
        f"NVFP4 requires {which} divisible by {BLOCK}; got {which}={got}. NVFP4 cannot quantize "
        f"this Linear; exclude it from the converter fqns: {shown} (refused by torchtitan "
        f"{COMMIT}; the {get('torchtitan').version} release has no NVFP4 recipe)",
        related=[value for *_, value in bad[1:]],
    )
