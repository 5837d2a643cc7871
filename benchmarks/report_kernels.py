"""Render ``results/kernels.json`` and ``results/roofline.json``: the tables and findings of Chapter 8.

``python benchmarks/report_kernels.py`` rewrites ``results/kernels.md`` (the
tables); the kernel benchmark does the same after each run. The page itself is
rendered from the JSON at build time (``site_build/measured.py`` asks for the
sections in ``SECTIONS`` by name), so its tables, its figures and the sentences
under them all come from the same file, and a rerun cannot leave any of them
stale. Rows are read by their keys (``op``, ``n``, ``T``, ``causal``,
``<method>_ms``, ``<method>_gflops``, ``ratio_vs_<anchor>``,
``flash_speedup_vs_<method>``, ``<method>_extra_bytes``, ``<method>_skipped``):
rows of other ops and keys not listed here are ignored, and a method that
appears in the JSON gets a column.

The roofline sections (``roofline``, ``roofline-dense``) read ``results/roofline.json``
beside it and refuse to render when the two files name different machines (CPU, PoCL
target or thread count): the page calls both "this machine". Every classification they
print ("right of the ridge", "under half of its roof", "bandwidth does not limit it") is
computed from the numbers in the file and checked against them before it is printed.
"""

from __future__ import annotations

import json
import math
import re
import statistics
from pathlib import Path

RESULTS = Path(__file__).resolve().parent / "results"

# Column names for the methods the benchmark knows; any other method is shown by its key.
GEMM_LABELS = {"ours": "ours (packing included)", "ours_queued": "ours, queued (one wait per burst)",
               "ours_numpy_io": "ours, NumPy arrays in and out",
               "numpy": "NumPy (OpenBLAS)", "torch": "torch"}
# ratio_<method>_vs_<anchor> keys: the method's name in a column head and in a sentence ("" is "ours").
RATIO_METHODS = {"": "ours", "ours_queued_": "ours queued", "ours_numpy_io_": "ours with NumPy arrays in and out"}
ATTENTION_LABELS = {"flash": "flash", "dense": "dense, ours", "numpy": "NumPy dense", "torch": "torch SDPA"}
SHORT = {"numpy": "NumPy", "torch": "torch", "dense": "dense, ours"}
SENTENCE = {"dense": "Dense attention (ours)", "numpy": "Dense NumPy attention", "torch": "torch SDPA"}
PROSE = {"flash": "flash", "dense": "our dense kernel", "numpy": "dense NumPy", "torch": "torch SDPA"}


def keyed(rows: list[dict], prefix: str = "", suffix: str = "") -> list[str]:
    """The ``*`` of every ``<prefix>*<suffix>`` key in the rows, in order of first appearance."""
    found: list[str] = []
    for r in rows:
        for k in r:
            name = k[len(prefix): len(k) - len(suffix)]
            if k.startswith(prefix) and k.endswith(suffix) and len(k) > len(prefix) + len(suffix) and name not in found:
                found.append(name)
    return found


def gemm_rows(report: dict) -> list[dict]:
    return sorted((r for r in report["rows"] if r.get("op") == "gemm"), key=lambda r: r["n"])


def attention_rows(report: dict) -> list[dict]:
    return sorted((r for r in report["rows"] if r.get("op") == "attention"), key=lambda r: (r["T"], r["causal"]))


def _row_label(row: dict) -> str:
    return f"T = {row['T']}{' causal' if row['causal'] else ''}"


def _ms(row: dict, name: str) -> str:
    return f"{row[name + '_ms']:.1f}" if name + "_ms" in row else "not run"


def _x(row: dict, name: str) -> str:
    key = f"flash_speedup_vs_{name}"
    return f"{row[key]:.2f}×" if key in row else "—"


def _mib(value) -> str:
    return "—" if value is None else f"{value / 2**20:.1f} MiB"


