"""Dialects contribute, they do not claim: issue #9's examples, one test each.

Every expected number here is read from the example text itself or from the framework's own
source (cited at each test), never from shapelint's output.
"""

from __future__ import annotations

import json
from pathlib import Path

from conftest import configs_of, parse_text

from shapelint import dialects
from shapelint.core.model import Derivation, Dim, ModelConfig
from shapelint.dialects.neox import neox_ffn
from shapelint.engine.options import LintOptions
from shapelint.engine.pipeline import lint_document
from shapelint.engine.target import resolve_target
from shapelint.hardware.gpus import lookup
from shapelint.perf.workload import step_gemms
from shapelint.report.json import config_json
from shapelint.rules import sl103_hidden_alignment

H100 = lookup("h100")


def dims(config: ModelConfig) -> dict[str, object]:
    return {d.value: v.value for d, v in config.dims.items() if v.known}


def findings(text: str, fmt: str = "yaml", path: str = "train.yaml") -> list[tuple[str, str]]:
    options = LintOptions(gpus=(H100,), min_slowdown=0.0)
    _, found = lint_document(parse_text(text, fmt, path), options)
    return [(f.code, f.key) for f in found]


HF_UNDER_MODEL = """\
trainer:
  devices: 8
  precision: bf16
model:
  hidden_size: 4096
  num_attention_heads: 32
  num_key_value_heads: 8
  num_hidden_layers: 32
  intermediate_size: 14336
  vocab_size: 32003
"""


def test_hf_keys_under_model_with_trainer_block() -> None:
    (c,) = configs_of(HF_UNDER_MODEL, "yaml", "train.yaml")
    assert dims(c) | {"dtype": None} == {
        "hidden": 4096,
        "heads": 32,
        "kv_heads": 8,
        "layers": 32,
        "ffn": 14336,
        "vocab": 32003,
        "head_dim": 128,
        "dtype": None,
        "gpus_per_node": 8,  # Lightning's trainer.devices: the devices of one node
    }
    assert c.sources[Dim.LAYERS] == "hf" and c.sources[Dim.VOCAB] == "hf"
    assert c.sources[Dim.HIDDEN] == "nemo"  # the trainer block makes it NeMo's layout
    assert ("SL101", "model.vocab_size") in findings(HF_UNDER_MODEL)


def test_hf_keys_under_model_without_trainer_block() -> None:
    text = HF_UNDER_MODEL.split("model:\n", 1)[1]
    text = "model:\n" + text
    (c,) = configs_of(text, "yaml", "train.yaml")
    assert c.name == "model"
    assert (c.int(Dim.HIDDEN), c.int(Dim.LAYERS), c.int(Dim.KV_HEADS), c.int(Dim.VOCAB)) == (
        4096,
        32,
        8,
        32003,
    )
    assert ("SL101", "model.vocab_size") in findings(text)


def test_nested_at_any_depth() -> None:
    text = (
        "run:\n  network:\n    arch:\n      d_model: 2048\n      n_heads: 16\n      n_layers: 24\n"
    )
    (c,) = configs_of(text, "yaml", "x.yaml")
    assert c.name == "run.network.arch"
    assert c.dims[Dim.HIDDEN].key == "run.network.arch.d_model"
    assert (c.int(Dim.HIDDEN), c.int(Dim.HEADS), c.int(Dim.LAYERS)) == (2048, 16, 24)


NEOX_DASHES = """\
{
  "hidden-size": 2048,
  "num-attention-heads": 16,
  "num-layers": 24,
  "seq-length": 2048,
  "train-micro-batch-size-per-gpu": 4,
  "gradient-accumulation-steps": 2,
}
"""


def test_neox_dash_keys_with_deepspeed_batch_keys() -> None:
    (c,) = configs_of(NEOX_DASHES, "yaml", "neox.yml")
    assert c.dialect == "gpt-neox"
    assert (c.int(Dim.HIDDEN), c.int(Dim.HEADS), c.int(Dim.LAYERS)) == (2048, 16, 24)
    assert (c.int(Dim.MICRO_BATCH), c.int(Dim.GRAD_ACCUM)) == (4, 2)
    assert not c.shape_from_elsewhere
    assert c.sources[Dim.HIDDEN] == "gpt-neox"


