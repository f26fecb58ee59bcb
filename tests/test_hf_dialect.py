"""Hugging Face and Llama params.json key families → normalized dims."""

from __future__ import annotations

import json
from pathlib import Path

from conftest import configs_of

from shapelint import dialects
from shapelint.core.model import Dim, ModelConfig
from shapelint.readers import parse


def dims(config: ModelConfig) -> dict[str, object]:
    return {d.value: v.value for d, v in config.dims.items()}


def test_llama2_7b() -> None:
    text = json.dumps(
        {
            "architectures": ["LlamaForCausalLM"],
            "model_type": "llama",
            "hidden_size": 4096,
            "num_attention_heads": 32,
            "num_hidden_layers": 32,
            "intermediate_size": 11008,
            "vocab_size": 32000,
            "max_position_embeddings": 4096,
            "torch_dtype": "float16",
            "type_vocab_size": 2,
        }
    )
    (c,) = configs_of(text)
    assert dims(c) | {} == {
        "hidden": 4096,
        "heads": 32,
        "layers": 32,
        "ffn": 11008,
        "vocab": 32000,
        "seq_len": 4096,
        "dtype": "float16",
        "head_dim": 128,
        "kv_heads": 32,
    }
    assert c.gated_mlp is True and c.pretrained is True
    head_dim = c.dims[Dim.HEAD_DIM]
    assert head_dim.derived and {v.key for v in head_dim.derived_from} == {
        "hidden_size",
        "num_attention_heads",
    }


def test_gpt2_n_inner_null_means_four_hidden() -> None:
    (c,) = configs_of(
        '{"n_embd": 768, "n_head": 12, "n_layer": 12, "n_inner": null, "vocab_size": 50257}'
    )
    assert c.int(Dim.FFN) == 3072 and c.dims[Dim.FFN].derived
    assert c.gated_mlp is False and not c.pretrained


def test_multi_query_and_falcon_kv() -> None:
    (c,) = configs_of('{"hidden_size": 4544, "n_head": 71, "multi_query": true, "n_layer": 32}')
    assert c.int(Dim.KV_HEADS) == 1
    (c,) = configs_of(
        '{"hidden_size": 8192, "num_attention_heads": 128, "num_kv_heads": 8, "num_hidden_layers": 60}'
    )
    assert c.int(Dim.KV_HEADS) == 8


def test_mla_head_dim_from_nope_plus_rope() -> None:
    text = (
        '{"hidden_size": 7168, "num_attention_heads": 128, "num_hidden_layers": 61,'
        ' "qk_nope_head_dim": 128, "qk_rope_head_dim": 64, "v_head_dim": 128,'
        ' "n_routed_experts": 256, "num_experts_per_tok": 8, "moe_intermediate_size": 2048}'
    )
    (c,) = configs_of(text)
    assert c.int(Dim.HEAD_DIM) == 192
    assert c.int(Dim.V_HEAD_DIM) == 128
    assert (c.int(Dim.EXPERTS), c.int(Dim.EXPERTS_PER_TOKEN), c.int(Dim.MOE_FFN)) == (256, 8, 2048)


def test_nested_sub_configs_have_dotted_keys() -> None:
    text = json.dumps(
        {
            "architectures": ["LlavaForConditionalGeneration"],
            "text_config": {
                "hidden_size": 4096,
                "num_attention_heads": 32,
                "num_hidden_layers": 32,
                "vocab_size": 32064,
            },
            "vision_config": {
                "hidden_size": 1024,
                "num_attention_heads": 16,
                "num_hidden_layers": 24,
            },
        }
    )
    configs = configs_of(text)
    assert [c.name for c in configs] == ["text_config", "vision_config"]
    assert configs[0].dims[Dim.VOCAB].key == "text_config.vocab_size"
    assert all(c.pretrained for c in configs)


def test_encoder_decoder_stacks_split() -> None:
    text = json.dumps(
        {
            "d_model": 1280,
            "encoder_attention_heads": 20,
            "decoder_attention_heads": 20,
            "encoder_ffn_dim": 5120,
            "decoder_ffn_dim": 5120,
            "encoder_layers": 32,
            "decoder_layers": 4,
            "vocab_size": 51866,
        }
    )
    enc, dec = configs_of(text)
    assert (enc.name, dec.name) == ("encoder", "decoder")
    assert enc.dims[Dim.LAYERS].key == "encoder_layers" and dec.int(Dim.LAYERS) == 4


