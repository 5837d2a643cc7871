"""Claims on Chapter 7 and the recall pages that rest on a recorded benchmark or on what a figure draws.

Each assert here backs a sentence listed in ``CLAIMS`` of ``test_prose_numbers.py``; the message
names the claim.
"""

from __future__ import annotations

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


def test_kv_cache_lines_are_parallel_with_slope_one():
    """Week 22's figure: bytes against length on log axes, for 64, 8 and 1 K/V heads."""
    lengths = [2**p for p in range(9, 18)]
    size = {kv: [budget.kv_cache_bytes(80, kv, 128, n) for n in lengths] for kv in (64, 8, 1)}
    for sizes in size.values():
        assert all(b == 2 * a for a, b in zip(sizes, sizes[1:])), \
            "each layout is a straight line of slope 1: twice the length, twice the bytes"
    assert all(m == 8 * g == 64 * q for m, g, q in zip(size[64], size[8], size[1])), \
        "GQA's 8 groups sit 8 times below MHA and MQA's single head 64 times below"