def test_deepspeed_batch_keys_join_the_model() -> None:
    text = json.dumps(
        {
            "train_micro_batch_size_per_gpu": 8,
            "zero_optimization": {"stage": 2},
            "model": {"hidden_size": 1024, "num_attention_heads": 16, "num_hidden_layers": 24},
        }
    )
    (c,) = configs_of(text, "json", "ds.json")
    assert (c.int(Dim.HIDDEN), c.int(Dim.MICRO_BATCH)) == (1024, 8)
    assert c.sources[Dim.MICRO_BATCH] == "deepspeed" and c.sources[Dim.HIDDEN] == "hf"
    assert not c.shape_from_elsewhere


LITGPT_LIST = """\
configs = [
    dict(name="pythia-14m", n_embd=128, n_head=4, n_layer=6, n_query_groups=4,
         padded_vocab_size=50304, vocab_size=50254, block_size=512),
    dict(name="pythia-31m", n_embd=256, n_head=8, n_layer=6,
         padded_vocab_size=50304, vocab_size=50254, block_size=1024),
]
"""


def test_litgpt_list_dialect_decided_once() -> None:
    first, second = configs_of(LITGPT_LIST, "python", "config.py")
    assert first.dialect == second.dialect == "litgpt"
    assert second.int(Dim.PADDED_VOCAB) == 50304
    assert not [f for f in findings(LITGPT_LIST, "python", "config.py") if f[0] == "SL101"]


def test_chatglm_multi_query_group_num() -> None:
    # THUDM/chatglm3-6b config.json (abridged).
    text = json.dumps(
        {
            "model_type": "chatglm",
            "hidden_size": 4096,
            "num_attention_heads": 32,
            "num_layers": 28,
            "ffn_hidden_size": 13696,
            "kv_channels": 128,
            "multi_query_attention": True,
            "multi_query_group_num": 2,
            "padded_vocab_size": 65024,
            "seq_length": 8192,
        }
    )
    (c,) = configs_of(text)
    assert c.int(Dim.KV_HEADS) == 2
    assert c.sources[Dim.KV_HEADS] == "chatglm"
    off = json.loads(text) | {"multi_query_attention": False}
    (c,) = configs_of(json.dumps(off))
    assert c.int(Dim.KV_HEADS) == 32


def test_qwen1_intermediate_size_is_twice_the_branch_width() -> None:
    # Qwen/Qwen-7B config.json; QWenMLP: w1, w2 = Linear(hidden, intermediate_size // 2).
    text = json.dumps(
        {
            "architectures": ["QWenLMHeadModel"],
            "model_type": "qwen",
            "hidden_size": 4096,
            "num_attention_heads": 32,
            "num_hidden_layers": 32,
            "intermediate_size": 22016,
            "vocab_size": 151936,
        }
    )
    (c,) = configs_of(text)
    assert c.int(Dim.FFN) == 22016 // 2
    assert c.gated_mlp is True


def test_llava_partial_text_config() -> None:
    # llava-hf/llava-1.5-7b-hf config.json (abridged): the text_config states only a few keys;
    # transformers' LlamaConfig defaults (hidden 4096, 32 heads, 32 layers, 11008) fill the rest.
    text = json.dumps(
        {
            "architectures": ["LlavaForConditionalGeneration"],
            "model_type": "llava",
            "text_config": {
                "architectures": ["LlamaForCausalLM"],
                "max_position_embeddings": 4096,
                "model_type": "llama",
                "vocab_size": 32064,
            },
            "vision_config": {
                "hidden_size": 1024,
                "intermediate_size": 4096,
                "num_attention_heads": 16,
                "num_hidden_layers": 24,
                "model_type": "clip_vision_model",
            },
        }
    )
    names = {c.name: c for c in configs_of(text)}
    assert set(names) == {"text_config", "vision_config"}
    t = names["text_config"]
    assert (t.int(Dim.VOCAB), t.int(Dim.SEQ_LEN)) == (32064, 4096)
    assert (t.int(Dim.HIDDEN), t.int(Dim.HEADS), t.int(Dim.LAYERS), t.int(Dim.FFN)) == (
        4096,
        32,
        32,
        11008,
    )
    assert t.dims[Dim.HIDDEN].kind is Derivation.DEFAULT


