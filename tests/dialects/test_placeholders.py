"""Values a YAML config leaves for run time, and stacks it switches off: unknown, never SL002.

Shapes modelled on NVIDIA/NeMo's example configs at 8cfedd72 (``examples/tts/conf``,
``examples/asr/conf/speech_multitask``, ``megatron_gpt_config_hyena.yaml``); expected
values are written by hand.
"""

from __future__ import annotations

import io
import json
import textwrap
from pathlib import Path

from shapelint.cli.main import main


def codes(tmp_path: Path, text: str, name: str = "config.yaml") -> list[str]:
    path = tmp_path / name
    path.write_text(textwrap.dedent(text))
    out, err = io.StringIO(), io.StringIO()
    main([str(path), "--no-cache", "--format", "json"], out, err)
    return [f["code"] for f in json.loads(out.getvalue())["findings"]]


def test_a_reference_a_nested_reading_cannot_resolve_is_unknown(tmp_path: Path) -> None:
    text = """\
        model:
          symbols_embedding_dim: 384
          input_fft:
            _target_: nemo.collections.tts.modules.transformer.FFTransformerEncoder
            n_layer: 6
            n_head: 1
            d_model: ${model.symbols_embedding_dim}
            d_head: 64
            d_inner: 1536
    """
    assert "SL002" not in codes(tmp_path, text)


def test_none_and_missing_strings_are_set_at_run_time(tmp_path: Path) -> None:
    text = """\
        model:
          transf_decoder:
            config_dict:
              hidden_size: 1024
              num_layers: 4
              num_attention_heads: 8
              vocab_size: None
              max_sequence_length: ???
    """
    assert "SL002" not in codes(tmp_path, text)


def test_a_sub_stack_with_zero_layers_is_switched_off(tmp_path: Path) -> None:
    text = """\
        model:
          transf_encoder:
            num_layers: 0
            hidden_size: 1024
            num_attention_heads: 8
    """
    assert "SL002" not in codes(tmp_path, text)


def test_zero_layers_at_the_top_is_still_invalid(tmp_path: Path) -> None:
    text = '{"hidden_size": 1024, "num_attention_heads": 8, "num_hidden_layers": 0}'
    assert "SL002" in codes(tmp_path, text, "config.json")


def test_nemo_hyena_has_no_attention(tmp_path: Path) -> None:
    text = """\
        trainer:
          precision: bf16
        model:
          micro_batch_size: 16
          encoder_seq_length: 2048
          num_layers: 18
          hidden_size: 864
          ffn_hidden_size: 1728
          num_attention_heads: 1
          attention_dropout: 0.1
          make_vocab_size_divisible_by: 128
          name: te_gpt_hyena
          hyena:
            order: 2
            num_heads: 1
    """
    found = codes(tmp_path, text)
    # 864 / 1 "heads" would be a head dim of 864 (SL102); Hyena layers have no attention.
    assert "SL102" not in found and "SL103" in found
