"""InternLM mmengine-style Python configs (``configs/*.py`` in InternLM/InternLM).

The fixtures carry the structure and values of the real files (module constants, ``data``,
``model`` and ``parallel`` dicts); expected values are worked out by hand from InternLM's own
code (``internlm/model/linear.py`` ``FeedForward``: ``multiple_of · ⌈int(hidden ·
mlp_ratio) / multiple_of⌉`` with ``multiple_of=256``; ``multiquery_llama`` builder: KV heads
``num_kv_attention_heads``; ``launch.py``: ``parallel.tensor``/``pipeline`` default 1), never
taken from shapelint.
"""

from __future__ import annotations

import textwrap

from shapelint import dialects
from shapelint.core.model import Dim, ModelConfig
from shapelint.readers import parse

# configs/30b.py (InternLM ff22c124): a grouped-query MQLLAMA model.
MQLLAMA_30B = """\
    JOB_NAME = "30b_train"
    SEQ_LEN = 4096
    HIDDEN_SIZE = 6144
    NUM_ATTENTION_HEAD = 48
    MLP_RATIO = 8 / 3
    NUM_LAYER = 60
    VOCAB_SIZE = 103168

    data = dict(
        seq_len=SEQ_LEN,  # 4096
        micro_num=4,  # micro_num * micro_bsz <= 1024
        # packed_length = micro_bsz * SEQ_LEN
        micro_bsz=1,
        pack_sample_into_one=False,
    )

    model_type = "MQLLAMA"
    model = dict(
        checkpoint=True,
        num_attention_heads=NUM_ATTENTION_HEAD,
        embed_split_hidden=True,
        vocab_size=VOCAB_SIZE,
        embed_grad_scale=1,
        parallel_output=True,
        hidden_size=HIDDEN_SIZE,
        num_layers=NUM_LAYER,
        mlp_ratio=MLP_RATIO,
        apply_post_layer_norm=False,
        dtype="torch.bfloat16",
        norm_type="rmsnorm",
        num_kv_attention_heads=8,
        num_chunks=1,
    )
    parallel = dict(
        zero1=8,
        tensor=dict(size=4),
        pipeline=dict(size=1),
    )
    """

# configs/7B_sft.py (InternLM aaaf4d7b): no model_type (INTERNLM), tensor as an int.
INTERNLM_7B = """\
    SEQ_LEN = 2048
    HIDDEN_SIZE = 4096
    NUM_ATTENTION_HEAD = 32
    MLP_RATIO = 8 / 3
    NUM_LAYER = 32
    VOCAB_SIZE = 103168
    data = dict(seq_len=SEQ_LEN, micro_num=4, micro_bsz=2, valid_micro_num=4)
    model = dict(
        checkpoint=False,
        num_attention_heads=NUM_ATTENTION_HEAD,
        embed_split_hidden=True,
        vocab_size=VOCAB_SIZE,
        hidden_size=HIDDEN_SIZE,
        num_layers=NUM_LAYER,
        mlp_ratio=MLP_RATIO,
        dtype="torch.bfloat16",
        num_chunks=1,
    )
    parallel = dict(
        zero1=8,
        pipeline=dict(size=1, interleaved_overlap=True),
        tensor=1,
    )
    """


def read(text: str) -> ModelConfig:
    configs = dialects.extract(parse("configs/x.py", textwrap.dedent(text).encode(), "python"))
    assert len(configs) == 1, configs
    return configs[0]


def known(config: ModelConfig) -> dict[str, object]:
    return {d.value: v.value for d, v in config.dims.items() if v.known}


