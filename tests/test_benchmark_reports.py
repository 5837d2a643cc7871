"""Chapter 8's measured section says what benchmarks/results/kernels.json says: tables, figures, findings.

The page is rendered from the JSON at build time; these tests read the built
page and its SVGs and compare them with the JSON directly (not through the
renderer), and they feed the renderer edited reports to check that its
sentences follow the numbers.
"""

from __future__ import annotations

import copy
import html
import importlib.util
import json
import math
import re

import numpy as np
import pytest

import doc_blocks
from site_build import markers

RESULTS = doc_blocks.ROOT / "benchmarks" / "results"
REPORT = json.loads((RESULTS / "kernels.json").read_text())
ATTENTION = [r for r in REPORT["rows"] if r.get("op") == "attention"]
GEMM = [r for r in REPORT["rows"] if r.get("op") == "gemm"]


def _report_module():
    spec = importlib.util.spec_from_file_location("report_kernels", doc_blocks.ROOT / "benchmarks" / "report_kernels.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _text(fragment: str) -> str:
    return " ".join(html.unescape(re.sub(r"<[^>]+>", " ", fragment)).split())


def _table_rows(page_html: str) -> dict[str, list[str]]:
    """First cell -> the other cells, for every row of every table on the page."""
    rows = {}
    for tr in re.findall(r"<tr>(.*?)</tr>", page_html, re.S):
        cells = [_text(c) for c in re.findall(r"<t[dh][^>]*>(.*?)</t[dh]>", tr, re.S)]
        rows.setdefault(cells[0], cells[1:])
    return rows


@pytest.fixture(scope="module")
def chapter_8(built_site) -> str:
    return (built_site / "chapter-8" / "index.html").read_text(encoding="utf-8")


def test_kernels_markdown_matches_json():
    assert REPORT["rows"], "no benchmark rows"
    assert (RESULTS / "kernels.md").read_text() == _report_module().markdown(REPORT), (
        "benchmarks/results/kernels.md is stale: run python benchmarks/report_kernels.py"
    )


def test_chapter_8_renders_every_measured_section():
    page = (doc_blocks.DOCS / "chapter-8.md").read_text()
    asked = [m["section"] for m in markers.KERNELS_JSON.finditer(page)]
    assert sorted(asked) == sorted(_report_module().SECTIONS), asked
    for name in ("attention_time", "extra_memory", "gemm"):
        assert f"](figures/chapter8/{name}.svg)" in page


def _label(row: dict) -> str:
    return f"T = {row['T']}{' causal' if row['causal'] else ''}"


def test_tables_on_the_page_are_the_json(chapter_8):
    rows = _table_rows(chapter_8)  # an attention label's first row is its time row
    memory = {}
    for tr in re.findall(r"<tr>(.*?)</tr>", chapter_8, re.S):
        cells = [_text(c) for c in re.findall(r"<td[^>]*>(.*?)</td>", tr, re.S)]
        if cells and any(c.endswith("MiB") for c in cells):
            memory[cells[0]] = cells[1:]
    for r in ATTENTION:
        times = rows[_label(r)]
        for m in ("flash", "dense", "numpy", "torch"):
            shown = f"{r[m + '_ms']:.1f}" if m + "_ms" in r else "not run"
            assert shown in times, f"{_label(r)}: {m} time {shown} not in {times}"
        for m in ("torch", "numpy"):
            if f"flash_speedup_vs_{m}" in r:
                assert f"{r[f'flash_speedup_vs_{m}']:.2f}×" in times
        dense = "not run" if "dense_skipped" in r else f"{r['dense_extra_bytes'] / 2**20:.1f} MiB"
        assert memory[_label(r)] == [f"{r['flash_extra_bytes'] / 2**20:.1f} MiB", dense,
                                     f"{r['numpy_extra_bytes'] / 2**20:.1f} MiB"], _label(r)
    for r in GEMM:
        cells = rows[f"{r['n']}³"]
        assert f"{r['ours_ms']:.1f} ms, {r['ours_gflops']:.0f} GFLOP/s" in cells
        assert f"{r['numpy_ms']:.1f} ms, {r['numpy_gflops']:.0f} GFLOP/s" in cells
        assert f"{r['ratio_vs_numpy']:.2f}×" in cells
    assert REPORT["date"][:10] in _text(chapter_8) and REPORT["device"] in _text(chapter_8)


def _findings_text(chapter_8: str) -> str:
    start = chapter_8.index('id="what-the-numbers-say"')
    return _text(chapter_8[start: chapter_8.index("</article>", start)])


def _span(values, unit="×") -> str:
    lo, hi = f"{min(values):.2f}", f"{max(values):.2f}"
    return f"{lo}{unit}" if lo == hi else f"{lo}{unit} to {hi}{unit}"


def test_findings_state_what_the_json_says(chapter_8):
    text = _findings_text(chapter_8)
    torch = [r["flash_speedup_vs_torch"] for r in ATTENTION if "flash_speedup_vs_torch" in r]
    assert f"was {_span(torch)} across the {len(torch)} rows" in text
    faster = sum(x > 1 for x in torch)
    assert f"faster in {'all' if faster == len(torch) else faster or 'none'} of them" in text
    by_t = {(r["T"], r["causal"]): r for r in ATTENTION}
    plain = [r["flash_speedup_vs_numpy"] for (t, c), r in by_t.items() if not c and (t, True) in by_t]
    masked = [by_t[t, True]["flash_speedup_vs_numpy"] for (t, c) in by_t if not c and (t, True) in by_t]
    assert f"{_span(plain)} without a mask and {_span(masked)} with a causal mask" in text
    larger = all(by_t[t, True]["flash_speedup_vs_numpy"] > by_t[t, False]["flash_speedup_vs_numpy"] for (t, c) in by_t if not c)
    assert ("larger with the mask at every length measured" in text) == larger
    flash = sorted((r for r in ATTENTION if not r["causal"]), key=lambda r: r["T"])
    first, last = flash[0], flash[-1]
    growth = math.log(last["flash_extra_bytes"] / first["flash_extra_bytes"]) / math.log(last["T"] / first["T"])
    assert (f"flash from {first['flash_extra_bytes'] / 2**20:.1f} MiB at T = {first['T']} to "
            f"{last['flash_extra_bytes'] / 2**20:.1f} MiB at T = {last['T']}, about T {growth:.1f}") in text
    gemm = [r["ratio_vs_numpy"] for r in GEMM]
    assert f"ran at {_span(gemm)} the speed of NumPy" in text
    assert ("(slower)" in text) == (max(gemm) < 1)


def _slope(method: str) -> float:
    """The exponent p of extra memory ∝ T^p between the shortest and longest unmasked rows that have it."""
    rows = sorted((r for r in ATTENTION if not r["causal"] and r.get(method + "_extra_bytes")), key=lambda r: r["T"])
    first, last = rows[0], rows[-1]
    return math.log(last[method + "_extra_bytes"] / first[method + "_extra_bytes"]) / math.log(last["T"] / first["T"])


def test_extra_memory_caption_states_the_slopes():
    """The caption under the extra-memory figure reads its slopes off the JSON: about 2 and about 1."""
    dense = [_slope(m) for m in ("dense", "numpy")]
    assert all(abs(p - 2) < 0.15 for p in dense), "the dense methods' extra memory grows about as T squared"
    assert abs(_slope("flash") - 1) < 0.15, "flash's extra memory grows about in proportion to T"


def _group_path(svg: str, gid: str) -> list[tuple[float, float]]:
    """The vertices of the first path inside <g id="gid">."""
    m = re.search(rf'<g id="{re.escape(gid)}">\s*<path d="([^"]+)"', svg)
    assert m, f"no element {gid!r} in the figure"
    return [(float(x), float(y)) for x, y in re.findall(r"(-?[\d.]+) (-?[\d.]+)", m.group(1))]


def _assert_on_one_scale(points: list[tuple[float, float, float, float]], what: str) -> None:
    """(data x, data y, drawn x, drawn y): drawn = a * data + b on each axis, for every point at once."""
    data = np.array(points)
    for axis in (0, 1):
        design = np.c_[data[:, axis], np.ones(len(data))]
        fit, *_ = np.linalg.lstsq(design, data[:, axis + 2], rcond=None)
        off = np.abs(design @ fit - data[:, axis + 2]).max()
        assert off < 0.05, f"{what}: a point is {off:.2f} pt away from where the JSON puts it"


def test_attention_time_figure_plots_the_json(built_site):
    svg = (built_site / "figures" / "chapter8" / "attention_time.svg").read_text(encoding="utf-8")
    for causal, panel in ((False, "full"), (True, "causal")):
        points = []
        for m in ("flash", "dense", "numpy", "torch"):
            rows = sorted((r for r in ATTENTION if r["causal"] == causal and m + "_ms" in r), key=lambda r: r["T"])
            drawn = _group_path(svg, f"{m}-{panel}")
            assert len(drawn) == len(rows), f"{m}-{panel}: {len(drawn)} points drawn, {len(rows)} in the JSON"
            points += [(math.log(r["T"]), math.log(r[m + "_ms"]), x, y) for r, (x, y) in zip(rows, drawn)]
        _assert_on_one_scale(points, f"attention time, {panel}")


def test_extra_memory_figure_plots_the_json(built_site):
    svg = (built_site / "figures" / "chapter8" / "extra_memory.svg").read_text(encoding="utf-8")
    points = []
    for m in ("flash", "dense", "numpy"):
        rows = sorted((r for r in ATTENTION if not r["causal"] and r.get(m + "_extra_bytes") and m + "_skipped" not in r),
                      key=lambda r: r["T"])
        drawn = _group_path(svg, f"{m}-full")
        assert len(drawn) == len(rows), f"{m}: {len(drawn)} points drawn, {len(rows)} in the JSON"
        points += [(math.log(r["T"]), math.log(r[m + "_extra_bytes"]), x, y) for r, (x, y) in zip(rows, drawn)]
    _assert_on_one_scale(points, "extra memory")


def test_gemm_figure_plots_the_json(built_site):
    svg = (built_site / "figures" / "chapter8" / "gemm.svg").read_text(encoding="utf-8")
    heights, values = [], []
    for r in GEMM:
        for m in ("ours", "numpy"):
            ys = [y for _, y in _group_path(svg, f"{m}-{r['n']}")]
            heights.append(max(ys) - min(ys))
            values.append(r[m + "_gflops"])
    scale = np.dot(heights, values) / np.dot(values, values)
    assert np.allclose(heights, scale * np.array(values), rtol=1e-3), "a GEMM bar's height disagrees with the JSON"


def test_renderer_takes_new_rows_and_columns():
    """The lead's rerun may add sizes, anchors and ops: they appear, nothing breaks."""
    rk = _report_module()
    report = copy.deepcopy(REPORT)
    report["cpu"] = "Some Other CPU"
    # a size no committed run holds, so the row below is the only one at that n
    assert all(r["n"] != 96 for r in GEMM)
    report["rows"].insert(0, {"op": "gemm", "n": 96, "ours_ms": 0.5, "numpy_ms": 0.4, "ours_gflops": 67.1,
                              "numpy_gflops": 83.9, "ratio_vs_numpy": 0.8, "torch_ms": 0.45, "torch_gflops": 74.6,
                              "ratio_vs_torch": 0.9})
    assert "torch SDPA" not in rk.gemm_table(report)
    report["rows"].append({"op": "layer_norm", "n": 4096, "ours_ms": 1.0})
    for r in report["rows"]:
        r["extra_key_from_a_newer_benchmark"] = 1
    tables = rk.markdown(report)
    row = next(line for line in tables.splitlines() if line.startswith("| 96³ |"))
    assert row.startswith("| 96³ | 0.5 ms, 67 GFLOP/s | 0.4 ms, 84 GFLOP/s | 0.5 ms, 75 GFLOP/s |")
    assert "| 0.80× | 0.90× |" in row
    assert "ours / torch" in tables and "layer_norm" not in tables
    said = rk.findings(report)
    sizes = ", ".join(str(n) for n in [96, *(r["n"] for r in GEMM)][:-1]) + f" and {GEMM[-1]['n']}"
    assert f"the speed of NumPy at n = {sizes}" in said and "0.90× the speed of torch at n = 96" in said


def test_findings_follow_the_numbers():
    """Turn the measurement around and the sentences turn with it."""
    rk = _report_module()
    report = copy.deepcopy(REPORT)
    for r in report["rows"]:
        if "flash_speedup_vs_torch" in r:
            r["flash_speedup_vs_torch"] = 1 / r["flash_speedup_vs_torch"] / 2
        if r.get("op") == "attention" and r["causal"] and "flash_speedup_vs_numpy" in r:
            r["flash_speedup_vs_numpy"] = 0.5
        if r.get("op") == "gemm":
            r["ratio_vs_numpy"] = 1.5
    said = rk.findings(report)
    assert "flash was faster in none of them" in said
    assert "within 10%" not in said
    assert "larger with the mask at no length measured" in said
    assert "1.50× the speed of NumPy" in said and "(faster)" in said


# -- the roofline sections: rendered from roofline.json, same machine as kernels.json ---------------

ROOFLINE = json.loads((RESULTS / "roofline.json").read_text())


def _roofline_text(chapter_8: str) -> str:
    start = chapter_8.index('id="the-roofline"')
    return _text(chapter_8[start: chapter_8.index('id="what-the-numbers-say"', start)])


def test_roofline_section_on_the_page_is_the_json(chapter_8):
    text = _roofline_text(chapter_8)
    ridge = ROOFLINE["ceiling_gflops"] / ROOFLINE["bandwidth_gbs"]
    assert f"the ridge lies at {ridge:.1f} FLOP/byte" in text
    assert ROOFLINE["date"][:10] in text and ROOFLINE["cpu"] in text and ROOFLINE["pocl_target"] in text
    for name, p in ROOFLINE["points"].items():
        side = "right" if p["intensity"] > ridge else "left"
        roof = min(ROOFLINE["ceiling_gflops"], p["intensity"] * ROOFLINE["bandwidth_gbs"])
        assert (f"({p['intensity']:.1f} FLOP/byte) sits {side} of the ridge ({ridge:.1f})") in text, name
        assert f"it ran at {p['gflops']:.0f} GFLOP/s, {p['gflops'] / roof:.0%} of that roof" in text, name
    passes = ROOFLINE["dense_attention_passes"]
    total = sum(p["ms"] for p in passes)
    top = max(passes, key=lambda p: p["ms"])
    assert f"The {top['phase']} pass takes {top['ms'] / total:.0%} of the time." in text
    for p in passes:
        assert f"{p['bytes'] / p['ms'] / 1e6:.1f}" in text, p["phase"]
    copy_gbs = ROOFLINE["score_copy"]["gbs"]
    assert f"ran at {copy_gbs:.1f} GB/s, {copy_gbs / ROOFLINE['opencl_copy_gbs']:.2f} times" in text


def test_roofline_sentences_follow_the_numbers():
    """Move the points, the passes and the copies, and each classification moves with them."""
    rk = _report_module()
    said = lambda r: rk.roofline_section(REPORT, r) + rk.dense_section(REPORT, r)  # noqa: E731
    roofline = copy.deepcopy(ROOFLINE)
    dense = roofline["points"]["dense_attention"]
    # dense attention left of the ridge: memory becomes its roof
    roofline["ceiling_gflops"] = 2 * dense["intensity"] * roofline["bandwidth_gbs"]
    dense["gflops"] = 0.9 * dense["intensity"] * roofline["bandwidth_gbs"]
    text = said(roofline)
    assert f"({dense['intensity']:.1f} FLOP/byte) sits left of the ridge" in text
    assert "so its roof is memory bandwidth times its intensity" in text and "90% of that roof, close to it" in text
    # the largest pass moves its bytes at 90% of the copy bandwidth (a slower memory): it may limit it
    roofline = copy.deepcopy(ROOFLINE)
    top = max(roofline["dense_attention_passes"], key=lambda p: p["ms"])
    roofline["bandwidth_gbs"] = top["bytes"] / top["ms"] / 1e6 / 0.9
    assert "90% of the copy bandwidth: memory bandwidth may be what limits it" in said(roofline)
    assert f"to the {top['phase']} pass, which moves its bytes at 90% of the copy bandwidth: memory may limit it" \
        in said(roofline)
    roofline["bandwidth_gbs"] = top["bytes"] / top["ms"] / 1e6 / 0.1
    assert "10% of the copy bandwidth: memory bandwidth does not limit it" in said(roofline)
    assert "bandwidth: neither roof is what limits it" in said(roofline) or "arithmetic limits it" in said(roofline)
    # a product that takes most of the time near the ceiling: arithmetic limits it
    roofline = copy.deepcopy(ROOFLINE)
    scores = next(p for p in roofline["dense_attention_passes"] if p["flops"])
    for p in roofline["dense_attention_passes"]:
        p["ms"] = 1.0 if p is not scores else scores["flops"] / (0.95 * roofline["ceiling_gflops"]) / 1e6
    assert f"to the {scores['phase']} pass, which runs at 95% of the multiply-add ceiling: arithmetic limits it" \
        in said(roofline)
    # ... also when it moves its bytes at more than half the copy bandwidth: the nearer roof names the limit
    roofline["bandwidth_gbs"] = scores["bytes"] / scores["ms"] / 1e6 / 0.6
    assert f"to the {scores['phase']} pass, which runs at 95% of the multiply-add ceiling: arithmetic limits it" \
        in said(roofline)
    assert "60% of the copy bandwidth: a smaller share than of the ceiling, so arithmetic is the nearer roof" \
        in said(roofline)
    roofline["bandwidth_gbs"] = scores["bytes"] / scores["ms"] / 1e6 / 0.97
    assert "which moves its bytes at 97% of the copy bandwidth: memory may limit it" in said(roofline)
    # no pass takes half the time: the largest share is named as such, not as "most"
    roofline = copy.deepcopy(ROOFLINE)
    for p in roofline["dense_attention_passes"]:
        p["ms"] = 1.0
    roofline["dense_attention_passes"][0]["ms"] = 1.4
    assert "the largest share of its time, 41%, goes to the" in said(roofline) and "most of its time" not in said(roofline)
    # a point above its roof is not called close to it
    roofline = copy.deepcopy(ROOFLINE)
    roofline["points"]["gemm"]["gflops"] = 1.2 * roofline["ceiling_gflops"]
    assert "120% of that roof, above it, which a roof does not allow" in said(roofline)
    # the score-sized copy twice as fast as the 1 GiB copy: cache serves part of the traffic
    roofline = copy.deepcopy(ROOFLINE)
    roofline["score_copy"]["gbs"] = 2 * roofline["opencl_copy_gbs"]
    assert "part of the traffic is served by cache" in said(roofline)
    roofline["score_copy"]["gbs"] = roofline["opencl_copy_gbs"]
    assert "shows no sign of a cache serving tensors of that size" in said(roofline)
    roofline["score_copy"]["gbs"] = 1.3 * roofline["opencl_copy_gbs"]
    assert "too little for this run to tell whether a cache serves part of that traffic" in said(roofline)
    # an L2 too small for one head's K and V: the flash point's count is flagged
    roofline = copy.deepcopy(ROOFLINE)
    for c in roofline["caches"]:
        if c["level"] == 2:
            c["bytes"] = 256 * 1024
    assert "which does not hold them" in said(roofline)
    # an L2 that two CPUs share, each working on a head: it must hold two heads' K and V
    roofline = copy.deepcopy(ROOFLINE)
    roofline["threads"] = 2
    kv = 2 * roofline["points"]["flash_attention"]["shape"]["T"] * roofline["points"]["flash_attention"]["shape"]["d"] * 4
    for c in roofline["caches"]:
        if c["level"] == 2:
            c["bytes"], c["shared_cpu_list"] = int(1.5 * kv), "0-1"
    assert "L2 cache shared by 2 logical CPUs, which does not hold the K and V of the 2 heads" in said(roofline)
    for c in roofline["caches"]:
        if c["level"] == 2:
            c["bytes"], c["shared_cpu_list"] = int(1.5 * kv), "0"
    assert "L2 cache per core, which holds them." in said(roofline)


def test_close_rows_count_their_rounds_and_setup_states_the_spread():
    """A near tie is reported by how many interleaved rounds each side won, not ranked from medians."""
    rk = _report_module()
    report = copy.deepcopy(REPORT)
    row = next(r for r in report["rows"] if r.get("op") == "attention" and "torch_ms" in r)
    row["flash_speedup_vs_torch"] = 1.05
    row["flash_ms_rounds"] = [10.0, 11.0, 9.0, 12.0, 10.5]
    row["torch_ms_rounds"] = [10.5, 10.0, 9.5, 12.5, 10.0]
    said = rk.torch_finding(report)
    assert f"flash was faster in 3 of 5 rounds at {_label(row)}" in said
    for r in report["rows"]:
        for key in [k for k in r if k.endswith("_ms_rounds")]:
            r[key] = [1.0, 1.0, 1.0]
    row["flash_ms_rounds"] = [1.0, 2.0, 1.5]                 # spread (2 - 1) / 1.5
    assert "at most; every round is in the JSON" in rk.setup(report) and "67% at most" in rk.setup(report)


def test_text_from_the_results_file_is_shown_as_written_not_read_as_markup():
    """The results file's strings (device, platform, versions, a skip's reason, a method's name) reach
    Chapter 8's Markdown: markup there is shown as text, never made HTML or a link on the page."""
    import markdown as markdown_module

    rk = _report_module()
    report = copy.deepcopy(REPORT)
    hostile = "<img src=//evil.example/x> [a](//evil.example) `x` *y*"
    for field in ("platform", "numpy", "torch", "statistic", "device", "pocl_target"):
        report[field] = hostile
    row = next(r for r in report["rows"] if r.get("op") == "attention")
    row["torch_skipped"] = hostile
    row["<b>new</b>_ms"] = 1.0
    page = markdown_module.markdown(rk.markdown(report), extensions=["tables"])
    assert "<img" not in page and "<b>" not in page and "href" not in page, page
    assert html.unescape(re.sub(r"<[^>]+>", "", page)).count("<img src=//evil.example/x>") >= 7, page