def test_not_a_model_config() -> None:
    assert configs_of('{"name": "pkg", "version": "1.0.0"}') == []
    assert configs_of('{"vocab_size": 32000, "model_max_length": 4096}') == []


def test_weights_beside_config_mark_it_pretrained(tmp_path: Path) -> None:
    (tmp_path / "model.safetensors").write_bytes(b"")
    path = str(tmp_path / "config.json")
    (c,) = configs_of(
        '{"hidden_size": 64, "num_attention_heads": 2, "num_hidden_layers": 2}', path=path
    )
    assert c.pretrained


def test_tf_flax_and_keras_checkpoints_beside_mark_it_pretrained(tmp_path: Path) -> None:
    gpt2 = '{"n_vocab": 50257, "n_ctx": 1024, "n_embd": 768, "n_head": 12, "n_layer": 12}'
    for i, weights in enumerate(("model.ckpt.index", "tf_model.h5", "flax_model.msgpack")):
        folder = tmp_path / str(i)
        folder.mkdir()
        (folder / weights).write_bytes(b"")
        (c,) = configs_of(gpt2, path=str(folder / "hparams.json"))
        assert c.pretrained, weights
    (c,) = configs_of(gpt2, path=str(tmp_path / "hparams.json"))
    assert not c.pretrained


def test_openai_gpt2_hparams_json() -> None:
    (c,) = configs_of(
        '{"n_vocab": 50257, "n_ctx": 1024, "n_embd": 768, "n_head": 12, "n_layer": 12}'
    )
    assert dims(c)["vocab"] == 50257 and dims(c)["seq_len"] == 1024 and dims(c)["hidden"] == 768


def test_llama_params_json_ffn_formula() -> None:
    (c,) = configs_of(
        '{"dim": 4096, "multiple_of": 256, "n_heads": 32, "n_layers": 32, "norm_eps": 1e-05, "vocab_size": -1}'
    )
    assert c.dialect == "llama-params"
    assert c.int(Dim.FFN) == 11008 and c.dims[Dim.FFN].derived
    assert Dim.VOCAB not in c.dims  # -1: taken from the tokenizer
    (c,) = configs_of(
        '{"dim": 4096, "ffn_dim_multiplier": 1.3, "multiple_of": 1024, "n_heads": 32,'
        ' "n_kv_heads": 8, "n_layers": 32, "vocab_size": 128256}'
    )
    assert c.int(Dim.FFN) == 14336 and c.int(Dim.KV_HEADS) == 8


def test_deepseek_inference_config() -> None:
    text = (
        '{"vocab_size": 129280, "dim": 7168, "inter_dim": 18432, "moe_inter_dim": 2048, "n_layers": 61,'
        ' "n_heads": 128, "n_routed_experts": 256, "n_activated_experts": 8,'
        ' "qk_nope_head_dim": 128, "qk_rope_head_dim": 64, "v_head_dim": 128, "dtype": "fp8"}'
    )
    (c,) = configs_of(text)
    assert (c.int(Dim.HEAD_DIM), c.int(Dim.FFN), c.int(Dim.MOE_FFN), c.int(Dim.EXPERTS)) == (
        192,
        18432,
        2048,
        256,
    )


def _positions(text: str) -> str | None:
    (config,) = [c for c in dialects.extract(parse("config.json", text.encode(), "json"))]
    return config.position_embedding


def test_position_embeddings_only_where_the_config_says() -> None:
    base = '"hidden_size": 1024, "num_attention_heads": 16, "num_hidden_layers": 24'
    assert _positions('{"model_type": "gpt2", "n_embd": 768, "n_head": 12, "n_layer": 12}') == (
        "learned"  # GPT2Model adds wpe
    )
    assert _positions('{"model_type": "bloom", "n_embed": 1024, "n_head": 16, "n_layer": 24}') == (
        "alibi"
    )
    assert (
        _positions(
            '{"model_type": "mpt", "d_model": 2048, "n_heads": 16, "n_layers": 24,'
            ' "attn_config": {"alibi": true}}'
        )
        == "alibi"
    )
    assert _positions('{"model_type": "falcon", "alibi": false, ' + base + "}") is None
    assert _positions('{"position_embedding_type": "absolute", ' + base + "}") == "learned"
    assert _positions('{"model_type": "llama", ' + base + "}") is None  # rotary assumed, not read


