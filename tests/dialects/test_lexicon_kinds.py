"""The key lexicon, continued: what a key's value and its neighbours say (an FFN kind, a
per-layer list, a per-device batch, heads left to be computed, a total key width).

Each fixture is hand-written in the structure of the real file named in its comment.
"""

from __future__ import annotations

import textwrap

from conftest import configs_of

from shapelint.core.model import Dim, ModelConfig


def dims(config: ModelConfig) -> dict[str, object]:
    return {d.value: config.int(d) for d in config.dims if config.int(d) is not None}


# tensorflow/tensor2tensor models/transformer.py:1772-1830 (bafdc1b6): an hparams set built
# from another, with MoE knobs every set carries and an ``ffn_layer`` that picks the FFN.
T2T = textwrap.dedent(
    """
    def basic_params1():
        return HParams(hidden_size=64, num_hidden_layers=4, moe_num_experts=64)

    def transformer_base_v1():
        hparams = basic_params1()
        hparams.hidden_size = 512
        hparams.filter_size = 2048
        hparams.num_hidden_layers = 6
        hparams.add_hparam("num_heads", 8)
        hparams.add_hparam("attention_key_channels", 0)
        hparams.add_hparam("ffn_layer", "dense_relu_dense")
        hparams.moe_num_experts = 16
        return hparams

    def transformer_k128():
        hparams = transformer_base_v1()
        hparams.attention_key_channels = 128
        return hparams

    def transformer_moe():
        hparams = transformer_base_v1()
        hparams.ffn_layer = "local_moe_tpu"
        return hparams
    """
)


def by_name(text: str) -> dict[str, ModelConfig]:
    return {c.name.rsplit(" ", 1)[-1]: c for c in configs_of(text, "python", "transformer.py")}


def test_a_dense_ffn_kind_sets_the_moe_knobs_aside() -> None:
    """``ffn_layer = "dense_relu_dense"``: the 16 experts are a layer the model does not
    run, and ``filter_size`` is the FFN (without the kind it stays unknown: dense or per
    expert, the framework decides)."""
    base = by_name(T2T)["transformer_base_v1"]
    got = dims(base)
    assert "experts" not in got
    assert (got["hidden"], got["ffn"], got["heads"], got["head_dim"]) == (512, 2048, 8, 64)


def test_an_moe_ffn_kind_keeps_the_experts() -> None:
    moe = by_name(T2T)["transformer_moe"]
    assert moe.int(Dim.EXPERTS) == 16
    assert moe.int(Dim.FFN) is None


def test_the_total_key_width_gives_the_head_dim() -> None:
    """tensor2tensor's ``attention_key_channels`` is the keys' width over all heads
    (``total_key_depth``): 128 over 8 heads is a head dim of 16, not hidden / heads = 64.
    Its default 0 means "the width": nothing is read from it."""
    configs = by_name(T2T)
    assert configs["transformer_k128"].int(Dim.HEAD_DIM) == 16
    assert configs["transformer_base_v1"].int(Dim.HEAD_DIM) == 64


# google-deepmind/gemma gemma/gm/nn/_config.py:72-88 (7691fd4e): ``num_layers`` is the length
# of ``attention_types``, a tuple with one entry per layer.
def test_a_per_layer_list_gives_the_layer_count() -> None:
    text = textwrap.dedent(
        """
        LOCAL, GLOBAL = "local", "global"
        CONFIG = dict(
            num_embed=256128,
            embed_dim=2304,
            hidden_dim=9216,
            num_heads=8,
            head_dim=256,
            num_kv_heads=4,
            attention_types=(LOCAL, GLOBAL) * 13,
        )
        """
    )
    (config,) = configs_of(text, "python", "model_cfg.py")
    assert config.int(Dim.LAYERS) == 26
    assert config.get(Dim.LAYERS).derived  # never rewritten by a fix


def test_two_per_layer_lists_of_different_lengths_say_nothing() -> None:
    text = (
        '{"hidden_size_x": 1, "embed_dim": 2304, "num_heads": 8, "head_dim": 256,'
        ' "attention_types": ["a", "b", "a"], "layer_types": ["a", "b"]}\n'
    )
    for config in configs_of(text):
        assert config.int(Dim.LAYERS) is None


# google/flax examples/lm1b/configs/default.py:39-76 (18f8f311): per-device batch and the
# training example cutoff beside the model's sizes, no gradient accumulation.
LM1B = textwrap.dedent(
    """
    def get_config():
        config = ml_collections.ConfigDict()
        config.vocab_size = 30_000
        config.per_device_batch_size = 32
        config.eval_per_device_batch_size = 32
        config.max_target_length = 128
        config.max_eval_target_length = 512
        config.emb_dim = 512
        config.num_heads = 8
        config.num_layers = 6
        config.qkv_dim = 512
        config.mlp_dim = 2048
        return config
    """
)


