"""torchtitan 0.3 flavour functions: what is read, and what stays unknown."""

from __future__ import annotations

from shapelint import dialects
from shapelint.core.model import Dim, ModelConfig
from shapelint.readers import parse

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
    text = FLAVOUR.replace("Llama3Model.Config(", "MuseGlimmerModel.Config(")
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


# torchtitan b5bcd76c, torchtitan/models/qwen3_5/__init__.py `_397b_a17b` (lines 1023-1083),
# cut to its shape keywords; the vision encoder and init keywords are left out.
QWEN35_MOE = """\
def _397b_a17b(attn_backend: str, moe_comm_backend: str = "standard") -> Qwen35Model.Config:
    dim = 4096
    head_dim = 256
    rotary_dim = 64
    n_layers = 60
    vocab_size = 248320
    return Qwen35Model.Config(
        vocab_size=vocab_size,
        dim=dim,
        norm=_offset_norm(dim),
        layers=_build_qwen35_moe_layers(
            rope=MRoPE.Config(
                dim=rotary_dim,
                max_context_length=262144,
                theta=10_000_000.0,
                mrope_section=[11, 11, 10],
            ),
            attn_backend=attn_backend,
            n_layers=n_layers,
            dim=dim,
            n_heads=32,
            n_kv_heads=2,
            head_dim=head_dim,
            rotary_dim=rotary_dim,
            moe_hidden_dim=1024,
            num_experts=512,
            top_k=10,
            shared_expert_hidden_dim=1024,
            n_key_heads=16,
            n_value_heads=64,
            key_head_dim=128,
            value_head_dim=128,
            moe_comm_backend=moe_comm_backend,
        ),
    )
"""


def test_qwen3_5_hybrid_flavour() -> None:
    config = read(QWEN35_MOE)["_397b_a17b"]
    assert config.dialect == "torchtitan"
    want = {
        Dim.HIDDEN: 4096,
        Dim.HEADS: 32,
        Dim.KV_HEADS: 2,
        Dim.HEAD_DIM: 256,
        Dim.LAYERS: 60,
        Dim.VOCAB: 248320,
        Dim.MOE_FFN: 1024,
        Dim.EXPERTS: 512,
        Dim.EXPERTS_PER_TOKEN: 10,
        Dim.ROTARY_DIM: 64,
        Dim.SHARED_EXPERTS: 1,  # one shared expert as wide as a routed one
        Dim.SEQ_LEN: 262144,
    }
    assert {d: config.int(d) for d in want} == want
    # Layer i has softmax attention when (i + 1) % 4 == 0 (_build_qwen35_moe_layers, default
    # full_attention_interval 4): the other 45 of 60 are Gated DeltaNet, which is not timed.
    linear = sum(1 for i in range(60) if (i + 1) % 4 != 0)
    assert config.untimed.startswith(f"{linear} of 60 layers are Gated DeltaNet")


def test_qwen3_5_shared_expert_of_another_width_stays_unknown() -> None:
    text = QWEN35_MOE.replace("shared_expert_hidden_dim=1024", "shared_expert_hidden_dim=1536")
    assert Dim.SHARED_EXPERTS not in read(text)["_397b_a17b"].dims


# torchtitan b5bcd76c, torchtitan/models/deepseek_v3/__init__.py `_671b` (lines 525-594), cut to
# its shape keywords: the blocks are built into a local and passed as ``layers=layers``.
DSV3_671B = """\
def _671b(attn_backend: str, moe_comm_backend: str) -> DeepSeekV3Model.Config:
    dim = 7168
    n_layers = 61
    vocab_size = 129280
    n_heads = 128
    q_lora_rank = 1536
    moe_hidden_dim = 2048
    num_shared_experts = 1
    dense_hidden_dim = 18432
    rope_dim = 64
    num_experts = 256
    n_dense_layers = 3

    layers = _build_dsv3_layers(
        n_layers=n_layers,
        n_dense_layers=n_dense_layers,
        dim=dim,
        n_heads=n_heads,
        q_lora_rank=q_lora_rank,
        kv_lora_rank=512,
        qk_nope_head_dim=128,
        qk_rope_head_dim=rope_dim,
        v_head_dim=128,
        mscale=1.0,
        dense_hidden_dim=dense_hidden_dim,
        moe_hidden_dim=moe_hidden_dim,
        num_experts=num_experts,
        num_shared_experts=num_shared_experts,
        router_top_k=8,
        router_score_func="sigmoid",
        attn_backend=attn_backend,
        moe_comm_backend=moe_comm_backend,
        rope=ComplexRoPE.Config(
            dim=rope_dim,
            max_context_length=4096 * 4,
            theta=10000.0,
            scaling="yarn",
            original_seq_len=4096,
        ),
    )
    return DeepSeekV3Model.Config(
        vocab_size=vocab_size,
        dim=dim,
        layers=layers,
        mtp_layers=_build_mtp_layers(layers[-1], dim=dim, num_mtp_layers=0),
    )
"""