def _text(value) -> str:
    """A value of the JSON as Markdown that shows it as written: ``<`` and ``&`` as character references,
    Markdown's characters escaped (a results file holding markup puts none on the page)."""
    text = str(value).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    return re.sub(r"([\\`*_\[\]{}#|$!])", r"\\\1", " ".join(text.split()))


def _code(value) -> str:
    """A value of the JSON as a code span, shown as written whatever backticks it holds."""
    text = " ".join(str(value).split())
    fence = "`" * (max((len(run) for run in re.findall(r"`+", text)), default=0) + 1)
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def _table(head: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(head) + " |", "| " + " | ".join("---" for _ in head) + " |"]
    return "\n".join(lines + ["| " + " | ".join(cells) + " |" for cells in rows]) + "\n"


def setup(report: dict) -> str:
    """Where, when and how the numbers were measured."""
    blas = next((b for b in report.get("numpy_blas") or [] if isinstance(b, dict) and b.get("internal_api") == "openblas"), {})
    load = report["loadavg_1min_before_after"]
    target = f", compiling for {_code(report['pocl_target'])}" if report.get("pocl_target") else ""
    pinned = {"1": ", its worker threads pinned to cores", "0": ", its worker threads free to move"}.get(
        report.get("pocl_affinity"), "")
    if pinned and report.get("sched_batch_threads"):
        pinned += " under `SCHED_BATCH`"
    spreads = round_spreads(report)
    spread = (f" A method's rounds spread (highest minus lowest round, over their median) by {_pct(spreads[len(spreads) // 2])} "
              f"in the median row and method, {_pct(spreads[-1])} at most; every round is in the JSON."
              if spreads else "")
    return (
        f"Measured on {_text(report['date'][:10])} on {_code(report['device'])} ({_text(report['platform'])}{target}"
        f"{pinned}), {_text(report['threads'])} threads for every library, NumPy {_text(report['numpy'])} with OpenBLAS "
        f"{_text(blas.get('version') or '?')} ({_text(blas.get('architecture') or 'kernel not reported')} kernels), "
        f"torch {_text(report.get('torch') or 'not installed')}; {_text(report['statistic'])}, "
        f"{_text(report['repeats'])} rounds; 1-minute load average {_text(load[0])} before, {_text(load[1])} after "
        f"(a shared machine).{spread}\n"
    )


def _pct(x: float) -> str:
    return f"{x:.0%}"


def round_spreads(report: dict) -> list[float]:
    """(highest - lowest) / median of every method's rounds in every row that records them, sorted."""
    spreads = []
    for r in report["rows"]:
        for key, times in r.items():
            if key.endswith("_ms_rounds") and len(times) > 1:
                spreads.append((max(times) - min(times)) / statistics.median(times))
    return sorted(spreads)


def ratio_keys(rows: list[dict]) -> list[tuple[str, str, str]]:
    """(key, method, anchor) for every ``ratio_<method>vs_<anchor>`` key, ``ratio_vs_numpy`` first."""
    found = []
    for prefix in RATIO_METHODS:
        found += [(f"ratio_{prefix}vs_{a}", prefix, a) for a in keyed(rows, prefix=f"ratio_{prefix}vs_")]
    return found


def gemm_table(report: dict) -> str:
    rows = gemm_rows(report)
    methods, ratios = keyed(rows, suffix="_ms"), ratio_keys(rows)
    head = ["GEMM, float32", *(GEMM_LABELS.get(m) or _text(m) for m in methods),
            *(f"{RATIO_METHODS[m]} / {SHORT.get(a) or _text(a)}" for _, m, a in ratios)]
    body = []
    for r in rows:
        cells = [f"{r['n']}³"]
        for m in methods:
            gflops = f", {r[m + '_gflops']:.0f} GFLOP/s" if m + "_gflops" in r else ""
            cells.append(f"{r[m + '_ms']:.1f} ms{gflops}" if m + "_ms" in r else "not run")
        cells += [f"{r[k]:.2f}×" if k in r else "—" for k, _, _ in ratios]
        body.append(cells)
    return _table(head, body)


