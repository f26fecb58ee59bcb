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


QWEN3_MOE_02 = """\
qwen3_args = {
    "30B-A3B": Qwen3ModelArgs(
        vocab_size=151936,
        head_dim=128,
        dim=2048,
        n_layers=48,
        n_heads=32,
        n_kv_heads=4,
        hidden_dim=6144,
        moe_enabled=True,
        moe_inter_dim=768,
        moe_args=MoEArgs(num_experts=128, num_shared_experts=0, top_k=8),
    ),
}
"""


def test_torchtitan_0_2_moe_args_and_moe_enabled() -> None:
    # 0.2.0's Qwen3: with moe_enabled every block is MoE; hidden_dim is not used.
    config = next(iter(read(QWEN3_MOE_02).values()))
    values = {d: config.int(d) for d in config.dims}
    assert values[Dim.EXPERTS] == 128 and values[Dim.EXPERTS_PER_TOKEN] == 8
    shared = config.get(Dim.SHARED_EXPERTS)
    assert values[Dim.MOE_FFN] == 768 and shared is not None and shared.value == 0
    assert Dim.FFN not in config.dims
    dense = next(iter(read(QWEN3_MOE_02.replace("moe_enabled=True", "moe_enabled=False")).values()))
    assert dense.int(Dim.FFN) == 6144
