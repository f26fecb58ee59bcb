"""--fix, --unsafe-fixes, --diff and --show-fixes through main(argv), and the safe writes."""

from __future__ import annotations

import io
import os
import shutil
import stat
import sys
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from shapelint.cli.main import main
from shapelint.engine import reading, writer

DATA = Path(__file__).resolve().parent / "data" / "fix"

GPT2 = '{\n  "n_embd": 768,\n  "n_head": 12,\n  "n_layer": 12,\n  "vocab_size": 50257\n}\n'
GPT2_FIXED = GPT2.replace("50257", "50304")
# GPT-3 2.7B: h/a = 80, fixable only by changing the head count (unsafe).
GPT3 = '{"hidden_size": 2560, "num_attention_heads": 32, "num_hidden_layers": 32, "intermediate_size": 10240, "vocab_size": 50304}\n'


def run(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = main(list(argv), out, err)
    return code, out.getvalue(), err.getvalue()


# (fixture, flag): each fixture's expected text after that flag, byte for byte.
FIXTURES = [
    ("gpt2.json", "--fix"),
    ("crlf_bom.json", "--fix"),
    ("no_final_newline.json", "--fix"),
    ("megatron.yaml", "--fix"),
    ("nanogpt.py", "--fix"),
    ("neox.yml", "--unsafe-fixes"),
    ("train_gpt2.py", "--unsafe-fixes"),
]


SHAPE_RULES = "SL0,SL1"


def _fixed_name(name: str) -> str:
    stem, ext = os.path.splitext(name)
    return f"{stem}.fixed{ext}"


@pytest.mark.parametrize(("name", "flag"), FIXTURES)
def test_fixture_fixed_byte_for_byte(tmp_path: Path, name: str, flag: str) -> None:
    target = tmp_path / name
    shutil.copyfile(DATA / name, target)
    expected = (DATA / _fixed_name(name)).read_bytes()
    assert target.read_bytes() != expected
    # The model-shape rules only: the fixtures pin their fixes, not the batch rules'. Every
    # finding counts, however small its estimate (h/a = 80 costs <1% on H100 with FA3).
    code, out, err = run(flag, "--select", SHAPE_RULES, "--min-slowdown", "0", str(target))
    assert err == ""
    assert target.read_bytes() == expected
    assert code == 0, out
    assert "Fixed 1 problem; 0 remaining." in out
    # A second run changes nothing.
    code, out, _ = run(flag, "--select", SHAPE_RULES, "--min-slowdown", "0", str(target))
    assert code == 0 and "Fixed" not in out
    assert target.read_bytes() == expected


@pytest.mark.parametrize("name", ["neox.yml", "train_gpt2.py"])
def test_unsafe_fixture_untouched_by_safe_fix(tmp_path: Path, name: str) -> None:
    target = tmp_path / name
    shutil.copyfile(DATA / name, target)
    code, out, _ = run("--fix", "--min-slowdown", "0", str(target))
    assert code == 1
    assert target.read_bytes() == (DATA / name).read_bytes()
    assert "1 more with --unsafe-fixes" in out


def test_utf16_file_keeps_encoding_and_byte_order(tmp_path: Path) -> None:
    for codec, bom in (("utf-16-le", b"\xff\xfe"), ("utf-16-be", b"\xfe\xff")):
        target = tmp_path / f"{codec}.json"
        target.write_bytes(bom + GPT2.encode(codec))
        code, _, err = run("--fix", str(target))
        assert (code, err) == (0, "")
        assert target.read_bytes() == bom + GPT2_FIXED.encode(codec)


def test_fix_reports_remaining_and_exit_codes(tmp_path: Path) -> None:
    (tmp_path / "gpt2.json").write_text(GPT2)
    (tmp_path / "gpt3.json").write_text(GPT3)
    # h/a = 80 costs <1% on H100 with FA3's figures: every finding counts here.
    code, out, err = run("--fix", "--min-slowdown", "0", str(tmp_path))
    assert code == 1 and err == ""
    assert (tmp_path / "gpt2.json").read_text() == GPT2_FIXED
    assert (tmp_path / "gpt3.json").read_text() == GPT3
    lines = out.splitlines()
    # The report lists what remains, not what was fixed.
    assert not any("SL101" in ln for ln in lines)
    assert any("SL102" in ln and "gpt3.json" in ln for ln in lines)
    assert "Fixed 1 problem; 1 remaining." in lines
    code, out, _ = run("--fix", "--unsafe-fixes", "--min-slowdown", "0", str(tmp_path))
    assert code == 0
    assert (tmp_path / "gpt3.json").read_text() == GPT3.replace(
        '"num_attention_heads": 32', '"num_attention_heads": 20'
    )
    assert "Fixed 1 problem; 0 remaining." in out
    assert out.splitlines()[-1].startswith("All checks passed")


def test_unsafe_fixes_alone_implies_fix(tmp_path: Path) -> None:
    (tmp_path / "a.json").write_text(GPT2)
    (tmp_path / "b.json").write_text(GPT3)
    code, out, _ = run("--unsafe-fixes", "--min-slowdown", "0", str(tmp_path))
    assert code == 0
    assert "Fixed 2 problems; 0 remaining." in out
    assert (tmp_path / "a.json").read_text() == GPT2_FIXED


def test_show_fixes_lists_each_change(tmp_path: Path) -> None:
    path = tmp_path / "a.json"
    path.write_text(GPT2)
    code, out, _ = run("--fix", "--show-fixes", str(path))
    assert code == 0
    assert f"{path}:5:17: SL101 vocab_size 50257 → 50304" in out.splitlines()
    # Without --show-fixes the change is only counted.
    path.write_text(GPT2)
    _, out, _ = run("--fix", str(path))
    assert "→" not in out and "Fixed 1 problem" in out


def test_show_fixes_with_json_format_keeps_stdout_json(tmp_path: Path) -> None:
    import json

    path = tmp_path / "a.json"
    path.write_text(GPT2)
    code, out, err = run("--fix", "--show-fixes", "--format", "json", str(path))
    assert code == 0
    assert json.loads(out)["findings"] == []
    assert "SL101 vocab_size 50257 → 50304" in err


def test_diff_prints_and_writes_nothing(tmp_path: Path) -> None:
    (tmp_path / "a.json").write_text(GPT2)
    (tmp_path / "b.json").write_text(GPT3)
    code, out, err = run("--diff", str(tmp_path))
    assert code == 1
    a = str(tmp_path / "a.json")
    assert out == (
        f"--- {a}\n+++ {a}\n@@ -2,5 +2,5 @@\n"
        '   "n_embd": 768,\n   "n_head": 12,\n   "n_layer": 12,\n'
        '-  "vocab_size": 50257\n+  "vocab_size": 50304\n }\n'
    )
    assert "Would fix 1 problem." in err
    assert (tmp_path / "a.json").read_text() == GPT2
    code, out, _ = run("--diff", "--unsafe-fixes", "--min-slowdown", "0", str(tmp_path))
    assert code == 1
    assert out.count("--- ") == 2 and '+"num_attention_heads": 20' not in out
    assert '"num_attention_heads": 20' in out
    assert (tmp_path / "b.json").read_text() == GPT3


def test_diff_exit_zero_when_nothing_to_fix(tmp_path: Path) -> None:
    (tmp_path / "b.json").write_text(GPT3)
    code, out, _ = run("--diff", str(tmp_path))
    assert (code, out) == (0, "")


def test_diff_marks_missing_final_newline(tmp_path: Path) -> None:
    path = tmp_path / "a.json"
    path.write_text(GPT2.rstrip("\n"))
    _, out, _ = run("--diff", str(path))
    assert out.endswith('+  "vocab_size": 50304\n }\n\\ No newline at end of file\n')


def test_unparsable_file_is_never_written(tmp_path: Path) -> None:
    path = tmp_path / "a.json"
    broken = GPT2.replace('"n_head": 12,', '"n_head": 12,,')
    path.write_text(broken)
    code, out, _ = run("--fix", str(path))
    assert code == 1 and "SL000" in out
    assert path.read_text() == broken


def test_keeps_permission_bits(tmp_path: Path) -> None:
    path = tmp_path / "a.json"
    path.write_text(GPT2)
    os.chmod(path, 0o640)
    run("--fix", str(path))
    assert path.read_text() == GPT2_FIXED
    assert stat.S_IMODE(path.stat().st_mode) == 0o640


def test_interrupted_write_leaves_original_and_no_temp(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "a.json"
    path.write_text(GPT2)

    def fail(src: object, dst: object, **dir_fds: object) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(writer.os, "replace", fail)
    code, out, err = run("--fix", str(path))
    assert code == 1
    assert path.read_text() == GPT2
    assert os.listdir(tmp_path) == ["a.json"]
    assert "not written: cannot write file: No space left on device" in err
    assert "SL101" in out  # still reported: nothing was fixed


def test_interrupt_between_write_and_rename_cleans_up(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "a.json"
    path.write_text(GPT2)

    def interrupt(src: object, dst: object, **dir_fds: object) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(writer.os, "replace", interrupt)
    code, _, err = run("--fix", str(path))
    assert code == 130 and "interrupted" in err
    assert path.read_text() == GPT2
    assert os.listdir(tmp_path) == ["a.json"]


@pytest.mark.skipif(sys.platform == "win32", reason="symlinks need privileges on Windows")
def test_symlink_outside_the_linted_tree_is_not_written(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    tree = tmp_path / "tree"
    outside.mkdir()
    tree.mkdir()
    real = outside / "config.json"
    real.write_text(GPT2)
    (tree / "config.json").symlink_to(real)
    code, out, err = run("--fix", str(tree))
    assert code == 1
    assert real.read_text() == GPT2
    assert "outside the paths being linted" in err
    assert "SL101" in out


@pytest.mark.skipif(sys.platform == "win32", reason="symlinks need privileges on Windows")
def test_symlink_inside_the_tree_is_written_through(tmp_path: Path) -> None:
    (tmp_path / "models").mkdir()
    real = tmp_path / "models" / "gpt2.json"
    real.write_text(GPT2)
    link = tmp_path / "config.json"
    link.symlink_to(real)
    code, _, err = run("--fix", str(link))
    assert (code, err) == (0, "")
    assert link.is_symlink()
    assert real.read_text() == GPT2_FIXED


def test_read_only_file_is_reported_not_written(tmp_path: Path) -> None:
    path = tmp_path / "a.json"
    path.write_text(GPT2)
    os.chmod(path, 0o444)
    try:
        code, out, err = run("--fix", str(path))
    finally:
        os.chmod(path, 0o644)
    assert code == 1
    assert path.read_text() == GPT2
    assert "not written: the file is read-only" in err
    assert "SL101" in out


def test_file_changed_on_disk_is_not_overwritten(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "a.json"
    path.write_text(GPT2)
    edited = GPT2.replace('"n_layer": 12', '"n_layer": 24')
    original = reading.read_snapshot

    def read_then_edit(p: str, *args: Any, **kwargs: Any) -> reading.Snapshot:
        snap = original(p, *args, **kwargs)
        path.write_text(edited)  # someone saves the file while shapelint works
        return snap

    monkeypatch.setattr(reading, "read_snapshot", read_then_edit)
    code, _, err = run("--fix", str(path))
    assert code == 1
    assert path.read_text() == edited
    assert "changed on disk since it was read" in err
    assert [p.name for p in tmp_path.iterdir()] == ["a.json"]


def test_failed_fix_is_reported_with_reason(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from shapelint.core.model import Dim, Finding, ModelConfig, Target
    from shapelint.engine import pipeline
    from shapelint.rules.base import Rule, make_fix

    rule = Rule(
        "SL990", "bad-fix", "warning", "a rule whose fix breaks the config", "test", "alignment"
    )

    def check(config: ModelConfig, target: Target) -> Iterator[Finding]:
        heads = config.get(Dim.HEADS)
        if heads is not None and heads.as_int == 12:
            fix = make_fix(config, "x", [(heads, 10)], architecture=False)
            yield rule.finding(config, heads, "twelve heads", fix=fix)

    rules = pipeline.config_rules()
    fake = SimpleNamespace(RULE=rule, EXAMPLES=[], check=check)
    monkeypatch.setattr(pipeline, "config_rules", lambda **_: [*rules, fake])
    path = tmp_path / "a.json"
    path.write_text(GPT2)
    code, out, err = run("--fix", str(path))
    assert code == 1
    # The good fix is written; the bad one (768 / 10 heads) is reported, not applied.
    assert path.read_text() == GPT2_FIXED
    assert f"{path}:3:13: SL990 fix not applied: the fix would introduce SL003" in err
    assert "SL990 [warning] twelve heads" in out and "Fixed 1 problem; 1 remaining." in out


def test_fix_hidden_below_the_threshold_is_not_a_new_finding(tmp_path: Path) -> None:
    # Llama params.json: SL104 is below the 1% threshold until SL102's fix makes the step
    # faster; it was there all along, so the SL102 fix is kept and SL104 is fixed next.
    path = tmp_path / "params.json"
    path.write_text(
        '{"dim": 192, "n_layers": 5, "n_heads": 16, "multiple_of": 24, "vocab_size": 512}\n'
    )
    code, out, _ = run(str(path))
    assert "SL102" in out and "SL104" not in out
    code, out, err = run("--unsafe-fixes", "--show-fixes", str(path))
    assert (code, err) == (0, "")
    assert path.read_text() == (
        '{"dim": 192, "n_layers": 5, "n_heads": 3, "multiple_of": 64, "vocab_size": 512}\n'
    )
    assert "Fixed 2 problems; 0 remaining." in out


def test_each_file_is_fixed_under_its_own_settings(tmp_path: Path) -> None:
    (tmp_path / ".git").mkdir()  # the settings search stops here
    text = GPT2.replace("50257", "50200")
    for name, settings in (("ignored", 'ignore = ["SL101"]\n'), ("tp2", "tp = 2\n"), ("plain", "")):
        (tmp_path / name).mkdir()
        (tmp_path / name / "config.json").write_text(text)
        if settings:
            (tmp_path / name / ".shapelint.toml").write_text(settings)
    code, out, err = run("--fix", "--min-slowdown", "0", str(tmp_path))
    assert (code, err) == (0, ""), out
    assert (tmp_path / "ignored" / "config.json").read_text() == text
    # Under tensor parallel 2 each rank holds vocab / 2 rows: padded to a multiple of 128.
    assert (tmp_path / "tp2" / "config.json").read_text() == text.replace("50200", "50304")
    assert (tmp_path / "plain" / "config.json").read_text() == text.replace("50200", "50240")
    assert "Fixed 2 problems; 0 remaining." in out
