"""A config class whose width, heads and layers default to 0: "set me", not a model.

Modelled on Megatron-core's ``TransformerConfig`` as microsoft/Megatron-DeepSpeed carries it
(``megatron/core/transformer/transformer_config.py:106-108`` at f4157bea: ``num_layers: int =
0``, ``hidden_size: int = 0``, ``num_attention_heads: int = 0``); it got three SL002 errors.
Expected values are written by hand.
"""

from __future__ import annotations

import io
import json
import textwrap
from pathlib import Path

from shapelint.cli.main import main

SOURCE = """\
    from dataclasses import dataclass

    from ..model_parallel_config import ModelParallelConfig


    @dataclass
    class TransformerConfig(ModelParallelConfig):
        # model architecture
        num_layers: int = 0
        hidden_size: int = 0
        num_attention_heads: int = 0
        num_key_value_heads: int = None
        ffn_hidden_size: int = None
        kv_channels: int = None
        hidden_dropout: float = 0.1
"""


def findings(tmp_path: Path, source: str) -> list[dict[str, object]]:
    path = tmp_path / "transformer_config.py"
    path.write_text(textwrap.dedent(source))
    out, err = io.StringIO(), io.StringIO()
    main(["check", "--no-cache", "--format", "json", str(path)], out, err)
    found: list[dict[str, object]] = json.loads(out.getvalue())["findings"]
    return found


def test_zero_sizes_in_a_class_body_are_unset_and_noticed(tmp_path: Path) -> None:
    found = findings(tmp_path, SOURCE)
    assert [f["code"] for f in found] == ["SL009"]
    message = str(found[0]["message"])
    assert "num_layers = 0" in message and "hidden_size = 0" in message
    assert "[tool.shapelint.keys]" not in message  # mapping the keys would not help


def test_stated_sizes_beside_a_zero_are_still_read(tmp_path: Path) -> None:
    source = SOURCE.replace("num_layers: int = 0", "num_layers: int = 24").replace(
        "hidden_size: int = 0", "hidden_size: int = 2048"
    )
    path = tmp_path / "transformer_config.py"
    path.write_text(textwrap.dedent(source))
    out, err = io.StringIO(), io.StringIO()
    main(["check", "--no-cache", "--format", "json", str(path)], out, err)
    data = json.loads(out.getvalue())
    assert "SL002" not in [f["code"] for f in data["findings"]]  # heads = 0: unset
    (config,) = data["configs"]
    assert config["dims"]["hidden"] == 2048 and config["dims"]["layers"] == 24
    assert "heads" not in config["dims"]