def _speedup_columns(rows: list[dict]) -> list[str]:
    found = [m for m in keyed(rows, prefix="flash_speedup_vs_") if m != "dense"]  # dense's time is in the table
    return sorted(found, key=lambda m: ("torch", "numpy").index(m) if m in ("torch", "numpy") else 2)


def attention_time_table(report: dict) -> str:
    rows = attention_rows(report)
    r0 = rows[0]
    methods, speedups = keyed(rows, suffix="_ms"), _speedup_columns(rows)
    head = [f"attention forward, B={r0['B']}, H={r0['H']}, d={r0['d']} (ms)",
            *(ATTENTION_LABELS.get(m) or _text(m) for m in methods),
            *(f"flash vs {SHORT.get(m) or _text(m)}" for m in speedups)]
    return _table(head, [[_row_label(r), *(_ms(r, m) for m in methods), *(_x(r, m) for m in speedups)] for r in rows])


def attention_memory_table(report: dict) -> str:
    rows = attention_rows(report)
    methods = keyed(rows, suffix="_extra_bytes")
    head = ["extra memory beyond inputs and output", *(ATTENTION_LABELS.get(m) or _text(m) for m in methods)]
    body = [[_row_label(r), *("not run" if m + "_skipped" in r else _mib(r.get(m + "_extra_bytes")) for m in methods)]
            for r in rows]
    return _table(head, body)


def skipped_note(report: dict) -> str:
    rows = attention_rows(report)
    notes = []
    for m in keyed(rows, suffix="_skipped"):
        reasons = sorted({_text(r[m + "_skipped"]) for r in rows if m + "_skipped" in r})
        notes.append(f"{SENTENCE.get(m) or _text(m)} was not run where it {'; '.join(reasons)}.")
    return " ".join(notes) + "\n" if notes else ""


def markdown(report: dict) -> str:
    """The tables as ``results/kernels.md`` holds them."""
    parts = [setup(report), gemm_table(report), attention_time_table(report), attention_memory_table(report)]
    return "\n".join(p for p in parts + [skipped_note(report)] if p)


# -- findings: every number below is read from the report, every comparison made on it ------------

def _and(items: list) -> str:
    items = [str(i) for i in items]
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


def _span(values: list[float], fmt: str = ".2f", unit: str = "×") -> str:
    lo, hi = min(values), max(values)
    return f"{lo:{fmt}}{unit}" if f"{lo:{fmt}}" == f"{hi:{fmt}}" else f"{lo:{fmt}}{unit} to {hi:{fmt}}{unit}"


def _growth(rows: list[dict], key: str) -> tuple[dict, dict, float] | None:
    """First and last rows that have ``key``, and the exponent p of key ∝ T^p between them."""
    have = [r for r in rows if r.get(key)]
    if len(have) < 2 or have[0]["T"] == have[-1]["T"]:
        return None
    a, b = have[0], have[-1]
    return a, b, math.log(b[key] / a[key]) / math.log(b["T"] / a["T"])


def memory_finding(report: dict) -> str:
    rows = [r for r in attention_rows(report) if not r["causal"]] or attention_rows(report)
    parts = []
    for m in keyed(rows, suffix="_extra_bytes"):
        g = _growth(rows, m + "_extra_bytes")
        if g:
            a, b, p = g
            parts.append(f"{PROSE.get(m) or _text(m)} from {_mib(a[m + '_extra_bytes'])} at T = {a['T']} "
                         f"to {_mib(b[m + '_extra_bytes'])} at T = {b['T']}, about \\(T^{{{p:.1f}}}\\)")
    if not parts:
        return ""
    return ("- **Extra memory** (no mask), as T grows: " + "; ".join(parts) + ". Flash attention keeps "
            "a d-major copy of K and a padded V, which grow with T·d; a dense method that materializes "
            "scores grows with T², and ours stores both scores and weights.\n")


