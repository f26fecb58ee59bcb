"""Megatron-LM's multimodal launch scripts: the language model's sequence is
``--decoder-seq-length``; ``--seq-length`` there is the vision encoder's image embeddings
(``examples/multimodal/model.py:69-70, 80-82`` at d98e8a64, which requires the former).

The script has the shape of Megatron-LM's ``examples/multimodal/nvlm/sft_34b_internvit.sh``:
Yi-34B's language model flags, 261 image embeddings, a 3200-token language model sequence.
"""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

from shapelint.cli.main import main

SCRIPT = """\
#!/bin/bash
SEQ_LEN=261     # Image embeddings sequence length.
DECODER_SEQ_LEN=3200    # Language model sequence length.
OPTIONS=" \\
    --language-model-type yi-34b \\
    --vision-model-type internvit \\
    --num-layers 60 \\
    --hidden-size 7168 \\
    --num-attention-heads 56 \\
    --group-query-attention \\
    --num-query-groups 8 \\
    --ffn-hidden-size 20480 \\
    --seq-length ${SEQ_LEN} \\
    --decoder-seq-length ${DECODER_SEQ_LEN} \\
    --max-position-embeddings 32768 \\
    --micro-batch-size 1 \\
    --tensor-model-parallel-size 8"
torchrun examples/multimodal/train.py ${OPTIONS}
"""


def read(tmp_path: Path, text: str) -> dict[str, Any]:
    path = tmp_path / "sft.sh"
    path.write_text(text)
    out, err = io.StringIO(), io.StringIO()
    main(["check", str(path), "--no-cache", "--exit-zero", "--format", "json"], out, err)
    return dict(json.loads(out.getvalue()))


def test_the_language_model_runs_the_decoder_sequence(tmp_path: Path) -> None:
    (config,) = read(tmp_path, SCRIPT)["configs"]
    assert config["dims"]["seq_len"] == 3200
    assert config["dims"]["hidden"] == 7168


def test_without_a_decoder_length_the_sequence_is_unknown(tmp_path: Path) -> None:
    text = SCRIPT.replace("    --decoder-seq-length ${DECODER_SEQ_LEN} \\\n", "")
    (config,) = read(tmp_path, text)["configs"]
    assert "seq_len" not in config["dims"]  # not the 261 image embeddings, nor 32768


def test_a_gpt_script_keeps_seq_length(tmp_path: Path) -> None:
    text = SCRIPT.replace("    --language-model-type yi-34b \\\n", "").replace(
        "    --vision-model-type internvit \\\n", ""
    )
    (config,) = read(tmp_path, text)["configs"]
    assert config["dims"]["seq_len"] == 261
