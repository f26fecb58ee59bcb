"""torchtune recipe YAMLs that pick their model by naming a builder and state no shape keys.

Most of torchtune's own recipes (recipes/configs/**/*.yaml at pytorch/torchtune bd2a0fc, 184
of 205 model blocks) name a builder such as ``torchtune.models.llama3_2.lora_llama3_2_1b``; the
shape is in the builder's keywords (``torchtune/models/<family>/_model_builders.py``). The
fixtures below are hand-written with the recipes' structure; the expected numbers are the
builders' keywords, quoted with their file and line at that commit (not shapelint's output).
"""

from __future__ import annotations

from shapelint import dialects
from shapelint.core.model import Derivation, Dim, ModelConfig
from shapelint.engine.options import LintOptions
from shapelint.engine.pipeline import lint_document
from shapelint.hardware.gpus import lookup
from shapelint.readers import parse

SHAPE = (Dim.HIDDEN, Dim.HEADS, Dim.KV_HEADS, Dim.LAYERS, Dim.FFN, Dim.VOCAB, Dim.HEAD_DIM)


def configs(text: str) -> list[ModelConfig]:
    return dialects.extract(parse("recipe.yaml", text.encode(), "yaml"))


def shape(config: ModelConfig) -> tuple[int | None, ...]:
    return tuple(config.int(d) for d in SHAPE)


# recipes/configs/llama3_2/1B_lora_single_device.yaml (model block and batch keys).
LORA_1B = """\
output_dir: /tmp/torchtune/llama3_2_1B/lora_single_device

# Model Arguments
model:
  _component_: torchtune.models.llama3_2.lora_llama3_2_1b
  lora_attn_modules: ['q_proj', 'v_proj', 'output_proj']
  apply_lora_to_mlp: True
  lora_rank: 64  # higher increases accuracy and memory
  lora_alpha: 128  # usually alpha=2*rank
  lora_dropout: 0.0

tokenizer:
  _component_: torchtune.models.llama3.llama3_tokenizer
  path: /tmp/Llama-3.2-1B-Instruct/original/tokenizer.model
  max_seq_len: null

batch_size: 4
gradient_accumulation_steps: 8
dtype: bf16
"""