def torch_finding(report: dict) -> str:
    rows = [r for r in attention_rows(report) if "flash_speedup_vs_torch" in r]
    if not rows:
        return ""
    ratios = [r["flash_speedup_vs_torch"] for r in rows]
    faster = sum(x > 1 for x in ratios)
    count = "all" if faster == len(rows) else "none" if not faster else f"{faster}"
    text = (f"- **Against torch SDPA**, flash's speedup (torch's time over flash's, above 1× when flash is "
            f"faster) was {_span(ratios)} across the {len(rows)} rows; flash was faster in {count} of them.")
    close = [r for r in rows if abs(r["flash_speedup_vs_torch"] - 1) < 0.1]
    if close:
        text += f" In {len(close)} rows ({', '.join(_row_label(r) for r in close)}) the two are within 10% of each other"
        paired = [r for r in close if r.get("flash_ms_rounds") and len(r.get("torch_ms_rounds", [])) == len(r["flash_ms_rounds"])]
        if paired:   # round i of flash and of torch ran in the same interleaved round
            text += "; flash was faster in " + "; ".join(
                f"{sum(f < t for f, t in zip(r['flash_ms_rounds'], r['torch_ms_rounds']))} of "
                f"{len(r['flash_ms_rounds'])} rounds at {_row_label(r)}" for r in paired)
        text += "."
    return text + "\n"


def numpy_finding(report: dict) -> str:
    rows = attention_rows(report)
    pairs = [(a, b) for a in rows for b in rows
             if a["T"] == b["T"] and not a["causal"] and b["causal"]
             and "flash_speedup_vs_numpy" in a and "flash_speedup_vs_numpy" in b]
    if not pairs:
        return ""
    plain = [a["flash_speedup_vs_numpy"] for a, _ in pairs]
    masked = [b["flash_speedup_vs_numpy"] for _, b in pairs]
    larger = [b["T"] for a, b in pairs if b["flash_speedup_vs_numpy"] > a["flash_speedup_vs_numpy"]]
    where = ("at every length measured" if len(larger) == len(pairs)
             else f"at T = {', '.join(map(str, larger))} only" if larger else "at no length measured")
    text = (f"- **Against dense NumPy**, flash's speedup was {_span(plain)} without a mask and "
            f"{_span(masked)} with a causal mask: larger with the mask {where}.")
    timed = [(a, b) for a, b in pairs if all("flash_ms" in r and "numpy_ms" in r for r in (a, b))]
    if timed:
        flash = [b["flash_ms"] / a["flash_ms"] for a, b in timed]
        numpy = [b["numpy_ms"] / a["numpy_ms"] for a, b in timed]
        saved = [a["T"] for a, b in timed if b["flash_ms"] < a["flash_ms"]]
        text += (f" With the mask, flash took {_span(flash)} its unmasked time (it skips whole key tiles "
                 f"above the diagonal; it took less time at {'T = ' + _and(saved) if saved else 'no length'}), "
                 f"dense NumPy {_span(numpy)} its own (it computes every score, then masks).")
    return text + "\n"


def gemm_finding(report: dict) -> str:
    rows = gemm_rows(report)
    sentences = {}
    for key, method, a in ratio_keys(rows):
        ratios = [r[key] for r in rows if key in r]
        sizes = [r["n"] for r in rows if key in r]
        verdict = "faster" if min(ratios) > 1 else "slower" if max(ratios) < 1 else "faster at some sizes, slower at others"
        sentences.setdefault(method, []).append(f"{_span(ratios)} the speed of {SHORT.get(a) or _text(a)} at n = {_and(sizes)} ({verdict})")
    if not sentences:
        return ""
    lead = {"": "ours, with the packing of its operands counted and a wait for each result, ran at ",
            "ours_queued_": "with the calls queued back to back and one wait at the end (a chain of device ops), at ",
            "ours_numpy_io_": "given NumPy arrays and returning one (the call a reader makes), it ran at "}
    return "- **GEMM**: " + "; ".join(lead[m] + "; ".join(parts) for m, parts in sentences.items()) + ".\n"


