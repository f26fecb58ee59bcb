"""A lit-gpt-era pretrain script is not a nanoGPT training script.

Modelled on jzhang38/TinyLlama's ``pretrain/tinyllama.py`` at bf12224 (structure and values
only): the model is ``Config.from_name("tiny_LLaMA_1b")`` (2048 wide, 22 layers, in
``lit_gpt/config.py``), the micro-batch is ``micro_batch_size = 8``. It was read as nanoGPT's
``train.py`` defaults — 768 wide, 12 heads, 12 layers — with micro-batch 64, the per-device
``batch_size``.
"""

from __future__ import annotations

import io
import json
import textwrap
from pathlib import Path

from shapelint.cli.main import main

SCRIPT = """\
    import sys
    from pathlib import Path

    from lit_gpt.model import GPT, Block, Config

    model_name = "tiny_LLaMA_1b"
    name = "tinyllama_1b"
    out_dir = Path("out") / name

    # Hyperparameters
    num_of_devices = 8
    global_batch_size = 512
    learning_rate = 4e-4
    micro_batch_size = 8
    max_step = 715256 * 2
    warmup_steps = 2000

    batch_size = global_batch_size // num_of_devices
    gradient_accumulation_steps = batch_size // micro_batch_size
    assert gradient_accumulation_steps > 0


    def main(fabric, train_data_dir, val_data_dir, resume):
        config = Config.from_name(model_name)
"""


def configs(tmp_path: Path, source: str) -> list[dict[str, object]]:
    path = tmp_path / "tinyllama.py"
    path.write_text(textwrap.dedent(source))
    out, err = io.StringIO(), io.StringIO()
    main(["check", "--no-cache", "--format", "json", str(path)], out, err)
    found: list[dict[str, object]] = json.loads(out.getvalue())["configs"]
    return found


def test_a_pretrain_script_with_micro_batch_size_invents_no_nanogpt_model(tmp_path: Path) -> None:
    assert [c for c in configs(tmp_path, SCRIPT) if c["dialect"] == "nanogpt"] == []


def test_a_nanogpt_config_script_is_still_read(tmp_path: Path) -> None:
    # nanoGPT's config/train_shakespeare_char.py keys: batch_size is the micro-batch there.
    source = """\
        out_dir = 'out-shakespeare-char'
        gradient_accumulation_steps = 1
        batch_size = 64
        block_size = 256
        n_layer = 6
        n_head = 6
        n_embd = 384
    """
    (config,) = configs(tmp_path, source)
    dims = config["dims"]
    assert isinstance(dims, dict)
    assert (dims["hidden"], dims["layers"], dims["micro_batch"]) == (384, 6, 64)
