"""Render ``results/kernels.json`` as the Markdown tables the Chapter 8 page includes.

``python benchmarks/report_kernels.py`` rewrites ``results/kernels.md``; the
kernel benchmark does the same after each run, and a test checks that the
Markdown still matches the JSON, so the page cannot drift from the measurement.
"""

from __future__ import annotations

import json
from pathlib import Path

RESULTS = Path(__file__).resolve().parent / "results"


def _ms(row: dict, name: str) -> str:
    return f"{row[name + '_ms']:.1f}" if name + "_ms" in row else "not run"


def _x(row: dict, name: str) -> str:
    key = f"flash_speedup_vs_{name}"
    return f"{row[key]:.2f}×" if key in row else "—"


def _mib(value) -> str:
    return "—" if value is None else f"{value / 2**20:.1f} MiB"


def markdown(report: dict) -> str:
    blas = next((b for b in report.get("numpy_blas") or [] if isinstance(b, dict) and b.get("internal_api") == "openblas"), {})
    lines = [
        f"Measured on {report['date'][:10]} on `{report['device']}` ({report['platform']}), "
        f"{report['threads']} threads for every library, NumPy {report['numpy']} with OpenBLAS "
        f"{blas.get('version') or '?'} ({blas.get('architecture') or 'kernel not reported'} kernels), "
        f"torch {report.get('torch') or 'not installed'}; {report['statistic']}, {report['repeats']} rounds; "
        f"1-minute load average {report['loadavg_1min_before_after'][0]} before, "
        f"{report['loadavg_1min_before_after'][1]} after (a shared machine).",
        "",
        "| GEMM, float32 | ours (packing included) | NumPy (OpenBLAS) | ours / NumPy |",
        "| --- | --- | --- | --- |",
    ]
    for r in report["rows"]:
        if r["op"] == "gemm":
            lines.append(
                f"| {r['n']}³ | {r['ours_ms']:.1f} ms, {r['ours_gflops']:.0f} GFLOP/s "
                f"| {r['numpy_ms']:.1f} ms, {r['numpy_gflops']:.0f} GFLOP/s | {r['ratio_vs_numpy']:.2f}× |"
            )
    attention = [r for r in report["rows"] if r["op"] == "attention"]
    lines += [
        "",
        "| attention forward, B=1, H=8, d=64 (ms) | flash | dense, ours | NumPy dense | torch SDPA "
        "| flash vs torch | flash vs NumPy |",
        "| --- | --- | --- | --- | --- | --- | --- |",
    ]
    for r in attention:
        lines.append(
            f"| T = {r['T']}{' causal' if r['causal'] else ''} | {_ms(r, 'flash')} | {_ms(r, 'dense')} "
            f"| {_ms(r, 'numpy')} | {_ms(r, 'torch')} | {_x(r, 'torch')} | {_x(r, 'numpy')} |"
        )
    lines += [
        "",
        "| extra memory beyond inputs and output | flash | dense, ours | NumPy dense |",
        "| --- | --- | --- | --- |",
    ]
    for r in attention:
        dense_mem = "not run" if "dense_skipped" in r else _mib(r.get("dense_extra_bytes"))
        lines.append(
            f"| T = {r['T']}{' causal' if r['causal'] else ''} | {_mib(r.get('flash_extra_bytes'))} "
            f"| {dense_mem} | {_mib(r.get('numpy_extra_bytes'))} |"
        )
    skipped = sorted({r["dense_skipped"] for r in report["rows"] if "dense_skipped" in r})
    if skipped:
        lines += ["", f"Dense attention (ours) was not run where it {'; '.join(skipped)}."]
    return "\n".join(lines) + "\n"


def write(json_path: Path = RESULTS / "kernels.json") -> Path:
    out = json_path.with_suffix(".md")
    out.write_text(markdown(json.loads(json_path.read_text())))
    return out


if __name__ == "__main__":
    print(f"wrote {write()}")