def findings(report: dict) -> str:
    """What the tables show, as bullets; each figure and comparison in them is computed from the report."""
    return "".join(f(report) for f in (torch_finding, numpy_finding, memory_finding, gemm_finding))


# -- the roofline: roofline.json, from the same machine as kernels.json -----------------------------

#: the fields that say which machine a results file comes from; kernels.json and roofline.json must agree
MACHINE_FIELDS = ("cpu", "pocl_target", "threads")
#: a kernel at or above this fraction of its roof is "close to" it; below HALF, "under half of" it
CLOSE, HALF = 0.8, 0.5
#: a copy of the score tensor this much faster than the 1 GiB copy is served (in part) by cache;
#: one at most SAME_SPEED times as fast shows no sign of it; in between, a shared machine's noise
#: could make the difference, and the page says it cannot tell
CACHE_SPEEDUP, SAME_SPEED = 1.5, 1.1
ROOFLINE_NAMES = {"gemm": "GEMM", "dense_attention": "dense attention", "flash_attention": "flash attention"}
MODEL_ROWS = {"gemm": "read A and B, write C", "dense_attention": "§1's standard row",
              "flash_attention": "§1's K, V in cache row"}


def load_roofline(json_path: Path = RESULTS / "roofline.json") -> dict:
    return json.loads(Path(json_path).read_text())


def same_machine(report: dict, roofline: dict) -> None:
    """Raise ValueError unless kernels.json (``report``) and roofline.json name the same machine."""
    differ = [f"{k}: kernels.json {report.get(k)!r}, roofline.json {roofline.get(k)!r}"
              for k in MACHINE_FIELDS if report.get(k) != roofline.get(k)]
    if differ:
        raise ValueError("benchmarks/results/kernels.json and roofline.json come from different machines ("
                         + "; ".join(differ) + "): run benchmarks/bench_kernels.py and benchmarks/roofline.py "
                         "one after the other on one machine")


def _ridge(roofline: dict) -> float:
    return roofline["ceiling_gflops"] / roofline["bandwidth_gbs"]


def _shape(shape: dict) -> str:
    return ", ".join(f"{k} = {v}" for k, v in shape.items())


def _closeness(fraction: float) -> str:
    if fraction > 1:
        return ("above it, which a roof does not allow: the roof was measured lower than the machine sustained "
                "here (a busy machine), or a cache served bytes that the model counts as memory traffic")
    return ("close to it" if fraction >= CLOSE else "within a factor of two of it" if fraction >= HALF
            else "under half of it")


def point_reading(roofline: dict, name: str) -> dict:
    """Where one point sits: its side of the ridge, its roof there, the fraction of that roof it ran at."""
    p, ridge = roofline["points"][name], _ridge(roofline)
    right = p["intensity"] > ridge
    roof = roofline["ceiling_gflops"] if right else p["intensity"] * roofline["bandwidth_gbs"]
    fraction = p["gflops"] / roof
    reading = {"side": "right" if right else "left", "roof": roof, "fraction": fraction,
               "roof_name": "the multiply-add ceiling" if right else "memory bandwidth times its intensity",
               "closeness": _closeness(fraction)}
    assert (reading["side"] == "right") == (p["intensity"] > ridge), "a point's side follows its intensity"
    assert reading["roof"] == min(roofline["ceiling_gflops"], p["intensity"] * roofline["bandwidth_gbs"]), (
        "a point's roof is the lower of the two")
    return reading


def _cache(roofline: dict, level: int) -> dict | None:
    found = [c for c in roofline.get("caches") or [] if c["level"] == level and c["type"] in ("Unified", "Data")]
    return found[0] if found else None


def _cpu_count(cpu_list: str | None) -> int | None:
    """How many CPUs a Linux CPU list names ("0", "0-1", "0,2,4-5"), or None where it names none."""
    if not cpu_list:
        return None
    count = 0
    for part in cpu_list.split(","):
        low, _, high = part.partition("-")
        count += int(high or low) - int(low) + 1
    return count


