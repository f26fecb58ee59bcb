"""--format sarif: valid against the official SARIF 2.1.0 schema (vendored in tests/data/sarif)."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from conftest import REPO

from shapelint.cli.main import main
from shapelint.core.source import LineIndex

SCHEMA_PATH = REPO / "tests" / "data" / "sarif" / "sarif-schema-2.1.0.json"
GPT2 = '{\n  "n_embd": 768,\n  "n_head": 12,\n  "n_layer": 12,\n  "vocab_size": 50257\n}\n'
BAD_HEADS = "hidden_size: 4096\nnum_attention_heads: 30\nvocab_size: 32000\n"


@pytest.fixture(scope="module")
def validator() -> jsonschema.Draft4Validator:
    schema = json.loads(SCHEMA_PATH.read_text(encoding="utf-8"))
    assert schema["id"].endswith("/sarif-schema-2.1.0.json")
    jsonschema.Draft4Validator.check_schema(schema)
    return jsonschema.Draft4Validator(schema)


@pytest.fixture(autouse=True)
def in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("GITHUB_WORKSPACE", raising=False)
    monkeypatch.chdir(tmp_path)


def sarif(*argv: str) -> tuple[int, dict[str, Any]]:
    out, err = io.StringIO(), io.StringIO()
    code = main([*argv, "--format", "sarif"], out, err)
    assert err.getvalue() == ""
    data: dict[str, Any] = json.loads(out.getvalue())
    return code, data


def write(path: str, text: str) -> Path:
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(text, encoding="utf-8")
    return p


def test_valid_log_with_rules_results_and_fixes(validator: jsonschema.Draft4Validator) -> None:
    write("models/gpt2/config.json", GPT2)
    write("models/bad.yaml", BAD_HEADS)
    # Two shape keys: a walked file that fails to parse is reported only when it holds a model.
    write("broken.json", '{"hidden_size": 4096, "num_attention_heads": 32,,}')
    code, log = sarif(".", "--gpu", "h100", "--gpu", "a100")
    assert code == 1
    validator.validate(log)
    assert log["version"] == "2.1.0"
    (run,) = log["runs"]
    driver = run["tool"]["driver"]
    assert driver["name"] == "shapelint" and driver["version"] and driver["informationUri"]
    fired = sorted({r["ruleId"] for r in run["results"]})
    assert [r["id"] for r in driver["rules"]] == fired  # exactly the rules that fired
    assert {"SL000", "SL003", "SL101"} <= set(fired)
    for rule in driver["rules"]:
        assert rule["help"]["markdown"].startswith(f"## {rule['id']} `{rule['name']}`")
        assert rule["shortDescription"]["text"] and rule["fullDescription"]["text"]
        assert rule["helpUri"].endswith(f"#{rule['id'].lower()}-{rule['name']}")
    levels = {r["id"]: r["defaultConfiguration"]["level"] for r in driver["rules"]}
    assert levels["SL101"] == "warning" and levels["SL003"] == "error"
    for result in run["results"]:
        assert driver["rules"][result["ruleIndex"]]["id"] == result["ruleId"]
        assert result["level"] == levels[result["ruleId"]]

    vocab = next(r for r in run["results"] if r["ruleId"] == "SL101")
    loc = vocab["locations"][0]["physicalLocation"]
    assert loc["artifactLocation"] == {"uri": "models/gpt2/config.json", "uriBaseId": "%SRCROOT%"}
    assert loc["region"] == {"startLine": 5, "startColumn": 17, "endLine": 5, "endColumn": 22}
    assert run["originalUriBaseIds"]["%SRCROOT%"]["uri"] == Path.cwd().as_uri() + "/"
    props = vocab["properties"]
    assert [e["gpu"] for e in props["estimates"]] == ["H100-SXM", "A100-SXM-80GB"]
    assert props["maxSlowdownPct"] == pytest.approx(
        max(e["slowdownPct"] for e in props["estimates"]), abs=1e-3
    )
    assert props["key"] == "vocab_size"

    # The fix, applied as SARIF describes it, gives what --fix writes.
    (fix,) = vocab["fixes"]
    (change,) = fix["artifactChanges"]
    text = GPT2
    index = LineIndex(text)
    for rep in change["replacements"]:
        region = rep["deletedRegion"]
        start = index.offset(region["startLine"], region["startColumn"])
        end = index.offset(region["endLine"], region["endColumn"])
        text = text[:start] + rep["insertedContent"]["text"] + text[end:]
    assert text == GPT2.replace("50257", "50304")


def test_fingerprints_survive_moved_lines_and_differ_by_path() -> None:
    write("a/config.json", GPT2)
    write("b/config.json", GPT2)
    _, before = sarif(".")
    write("a/config.json", "\n\n" + GPT2.replace('"n_layer": 12,', '"n_layer": 24,'))
    _, after = sarif(".")

    def prints(log: dict[str, Any]) -> dict[str, tuple[str, int]]:
        out = {}
        for r in log["runs"][0]["results"]:
            loc = r["locations"][0]["physicalLocation"]
            out[loc["artifactLocation"]["uri"]] = (
                r["partialFingerprints"]["shapelint/v1"],
                loc["region"]["startLine"],
            )
        return out

    b, a = prints(before), prints(after)
    assert a["a/config.json"][1] == b["a/config.json"][1] + 2  # moved…
    assert a["a/config.json"][0] == b["a/config.json"][0]  # …same fingerprint
    assert b["a/config.json"][0] != b["b/config.json"][0]


def test_clean_run_is_a_valid_empty_log(validator: jsonschema.Draft4Validator) -> None:
    write("c.yaml", "hidden_size: 4096\nnum_attention_heads: 32\nvocab_size: 32000\n")
    code, log = sarif(".")
    assert code == 0
    validator.validate(log)
    assert log["runs"][0]["results"] == [] and log["runs"][0]["tool"]["driver"]["rules"] == []


def test_schema_rejects_a_broken_log(validator: jsonschema.Draft4Validator) -> None:
    """The validation can fail: a result without a message is not SARIF."""
    write("models/gpt2/config.json", GPT2)
    _, log = sarif(".")
    del log["runs"][0]["results"][0]["message"]
    with pytest.raises(jsonschema.ValidationError):
        validator.validate(log)


def test_output_file_is_written_atomically(validator: jsonschema.Draft4Validator) -> None:
    write("m/config.json", GPT2)
    target = Path("reports") / "shapelint.sarif"
    target.parent.mkdir()
    target.write_text("old contents")
    out, err = io.StringIO(), io.StringIO()
    code = main(["m", "--format", "sarif", "--output-file", str(target)], out, err)
    assert code == 1 and out.getvalue() == "" and err.getvalue() == ""
    validator.validate(json.loads(target.read_text()))
    assert sorted(p.name for p in target.parent.iterdir()) == ["shapelint.sarif"]  # no temp left
    code = main(["m", "--output-file", "missing-dir/out.txt"], out, err)
    assert code == 2
    assert err.getvalue().count("\n") == 1 and "cannot write output file" in err.getvalue()


def test_rules_are_tagged_by_what_they_cost() -> None:
    """Code scanning's tag follows the rule's family: a shape that runs slower (alignment,
    micro-batch and wave rules) is performance; a config that is wrong or that an engine
    refuses is correctness."""
    from shapelint.report.sarif import _rule as rule_descriptor
    from shapelint.rules import REGISTRY

    tags = {code: rule_descriptor(code)["properties"]["tags"] for code in REGISTRY}
    assert tags["SL101"] == ["performance"]
    assert tags["SL202"] == ["performance"]  # wave quantization: a batching rule
    assert tags["SL203"] == ["performance"]
    assert tags["SL003"] == ["correctness"]
    assert tags["SL301"] == ["correctness"]
    for code, module in REGISTRY.items():
        if module.RULE.family == "batching":
            assert tags[code] == ["performance"], code