def test_bert_encoder_has_no_lm_head() -> None:
    bert = {
        "model_type": "bert",
        "hidden_size": 768,
        "num_attention_heads": 12,
        "num_hidden_layers": 12,
        "vocab_size": 30522,
    }
    (c,) = configs_of(json.dumps(bert | {"architectures": ["BertModel"]}))
    assert c.has_lm_head is False
    (c,) = configs_of(json.dumps(bert))
    assert c.has_lm_head is False
    (c,) = configs_of(json.dumps(bert | {"architectures": ["BertForMaskedLM"]}))
    assert c.has_lm_head is True
    (c,) = configs_of(json.dumps({k: v for k, v in bert.items() if k != "model_type"}))
    assert c.has_lm_head is None


def test_encoder_without_lm_head_has_no_logit_gemm_and_no_vocab_finding() -> None:
    bert = {
        "model_type": "bert",
        "hidden_size": 768,
        "num_attention_heads": 12,
        "num_hidden_layers": 12,
        "intermediate_size": 3072,
        "vocab_size": 30522,  # not a multiple of 64
    }
    target = resolve_target(configs_of(json.dumps(bert))[0], H100, LintOptions(gpus=(H100,)))
    for archs, has_head in ((["BertModel"], False), (["BertForMaskedLM"], True)):
        text = json.dumps(bert | {"architectures": archs})
        (c,) = configs_of(text)
        assert ("logits" in {g.name for g in step_gemms(c, target)}) is has_head
        assert (("SL101", "vocab_size") in findings(text, "json", "config.json")) is has_head


MAMBA = """\
{
  "num_layers": 64,
  "hidden_size": 2048,
  "num_attention_heads": 12,  # ignored when using mamba
  "attention_config": [[["mamba"], 64]],
  "seq_length": 2048,
  "pos_emb": "none",
}
"""


def test_neox_mamba_gets_no_head_rules() -> None:
    (c,) = configs_of(MAMBA, "yaml", "mamba.yml")
    assert c.has_attention is False
    assert Dim.HEADS not in c.dims and Dim.HEAD_DIM not in c.dims
    codes = {code for code, _ in findings(MAMBA, "yaml", "mamba.yml")}
    assert not codes & {"SL003", "SL004", "SL005", "SL102", "SL203"}


NEOX_SWIGLU = """\
{
  "hidden_size": 4096,
  "num_attention_heads": 32,
  "num_layers": 32,
  "seq_length": 2048,
  "activation": "swiglu",
  "mlp_multiple_of": 2,
  "pipe_parallel_size": 1,
}
"""


def test_sl104_fix_uses_neox_ffn_formula() -> None:
    (c,) = configs_of(NEOX_SWIGLU, "yaml", "neox.yml")
    # NeoX ParallelMLP: int(4·h·2/3) // 2, rounded up to mlp_multiple_of.
    assert c.int(Dim.FFN) == neox_ffn(4 * 4096, True, 2) == 5462
    _, found = lint_document(parse_text(NEOX_SWIGLU, "yaml", "neox.yml"), LintOptions(gpus=(H100,)))
    (f,) = [f for f in found if f.code == "SL104"]
    assert f.fix is not None
    (edit,) = f.fix.edits
    assert (edit.key, edit.new) == ("mlp_multiple_of", 64)
    assert dict(f.fix.dims)[Dim.FFN] == neox_ffn(4 * 4096, True, 64) == 5504
    assert f.estimates and all(e.slowdown_pct > 0 for e in f.estimates)


