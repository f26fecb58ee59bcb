"""No silent pass: model-shape keys without a complete config get SL009 with the settings line
that maps them; `holds_model_keys` tells a model file from other text without parsing."""

from __future__ import annotations

import io
import json
import re
from pathlib import Path

from conftest import parse_text

from shapelint.cli.main import main
from shapelint.core.model import Dim
from shapelint.dialects.shape_keys import holds_model_keys, text_shape_keys
from shapelint.engine.options import LintOptions
from shapelint.engine.pipeline import lint_document
from shapelint.hardware.gpus import lookup

H100 = lookup("h100")

# A lab's own layout: a key the key lexicon cannot place (``hidden_dim``: the width or, in
# Llama-style code, the FFN) and no heads that would confirm it as a width.
OWN_LAYOUT = """\
model:
  _target_: mylab.models.Transformer
  vocab_size: 128256
  num_layers: 32
  num_kv_heads: 8
  hidden_dim: 4096
  mlp_dim: 14336
"""


def sl009(text: str, fmt: str = "yaml", extra: dict[Dim, tuple[str, ...]] | None = None) -> list:
    options = LintOptions(gpus=(H100,), min_slowdown=0.0, extra_keys=extra or {})
    _, found = lint_document(parse_text(text, fmt, f"c.{fmt}"), options)
    return [f for f in found if f.code == "SL009"]


def test_names_the_keys_and_the_settings_line_that_maps_them() -> None:
    (f,) = sl009(OWN_LAYOUT)
    assert f.severity == "info"
    assert f.key == "model.vocab_size" and f.span.line == 3
    assert "model.hidden_dim (ffn or hidden?)" in f.message and "model.mlp_dim" in f.message
    line = re.search(r"\[tool\.shapelint\.keys\] (.*)$", f.message)
    assert line is not None
    # The printed line, taken literally, makes the file understood.
    extra = {
        Dim(dim): (path,) for dim, path in re.findall(r'([a-z_]+) = \["([^"]+)"\]', line.group(1))
    }
    # An ambiguous key is offered for the dim no other key states (mlp_dim is the FFN).
    assert extra[Dim.HIDDEN] == ("model.hidden_dim",)
    assert sl009(OWN_LAYOUT, extra=extra) == []
    options = LintOptions(gpus=(H100,), extra_keys=extra)
    (config,) = lint_document(parse_text(OWN_LAYOUT, "yaml", "c.yaml"), options)[0]
    assert (config.int(Dim.HIDDEN), config.int(Dim.FFN), config.int(Dim.LAYERS)) == (
        4096,
        14336,
        32,
    )


def test_understood_or_shapeless_files_get_no_notice() -> None:
    model = '{"hidden_size": 4096, "num_attention_heads": 32, "num_hidden_layers": 2}'
    assert sl009(model, "json") == []
    deepspeed = '{"train_micro_batch_size_per_gpu": 8, "zero_optimization": {"stage": 2}}'
    assert sl009(deepspeed, "json") == []
    # One key, or only weak evidence (a vocab and a head dim), is not a model.
    assert sl009("vocab_size: 32000\nhead_dim: 128\n") == []
    assert sl009("embed_dim: 4096\n") == []


def test_holds_model_keys_without_parsing() -> None:
    assert holds_model_keys('{"hidden_size": 4096, "num_attention_heads": 32,}')  # broken JSON
    assert holds_model_keys("{{ if .Values.x }}\nhidden-size: 4096\nnum-layers: 24\n{{ end }}\n")
    assert holds_model_keys("--hidden-size 4096 \\\n--num-layers 24\n") is False  # no key syntax
    assert holds_model_keys("MODEL_ARGS:\n  --hidden-size: 4096\n  --num-layers: 24\n")
    assert holds_model_keys("model = dict(embed_dim=768, num_heads=12)\n")
    # Not model configs: editor settings with comments, a Helm template, a Python 2 script.
    vscode = '{\n  // editor\n  "editor.tabSize": 4,\n  "python.defaultInterpreterPath": "x"\n}\n'
    helm = "metadata:\n  name: {{ .Release.Name }}\nspec:\n  replicas: 3\n"
    py2 = 'print "hello"\nsize = 4\n'
    assert not any(holds_model_keys(t) for t in (vscode, helm, py2))
    # Two weak keys (a tokenizer's vocab and a head dim) are not enough.
    assert not holds_model_keys("vocab_size: 32000\nhead_dim: 64\n")
    assert text_shape_keys("hidden_size: 1\nhidden_size: 2\nn_layer: 3\n") == [
        "hidden_size",
        "n_layer",
    ]


def test_user_mapped_keys_count() -> None:
    extra = {Dim.HIDDEN: ("width",), Dim.LAYERS: ("depth",)}
    assert holds_model_keys("width: 1024\ndepth: 12\n", extra)
    assert not holds_model_keys("width: 1024\ndepth: 12\n")


def test_a_key_map_that_matches_nothing_is_reported(tmp_path: Path) -> None:
    (tmp_path / ".git").mkdir()
    (tmp_path / "m.yaml").write_text("net:\n  width: 1024\n  heads: 16\n  n_stacks: 12\n")
    (tmp_path / ".shapelint.toml").write_text(
        '[keys]\nhidden = ["net.width"]\nheads = ["net.heads"]\nlayers = ["net.n_stack"]\n'
    )
    out, err = io.StringIO(), io.StringIO()
    main([str(tmp_path / "m.yaml"), "--format", "json"], out, err)
    assert err.getvalue() == (
        'shapelint: warning: key map layers = ["net.n_stack"] matched no key in any file\n'
    )
    (config,) = json.loads(out.getvalue())["configs"]
    assert config["dims"]["hidden"] == 1024 and "layers" not in config["dims"]
