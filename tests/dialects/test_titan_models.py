"""torchtitan 0.3 flavour functions: what is read, and what stays unknown."""

from __future__ import annotations

from shapelint.lint import dialects
from shapelint.lint.formats import parse
from shapelint.lint.model import Dim, ModelConfig

FLAVOUR = """\
def _8b(attn_backend: str) -> Llama3Model.Config:
    dim = 4096
    n_heads = 32
    return Llama3Model.Config(
        dim=dim,
        vocab_size=128256,
        layers=_build_llama3_layers(
            n_layers=32,
            dim=dim,
            n_heads=n_heads,
            n_kv_heads=8,
            hidden_dim=compute_ffn_hidden_dim(dim, multiple_of=1024, ffn_dim_multiplier=1.3),
            rope=ComplexRoPE.Config(dim=dim // n_heads, max_context_length=131072),
            attn_backend=attn_backend,
        ),
    )
"""


def read(text: str) -> dict[str, ModelConfig]:
    return {c.name: c for c in dialects.extract(parse("f.py", text.encode(), "python"))}


def test_flavour_with_the_ffn_helper() -> None:
    config = read(FLAVOUR)["_8b"]
    assert config.dialect == "torchtitan"
    # int(8 * 4096 / 3) = 10922; × 1.3 = 14198; up to a multiple of 1024 = 14336 (by hand).
    assert config.int(Dim.FFN) == 14336
    assert (config.int(Dim.HIDDEN), config.int(Dim.HEADS), config.int(Dim.KV_HEADS)) == (
        4096,
        32,
        8,
    )
    assert config.int(Dim.HEAD_DIM) == 128 and config.int(Dim.LAYERS) == 32
    assert config.seq_is_max_context and config.pretrained and config.gated_mlp


def test_a_helper_call_it_cannot_vouch_for_leaves_the_ffn_unknown() -> None:
    for call in (
        "compute_ffn_hidden_dim(width, multiple_of=1024)",  # not the config's dim
        "compute_ffn_hidden_dim(dim, multiple_of=m)",  # a non-literal argument
        "other_helper(dim, multiple_of=1024)",
    ):
        text = FLAVOUR.replace(
            "compute_ffn_hidden_dim(dim, multiple_of=1024, ffn_dim_multiplier=1.3)", call
        )
        config = read(text)["_8b"]
        assert config.dialect == "torchtitan"
        assert Dim.FFN not in config.dims, call


def test_families_not_read_are_left_alone() -> None:
    text = FLAVOUR.replace("Llama3Model.Config(", "DeepSeekV3Model.Config(")
    assert all(c.dialect != "torchtitan" for c in read(text).values())
