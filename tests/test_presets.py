"""Configs that name a preset defined in a Python module of the same project (issue 23,
deliverable 3).

Two structures, kept from real projects with the preset bodies written in a form the Python
reader reads today (keyword calls of Hugging Face names; the real bodies' keys are a task of
the key lexicon and the data-flow evaluator):

- apple/corenet (at 1aa3acd1): ``projects/openelm/pretraining_configs/openelm_270M.yaml``
  says ``model.language_modeling.general_gpt.model_name: "OpenELM-270M"`` beside the
  vocabulary and context it passes to ``GPTConfig.from_name``, which reads the module-level
  dict ``gpt_configs`` of ``corenet/modeling/models/language_modeling/general_gpt.py``;
- google/flax (at 18f8f311): ``examples/gemma/configs/default.py``'s dataclass
  ``TrainConfig`` says ``transformer_name: str | None = "gemma3_1b"``, a classmethod of
  ``TransformerConfig`` in ``examples/gemma/transformer_cfg.py`` (a Python → Python preset).
"""

from __future__ import annotations

import io
import json
import os
from pathlib import Path

import pytest

from shapelint.cli.main import main
from shapelint.dialects import presets
from shapelint.engine import presets as engine_presets

GENERAL_LM = """\
from dataclasses import dataclass


@dataclass
class LMConfig:
    hidden_size: int = 2048
    num_hidden_layers: int = 24

    @classmethod
    def from_name(cls, model_name: str, vocab_size: int, max_context_length: int) -> "LMConfig":
        config = lm_configs[model_name]
        config["vocab_size"] = vocab_size
        return cls(**config)


lm_configs = {
    "lm-tiny": dict(
        num_hidden_layers=4,
        hidden_size=512,
        num_attention_heads=8,
        intermediate_size=1408,
    ),
    # A sample configuration.
    "lm-1000": dict(
        num_hidden_layers=16,
        hidden_size=1000,
        num_attention_heads=10,
        intermediate_size=2752,
    ),
}
"""

LM_YAML = """\
taskname: '+ LM-1000'

_anchor_context_length: &_anchor_context_length 2048
_anchor_vocab_size: &_anchor_vocab_size 32000

model:
  activation_checkpointing: false
  language_modeling:
    name: "general_lm"
    general_lm:
      model_name: "lm-1000"
      vocab_size: *_anchor_vocab_size
      max_context_length: *_anchor_context_length
"""

TRANSFORMER_CFG = """\
import dataclasses


@dataclasses.dataclass(frozen=True)
class TransformerConfig:
  \"\"\"Configuration for the transformer.\"\"\"

  num_layers: int
  embed_dim: int

  @classmethod
  def from_version_name(cls, name: str, **override) -> "TransformerConfig":
    return getattr(cls, name)(**override)

  @classmethod
  def lm_2b(cls):
    return cls(
        num_hidden_layers=18,
        vocab_size=256128,
        hidden_size=2048,
        intermediate_size=16384,
        num_attention_heads=8,
        head_dim=256,
        num_key_value_heads=1,
    )
"""

DEFAULT_PY = """\
\"\"\"Default hyperparameters for training the LM.\"\"\"

import dataclasses


@dataclasses.dataclass(unsafe_hash=True)
class TrainConfig:
  # Number of steps to take during training.
  num_train_steps: int = 500_000
  # Transformer name.
  # Possible values defined in transformer.TransformerConfig:
  transformer_name: str | None = "lm_2b"
  # or alternatively define the model using the dict of parameters
  transformer_params: dict | None = None


def get_config():
  \"\"\"Get the default hyperparameter configuration.\"\"\"
  config = TrainConfig()
  return config
"""