def test_derivations_are_typed_and_fixes_recompute_with_own_formula() -> None:
    # GPT-2 as config.json and as nanoGPT's GPTConfig: SL103's fix of n_embd must carry the
    # FFN width each framework computes from it (4 · n_embd in both).
    hf_text = (
        '{"n_embd": 776, "n_head": 8, "n_layer": 12, "n_positions": 1024, "vocab_size": 50304}'
    )
    py_text = (
        "from model import GPTConfig\n"
        "config = GPTConfig(n_embd=776, n_head=8, n_layer=12, block_size=1024, vocab_size=50304)\n"
    )
    fixes = []
    for text, fmt, path in ((hf_text, "json", "config.json"), (py_text, "python", "train.py")):
        (c,) = configs_of(text, fmt, path)
        assert c.dims[Dim.FFN].kind is Derivation.FORMULA
        assert c.dims[Dim.HEAD_DIM].kind is Derivation.HEAD_DIM_SPLIT
        target = resolve_target(c, H100, LintOptions(gpus=(H100,)))
        (f,) = sl103_hidden_alignment.check(c, target)  # the rule itself: no estimate filter
        assert f.fix is not None
        fixes.append(dict(f.fix.dims))
    assert fixes[0] == fixes[1]
    assert fixes[0][Dim.FFN] == 4 * fixes[0][Dim.HIDDEN]


def test_json_report_names_the_source_of_each_dim() -> None:
    (c,) = configs_of(HF_UNDER_MODEL, "yaml", "train.yaml")
    out = config_json(c)
    assert out["sources"]["layers"] == "hf"
    assert out["sources"]["hidden"] == "nemo"
    assert set(out["sources"]) == set(out["dims"])


def test_checkpoint_beside_any_dialect_makes_fixes_unsafe(tmp_path: Path) -> None:
    (tmp_path / "neox.yml").write_text(NEOX_SWIGLU)
    (c,) = configs_of(NEOX_SWIGLU, "yaml", str(tmp_path / "neox.yml"))
    assert c.pretrained is False
    (tmp_path / "model.safetensors").write_bytes(b"")
    (c,) = configs_of(NEOX_SWIGLU, "yaml", str(tmp_path / "neox.yml"))
    assert c.pretrained is True
    (f,) = [
        f
        for f in lint_document(
            parse_text(NEOX_SWIGLU, "yaml", str(tmp_path / "neox.yml")), LintOptions(gpus=(H100,))
        )[1]
        if f.code == "SL104"
    ]
    assert f.fix is not None and f.fix.applicability == "unsafe"


def test_nemo_restore_from_path_is_a_checkpoint() -> None:
    text = HF_UNDER_MODEL + "  restore_from_path: /ckpt/llama.nemo\n"
    (c,) = configs_of(text, "yaml", "train.yaml")
    assert c.pretrained is True
    text = HF_UNDER_MODEL + "  restore_from_path: null\n"
    (c,) = configs_of(text, "yaml", "train.yaml")
    assert c.pretrained is False


NEMO_T5 = """\
trainer:
  precision: bf16
model:
  micro_batch_size: 4
  tensor_model_parallel_size: 2
  make_vocab_size_divisible_by: 128
  override_vocab_size: 32100
  encoder:
    num_layers: 12
    hidden_size: 768
    ffn_hidden_size: 2048
    num_attention_heads: 12
    kv_channels: 64
  decoder:
    num_layers: 6
    hidden_size: 768
    ffn_hidden_size: 2048
    num_attention_heads: 12
    kv_channels: 64
"""


def test_nemo_encoder_decoder_stacks_and_override_vocab_size() -> None:
    configs = {c.name: c for c in configs_of(NEMO_T5, "yaml", "t5.yaml")}
    assert set(configs) == {"model.encoder", "model.decoder"}
    enc, dec = configs["model.encoder"], configs["model.decoder"]
    assert (enc.int(Dim.LAYERS), dec.int(Dim.LAYERS)) == (12, 6)
    for c in (enc, dec):
        assert (c.int(Dim.HIDDEN), c.int(Dim.FFN), c.int(Dim.HEAD_DIM)) == (768, 2048, 64)
        assert (c.int(Dim.MICRO_BATCH), c.int(Dim.TP), c.int(Dim.VOCAB)) == (4, 2, 32100)
        # NeMo pads as Megatron: a multiple of make_vocab_size_divisible_by · tp = 256.
        assert c.int(Dim.PADDED_VOCAB) == 32256
        assert c.dialect == "nemo" and c.sources[Dim.HIDDEN] == "hf"