def roofline_setup(report: dict, roofline: dict) -> str:
    same_machine(report, roofline)
    load = roofline["loadavg_1min_before_after"]
    ridge = _ridge(roofline)
    source = {"opencl_copy": "the OpenCL copy", "numpy_copy": "NumPy's copy"}[roofline["bandwidth_source"]]
    return (
        f"Measured on {roofline['date'][:10]} on `{roofline['device']}` ({roofline['cpu']}, PoCL target "
        f"`{roofline['pocl_target']}`, {roofline['threads']} threads), the CPU, target and thread count of the "
        f"tables above; {roofline['statistic']}, {roofline['repeats']} rounds; 1-minute load average {load[0]} "
        f"before, {load[1]} after. The multiply-add ceiling was {roofline['ceiling_gflops']:.0f} GFLOP/s and the "
        f"copy bandwidth {roofline['bandwidth_gbs']:.1f} GB/s ({source}, the better of the OpenCL copy's "
        f"{roofline['opencl_copy_gbs']:.1f} and NumPy's {roofline['numpy_copy_gbs']:.1f}), so the ridge lies at "
        f"{ridge:.1f} FLOP/byte.\n"
    )


def roofline_table(report: dict, roofline: dict) -> str:
    same_machine(report, roofline)
    body = []
    for name, p in roofline["points"].items():
        r = point_reading(roofline, name)
        body.append([ROOFLINE_NAMES.get(name, name), _shape(p["shape"]), MODEL_ROWS.get(name, "—"),
                     f"{p['bytes'] / 2**20:.1f}", f"{p['intensity']:.1f}", r["side"], f"{r['roof']:.0f}",
                     f"{p['gflops']:.0f}", f"{r['fraction']:.0%}"])
    head = ["kernel", "shape", "traffic counted", "MiB moved", "FLOP/byte", "side of the ridge",
            "roof there (GFLOP/s)", "ran at (GFLOP/s)", "of its roof"]
    return _table(head, body)


def roofline_findings(report: dict, roofline: dict) -> str:
    """One bullet per point: its side of the ridge and how close it came to its roof; the flash point's
    cache assumption checked against the caches the OS reports."""
    same_machine(report, roofline)
    ridge, lines = _ridge(roofline), []
    for name, p in roofline["points"].items():
        r = point_reading(roofline, name)
        label = ROOFLINE_NAMES.get(name, name)
        lines.append(f"- **{label[:1].upper() + label[1:]}** ({p['intensity']:.1f} FLOP/byte) sits "
                     f"{r['side']} of the ridge ({ridge:.1f}), so its roof is {r['roof_name']}, {r['roof']:.0f} "
                     f"GFLOP/s; it ran at {p['gflops']:.0f} GFLOP/s, {r['fraction']:.0%} of that roof, "
                     f"{r['closeness']}.")
    flash = roofline["points"].get("flash_attention")
    l2 = _cache(roofline, 2)
    if flash and l2:
        kv = 2 * flash["shape"]["T"] * flash["shape"]["d"] * 4
        sharing = _cpu_count(l2.get("shared_cpu_list"))
        # the CPUs that share the L2 may each work on another head at once: all their K and V must fit
        at_once = min(sharing or 1, roofline["threads"])
        fits = at_once * kv <= l2["bytes"]
        where = ("per core" if sharing == 1 else f"shared by {sharing} logical CPUs" if sharing
                 else "(the OS does not say which CPUs share it)")
        them = "them" if at_once == 1 else f"the K and V of the {at_once} heads its CPUs may work on at once"
        lines.append(f"- Flash attention's count assumes one head's K and V ({kv / 2**20:.1f} MiB) stay in cache "
                     f"while its query rows stream past: the OS reports a {l2['bytes'] / 2**20:.1f} MiB L2 cache "
                     f"{where}, which " + (f"holds {them}." if fits else
                                           f"does not hold {them}, so more than the counted bytes may reach memory."))
    return "\n".join(lines) + "\n"


