"""Claims on Chapter 7 and the recall pages that rest on a recorded benchmark or on what a figure draws.

Each assert here backs a sentence listed in ``CLAIMS`` of ``test_prose_numbers.py``; the message
names the claim.
"""

from __future__ import annotations

import ast
import json

import doc_blocks
from netcl_lite import budget


def test_a_whole_files_batch_call_uses_several_times_less_cpu_than_tiktokens():
    rows = json.loads((doc_blocks.ROOT / "benchmarks/results/paragraphs.json").read_text())["rows"]
    whole = [row for row in rows if row["set"] == "all"]
    assert {row["kind"] for row in whole} == {"prose", "code", "multilingual"}
    assert all(row["identical_ids"] for row in whole)
    # ratio_cpu: tiktoken's CPU time over ours, for the same documents
    assert all(row["ratio_cpu"]["batch cold"] >= 3 for row in whole), \
        "a whole file's batch call takes at least three times less CPU than tiktoken's batch call"
    assert all(row["ms"]["tiktoken batch"] >= 3 * row["ms"]["tiktoken single"] for row in whole), \
        "tiktoken's threaded batch call costs it at least three times its loop's CPU"
    # batch_vs_tiktoken_single_cpu: tiktoken's loop of single calls, CPU time, over our batch call
    assert all(row["batch_vs_tiktoken_single_cpu"] >= 1.9 for row in whole), \
        "a whole file's batch call takes about half the CPU of tiktoken's loop, or less"


def _figure_values(path: str, *names: str) -> tuple:
    """The values a figure script's top-level assignments give ``names``, run alone."""
    tree = ast.parse((doc_blocks.ROOT / path).read_text(encoding="utf-8"))
    keep = [n for n in tree.body if isinstance(n, ast.Assign)
            and {getattr(t, "id", None) for t in n.targets} & set(names)]
    scope: dict = {}
    exec(compile(ast.Module(body=keep, type_ignores=[]), path, "exec"), scope)
    return tuple(scope[name] for name in names)


def test_kv_cache_lines_are_parallel_with_slope_one():
    """Week 22's figure: bytes against length on log axes, for its 64, 8 and 1 K/V heads."""
    lengths, layouts = _figure_values("snippets/week22/figure_kv_cache.py", "lengths", "layouts")
    assert sorted(kv for _, kv in layouts) == [1, 8, 64]
    size = {kv: [budget.kv_cache_bytes(80, kv, 128, n) for n in lengths] for _, kv in layouts}
    for sizes in size.values():
        assert all(b == 2 * a for a, b in zip(sizes, sizes[1:])), \
            "each layout is a straight line of slope 1: twice the length, twice the bytes"
    assert all(m == 8 * g == 64 * q for m, g, q in zip(size[64], size[8], size[1])), \
        "GQA's 8 groups sit 8 times below MHA and MQA's single head 64 times below"