def test_mqllama_kv_heads_ffn_data_and_parallel() -> None:
    config = read(MQLLAMA_30B)
    assert config.dialect == "internlm"
    ffn = 256 * -(-int(6144 * 8 / 3) // 256)  # int(16384.0) = 16384, already a multiple
    assert known(config) == {
        "hidden": 6144,
        "heads": 48,
        "kv_heads": 8,
        "head_dim": 6144 // 48,
        "layers": 60,
        "ffn": ffn,
        "vocab": 103168,
        "dtype": "bf16",
        "seq_len": 4096,
        "micro_batch": 1,
        "grad_accum": 4,
        "tp": 4,
        "pp": 1,
    }
    assert config.dims[Dim.FFN].derived and config.gated_mlp


def test_internlm_7b_ffn_rounds_up_to_256() -> None:
    config = read(INTERNLM_7B)
    # int(4096 · 8/3) = 10922 → the next multiple of 256 is 43 · 256 = 11008.
    assert config.dims[Dim.FFN].value == 11008
    assert config.dims[Dim.KV_HEADS].value == 32 and config.dims[Dim.KV_HEADS].derived
    assert (config.dims[Dim.TP].value, config.dims[Dim.PP].value) == (1, 1)
    assert (config.dims[Dim.SEQ_LEN].value, config.dims[Dim.MICRO_BATCH].value) == (2048, 2)


def test_tensor_size_unknown_when_weights_are_gathered() -> None:
    # FSTP (configs/20B_sft.py, ed723277: mode="fstp"; 262de4b7: sp="intern") all-gathers
    # each weight before its GEMM, so the size does not split the GEMMs; a template's
    # placeholder (sp={sp}) is not a mode at all.
    for tensor in (
        'dict(size=8, mode="fstp", overlap=True)',
        'dict(size=8, sp="intern", intern_overlap=True)',
        "dict(size=8, sp={sp}, intern_overlap={intern_overlap})",
    ):
        config = read(INTERNLM_7B.replace("tensor=1", f"tensor={tensor}"))
        assert Dim.TP not in config.dims, tensor
    for tensor in ('dict(size=8, mode="origin_tp")', 'dict(size=8, sp="megatron")'):
        config = read(INTERNLM_7B.replace("tensor=1", f"tensor={tensor}"))
        assert config.dims[Dim.TP].value == 8, tensor


def test_tensor_absent_is_one_and_unread_model_type_leaves_ffn_unknown() -> None:
    config = read(INTERNLM_7B.replace("    tensor=1,\n", ""))
    assert config.dims[Dim.TP].value == 1 and config.dims[Dim.TP].derived
    # configs/h3_2.7b.py: an H3 hybrid, whose MLP builder this reader has not read.
    h3 = read('    model_type = "H3"\n' + INTERNLM_7B)
    assert Dim.FFN not in h3.dims
    assert h3.dims[Dim.HIDDEN].value == 4096


# InternEvo (c628a8c8) configs/_base_/models/internlm2_1B.py: InternLM2 with grouped-query
# attention and a multiple_of the model builders do not pass on (modeling_internlm2.py builds
# FeedForward(hidden, int(hidden * mlp_ratio)) whose multiple_of stays 256).
INTERNLM2_1B = """\
    model_type = "INTERNLM2_PUBLIC"
    VOCAB_SIZE = 92544
    HIDDEN_SIZE = 2048
    NUM_ATTENTION_HEAD = 16
    NUM_KV_ATTENTION_HEAD = 8
    MLP_RATIO = 4
    NUM_LAYER = 24
    MULTIPLE_OF = 128
    model = dict(
        num_chunks=1,
        checkpoint=False,
        dtype="torch.bfloat16",
        embed_split_hidden=True,
        num_layers=NUM_LAYER,
        hidden_size=HIDDEN_SIZE,
        vocab_size=VOCAB_SIZE,
        embed_grad_scale=1,
        parallel_output=True,
        num_attention_heads=NUM_ATTENTION_HEAD,
        num_kv_attention_heads=NUM_KV_ATTENTION_HEAD,
        mlp_ratio=MLP_RATIO,
        multiple_of=MULTIPLE_OF,
        norm_type="rmsnorm",
    )
    parallel = dict(
        zero1=dict(size=-1),
        tensor=dict(size=1, mode="mtp"),
        pipeline=dict(size=1, interleaved_overlap=True),
        weight=dict(size=1, overlap=True, memory_pool=True),
    )
    """


def test_internlm2_kv_heads_and_ffn_with_a_stated_multiple_of() -> None:
    config = read(INTERNLM2_1B)
    assert config.dims[Dim.KV_HEADS].value == 8
    # int(2048 · 4) = 8192: a multiple of both 128 and 256, so the width is known either way
    # (a Llama-style reading of multiple_of would give 128 · ⌈int(2 · 4 · 2048 / 3) / 128⌉ = 5504).
    assert config.dims[Dim.FFN].value == 8192
    assert (config.dims[Dim.TP].value, config.dims[Dim.PP].value) == (1, 1)


def test_ffn_unknown_where_multiple_of_would_change_it_or_mlp_is_not_swiglu() -> None:
    # int(2048 · 8/3) = 5461: 128 · 43 = 5504 against 256 · 22 = 5632 — which one runs depends
    # on whether the builder passes multiple_of on: unknown.
    ratio = read(INTERNLM2_1B.replace("MLP_RATIO = 4\n", "MLP_RATIO = 8 / 3\n"))
    assert not ratio.dims[Dim.FFN].known
    gelu = read(INTERNLM_7B.replace("num_chunks=1,", "num_chunks=1,\n        use_swiglu=False,"))
    assert not gelu.dims[Dim.FFN].known


def test_isp_mode_tensor_size_unknown() -> None:
    # InternEvo configs/7B_isp_sft.py: mode="isp" gathers the weights over the `weight` group.
    text = INTERNLM2_1B.replace(
        'tensor=dict(size=1, mode="mtp")', 'tensor=dict(size=2, mode="isp")'
    )
    assert Dim.TP not in read(text).dims
    text = INTERNLM2_1B.replace(
        'tensor=dict(size=1, mode="mtp")', 'tensor=dict(size=2, mode="fsp")'
    )
    assert read(text).dims[Dim.TP].value == 2


def test_max_position_embeddings_is_not_the_training_length() -> None:
    # InternEvo configs/8x7B_mixtral.py: model = dict(max_position_embeddings=32768, …) beside
    # data = dict(seq_len=4096, …); a model-only file (configs/_base_/models/*.py) has no data.
    text = INTERNLM_7B.replace(
        "num_chunks=1,", "num_chunks=1,\n        max_position_embeddings=32768,"
    )
    assert read(text).dims[Dim.SEQ_LEN].value == 2048
    model_only = text.replace(
        "    data = dict(seq_len=SEQ_LEN, micro_num=4, micro_bsz=2, valid_micro_num=4)\n", ""
    )
    assert Dim.SEQ_LEN not in read(model_only).dims