def write(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "proj"
    write(
        root,
        {
            "pyproject.toml": "",
            "mylib/models/general_lm.py": GENERAL_LM,
            "projects/lm/lm_1000.yaml": LM_YAML,
            "examples/lm/transformer_cfg.py": TRANSFORMER_CFG,
            "examples/lm/configs/default.py": DEFAULT_PY,
        },
    )
    engine_presets._index.cache_clear()
    return root


def check(path: Path, *flags: str) -> dict[str, list[dict[str, object]]]:
    out = io.StringIO()
    argv = ["check", "--format", "json", "--min-slowdown", "0", *flags, str(path)]
    main(argv, out, io.StringIO())
    result = json.loads(out.getvalue())
    assert isinstance(result, dict)
    return result


def test_a_yaml_naming_a_dict_preset_is_read_through_it(project: Path) -> None:
    yaml = project / "projects/lm/lm_1000.yaml"
    result = check(yaml, "--no-cache")
    [config] = result["configs"]
    assert config["name"] == "model_name=lm-1000" and config["path"] == str(yaml)
    dims = config["dims"]
    assert isinstance(dims, dict)
    # the preset's shape and the YAML's own vocabulary (it overrides, as from_name does)
    assert (dims["hidden"], dims["heads"], dims["layers"], dims["ffn"]) == (1000, 10, 16, 2752)
    assert dims["vocab"] == 32000 and dims["head_dim"] == 100


def test_a_finding_on_a_preset_value_points_at_the_module(project: Path) -> None:
    yaml = project / "projects/lm/lm_1000.yaml"
    found = check(yaml, "--no-cache")["findings"]
    head_dim = [f for f in found if f["code"] == "SL102"]
    assert head_dim, found
    module = project / "mylib/models/general_lm.py"
    # in the module where hidden_size=1000 is written, in the config the YAML names
    assert {f["path"] for f in head_dim} == {str(module)}
    assert head_dim[0]["config"] == "model_name=lm-1000"
    assert GENERAL_LM.splitlines()[int(str(head_dim[0]["line"])) - 1].strip() == "hidden_size=1000,"
    assert head_dim[0]["fix"] is None  # never fixed from the YAML


def test_a_python_config_naming_a_classmethod_preset(project: Path) -> None:
    default = project / "examples/lm/configs/default.py"
    [config] = check(default, "--no-cache")["configs"]
    assert config["name"] == "transformer_name=lm_2b"
    dims = config["dims"]
    assert isinstance(dims, dict)
    assert (dims["hidden"], dims["heads"], dims["kv_heads"], dims["head_dim"]) == (2048, 8, 1, 256)
    assert (dims["ffn"], dims["layers"], dims["vocab"]) == (16384, 18, 256128)


def sl009(result: dict[str, list[dict[str, object]]]) -> list[dict[str, object]]:
    return [f for f in result["findings"] if f["code"] == "SL009"]


def test_a_preset_nobody_defines_reads_nothing_and_is_named(project: Path) -> None:
    yaml = project / "projects/lm/lm_1000.yaml"
    yaml.write_text(LM_YAML.replace('"lm-1000"', '"lm-9000"'))
    result = check(yaml, "--no-cache")
    assert result["configs"] == []
    [notice] = sl009(result)
    assert "names the preset lm-9000 (model.language_modeling.general_lm.model_name)" in str(
        notice["message"]
    )
    assert notice["path"] == str(yaml)
    assert LM_YAML.splitlines()[int(str(notice["line"])) - 1].strip() == 'model_name: "lm-1000"'


def test_shape_keys_beside_an_unread_preset_get_their_own_notice(project: Path) -> None:
    yaml = project / "projects/lm/lm_1000.yaml"
    text = LM_YAML.replace('"lm-1000"', '"lm-9000"').replace(
        "      vocab_size:",
        "      hidden_size: 2048\n      ffn_hidden_size: 8192\n      vocab_size:",
    )
    yaml.write_text(text)
    [notice] = sl009(check(yaml, "--no-cache"))
    assert "hidden_size" in str(notice["message"]) and "lm-9000" not in str(notice["message"])


def test_a_preset_read_through_is_not_named(project: Path) -> None:
    assert sl009(check(project / "projects/lm/lm_1000.yaml", "--no-cache")) == []
    assert sl009(check(project / "examples/lm/configs/default.py", "--no-cache")) == []


def test_a_python_config_naming_a_missing_preset_is_named(project: Path) -> None:
    default = project / "examples/lm/configs/default.py"
    default.write_text(DEFAULT_PY.replace('"lm_2b"', '"lm_7b"'))
    [notice] = sl009(check(default, "--no-cache"))
    assert "names the preset lm_7b (transformer_name)" in str(notice["message"])


def test_a_name_set_inside_a_function_is_code_not_a_config(tmp_path: Path) -> None:
    # an eval helper picks a hub model by name inside a function: code, no notice
    script = (
        "def build_evaluator(seed):\n"
        '    return Evaluator(EvalConfig(model_name="gpt2", batch_size=4), seed)\n'
    )
    write(tmp_path, {"pyproject.toml": "", "evaluate.py": script})
    assert sl009(check(tmp_path / "evaluate.py", "--no-cache")) == []


def test_nothing_outside_the_project_is_searched(tmp_path: Path) -> None:
    write(tmp_path, {"lib/general_lm.py": GENERAL_LM})  # beside the project, not in it
    root = tmp_path / "proj"
    write(root, {"pyproject.toml": "", "lm_1000.yaml": LM_YAML})
    engine_presets._index.cache_clear()
    assert check(root / "lm_1000.yaml", "--no-cache")["configs"] == []


def test_the_module_the_config_names_wins_over_another_holder(project: Path) -> None:
    # a copy with other values elsewhere: the YAML names general_lm (its key path), so
    # general_lm.py's preset is the one read
    other = GENERAL_LM.replace("hidden_size=1000", "hidden_size=4096")
    write(project, {"tools/convert/other_lm.py": other})
    engine_presets._index.cache_clear()
    [config] = check(project / "projects/lm/lm_1000.yaml", "--no-cache")["configs"]
    assert config["dims"]["hidden"] == 1000  # type: ignore[index]


def test_two_different_presets_of_one_name_are_not_guessed(project: Path) -> None:
    yaml = project / "projects/lm/lm_1000.yaml"
    yaml.write_text(LM_YAML.replace("general_lm", "lm_settings"))  # names no module now
    other = GENERAL_LM.replace("hidden_size=1000", "hidden_size=4096")
    write(project, {"mylib/models/other_lm.py": other})
    engine_presets._index.cache_clear()
    result = check(yaml, "--no-cache")
    assert result["configs"] == [] and len(sl009(result)) == 1
    # the same preset written twice (a copy for another backend) is one preset
    write(project, {"mylib/models/other_lm.py": GENERAL_LM.replace('"lm-tiny"', '"lm-small"')})
    engine_presets._index.cache_clear()
    [config] = check(yaml, "--no-cache")["configs"]
    assert config["dims"]["hidden"] == 1000  # type: ignore[index]


def test_a_nearer_module_is_no_evidence_between_different_presets(project: Path) -> None:
    # pytorch/torchtitan (HEAD of 2026-12-05): experiments/graph_trainer/tests name
    # model_flavor = "debugmodel", held by models/llama3 (the one they run) and, nearer in
    # the tree, by experiments/transformers_modeling_backend (another model): not guessed.
    yaml = project / "projects/lm/lm_1000.yaml"
    yaml.write_text(LM_YAML.replace("general_lm", "lm_settings"))  # names no module
    other = GENERAL_LM.replace("hidden_size=1000", "hidden_size=4096")
    write(project, {"projects/lm/backends/other_lm.py": other})  # nearer than mylib/models
    engine_presets._index.cache_clear()
    result = check(yaml, "--no-cache")
    assert result["configs"] == [] and len(sl009(result)) == 1
    # Another module defines the name with a body that cannot be read (torchtitan's
    # ``"debugmodel": _debugmodel``): it may be a different preset, so none is guessed.
    write(project, {"projects/lm/backends/other_lm.py": 'lm_configs = {"lm-1000": _build()}\n'})
    engine_presets._index.cache_clear()
    result = check(yaml, "--no-cache")
    assert result["configs"] == [] and len(sl009(result)) == 1


def test_a_name_too_many_modules_hold_is_not_looked_up(project: Path) -> None:
    for k in range(engine_presets.MAX_HOLDERS + 1):
        write(project, {f"zoo/m{k}.py": GENERAL_LM})
    engine_presets._index.cache_clear()
    yaml = project / "projects/lm/lm_1000.yaml"
    yaml.write_text(LM_YAML.replace("general_lm", "lm_settings"))
    assert check(yaml, "--no-cache")["configs"] == []


def test_a_changed_preset_module_is_read_again_by_the_cache(project: Path) -> None:
    yaml = project / "projects/lm/lm_1000.yaml"
    first = check(yaml)["configs"][0]["dims"]["hidden"]  # type: ignore[index]
    module = project / "mylib/models/general_lm.py"
    module.write_text(GENERAL_LM.replace("hidden_size=1000", "hidden_size=1024"))
    st = module.stat()
    os.utime(module, ns=(st.st_atime_ns, st.st_mtime_ns + 10**9))
    second = check(yaml)["configs"][0]["dims"]["hidden"]  # type: ignore[index]
    assert (first, second) == (1000, 1024)


def test_a_file_stating_its_shape_is_not_read_through_a_preset(project: Path) -> None:
    text = LM_YAML.replace(
        "      vocab_size:",
        "      hidden_size: 2048\n      num_attention_heads: 16\n"
        "      num_hidden_layers: 24\n      vocab_size:",
    )
    yaml = project / "projects/lm/lm_1000.yaml"
    yaml.write_text(text)
    configs = check(yaml, "--no-cache")["configs"]
    assert [c["dims"]["hidden"] for c in configs] == [2048]  # type: ignore[index]


@pytest.mark.parametrize(
    ("key", "names"),
    [
        ("model_name", True),
        ("transformer_name", True),
        ("modelName", True),
        ("MODEL_PRESET", True),
        ("arch", True),
        ("preset", True),
        ("model.arch_variant", True),
        ("run_name", False),
        ("model_train_name", False),  # NeMo-Framework-Launcher's run name
        ("dataset_name", False),
        ("tokenizer_name", False),
        ("model_type", False),  # a family (Hugging Face's), not a preset
        ("name", False),
    ],
)
def test_which_keys_name_a_preset(key: str, names: bool) -> None:
    assert presets.names_a_preset(key) is names


@pytest.mark.parametrize(
    ("value", "name"),
    [
        ("OpenELM-270M", "OpenELM-270M"),
        ("gemma3_1b", "gemma3_1b"),
        ("meta-llama/Llama-2-7b-hf", None),  # a hub id
        ("/ckpt/model", None),
        ("1.5", None),
        (7, None),
        ("", None),
    ],
)
def test_which_values_can_be_a_preset(value: object, name: str | None) -> None:
    assert presets.preset_name(value) == name


@pytest.mark.parametrize(
    ("candidate", "matches"),
    [
        ('gpt_configs["OpenELM-270M"]', True),
        ("TransformerConfig.OpenELM-270M", True),
        ("OpenELM-270M", True),
        ("llama_2[0] OpenELM-270M", True),
        ('gpt_configs["OpenELM-270M-instruct"]', False),
        ("OpenELM-270M.child", False),
    ],
)
def test_which_candidates_are_the_preset(candidate: str, matches: bool) -> None:
    assert presets.names_preset(candidate, "OpenELM-270M") is matches


def test_a_bare_arch_key_without_a_preset_is_not_named(tmp_path: Path) -> None:
    # Megatron-LM examples/multimodal/evaluation/mmmu_utils.py: subject names, not a model
    utils = (
        "CAT_SHORT2LONG = {\n"
        "    'acc': 'Accounting',\n"
        "    'agri': 'Agriculture',\n"
        "    'arch': 'Architecture_and_Engineering',\n"
        "}\n"
    )
    yaml = "model:\n  arch: my_net_9\n  vocab_size: 32000\n"
    write(tmp_path, {"pyproject.toml": "", "mmmu_utils.py": utils, "run.yaml": yaml})
    engine_presets._index.cache_clear()
    assert sl009(check(tmp_path / "mmmu_utils.py", "--no-cache")) == []
    # under a model's key the same word names the model's preset
    [notice] = sl009(check(tmp_path / "run.yaml", "--no-cache"))
    assert "names the preset my_net_9 (model.arch)" in str(notice["message"])