def test_a_lora_builder_reads_the_plain_builders_shape() -> None:
    (config,) = configs(LORA_1B)
    # torchtune/models/llama3_2/_model_builders.py:20-45 (llama3_2_1b): vocab_size=128_256,
    # num_layers=16, num_heads=32, num_kv_heads=8, embed_dim=2048, intermediate_dim=8192;
    # lora_llama3_2_1b (same file) passes the same keywords to lora_llama3_2.
    assert config.dialect == "torchtune"
    assert shape(config) == (2048, 32, 8, 16, 8192, 128256, 2048 // 32)
    assert config.gated_mlp is True and config.pretrained
    # max_seq_len=131072 is the model's context, not the training length.
    assert config.int(Dim.SEQ_LEN) == 131072 and config.seq_is_max_context
    hidden = config.dims[Dim.HIDDEN]
    assert hidden.kind is Derivation.DEFAULT  # the builder's, so the fixer never edits it
    assert LORA_1B[hidden.span.start : hidden.span.end].startswith("torchtune.models.llama3_2")


def test_a_distillation_recipe_has_the_student_and_the_teacher() -> None:
    # recipes/configs/qwen2/1.5_to_0.5B_KD_lora_single_device.yaml
    text = (
        "model:\n  _component_: torchtune.models.qwen2.lora_qwen2_0_5b\n"
        "  lora_attn_modules: ['q_proj', 'v_proj', 'output_proj']\n  apply_lora_to_mlp: True\n"
        "  lora_rank: 32  # higher increases accuracy and memory\n  lora_alpha: 64\n\n"
        "teacher_model:\n  _component_: torchtune.models.qwen2.qwen2_1_5b\n\n"
        "tokenizer:\n  _component_: torchtune.models.qwen2.qwen2_tokenizer\n"
        "  max_seq_len: null\n"
    )
    by_name = {c.name: c for c in configs(text)}
    assert set(by_name) == {"model", "teacher_model"}
    # qwen2/_model_builders.py:45 qwen2_0_5b: embed_dim=896, num_heads=14, num_kv_heads=2,
    # num_layers=24, intermediate_dim=4864, vocab_size=151936; :72 qwen2_1_5b: 1536, 12, 2, 28,
    # 8960, 151936.
    assert shape(by_name["model"]) == (896, 14, 2, 24, 4864, 151936, 64)
    assert shape(by_name["teacher_model"]) == (1536, 12, 2, 28, 8960, 151936, 128)


def test_a_stated_head_dim_and_a_component_default() -> None:
    gemma = configs("model:\n  _component_: torchtune.models.gemma.gemma_7b\n\nbatch_size: 1\n")
    # gemma/_model_builders.py:129 gemma_7b states head_dim=256 (not 3072 / 16 = 192).
    assert shape(gemma[0]) == (3072, 16, 16, 28, 24576, 256000, 256)
    llama2 = configs("model:\n  _component_: torchtune.models.llama2.llama2_7b\n")
    # llama2/_model_builders.py:25 llama2_7b states no intermediate_dim: the component
    # builder's scale_hidden_dim_for_mlp(4096) = 4 * int(2 * 4096 / 3) = 10920, rounded up to
    # a multiple of 256 = 11008 (llama2/_model_utils.py:8-23, _component_builders.py:85-87).
    assert shape(llama2[0]) == (4096, 32, 32, 32, 11008, 32000, 128)


def test_gemma2_windows_every_even_layer() -> None:
    (config,) = configs("model:\n  _component_: torchtune.models.gemma2.gemma2_2b\n")
    # gemma2/_model_builders.py:19 gemma2_2b: num_layers=26, sliding_window_size=4096;
    # _component_builders.py:121-139 gives it the layers with an even index: 13 of 26.
    assert (config.int(Dim.SLIDING_WINDOW), config.int(Dim.WINDOW_LAYERS)) == (4096, 13)


def test_an_untabled_builder_stays_unread() -> None:
    # recipes/configs/llama3_2_vision/11B_full.yaml: a DeepFusionModel (vision encoder plus a
    # decoder with cross-attention layers), not one of the tabled text decoders.
    text = (
        "model:\n  _component_: torchtune.models.llama3_2_vision.llama3_2_vision_11b\n"
        "  decoder_trainable: False\n  encoder_trainable: True\n  fusion_trainable: True\n"
        "  image_size: 560\n"
    )
    assert [c for c in configs(text) if Dim.HIDDEN in c.dims] == []
    # qwen2_5/14B_to_7B_KD_lora_single_device.yaml names lora_qwen2_5_7b, which torchtune does
    # not define (only lora_qwen2_5_7b_base and _instruct): no shape is guessed for it.
    text = "model:\n  _component_: torchtune.models.qwen2_5.lora_qwen2_5_7b\n"
    assert [c for c in configs(text) if Dim.HIDDEN in c.dims] == []


def test_a_grpo_recipes_training_batch_is_not_read_as_torchtitans() -> None:
    # recipes/configs/dev/qwen3B_async_grpo.yaml: ``training.batch_size`` sizes the replay
    # buffer's samples (recipes/dev/async_grpo_full_finetune_distributed.py:133-137), and the
    # file is no torchtitan config although it has ``training`` beside ``model``.
    text = (
        "model:\n  _component_: torchtune.models.qwen2_5.qwen2_5_3b\n\n"
        "training:\n  batch_size: 16\n  ppo_epochs: 1\n  clip_grad_norm: 1.0\n"
    )
    (config,) = configs(text)
    assert config.dialect == "torchtune" and Dim.MICRO_BATCH not in config.dims
    # qwen2_5/_model_builders.py:109 qwen2_5_3b: 2048, 16 heads, 2 KV heads, 36 layers.
    assert shape(config)[:4] == (2048, 16, 2, 36)


def test_a_finding_on_a_builders_value_has_no_fix() -> None:
    # phi3/_model_builders.py:20 phi3_mini: embed_dim=3072, num_heads=32 -> head dim 96.
    text = "model:\n  _component_: torchtune.models.phi3.lora_phi3_mini\n  lora_rank: 8\n"
    doc = parse("recipe.yaml", text.encode(), "yaml")
    _, findings = lint_document(doc, LintOptions(gpus=(lookup("H100-SXM"),)))
    (sl102,) = [f for f in findings if f.code == "SL102"]
    assert "96" in sl102.message and sl102.fix is None


def test_a_supervised_recipes_batch_is_per_device() -> None:
    # recipes/configs/llama3_2/1B_lora_single_device.yaml: batch_size 4 (line 53), loss
    # LinearCrossEntropyLoss (65-66), gradient_accumulation_steps 8 (71). The recipes' own
    # docstring: "Total Batch Size = batch_size * number of GPUs * gradient accumulation
    # steps" (recipes/full_finetune_distributed.py:94): batch_size is each device's.
    text = LORA_1B + "loss:\n  _component_: torchtune.modules.loss.LinearCrossEntropyLoss\n"
    (config,) = configs(text)
    assert (config.int(Dim.MICRO_BATCH), config.int(Dim.GRAD_ACCUM)) == (4, 8)
    # The same keys in a DPO recipe (recipes/configs/llama3_1/8B_lora_dpo.yaml): each example
    # is a chosen and a rejected sequence in one forward (lora_dpo_single_device.py:457-478).
    dpo = LORA_1B + "loss:\n  _component_: torchtune.rlhf.loss.DPOLoss\n  beta: 0.05\n"
    (config,) = configs(dpo)
    assert Dim.MICRO_BATCH not in config.dims and Dim.GRAD_ACCUM not in config.dims


def test_a_distillation_recipes_batch_belongs_to_the_student() -> None:
    # recipes/configs/qwen2/1.5_to_0.5B_KD_lora_single_device.yaml: batch_size 8,
    # gradient_accumulation_steps 8, loss CEWithChunkedOutputLoss beside kd_loss.
    text = (
        "model:\n  _component_: torchtune.models.qwen2.lora_qwen2_0_5b\n  lora_rank: 32\n\n"
        "teacher_model:\n  _component_: torchtune.models.qwen2.qwen2_1_5b\n\n"
        "batch_size: 8\n"
        "loss:\n  _component_: torchtune.modules.loss.CEWithChunkedOutputLoss\n"
        "kd_loss:\n  _component_: torchtune.modules.loss.ForwardKLWithChunkedOutputLoss\n"
        "kd_ratio: 0.5\n"
        "gradient_accumulation_steps: 8\n"
    )
    by_name = {c.name: c for c in configs(text)}
    assert by_name["model"].int(Dim.MICRO_BATCH) == 8
    assert by_name["model"].int(Dim.GRAD_ACCUM) == 8
    assert Dim.MICRO_BATCH not in by_name["teacher_model"].dims
