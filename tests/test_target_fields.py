"""Each target field is declared once (shapelint.core.target): its flag, settings key, schema
entry, resolution order, JSON and "Estimated for:" text all follow from the declaration.

The tests walk `TARGET_FIELDS`, so a field added to `Target` is checked everywhere without a
line here.
"""

from __future__ import annotations

import dataclasses
import json
import typing
from pathlib import Path

import pytest
from conftest import REPO

from shapelint.cli.main import build_parser
from shapelint.core import target as target_module
from shapelint.core.model import Dim, ModelConfig, Value
from shapelint.core.source import Span
from shapelint.core.target import TARGET_FIELDS, Target, TargetField, TargetOptions
from shapelint.engine.assumed import FIELDS, assumed_target
from shapelint.engine.options import LintOptions
from shapelint.engine.settings import SettingsError, from_dict
from shapelint.engine.settings_schema import SCHEMA_PATH, TARGET_KEYS, render, schema_entry
from shapelint.engine.target import resolve_fields, resolve_target
from shapelint.hardware.gpus import lookup
from shapelint.perf.fusion import fused_spec
from shapelint.report import schemas

H100 = lookup("h100")
IDS = [f.name for f in TARGET_FIELDS]


def _sample(spec: TargetField) -> tuple[list[str], object, object]:
    """A non-default value of ``spec``: its flag's arguments, its settings value, the value."""
    if spec.kind == "positive":
        return [spec.option, "3"], 3, 3
    if spec.kind == "choice":
        choice = next(c for c in reversed(spec.choices) if c != spec.default)
        return [spec.option, choice], choice, choice
    if spec.kind == "bool":
        return [spec.option], True, True
    if spec.kind == "dtype":
        return [spec.option, "float16"], "half", "fp16"
    if spec.kind == "engines":
        return [spec.option, "vllm"], ["vllm"], ("vllm",)
    assert spec.kind == "fused", f"no sample for the kind {spec.kind!r}: add one"
    return [spec.option, "none"], "none", "none"


def _config(dims: dict[Dim, object] | None = None) -> ModelConfig:
    span = Span("x.json", 1, 1, 1, 1, 0, 0)
    return ModelConfig(
        "m", "x.json", "hf", {d: Value(v, d.value, span) for d, v in (dims or {}).items()}
    )


# The annotation each kind's attribute must have (a choice: a Literal of its choices, or str).
_ANNOTATION = {
    "positive": "int",
    "bool": "bool",
    "dtype": "str",
    "engines": "tuple[str, ...]",
    "fused": "str",
}


@pytest.mark.parametrize("spec", TARGET_FIELDS, ids=IDS)
def test_declaration_agrees_with_the_dataclass(spec: TargetField) -> None:
    annotation = {f.name: f.type for f in dataclasses.fields(Target)}[spec.name]
    if spec.kind == "choice":
        assert spec.choices and len(set(spec.choices)) == len(spec.choices)
        assert spec.default is None or spec.default in spec.choices
        hint = eval(str(annotation), vars(target_module))
        if typing.get_origin(hint) is typing.Literal:
            assert typing.get_args(hint) == spec.choices
        else:
            plain = [a for a in typing.get_args(hint) if a is not type(None)]
            if len(plain) == 1 and typing.get_origin(plain[0]) is typing.Literal:
                # An optional choice (None: not chosen, e.g. the framework the dialect implies).
                assert spec.default is None and typing.get_args(plain[0]) == spec.choices
            else:
                assert plain == [str], f"{spec.name}: a choice is a Literal or str, not {hint}"
    elif spec.kind == "positive" and spec.default is None:
        # An optional count (None: not stated, e.g. the global batch).
        assert annotation == "int | None", spec.name
        assert not spec.choices
    else:
        assert annotation == _ANNOTATION[spec.kind], spec.name
        assert not spec.choices
    if spec.kind == "positive" and spec.default is not None:
        assert isinstance(spec.default, int) and spec.default >= 1
    if spec.kind == "bool":
        assert spec.default is False
    if spec.kind == "fused":
        assert fused_spec(str(spec.default)) == spec.default
    if spec.dim is not None:
        Dim(spec.dim)  # a real dim
    assert spec.help and spec.expected, spec.name
    assert spec.option.startswith("--")


