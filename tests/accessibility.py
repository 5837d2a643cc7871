"""Accessibility checks on a page open in Playwright: axe-core's WCAG 2 A/AA rules, and alt text.

axe-core comes inside the ``axe-playwright-python`` wheel (its ``axe.min.js``), so nothing is
fetched when the tests run.
"""

from __future__ import annotations

from pathlib import PurePosixPath
from urllib.parse import unquote, urlparse

# WCAG 2.0 and 2.1, levels A and AA: the rules a page must pass to claim AA conformance.
WCAG_TAGS = ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa"]

# The theme's name for each palette the site offers, as Material writes it on <body>.
SCHEMES = {"light": "default", "dark": "slate"}


def wcag_violations(page) -> list[str]:
    """One line per violated rule: the rule, its impact, how many elements, and the first of them."""
    from axe_playwright_python.sync_playwright import Axe

    options = {"runOnly": {"type": "tag", "values": WCAG_TAGS}, "resultTypes": ["violations"]}
    results = Axe().run(page, options=options).response
    lines = []
    for rule in results["violations"]:
        first = rule["nodes"][0]
        checks = first["any"] + first["all"] + first["none"]
        why = checks[0]["message"] if checks else rule["help"]
        lines.append(f"{rule['id']} ({rule['impact']}, {len(rule['nodes'])} elements), first "
                     f"{' '.join(first['target'])}: {why}")
    return lines


def applied_scheme(page) -> str | None:
    """The palette Material applied to the page (``default`` or ``slate``)."""
    return page.evaluate("document.body.getAttribute('data-md-color-scheme')")


_IMAGES = "els => els.map(e => ({src: e.currentSrc || e.getAttribute('src') || '', alt: e.getAttribute('alt')}))"


def _words(text: str) -> str:
    """``Attention_weights.svg`` and ``attention weights.svg`` read the same: compare words, not spelling."""
    return " ".join(text.lower().replace("-", " ").replace("_", " ").split())


def images_without_real_alt(page) -> list[str]:
    """Every <img> whose alt is missing, blank, or only the image's file name (with or without extension)."""
    bad = []
    for img in page.eval_on_selector_all("img", _IMAGES):
        alt = (img["alt"] or "").strip()
        name = PurePosixPath(unquote(urlparse(img["src"]).path)).name if not img["src"].startswith("data:") else ""
        if not alt or (name and _words(alt) in {_words(name), _words(PurePosixPath(name).stem)}):
            bad.append(f"{img['src'][:80]} alt={img['alt']!r}")
    return bad
