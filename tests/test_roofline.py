"""Chapter 8's traffic model (snippets/chapter8/traffic_model.py), benchmarks/roofline.py which uses
it, and the results file the page's roofline section is rendered from."""
import copy
import importlib.util
import json
import math
import random
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"


def _module(name: str, path: Path):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _roofline():
    return _module("roofline", ROOT / "benchmarks" / "roofline.py")


def _model():
    return _module("traffic_model", ROOT / "snippets" / "chapter8" / "traffic_model.py")


def _walk(order: str, T: int, d: int, M: int) -> tuple[int, int]:
    """(reads, writes) counted by walking the loops of one order block by block, as the algorithms are
    written, independently of the model's closed forms."""
    model = _model()
    b_r, b_c = model.block_sizes(order, d, M)
    q_blocks = [min(b_r, T - i) for i in range(0, T, b_r)]
    kv_blocks = [min(b_c, T - j) for j in range(0, T, b_c)]
    reads = writes = 0
    if order == "algorithm 1":
        for j, kv in enumerate(kv_blocks):
            reads += 2 * kv * d                           # K_j, V_j
            for q in q_blocks:
                reads += q * d                            # Q_i
                if j:
                    reads += q * d + 2 * q                # O_i, l_i, m_i as the last pass left them
                writes += q * d + 2 * q                   # O_i, l_i, m_i
    else:                                                 # flashattention-2
        for q in q_blocks:
            reads += q * d                                # Q_i
            for kv in kv_blocks:
                reads += 2 * kv * d                       # K_j, V_j
            writes += q * d + q                           # O_i and its log-sum-exp
    return reads, writes


@pytest.mark.parametrize("order", ["algorithm 1", "flashattention-2"])
def test_model_counts_what_the_loops_move(order):
    model, rng = _model(), random.Random(0)
    for _ in range(200):
        d = rng.choice([1, 3, 16, 64, 128])
        M = rng.randrange(4 * d, 64 * d * d + 8 * d)
        T = rng.randrange(1, 3000)
        assert model.traffic(order, T, d, M) == _walk(order, T, d, M), (order, T, d, M)


def test_model_block_sizes_follow_the_rules_on_the_page():
    model = _model()
    for d, M in ((64, 49152), (128, 49152), (128, 98304), (3, 50)):
        rows = math.ceil(M / (4 * d))
        assert model.block_sizes("algorithm 1", d, M) == (min(rows, d), rows)
        assert model.block_sizes("flashattention-2", d, M) == (rows, min(rows, d))


def test_model_matches_the_formulas_on_the_page():
    """Standard: 4Td + 4T^2 numbers; K, V in cache: 4Td; the limits of the intensities as T grows."""
    model = _model()
    for T, d in ((1, 1), (64, 128), (2048, 64), (8192, 128)):
        assert model.traffic("standard", T, d) == (3 * T * d + 2 * T * T, T * d + 2 * T * T)
        assert model.traffic("K, V in cache", T, d) == (3 * T * d, T * d)
        assert model.flops(T, d) == 4 * T * T * d
        for precision, b in model.BYTES.items():
            assert model.intensity("standard", T, d, precision) == pytest.approx(T * d / (b * (T + d)))
            assert model.intensity("K, V in cache", T, d, precision) == pytest.approx(T / b)
    for precision, b in model.BYTES.items():
        for d in model.WIDTHS:
            M = model.SRAM_BYTES // b
            far = 2**22
            for method in ("standard", "algorithm 1", "flashattention-2"):
                assert model.intensity(method, far, d, precision) == pytest.approx(
                    model.limit(method, d, precision), rel=2e-3), (method, d, precision)
            b_r, b_c = model.block_sizes("algorithm 1", d, M)
            assert model.limit("algorithm 1", d, precision) == pytest.approx(4 * d * b_c / (b * (3 * d + 4)))
            assert model.limit("flashattention-2", d, precision) == pytest.approx(
                2 * model.block_sizes("flashattention-2", d, M)[0] / b)
    assert model.limit("K, V in cache", 64, "fp32") is None


def test_model_refuses_what_it_cannot_count():
    model = _model()
    with pytest.raises(ValueError, match="method must be one of"):
        model.traffic("sparse", 8, 4, 64)
    with pytest.raises(ValueError, match="needs M"):
        model.traffic("algorithm 1", 8, 4)
    with pytest.raises(ValueError, match="method must be one of"):
        model.block_sizes("standard", 4, 64)


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
    report = json.loads((RESULTS / "roofline.json").read_text())
    roofline = _roofline()
    traffic = roofline.traffic
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
    # dense attention pass by pass: the model's share of each, adding up to the whole point
    dense = report["points"]["dense_attention"]
    passes = roofline.pass_traffic(**dense["shape"])
    assert [p["phase"] for p in report["dense_attention_passes"]] == list(passes)
    for p in report["dense_attention_passes"]:
        assert (p["flops"], p["bytes"]) == passes[p["phase"]]
        assert p["ms"] > 0 and p["kernels"]
        assert len(report["rounds"][f"dense_{p['phase']}_ms"]) == report["repeats"]
    assert sum(p["bytes"] for p in report["dense_attention_passes"]) == dense["bytes"]
    assert sum(p["flops"] for p in report["dense_attention_passes"]) == dense["flops"]
    shape = dense["shape"]
    assert report["score_copy"]["bytes"] == 4 * shape["B"] * shape["H"] * shape["T"] ** 2
    assert report["score_copy"]["gbs"] > 0 and len(report["rounds"]["score_copy_gbs"]) == report["repeats"]
    if report["caches"]:
        assert report["last_level_cache_bytes"] == max(c["bytes"] for c in report["caches"])


def test_kernels_and_roofline_come_from_one_machine():
    """Chapter 8 calls the machine of both files "this machine": they must name the same one."""
    kernels = json.loads((RESULTS / "kernels.json").read_text())
    roofline = json.loads((RESULTS / "roofline.json").read_text())
    for field in ("cpu", "pocl_target", "threads"):
        assert kernels[field] == roofline[field], (
            f"{field}: kernels.json {kernels[field]!r}, roofline.json {roofline[field]!r}: "
            "rerun benchmarks/bench_kernels.py and benchmarks/roofline.py on one machine")


def test_the_page_refuses_a_mix_of_machines():
    report_kernels = _module("report_kernels", ROOT / "benchmarks" / "report_kernels.py")
    kernels = report_kernels.load()
    roofline = copy.deepcopy(report_kernels.load_roofline())
    for section in (report_kernels.roofline_section, report_kernels.dense_section):
        section(kernels, roofline)                        # the committed pair renders
    for field, other in (("cpu", "AMD EPYC (family 26, model 2)"), ("pocl_target", "znver3"), ("threads", 16)):
        mixed = dict(roofline, **{field: other})
        for section in (report_kernels.roofline_section, report_kernels.dense_section):
            with pytest.raises(ValueError, match="different machines"):
                section(kernels, mixed)


def test_chapter_8_draws_the_roofline():
    page = (ROOT / "docs" / "chapter-8.md").read_text()
    assert "](figures/chapter8/roofline.svg)" in page
    assert (ROOT / "snippets" / "chapter8" / "figure_roofline.py").is_file()