def dense_reading(roofline: dict) -> dict:
    """Dense attention pass by pass: each pass's share of the time, GFLOP/s and GB/s against the roofs."""
    passes = roofline["dense_attention_passes"]
    total = sum(p["ms"] for p in passes)
    rows = []
    for p in passes:
        gflops, gbs = p["flops"] / p["ms"] / 1e6, p["bytes"] / p["ms"] / 1e6
        rows.append(dict(p, share=p["ms"] / total, gflops=gflops, gbs=gbs,
                         of_ceiling=gflops / roofline["ceiling_gflops"], of_bandwidth=gbs / roofline["bandwidth_gbs"]))
    top = max(rows, key=lambda r: r["ms"])
    assert all(top["ms"] >= r["ms"] for r in rows), "the top pass takes the most time"
    return {"rows": rows, "total_ms": total, "top": top}


def dense_table(report: dict, roofline: dict) -> str:
    same_machine(report, roofline)
    body = [[r["phase"], ", ".join(f"`{k}`" for k in r["kernels"]), f"{r['ms']:.1f}", f"{r['share']:.0%}",
             f"{r['gflops']:.0f}" if r["flops"] else "— (none counted)", f"{r['bytes'] / 2**20:.0f}",
             f"{r['gbs']:.1f}", f"{r['of_bandwidth']:.0%}"] for r in dense_reading(roofline)["rows"]]
    head = ["pass", "kernels", "device ms", "share of the time", "GFLOP/s", "MiB moved (model)", "GB/s (model bytes)",
            "of the copy bandwidth"]
    return _table(head, body)


def _verdict(row: dict, bound: bool) -> str:
    """Which roof, if either, limits one pass of dense attention (every roof bounds it from above)."""
    if bound:
        return f"moves its bytes at {row['of_bandwidth']:.0%} of the copy bandwidth: memory may limit it."
    if row["flops"] and row["of_ceiling"] >= HALF:
        return f"runs at {row['of_ceiling']:.0%} of the multiply-add ceiling: arithmetic limits it."
    work = "does none of the counted FLOPs" if not row["flops"] else f"runs at {row['of_ceiling']:.0%} of the ceiling"
    return f"{work} and moves its bytes at under half of the copy bandwidth: neither roof is what limits it."