# NeMo-Framework-Launcher's training/t5/220m.yaml, cut down: the encoder reads model.seq_length
# (512); the decoder runs model.data.seq_length_dec (128) tokens, as NeMo's
# MegatronLMEncoderDecoderModel.max_decoder_seq_length says (else model.seq_length).
NEMO_T5_SEQ = """\
model:
  micro_batch_size: 64
  tensor_model_parallel_size: 1
  seq_length: 512
  max_position_embeddings: ${.seq_length}
  encoder:
    num_layers: 12
    hidden_size: 768
    ffn_hidden_size: 2048
    num_attention_heads: 12
  decoder:
    num_layers: 12
    hidden_size: 768
    ffn_hidden_size: 2048
    num_attention_heads: 12
  data:
    seq_length: 512
    seq_length_dec: 128
"""


def test_nemo_t5_decoder_runs_seq_length_dec() -> None:
    configs = {c.name: c for c in configs_of(NEMO_T5_SEQ, "yaml", "t5.yaml")}
    enc, dec = configs["model.encoder"], configs["model.decoder"]
    assert enc.int(Dim.SEQ_LEN) == 512 and enc.dims[Dim.SEQ_LEN].key == "model.seq_length"
    assert dec.int(Dim.SEQ_LEN) == 128
    assert dec.dims[Dim.SEQ_LEN].key == "model.data.seq_length_dec"
    assert dec.int(Dim.MICRO_BATCH) == 64  # the shared settings still join the decoder
    # Without seq_length_dec NeMo falls back to model.seq_length.
    (no_dec,) = [
        c
        for c in configs_of(NEMO_T5_SEQ.replace("    seq_length_dec: 128\n", ""), "yaml", "t.yaml")
        if c.name == "model.decoder"
    ]
    assert no_dec.int(Dim.SEQ_LEN) == 512


def test_nemo_t5_decoder_seq_unknown_from_other_keys() -> None:
    # The shared length read from model.encoder_seq_length is not what NeMo's T5 decoder falls
    # back to (model.seq_length): with no seq_length_dec either, the decoder's is unknown.
    text = NEMO_T5_SEQ.replace("  seq_length: 512\n  max_position_embeddings: ${.seq_length}\n", "")
    text = text.replace(
        "  micro_batch_size: 64\n", "  micro_batch_size: 64\n  encoder_seq_length: 512\n"
    )
    text = text.replace("    seq_length_dec: 128\n", "")
    configs = {c.name: c for c in configs_of(text, "yaml", "t5.yaml")}
    assert Dim.SEQ_LEN not in configs["model.decoder"].dims
    assert Dim.SEQ_LEN not in configs["model.decoder"].sources


# NeMo-Framework-Launcher's training/clip/vit_B_32.yaml, cut down: the vision stack's layers run
# one token per 32x32 patch of a 224x224 image plus class_token_length class tokens
# (Megatron-core CLIPViTModel: seq_length = num_patches + class_token_len), not the stale
# encoder_seq_length the file also states.
NEMO_CLIP = """\
trainer:
  precision: bf16
model:
  micro_batch_size: 500
  tensor_model_parallel_size: 1
  vision:
    patch_dim: 32
    img_h: 224
    img_w: 224
    class_token_length: 7
    encoder_seq_length: 49
    max_position_embeddings: ${.encoder_seq_length}
    num_layers: 12
    hidden_size: 768
    ffn_hidden_size: 3072
    num_attention_heads: 12
  text:
    encoder_seq_length: 80
    max_position_embeddings: ${.encoder_seq_length}
    num_layers: 12
    hidden_size: 512
    ffn_hidden_size: 2048
    num_attention_heads: 8
"""