def test_gpt2_has_no_rotary_op_in_the_step() -> None:
    from shapelint.core.model import Target
    from shapelint.hardware.gpus import lookup
    from shapelint.perf.ops import step_memops

    (config,) = dialects.extract(
        parse(
            "config.json",
            b'{"model_type": "gpt2", "n_embd": 768, "n_head": 12, "n_layer": 12,'
            b' "vocab_size": 50304, "n_positions": 1024}',
            "json",
        )
    )
    names = {op.name for op in step_memops(config, Target(gpu=lookup("h100"), seq_len=1024))}
    assert "rotary" not in names and names  # the other memory-bound ops are there


def test_llama4_text_experts_shared_expert_and_dense_layers() -> None:
    # Llama-4-Maverick's text_config (modeling_llama4.py: Llama4TextMoe has a shared expert
    # of intermediate_size; non-MoE layers are Llama4TextMLP(intermediate_size_mlp)).
    text = {
        "model_type": "llama4_text",
        "hidden_size": 5120,
        "intermediate_size": 8192,
        "intermediate_size_mlp": 16384,
        "num_attention_heads": 40,
        "num_key_value_heads": 8,
        "head_dim": 128,
        "num_hidden_layers": 48,
        "num_local_experts": 128,
        "num_experts_per_tok": 1,
        "interleave_moe_layer_step": 2,
        "vocab_size": 202048,
    }
    (c,) = configs_of(json.dumps({"model_type": "llama4", "text_config": text}))
    got = dims(c)
    assert (got["moe_ffn"], got["ffn"], got["moe_layer_freq"], got["shared_experts"]) == (
        8192,
        16384,
        2,
        1,
    )


# MPT-7B and MPT-30B as their Hugging Face config.json states them (mosaicml/mpt-7b and
# mosaicml/mpt-30b on the Hub, model_type "mpt", remote code in auto_map): shape keys only,
# written by hand. The FFN is expansion_ratio × d_model: llm-foundry's resolve_ffn_hidden_size
# (the MPT code in auto_map), and transformers' MptConfig (expansion_ratio default 4).
MPT_7B = {
    "architectures": ["MPTForCausalLM"],
    "attn_config": {"alibi": True, "attn_impl": "torch", "attn_type": "multihead_attention"},
    "auto_map": {
        "AutoConfig": "configuration_mpt.MPTConfig",
        "AutoModelForCausalLM": "modeling_mpt.MPTForCausalLM",
    },
    "d_model": 4096,
    "expansion_ratio": 4,
    "max_seq_len": 2048,
    "model_type": "mpt",
    "n_heads": 32,
    "n_layers": 32,
    "no_bias": True,
    "vocab_size": 50432,
}
MPT_30B = {**MPT_7B, "d_model": 7168, "n_heads": 64, "n_layers": 48, "max_seq_len": 8192}


def test_mpt_ffn_from_expansion_ratio() -> None:
    for raw in (MPT_7B, MPT_30B):
        text = json.dumps(raw)
        data = json.loads(text)
        (c,) = configs_of(text)
        assert c.int(Dim.FFN) == int(data["d_model"] * data["expansion_ratio"])
        ffn = c.dims[Dim.FFN]
        assert ffn.derived and {v.key for v in ffn.derived_from} == {"d_model", "expansion_ratio"}
        assert c.gated_mlp is False
        assert c.int(Dim.HEAD_DIM) == data["d_model"] // data["n_heads"]


def test_mpt_ffn_default_stated_and_gated() -> None:
    # No ratio: MptConfig's default 4.
    no_ratio = {k: v for k, v in MPT_7B.items() if k != "expansion_ratio"}
    (c,) = configs_of(json.dumps(no_ratio))
    assert c.int(Dim.FFN) == 4 * MPT_7B["d_model"]  # type: ignore[operator]
    # llm-foundry's ffn_config: a stated width wins; mptglu is gated.
    glu = {**MPT_7B, "ffn_config": {"ffn_type": "mptglu", "ffn_hidden_size": 10944}}
    (c,) = configs_of(json.dumps(glu))
    assert c.int(Dim.FFN) == 10944 and c.gated_mlp is True
    # Not an MPT config: expansion_ratio may mean anything else; the FFN stays unknown.
    other = {"d_model": 512, "n_heads": 8, "n_layers": 6, "expansion_ratio": 2}
    (c,) = configs_of(json.dumps(other))
    assert c.int(Dim.FFN) is None