def dense_findings(report: dict, roofline: dict) -> str:
    """Why dense attention sits where it sits: which pass takes the time, and whether bandwidth limits it."""
    same_machine(report, roofline)
    d = dense_reading(roofline)
    top, point = d["top"], roofline["points"]["dense_attention"]
    wall = point["flops"] / point["gflops"] / 1e6
    # the nearer roof names the limit: a product at 95 % of the ceiling that also moves its bytes at 56 %
    # of the copy bandwidth is held by arithmetic, not by memory
    near_ceiling = bool(top["flops"]) and top["of_ceiling"] >= max(HALF, top["of_bandwidth"])
    bound = top["of_bandwidth"] >= HALF and not near_ceiling
    assert bound == (top["gbs"] >= HALF * roofline["bandwidth_gbs"] and not near_ceiling), \
        "bandwidth bounds the top pass or not"
    text = (f"- **The {top['phase']} pass takes {top['share']:.0%} of the time.** The passes add up to "
            f"{d['total_ms']:.0f} ms of device time (the timed call, {wall:.0f} ms of wall time). ")
    if top["flops"]:
        text += f"It runs at {top['gflops']:.0f} GFLOP/s, {top['of_ceiling']:.0%} of the multiply-add ceiling. "
    else:
        text += ("It does none of the counted FLOPs (only the products' multiply-adds count; its exponentials, "
                 "maxima and sums do not). ")
    text += (f"It moves the model's bytes for it, {top['bytes'] / 2**20:.0f} MiB, at {top['gbs']:.1f} GB/s, "
             f"{top['of_bandwidth']:.0%} of the copy bandwidth: "
             + ("memory bandwidth may be what limits it." if bound else
                "a smaller share than of the ceiling, so arithmetic is the nearer roof." if near_ceiling else
                "memory bandwidth does not limit it. The profile times each pass whole; it does not say what "
                "within the pass takes the time."))
    lines = [text]
    products = [r for r in d["rows"] if r["flops"]]
    if products:
        lines.append("- **The products** run at " + _and([f"{r['gflops']:.0f} GFLOP/s ({r['phase']}, "
                                                           f"{r['of_ceiling']:.0%} of the ceiling)" for r in products])
                     + ".")
    copy, llc = roofline.get("score_copy"), roofline.get("last_level_cache_bytes")
    if copy:
        speedup = copy["gbs"] / roofline["opencl_copy_gbs"]
        cached, same = speedup >= CACHE_SPEEDUP, speedup <= SAME_SPEED
        assert cached == (copy["gbs"] >= CACHE_SPEEDUP * roofline["opencl_copy_gbs"]), "cached or not follows the copy"
        shape = point["shape"]
        text = (f"- **Memory or cache?** The scores of the {shape['B'] * shape['H']} heads take "
                f"{copy['bytes'] / 2**20:.0f} MiB, and the weights as much again.")
        if llc:
            text += (f" The OS reports a last-level cache of {llc / 2**20:.0f} MiB; in a virtual machine that is the "
                     "hypervisor's figure, and how much of it this machine's cores get is not measured.")
        text += (f" The OpenCL copy of a buffer the size of the scores into another (what the softmax pass reads and "
                 f"writes) ran at {copy['gbs']:.1f} GB/s, {speedup:.2f} times the {roofline['opencl_copy_gbs']:.1f} "
                 "GB/s of the 1 GiB copy: "
                 + ("at this size part of the traffic is served by cache, so fewer bytes reach memory than the model "
                    "counts, and the point belongs further right." if cached else
                    "so this run shows no sign of a cache serving tensors of that size, and the model's count of "
                    "memory traffic stands." if same else
                    f"faster, but by less than {CACHE_SPEEDUP:g} times: too little for this run to tell whether a "
                    "cache serves part of that traffic."))
        lines.append(text)
    reading = point_reading(roofline, "dense_attention")
    most = "most of its time goes" if top["share"] > 0.5 else f"the largest share of its time, {top['share']:.0%}, goes"
    lines.append(f"- **So** dense attention sits {reading['side']} of the ridge by the model's count, and ran at "
                 f"{reading['fraction']:.0%} of its roof, {reading['roof_name']}; {most} to the "
                 f"{top['phase']} pass, which " + _verdict(top, bound))
    return "\n".join(lines) + "\n"


def roofline_section(report: dict, roofline: dict | None = None) -> str:
    roofline = load_roofline() if roofline is None else roofline
    return "\n".join([roofline_setup(report, roofline), roofline_table(report, roofline),
                      roofline_findings(report, roofline)])


def dense_section(report: dict, roofline: dict | None = None) -> str:
    roofline = load_roofline() if roofline is None else roofline
    return "\n".join([dense_table(report, roofline), dense_findings(report, roofline)])


SECTIONS = {
    "setup": setup,
    "gemm": gemm_table,
    "attention-time": attention_time_table,
    "attention-memory": lambda report: attention_memory_table(report) + ("\n" + skipped_note(report) if skipped_note(report) else ""),
    "findings": findings,
    "roofline": roofline_section,
    "roofline-dense": dense_section,
}


def load(json_path: Path = RESULTS / "kernels.json") -> dict:
    return json.loads(Path(json_path).read_text())


def write(json_path: Path = RESULTS / "kernels.json") -> Path:
    out = json_path.with_suffix(".md")
    out.write_text(markdown(load(json_path)))
    return out


if __name__ == "__main__":
    print(f"wrote {write()}")
