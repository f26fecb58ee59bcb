"""The GPU table: schema, dense figures, measured fractions, lookup and user files."""

from __future__ import annotations

import statistics
from pathlib import Path

import pytest

from shapelint.engine.gpu_file import load_table
from shapelint.hardware import gpus
from shapelint.hardware.gpus import (
    GPUTableError,
    UnknownGPUError,
    UnsupportedDtypeError,
    builtin_data,
    lookup,
    validate,
)

REQUIRED = [
    "V100-SXM2",
    "A100-SXM-40GB",
    "A100-SXM-80GB",
    "A100-PCIe",
    "A10",
    "A10G",
    "L4",
    "L40S",
    "H100-SXM",
    "H100-PCIe",
    "H100-NVL",
    "H200",
    "B200",
    "GB200",
    "RTX-3090",
    "RTX-4090",
    "MI250X",
    "MI300X",
]


def test_builtin_table_passes_the_schema() -> None:
    validate(builtin_data(), "gpus.yaml")


def test_required_gpus_present_with_sources() -> None:
    table = load_table()
    for name in REQUIRED:
        gpu = table.lookup(name)
        assert gpu.name == name
        assert gpu.source, name
        assert gpu.best_align_bytes in (16, 128)


# Dense peaks from FACTS.md (NVIDIA/AMD datasheets and whitepapers); the sparse figures
# (1979 bf16 on H100 SXM, 1513 on H100 PCIe) must never appear as bf16.
@pytest.mark.parametrize(
    ("name", "dtype", "tflops"),
    [
        ("H100-SXM", "bf16", 989),
        ("H100-SXM", "fp8", 1979),
        ("H100-PCIe", "bf16", 756),
        ("H100-NVL", "bf16", 1671 / 2),
        ("A100-SXM-80GB", "bf16", 312),
        ("A100-SXM-80GB", "tf32", 156),
        ("RTX-4090", "bf16", 165.2),
        ("RTX-4090", "fp8", 330.3),
        ("RTX-3090", "fp16", 71),
        ("MI300X", "bf16", 1307.4),
        ("MI250X", "bf16", 191.5),
        ("B200", "bf16", 2250),
        ("GB200", "bf16", 2500),
        ("L40S", "fp8", 733),
    ],
)
def test_dense_peaks(name: str, dtype: str, tflops: float) -> None:
    assert lookup(name).peak(dtype) == pytest.approx(tflops, abs=0.05)


# stas00/ml-engineering MAMF table: measured best-case TFLOP/s.
@pytest.mark.parametrize(
    ("name", "dtype", "measured"),
    [
        ("H100-SXM", "bf16", 794.5),
        ("H200", "bf16", 794.5),
        ("H100-SXM", "fp8", 1402.6),
        ("A100-SXM-80GB", "bf16", 271.2),
        ("A100-PCIe", "bf16", 252.9),
        ("B200", "bf16", 1745),
        ("B200", "fp8", 3432.5),
        ("GB200", "bf16", 1822),
        ("MI300X", "bf16", 668.4),
    ],
)
def test_measured_fractions(name: str, dtype: str, measured: float) -> None:
    gpu = lookup(name)
    assert dtype in gpu.measured_dtypes
    assert gpu.achievable_flops(dtype) / 1e12 == pytest.approx(measured, rel=2e-4)


def test_default_fraction_is_the_median_of_the_measured_ones() -> None:
    entry = builtin_data()["default_achievable_fraction"]
    assert entry["value"] == pytest.approx(statistics.median(entry["measured"]))
    l4 = lookup("L4")
    assert not l4.measured_dtypes
    assert l4.achievable_fraction["bf16"] == entry["value"]


def test_ridge_point_matches_the_nvidia_guide() -> None:
    # NVIDIA Matrix Multiplication Background: V100's fp16 ridge is 138.9 FLOP/B.
    assert lookup("v100").ridge_point("fp16") == pytest.approx(138.9, abs=0.05)


def test_missing_dtype_is_a_clear_error() -> None:
    with pytest.raises(UnsupportedDtypeError, match=r"A100-SXM-80GB has no fp8"):
        lookup("a100").peak("fp8")
    with pytest.raises(ValueError, match="bf16"):
        lookup("v100").achievable_flops("bf16")


@pytest.mark.parametrize(
    ("alias", "name"),
    [
        ("a100", "A100-SXM-80GB"),
        ("h100", "H100-SXM"),
        ("H100_SXM", "H100-SXM"),
        ("h100 sxm", "H100-SXM"),
        ("h200", "H200"),
        ("b200", "B200"),
        ("mi300x", "MI300X"),
        ("MI300X", "MI300X"),
        ("4090", "RTX-4090"),
        ("3090", "RTX-3090"),
        ("v100", "V100-SXM2"),
        ("l40s", "L40S"),
        ("a10g", "A10G"),
    ],
)
def test_aliases(alias: str, name: str) -> None:
    assert lookup(alias).name == name


def test_unknown_gpu_lists_close_matches() -> None:
    with pytest.raises(UnknownGPUError) as info:
        lookup("h1000")
    assert "H100-SXM" in str(info.value).split("(known")[0]
    assert isinstance(info.value, ValueError)


def test_builtin_table_is_cached() -> None:
    assert load_table().lookup("h100") is load_table().lookup("h100")