def test_a_per_device_batch_is_the_micro_batch() -> None:
    (config,) = configs_of(LM1B, "python", "default.py")
    assert (config.int(Dim.MICRO_BATCH), config.int(Dim.SEQ_LEN)) == (32, 128)
    assert config.get(Dim.MICRO_BATCH).key.endswith("per_device_batch_size")


def test_a_per_device_batch_with_accumulation_is_not_the_micro_batch() -> None:
    text = LM1B.replace(
        "config.max_target_length",
        "config.gradient_accumulation_steps = 4\n    config.max_target_length",
    )
    (config,) = configs_of(text, "python", "default.py")
    assert config.int(Dim.MICRO_BATCH) is None


def test_a_pipelines_micro_batch_size_is_not_a_devices() -> None:
    # paxml/tasks/lm/params/nvidia.py:179-183 (b397693f): MICROBATCH_SIZE splits the whole
    # batch for the pipeline (pipeline_microbatch_size), not one device's batch.
    text = (
        "class Grok_PP(Base):\n    MODEL_DIMS = 6144\n    NUM_HEADS = 48\n"
        "    NUM_LAYERS = 64\n    MICROBATCH_SIZE = 8\n    PERCORE_BATCH_SIZE = 1\n"
    )
    (config,) = configs_of(text, "python", "nvidia.py")
    assert config.int(Dim.MICRO_BATCH) is None


# google/paxml paxml/tasks/lm/model_params.py:560-624 (b397693f): NUM_HEADS = None means
# "MODEL_DIMS / DIMS_PER_HEAD".
PAX = textwrap.dedent(
    """
    class TransformerLmSpmdAdafactor:
        NUM_LAYERS = 10
        MODEL_DIMS = 2048
        HIDDEN_DIMS = MODEL_DIMS * 4
        DIMS_PER_HEAD = 128
        NUM_HEADS = None
        VOCAB_SIZE = 32000
    """
)


def test_heads_set_to_none_are_the_width_over_the_head_dim() -> None:
    (config,) = configs_of(PAX, "python", "model_params.py")
    assert (config.int(Dim.HEADS), config.int(Dim.KV_HEADS), config.int(Dim.HEAD_DIM)) == (
        16,
        16,
        128,
    )
    assert config.get(Dim.HEADS).derived


def test_no_heads_key_derives_no_heads() -> None:
    # apple/corenet general_gpt.py:189-199 (1aa3acd1): OpenELM-like configs vary heads per
    # layer (qkv_multipliers) and name no heads: width / head dim would be a guess.
    text = (
        '{"num_transformer_layers": 24, "model_dim": 2048, "head_dim": 64,'
        ' "num_gqa_groups": 4, "qkv_multipliers": [0.5, 1.0]}\n'
    )
    for config in configs_of(text):
        assert config.int(Dim.HEADS) is None and config.int(Dim.KV_HEADS) is None


# facebookresearch/fairseq fairseq/models/roberta/model.py:627-700 (3d262bb2): RoBERTa is an
# encoder alone; its architecture functions name only encoder_* keys.
ROBERTA = textwrap.dedent(
    """
    @register_model_architecture("roberta", "roberta_large")
    def roberta_large_architecture(args):
        args.encoder_layers = safe_getattr(args, "encoder_layers", 24)
        args.encoder_embed_dim = safe_getattr(args, "encoder_embed_dim", 1024)
        args.encoder_ffn_embed_dim = safe_getattr(args, "encoder_ffn_embed_dim", 4096)
        args.encoder_attention_heads = safe_getattr(args, "encoder_attention_heads", 16)
    """
)


def test_an_encoder_alone_is_the_model() -> None:
    (config,) = configs_of(ROBERTA, "python", "model.py")
    got = dims(config)
    assert {k: got.get(k) for k in ("hidden", "heads", "ffn", "layers", "head_dim")} == {
        "hidden": 1024,
        "heads": 16,
        "ffn": 4096,
        "layers": 24,
        "head_dim": 64,
    }


def test_an_encoder_beside_a_decoder_is_not_the_model() -> None:
    """T5-like: with decoder keys present, the encoder's keys stay the other stack's (and
    two stacks are not read as one model by words alone)."""
    text = ROBERTA.replace(
        '    args.encoder_attention_heads = safe_getattr(args, "encoder_attention_heads", 16)',
        '    args.encoder_attention_heads = safe_getattr(args, "encoder_attention_heads", 16)\n'
        '    args.decoder_embed_dim = safe_getattr(args, "decoder_embed_dim", 512)\n'
        '    args.decoder_attention_heads = safe_getattr(args, "decoder_attention_heads", 8)\n'
        '    args.decoder_layers = safe_getattr(args, "decoder_layers", 6)',
    )
    assert all(c.int(Dim.HIDDEN) != 1024 for c in configs_of(text, "python", "model.py"))


def test_a_vision_encoder_alone_is_not_a_language_model() -> None:
    text = '{"vision_encoder_layers": 24, "vision_encoder_embed_dim": 1024, "vision_encoder_heads": 16}\n'
    assert all(c.int(Dim.HIDDEN) is None for c in configs_of(text))