def test_deepseek_v3_mla_moe_flavour() -> None:
    config = read(DSV3_671B)["_671b"]
    assert config.dialect == "torchtitan"
    # The flavour's literals; the head is qk_nope + qk_rope = 128 + 64 (make_mla_attention_config).
    want = {
        Dim.HIDDEN: 7168,
        Dim.LAYERS: 61,
        Dim.VOCAB: 129280,
        Dim.HEADS: 128,
        Dim.KV_HEADS: 128,
        Dim.HEAD_DIM: 128 + 64,
        Dim.V_HEAD_DIM: 128,
        Dim.ROPE_HEAD_DIM: 64,
        Dim.Q_LORA_RANK: 1536,
        Dim.KV_LORA_RANK: 512,
        Dim.FFN: 18432,
        Dim.DENSE_LAYERS: 3,
        Dim.MOE_FFN: 2048,
        Dim.EXPERTS: 256,
        Dim.EXPERTS_PER_TOKEN: 8,
        Dim.SHARED_EXPERTS: 1,
        Dim.SEQ_LEN: 4096 * 4,
    }
    assert {d: config.int(d) for d in want} == want


def test_mla_without_query_lora_and_with_an_unknown_context() -> None:
    # Kimi's Moonlight text tower (kimi_k2_7/__init__.py `_moonlight_16b_a3b_config`):
    # q_lora_rank=0 is a plain wq, and the context comes from a parameter.
    text = (
        DSV3_671B.replace("DeepSeekV3Model", "KimiK25Model")
        .replace("q_lora_rank=q_lora_rank", "q_lora_rank=0")
        .replace("max_context_length=4096 * 4", "max_context_length=max_context_length")
    )
    config = read(text)["_671b"]
    assert config.dialect == "torchtitan"
    assert Dim.Q_LORA_RANK not in config.dims and Dim.SEQ_LEN not in config.dims
    assert config.int(Dim.KV_LORA_RANK) == 512


def test_a_local_rebound_after_the_call_is_not_read() -> None:
    text = DSV3_671B.replace(
        "    return DeepSeekV3Model", "    layers = layers[:2]\n    return DeepSeekV3Model"
    )
    assert all(c.dialect != "torchtitan" for c in read(text).values())


# torchtitan b5bcd76c, torchtitan/models/gpt_oss/__init__.py `_20b` (lines 293-334), cut to its
# shape keywords. `_build_gptoss_layers` passes no heads: `_make_gptoss_attn_config`'s defaults
# (64 heads, 8 KV heads, head dim 64: lines 74-76) and a 128 window on even layers (line 209).
GPT_OSS_20B = """\
def _20b(moe_comm_backend: str, attn_backend: str = "varlen") -> GptOssModel.Config:
    dim = 2880
    hidden_dim = 2880
    n_layers = 24
    return GptOssModel.Config(
        dim=dim,
        vocab_size=201088,
        layers=_build_gptoss_layers(
            fuse_qkv=True,
            dim=dim,
            n_layers=n_layers,
            hidden_dim=hidden_dim,
            num_experts=32,
            top_k=4,
            load_balance_coeff=1e-3,
            attn_backend=attn_backend,
            moe_comm_backend=moe_comm_backend,
            rope=CosSinRoPE.Config(dim=64, max_context_length=131072, theta=150000.0),
        ),
    )
"""


def test_gpt_oss_flavour() -> None:
    config = read(GPT_OSS_20B)["_20b"]
    assert config.dialect == "torchtitan"
    want = {
        Dim.HIDDEN: 2880,
        Dim.LAYERS: 24,
        Dim.VOCAB: 201088,
        Dim.HEADS: 64,
        Dim.KV_HEADS: 8,
        Dim.HEAD_DIM: 64,
        Dim.MOE_FFN: 2880,
        Dim.EXPERTS: 32,
        Dim.EXPERTS_PER_TOKEN: 4,
        Dim.SLIDING_WINDOW: 128,
        Dim.WINDOW_LAYERS: len([i for i in range(24) if i % 2 == 0]),
        Dim.SEQ_LEN: 131072,
    }
    assert {d: config.int(d) for d in want} == want
    assert Dim.FFN not in config.dims  # every layer is MoE: hidden_dim is the experts' width


# torchtitan b5bcd76c, torchtitan/models/llama3/config_registry.py `llama3_70b` (lines 267-302),
# cut to its batch and parallel keywords (the loss, profiler, dataloader … are left out).
TRAINER_70B = """\
def llama3_70b() -> Trainer.Config:
    model_spec = model_registry("70B")
    return Trainer.Config(
        hf_assets_path="./assets/hf/Llama-3.1-70B",
        model_spec=model_spec,
        optimizer=default_adamw(lr=1.5e-4),
        training=TrainingConfig(
            num_tokens_per_microbatch_per_dp_rank=8 * 8192,
            max_context_length=8192,
            steps=1000,
        ),
        parallelism=ParallelismConfig(
            tensor_parallel_degree=8,
        ),
        activation_checkpoint=FullAC.Config(),
    )
"""


def test_trainer_config_batch_and_parallel() -> None:
    config = read(TRAINER_70B)["llama3_70b"]
    assert config.dialect == "torchtitan" and config.shape_from_elsewhere
    # 8 * 8192 token slots per data-parallel rank, in sequences of 8192 (config/configs.py).
    want = {Dim.SEQ_LEN: 8192, Dim.MICRO_BATCH: (8 * 8192) // 8192, Dim.TP: 8}
    assert {d: config.int(d) for d in want} == want


def test_trainer_config_tokens_that_do_not_divide_leave_the_micro_batch_unknown() -> None:
    text = TRAINER_70B.replace("8 * 8192,", "8 * 8192 + 1,")
    config = read(text)["llama3_70b"]
    assert Dim.MICRO_BATCH not in config.dims and config.int(Dim.SEQ_LEN) == 8192
