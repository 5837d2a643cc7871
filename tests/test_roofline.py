"""benchmarks/roofline.py: the traffic model behind Chapter 8's roofline, and its results file."""
import importlib.util
import json
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _roofline():
    spec = importlib.util.spec_from_file_location("roofline", ROOT / "benchmarks" / "roofline.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_traffic_counts_each_kernels_reads_and_writes():
    traffic = _roofline().traffic
    flops, nbytes = traffic("gemm", n=6)
    assert (flops, nbytes) == (2 * 6**3, 4 * 3 * 36)            # intensity n / 6
    shape = dict(B=2, H=3, T=5, d=4)
    io = 2 * 3 * 5 * 4 * 4                                       # Q, K, V, O
    scores = 4 * 2 * 3 * 5 * 5                                   # S, A each written and read
    assert traffic("flash_attention", **shape) == (4 * 2 * 3 * 25 * 4, 4 * io)
    assert traffic("dense_attention", **shape) == (4 * 2 * 3 * 25 * 4, 4 * (io + scores))


def test_traffic_refuses_an_unknown_kernel():
    with pytest.raises(ValueError, match="op must be"):
        _roofline().traffic("softmax", n=4)


def test_results_file_is_consistent():
    report = json.loads((ROOT / "benchmarks" / "results" / "roofline.json").read_text())
    traffic = _roofline().traffic
    assert report["cpu"] and report["pocl_target"] and report["loadavg_1min_before_after"]
    assert report["ceiling_gflops"] > 0
    assert report["bandwidth_gbs"] == max(report["opencl_copy_gbs"], report["numpy_copy_gbs"]) > 0
    if report["last_level_cache_bytes"] is not None:
        assert 2 * report["copy_bytes"] > report["last_level_cache_bytes"]
    assert set(report["points"]) == {"gemm", "dense_attention", "flash_attention"}
    for name, point in report["points"].items():
        assert (point["flops"], point["bytes"]) == traffic(name, **point["shape"])
        assert point["intensity"] == pytest.approx(point["flops"] / point["bytes"])
        assert point["gflops"] > 0
        assert len(report["rounds"][f"{name}_gflops"]) == report["repeats"]


def test_chapter_8_draws_the_roofline():
    page = (ROOT / "docs" / "chapter-8.md").read_text()
    assert "](figures/chapter8/roofline.svg)" in page
    assert (ROOT / "snippets" / "chapter8" / "figure_roofline.py").is_file()