GOOD_USER = """
gpus:
  My-H100:
    vendor: nvidia
    aliases: [h100, lab-gpu]
    sms: 132
    boost_mhz: 1700
    peak_tflops: {bf16: 900}
    mem_bw_gbs: 3000
    mem_gb: 80
    l2_mb: 50
    best_align_bytes: 128
    source: "our lab's measurement"
  A10:
    vendor: nvidia
    sms: 72
    peak_tflops: {bf16: 100}
    mem_bw_gbs: 600
    mem_gb: 24
    best_align_bytes: 128
    source: [a, b]
"""


def test_user_file_merges_over_builtin(tmp_path: Path) -> None:
    path = tmp_path / "gpus.yaml"
    path.write_text(GOOD_USER, encoding="utf-8")
    table = load_table(path)
    assert table.lookup("h100").name == "My-H100"  # the user's alias wins
    assert table.lookup("lab gpu").peak("bf16") == 900
    assert table.lookup("h100-sxm").name == "H100-SXM"  # built-in still there by its name
    assert table.lookup("a10").peak("bf16") == 100  # same name: replaced
    assert len([g for g in table if g.name == "A10"]) == 1
    assert lookup("a10").peak("bf16") == 125  # the built-in table is untouched


@pytest.mark.parametrize(
    ("bad", "needles"),
    [
        (
            GOOD_USER.replace("peak_tflops: {bf16: 900}", "peak_tflops: {bf16: -3}"),
            ["entry 'My-H100'", "key 'peak_tflops.bf16'"],
        ),
        (GOOD_USER.replace("sms: 132", "sms: lots"), ["entry 'My-H100'", "key 'sms'"]),
        (GOOD_USER.replace("    source: [a, b]\n", ""), ["entry 'A10'", "'source'"]),
        (
            GOOD_USER.replace("peak_tflops: {bf16: 900}", "peak_tflops: {int4: 900}"),
            ["entry 'My-H100'", "key 'peak_tflops'"],
        ),
        (GOOD_USER.replace("    mem_gb: 80\n", "    mem_gb: 80\n    colour: red\n"), ["colour"]),
    ],
)
def test_bad_user_file_names_file_entry_and_key(
    tmp_path: Path, bad: str, needles: list[str]
) -> None:
    path = tmp_path / "mine.yaml"
    path.write_text(bad, encoding="utf-8")
    with pytest.raises(GPUTableError) as info:
        load_table(path)
    msg = str(info.value)
    assert str(path) in msg
    for needle in needles:
        assert needle in msg


def test_unreadable_and_unparsable_user_files(tmp_path: Path) -> None:
    with pytest.raises(GPUTableError, match="cannot read"):
        load_table(tmp_path / "missing.yaml")
    path = tmp_path / "broken.yaml"
    path.write_text("gpus: [\n", encoding="utf-8")
    with pytest.raises(GPUTableError, match=r"broken\.yaml:\d+:\d+: not valid YAML"):
        load_table(path)


def test_duplicate_alias_in_one_file(tmp_path: Path) -> None:
    path = tmp_path / "dup.yaml"
    path.write_text(
        GOOD_USER.replace("    source: [a, b]", "    aliases: [lab-gpu]\n    source: [a]")
    )
    with pytest.raises(GPUTableError, match="also used by"):
        load_table(path)


def test_normalize() -> None:
    assert gpus.normalize(" H100_SXM-5 ") == "h100sxm5"


@pytest.mark.parametrize(
    ("name", "node", "per_node", "inter_gbs", "intra_gbs"),
    [
        # DGX H100: 900 GB/s bidirectional NVLink per GPU (450 each way), one 400 Gb/s NDR
        # InfiniBand port per GPU (50 GB/s each way).
        ("H100-SXM", "DGX H100", 8, 50.0, 450.0),
        ("H200", "DGX H200", 8, 50.0, 450.0),
        ("B200", "DGX B200", 8, 50.0, 900.0),
        ("A100-SXM-80GB", "DGX A100 (640 GB)", 8, 25.0, 300.0),
        ("GB200", "DGX GB200 NVL72", 72, None, 900.0),
        ("H100-PCIe", None, None, None, 64.0),  # no reference system: left out
        ("MI300X", None, None, None, None),
    ],
)
def test_node_and_network_figures(
    name: str,
    node: str | None,
    per_node: int | None,
    inter_gbs: float | None,
    intra_gbs: float | None,
) -> None:
    gpu = lookup(name)
    assert (gpu.reference_node, gpu.gpus_per_node, gpu.inter_node_gbs) == (
        node,
        per_node,
        inter_gbs,
    )
    assert gpu.interconnect_gbs == intra_gbs
    if node is not None:  # the reference system is named in the entry's sources
        assert any("DGX" in s for s in gpu.source), gpu.source


def test_node_fields_in_a_user_file(tmp_path: Path) -> None:
    path = tmp_path / "gpus.yaml"
    node = "    reference_node: lab\n    gpus_per_node: 4\n    inter_node_gbs: 25\n"
    path.write_text(GOOD_USER.replace("    l2_mb: 50\n", "    l2_mb: 50\n" + node))
    gpu = load_table(path).lookup("My-H100")
    assert (gpu.reference_node, gpu.gpus_per_node, gpu.inter_node_gbs) == ("lab", 4, 25.0)
    path.write_text(GOOD_USER.replace("    l2_mb: 50\n", "    l2_mb: 50\n    gpus_per_node: 2.5\n"))
    with pytest.raises(GPUTableError, match="gpus_per_node"):
        load_table(path)
