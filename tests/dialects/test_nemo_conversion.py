"""NeMo-Framework-Launcher's HF -> NeMo conversion configs: the ``model`` block is a template.

The stage runs NeMo's ``convert_llama_hf_to_nemo.py`` with the checkpoint path and the output
file only (launcher_scripts/nemo_launcher/core/stages.py:2611-2650 at 26e42fa9), and the
converter copies the sizes from the checkpoint's HF config (``load_config``,
scripts/checkpoint_converters/convert_llama_hf_to_nemo.py:75-84 in NVIDIA/NeMo at 2fac26a8).
The file below keeps the structure and values of
``launcher_scripts/conf/conversion_hf2nemo/hf_mixtral/convert_mixtral_8x22b_nemo.yaml`` at
26e42fa9, whose 48 heads and 32 query groups (the checkpoint has 8) were reported as SL004.
"""

from __future__ import annotations

import io
import json
from pathlib import Path

from shapelint.cli.main import main

RUN = """\
run:
  name: convert_${conversion_hf2nemo.run.model_train_name}
  convert_name: convert_hf_mixtral_to_nemo
  model_train_name: hf_mixtral
  huggingface_ckpt_path : ${data_dir}/hf_ckpt/
  nemo_file_name: ${data_dir}/results/mixtral.nemo
"""

MODEL = """\
trainer:
  devices: 1
  precision: 32
model:
  mcore_gpt: True
  micro_batch_size: 1
  global_batch_size: 8
  tensor_model_parallel_size: 1
  pipeline_model_parallel_size: 16
  encoder_seq_length: 65536
  max_position_embeddings: 65536
  num_layers: 56
  hidden_size: 6144
  ffn_hidden_size: 16384
  num_attention_heads: 48
  kv_channels: null
  make_vocab_size_divisible_by: 128
  activation: 'fast-swiglu'
  num_query_groups: 32
  num_moe_experts: 8
  moe_router_topk: 2
"""


def report(tmp_path: Path, text: str) -> list[dict[str, object]]:
    path = tmp_path / "convert.yaml"
    path.write_text(text)
    out, err = io.StringIO(), io.StringIO()
    main([str(path), "--no-cache", "--format", "json"], out, err)
    findings: list[dict[str, object]] = json.loads(out.getvalue())["findings"]
    return findings


def test_a_conversion_template_is_noticed_not_linted(tmp_path: Path) -> None:
    findings = report(tmp_path, RUN + MODEL)
    assert [f["code"] for f in findings] == ["SL009"]  # not SL004 (48 heads, 32 groups), SL303
    assert "model.num_attention_heads = 48 (the converter reads the checkpoint's)" in str(
        findings[0]["message"]
    )


def test_the_same_model_block_in_a_training_config_is_linted(tmp_path: Path) -> None:
    assert "SL004" in [f["code"] for f in report(tmp_path, MODEL)]