def test_nemo_clip_vision_stack_runs_its_patches() -> None:
    configs = {c.name: c for c in configs_of(NEMO_CLIP, "yaml", "clip.yaml")}
    vision, text = configs["model.vision"], configs["model.text"]
    assert vision.int(Dim.SEQ_LEN) == (224 // 32) * (224 // 32) + 7 == 56
    assert vision.dims[Dim.SEQ_LEN].derived
    assert text.int(Dim.SEQ_LEN) == 80  # the text stack's own length
    # training/clip/siglip_config.yaml: 384x384 at patch 16 and no class tokens.
    siglip = NEMO_CLIP.replace("patch_dim: 32", "patch_dim: 16").replace("224", "384")
    siglip = siglip.replace("class_token_length: 7", "class_token_length: 0")
    by_name = {c.name: c for c in configs_of(siglip, "yaml", "siglip.yaml")}
    assert by_name["model.vision"].int(Dim.SEQ_LEN) == 24 * 24


# training/vit/B_16.yaml, cut down: a ViT classifier in the root model mapping.
NEMO_VIT = """\
trainer:
  precision: bf16
model:
  micro_batch_size: 256
  tensor_model_parallel_size: 1
  patch_dim: 16
  img_h: 224
  img_w: 224
  encoder_seq_length: 196
  max_position_embeddings: ${.encoder_seq_length}
  num_layers: 12
  hidden_size: 768
  ffn_hidden_size: 3072
  num_attention_heads: 12
"""


def test_nemo_vit_sequence_is_patches_and_class_tokens() -> None:
    # No class_token_length: NeMo's ViT classifier defaults it (8) in code the file does not
    # name, so the length is unknown, never the 196 patches encoder_seq_length says.
    (c,) = configs_of(NEMO_VIT, "yaml", "vit.yaml")
    assert Dim.SEQ_LEN not in c.dims and c.int(Dim.HIDDEN) == 768
    stated = NEMO_VIT.replace("  img_w: 224\n", "  img_w: 224\n  class_token_length: 8\n")
    (c,) = configs_of(stated, "yaml", "vit.yaml")
    assert c.int(Dim.SEQ_LEN) == (224 // 16) ** 2 + 8 == 204


def test_nemo_llm_beside_a_vision_encoder_keeps_its_length() -> None:
    # NeVA: patch_dim and class_token_length sit in model.mm_cfg.vision_encoder, not beside the
    # language model's width; its encoder_seq_length stands.
    text = (
        "trainer:\n  precision: bf16\nmodel:\n  micro_batch_size: 1\n"
        "  mm_cfg:\n    vision_encoder:\n      patch_dim: 14\n      class_token_length: 1\n"
        "  encoder_seq_length: 4096\n  num_layers: 32\n  hidden_size: 4096\n"
        "  ffn_hidden_size: 11008\n  num_attention_heads: 32\n"
    )
    (c,) = configs_of(text, "yaml", "neva.yaml")
    assert c.int(Dim.SEQ_LEN) == 4096


def test_nemo_multiply_resolver() -> None:
    text = (
        "trainer:\n  precision: bf16\nmodel:\n  hidden_size: 1024\n  num_attention_heads: 16\n"
        "  num_layers: 24\n  encoder_seq_length: 2048\n"
        "  ffn_hidden_size: ${multiply:${.hidden_size}, 4}\n"
        "  global_batch_size: ${multiply:${.micro_batch_size}, 8}\n  micro_batch_size: 2\n"
    )
    (c,) = configs_of(text, "yaml", "gpt.yaml")
    assert c.int(Dim.FFN) == 4096 and c.dims[Dim.FFN].derived
    assert c.int(Dim.GLOBAL_BATCH) == 16
    unknown = text.replace("${.micro_batch_size}", "${oc.env:MBS}")
    (c,) = configs_of(unknown, "yaml", "gpt.yaml")
    assert c.int(Dim.GLOBAL_BATCH) is None and not c.dims[Dim.GLOBAL_BATCH].known


def test_mapped_keys_go_through_the_llama_ffn_formula() -> None:
    # Llama-3-8B's shape in a custom layout: dim 4096, multiple_of 1024, multiplier 1.3 →
    # FeedForward width 14336 (the published intermediate size).
    text = "net:\n  width: 4096\n  heads: 32\n  depth: 32\n  mult_of: 1024\n  ffn_mult: 1.3\n"
    extra = {
        Dim.HIDDEN: ("net.width",),
        Dim.HEADS: ("net.heads",),
        Dim.LAYERS: ("net.depth",),
        Dim.FFN_MULTIPLE: ("net.mult_of",),
        Dim.FFN_MULTIPLIER: ("net.ffn_mult",),
    }
    doc = parse_text(text, "yaml", "x.yaml")
    (c,) = dialects.extract(doc, extra)
    assert c.int(Dim.FFN) == 14336 and c.gated_mlp is True
