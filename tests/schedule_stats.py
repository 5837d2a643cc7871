"""How Chapter 9 tells its schedules apart: paired differences over three seeds, corrected for
the number of comparisons. The claims test and the prose-number test both read it."""

from __future__ import annotations

import json
import math

import doc_blocks

#: the family-wise level of Chapter 9's schedule comparisons
FAMILY_LEVEL = 0.05


def t_quantile_two_df(confidence: float) -> float:
    """The two-sided ``confidence`` bound of Student's t with 2 degrees of freedom (three paired seeds),
    in closed form: that distribution's CDF is 1/2 + t / (2 sqrt(2 + t²))."""
    return confidence * math.sqrt(2 / (1 - confidence**2))


def schedule_comparisons() -> tuple[int, int]:
    """(seeds, paired comparisons) of benchmarks/results/capstone_recipes.json."""
    record = json.loads((doc_blocks.ROOT / "benchmarks/results/capstone_recipes.json").read_text(encoding="utf-8"))
    return len(record["seeds_in_summary"]), len(record["paired_between_rows"])


def bonferroni_bound() -> tuple[float, float]:
    """(t, t / sqrt(n)): how many standard deviations a paired difference's mean must exceed when each of
    the file's comparisons is tested at FAMILY_LEVEL / their number."""
    n, comparisons = schedule_comparisons()
    t = t_quantile_two_df(1 - FAMILY_LEVEL / comparisons)
    return t, t / math.sqrt(n)