def test_every_declared_field_and_only_those_are_options() -> None:
    names = {f.name for f in TARGET_FIELDS}
    undeclared = {f.name for f in dataclasses.fields(Target)} - names
    assert undeclared == {"gpu", "gpu_chosen", "asked_dtype"}  # not chosen by a user
    assert {f.name for f in TARGET_KEYS} == names
    with pytest.raises(TypeError, match="'tpp' is not a target field"):
        TargetOptions(tpp=2)


def test_settings_schema_file_is_current() -> None:
    current = Path(SCHEMA_PATH).read_text(encoding="utf-8")
    assert current == render(current), (
        "settings.schema.json is stale: run python scripts/gen_settings_schema.py"
    )
    props = json.loads(current)["properties"]
    for spec in TARGET_FIELDS:
        assert props[spec.key] == schema_entry(spec)
    keys = list(props)
    assert keys[keys.index("gpu-file") + 1 : keys.index("select")] == [f.key for f in TARGET_KEYS]
    assert (REPO / "scripts" / "gen_settings_schema.py").exists()


def test_check_output_schema_has_every_json_field() -> None:
    """check's JSON schema lists the target fields the JSON holds, from the declaration: a new
    field is one regenerated file away, not a hand edit the closed schema test finds later."""
    path = Path(schemas.schema_path("check"))
    current = path.read_text(encoding="utf-8")
    assert current == schemas.render_check(current), (
        "check-v1.json is stale: run python scripts/gen_settings_schema.py"
    )
    props = json.loads(current)["$defs"]["target"]["properties"]
    json_fields = [f.name for f in TARGET_FIELDS if f.json]
    # recompute stays version 1's boolean; its mode follows it.
    at = json_fields.index("recompute") + 1
    json_fields[at:at] = ["recompute_mode"]
    assert list(props) == ["gpu", *json_fields, "origins", "defaults"]
    assert props["recompute"] == {"type": "boolean"}
    assert props["recompute_mode"] == {"enum": ["none", "selective", "op", "layer", "full"]}
    assert props["mode"] == {"enum": ["train", "prefill", "decode"]}
    assert props["tp"] == {"type": "integer", "minimum": 1}


@pytest.mark.parametrize("command", ["check", "explain", "suggest"])
def test_every_field_has_its_flag(command: str) -> None:
    sub = build_parser(command)._subparsers._group_actions[0].choices[command]  # type: ignore[union-attr]
    flags = {s: a.dest for a in sub._actions for s in a.option_strings}
    for spec in TARGET_FIELDS:
        assert flags.get(spec.option) == spec.name, (command, spec.option)


@pytest.mark.parametrize("spec", TARGET_FIELDS, ids=IDS)
def test_flag_and_setting_give_the_same_value(spec: TargetField, tmp_path: Path) -> None:
    argv, setting, value = _sample(spec)
    args = build_parser("check").parse_args(["check", *argv])
    assert getattr(args, spec.name) == value
    settings = from_dict({spec.key: setting}, str(tmp_path / ".shapelint.toml"))
    assert settings.target.chosen == {spec.name: value}


@pytest.mark.parametrize("spec", TARGET_FIELDS, ids=IDS)
def test_a_bad_setting_names_its_key(spec: TargetField, tmp_path: Path) -> None:
    bad = {"positive": 0, "bool": "yes", "choice": "nonsense"}.get(spec.kind, 7)
    with pytest.raises(SettingsError, match=f"^.shapelint.toml: {spec.key}: expected "):
        from_dict({spec.key: bad}, ".shapelint.toml")


