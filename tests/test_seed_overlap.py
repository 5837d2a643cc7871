"""Every page says things in its own words: no run of 12 words copied from a seed document.

Code, outputs, math and the recall questions (whose stems are the seeds'
questions on purpose) are left out; see tests/seed_text.py.
"""

from __future__ import annotations

import pytest

import doc_blocks
import seed_text


def _built_pages(site):
    pages = [doc_blocks.rendered_page(site, p) for p in doc_blocks.pages()]
    return pages + sorted(site.glob("drills/*/index.html"))


def test_stored_shingles_match_the_seeds():
    """The hash list is the seeds' (checked wherever the seeds sit beside the checkout)."""
    stored = seed_text.stored_shingles()
    assert len(stored) > 5000, "tests/data/seed_shingles.txt is missing or nearly empty"
    if seed_text.seed_files():
        assert stored == seed_text.seed_shingles_from(), "seeds changed: run python tests/seed_text.py ../shared/seeds"


def test_scanner_finds_a_copied_run():
    """Guard: a sentence from a seed is found; the same words split by code are not."""
    seed = {seed_text._hash(seed_text.words("one two three four five six seven eight nine ten eleven twelve"))}
    copied = "<article><p>Then one two three four five six seven eight nine ten eleven twelve, as said.</p></article>"
    split = "<article><p>one two three four five six <code>x</code> seven eight nine ten eleven twelve</p></article>"
    questions = '<article><div class="recall-questions"><p>one two three four five six seven eight nine ten eleven twelve</p></div></article>'
    assert seed_text.shared_runs(seed_text.page_words(copied), seed) == ["one two three four five six seven eight nine ten eleven twelve"]
    assert seed_text.shared_runs(seed_text.page_words(split), seed) == []
    assert seed_text.shared_runs(seed_text.page_words(questions), seed) == []


def test_no_page_repeats_twelve_words_of_a_seed(built_site):
    seed = seed_text.stored_shingles()
    found = {}
    for page in _built_pages(built_site):
        runs = seed_text.shared_runs(seed_text.page_words(page.read_text(encoding="utf-8")), seed)
        if runs:
            found[str(page.relative_to(built_site))] = runs
    assert not found, "runs of 12+ words taken from a seed; rewrite them:\n" + "\n".join(
        f"{page}: {run}" for page, runs in found.items() for run in runs
    )
