"""Claims on the pages that rest on a recorded benchmark or on what a figure draws.

Each assert here backs a sentence listed in ``CLAIMS`` of ``test_prose_numbers.py``; the message
names the claim.
"""

from __future__ import annotations

import ast
import json
import math

import doc_blocks
from netcl_lite import budget
from schedule_stats import FAMILY_LEVEL, bonferroni_bound, schedule_comparisons, t_quantile_two_df


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


def test_no_schedule_difference_survives_a_correction_for_the_number_of_comparisons():
    """Chapter 9's section 5: Bonferroni's correction over the ten paired differences of five schedules."""
    record = json.loads((doc_blocks.ROOT / "benchmarks/results/capstone_recipes.json").read_text(encoding="utf-8"))
    n, comparisons = schedule_comparisons()
    assert n == 3 and comparisons == 10      # the closed form holds for three seeds (2 degrees of freedom)
    assert abs(t_quantile_two_df(1 - FAMILY_LEVEL) - 4.3027) < 5e-5      # the tabulated 5 % value
    _, bound = bonferroni_bound()
    assert all(abs(d["mean"]) <= bound * d["sd"] for d in record["paired_between_rows"].values()), \
        "corrected for the ten comparisons, none is told apart"