@pytest.mark.parametrize("spec", TARGET_FIELDS, ids=IDS)
def test_flag_then_config_then_settings_then_default(spec: TargetField) -> None:
    _, _, value = _sample(spec)
    # What a config states instead (the kinds a config can state).
    if spec.kind == "choice":
        other: object = next(c for c in spec.choices if c != value)
    else:
        other = {"positive": 5, "bool": True, "dtype": "fp32"}.get(spec.kind)
    chosen = TargetOptions(**{spec.name: value})
    config = _config({Dim(spec.dim): other} if spec.dim else {})
    plain = _config()

    def resolved(cfg: ModelConfig, options: LintOptions) -> tuple[object, str]:
        return resolve_fields(cfg, options)[spec.name]

    assert resolved(plain, LintOptions(gpus=(H100,))) == (spec.default, "default")
    assert resolved(plain, LintOptions(gpus=(H100,), defaults=chosen)) == (value, "settings")
    assert resolved(config, LintOptions(gpus=(H100,), flags=chosen)) == (value, "flag")
    if spec.dim is not None:
        assert resolved(config, LintOptions(gpus=(H100,), defaults=chosen)) == (other, "config")
    target = resolve_target(plain, H100, LintOptions(gpus=(H100,), flags=chosen))
    assert getattr(target, spec.name) == value


@pytest.mark.parametrize("spec", TARGET_FIELDS, ids=IDS)
def test_json_and_text_show_the_field_as_declared(spec: TargetField) -> None:
    _, _, value = _sample(spec)
    chosen = {spec.name: value}
    if spec.shown_with is not None:  # e.g. the FP8 recipe, shown with dtype fp8 only
        chosen[spec.shown_with[0]] = spec.shown_with[1]
    options = LintOptions(gpus=(H100,), flags=TargetOptions(**chosen))
    assumed = assumed_target(_config(), options)
    out = assumed.as_json()
    if spec.name == "recompute":
        # JSON version 1's boolean, the mode beside it.
        assert out["recompute"] is (value != "none") and out["recompute_mode"] == value
        assert out["origins"][spec.name] == "flag"
    elif spec.json:
        assert out[spec.name] == value and out["origins"][spec.name] == "flag"
        assert spec.name not in out["defaults"]
    else:
        assert spec.name not in out
    shown = spec.text(value, assumed.values)
    assert shown is not None and ", " + shown in assumed.text()
    plain = assumed_target(_config(), LintOptions(gpus=(H100,))).text()
    if spec.always_shown:
        assert f"{spec.text(spec.default, {})}*" in plain
    if spec.json and not spec.always_shown:
        assert spec.name in assumed_target(_config(), LintOptions(gpus=(H100,))).defaults


def test_json_fields_and_text_keep_their_order() -> None:
    # The JSON target's fields as released; a new field may only follow them.
    assert FIELDS[:10] == (
        "dtype",
        "mode",
        "micro_batch",
        "seq_len",
        "tp",
        "attention",
        "fused",
        "data_parallel",
        "sharded",
        "recompute",
    )
    flags = TargetOptions(
        dtype="fp8",
        fp8_recipe="nvfp4",
        tp=2,
        pp=4,
        engines=("vllm",),
        attention="unfused",
        recompute=True,
    )
    text = assumed_target(_config(), LintOptions(gpus=(H100,), flags=flags)).text()
    assert text == (
        "H100-SXM, fp8, train*, micro-batch 1*, seq 4096*, tp 2, unfused attention, recompute full, "
        "fp8-recipe nvfp4 (timed at FP8 rates), engines vllm, pp 4"
    )


def test_a_config_value_outside_a_choice_fields_choices_is_not_taken() -> None:
    # A `keys` mapping can give a choice field any text ("blockwise" is a Megatron recipe
    # shapelint does not model): the field keeps its default rather than an unknown value.
    (spec,) = [f for f in TARGET_FIELDS if f.name == "fp8_recipe"]
    assert spec.kind == "choice" and spec.dim == Dim.FP8_RECIPE.value
    config = _config({Dim.FP8_RECIPE: "blockwise", Dim.DTYPE: "fp8"})
    assert resolve_fields(config, LintOptions(gpus=(H100,)))["fp8_recipe"] == (None, "default")
    text = assumed_target(config, LintOptions(gpus=(H100,))).text()
    assert "blockwise" not in text
    config = _config({Dim.FP8_RECIPE: "mxfp8", Dim.DTYPE: "fp8"})
    assert resolve_fields(config, LintOptions(gpus=(H100,)))["fp8_recipe"] == ("mxfp8", "config")
