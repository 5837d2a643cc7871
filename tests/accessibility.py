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


#: the printable book's own elements, for axe's rules that read colors: what print-book.js and site.css
#: show there and no single page shows as it opens (the collapsed answers, opened; every tab's
#: panel, shown at once), and what the print-site plugin adds around the pages' sections (the
#: headings of the navigation's sections, each a ``section.md-section`` holding its pages)
PRINT_ONLY = ["#print-site-page details", "#print-site-page .tabbed-set",
              "#print-site-page section.md-section > :not(section)", "#print-site-page > :not(section)"]
#: what the selectors of the printable book's own styles name (print-site's and site.css's)
PRINT_MARKERS = ["print-site", "print-page"]


#: axe's WCAG 2 A/AA rules that read colors (its category ``cat.color``); every other one reads the
#: page's structure, which the palette does not change (Material switches it with an attribute of <body>)
COLOR_RULES = ["color-contrast", "link-in-text-block"]


def wcag_violations(page, colors_only_in: list[str] | None = None, structure: bool = True) -> list[str]:
    """One line per violated rule: the rule, its impact, how many elements, and the first of them.
    ``colors_only_in``: selectors to which the rules that read colors (:data:`COLOR_RULES`) are
    confined, every other rule checking the whole page; None: every rule checks the whole page.
    ``structure=False``: the color rules alone, for a page whose structure another palette's check read."""
    from axe_playwright_python.sync_playwright import Axe

    only = {"type": "tag", "values": WCAG_TAGS}
    if colors_only_in is None and structure:
        results = Axe().run(page, options={"runOnly": only, "resultTypes": ["violations"]}).response
    else:
        results = {"violations": []}
        if structure:
            off = {rule: {"enabled": False} for rule in COLOR_RULES}
            results = Axe().run(page, options={"runOnly": only, "rules": off, "resultTypes": ["violations"]}).response
        present = None if colors_only_in is None else [s for s in colors_only_in if page.query_selector(s) is not None]
        if present is None or present:                 # axe refuses an include that matches nothing
            context = None if present is None else {"include": [[s] for s in present]}
            colors = Axe().run(page, context=context, options={"runOnly": {"type": "rule", "values": COLOR_RULES},
                                                               "resultTypes": ["violations"]}).response
            results["violations"] += colors["violations"]
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


#: properties that change what color a text has or what it is read against
_COLOR_PROPERTIES = ["color", "background", "background-color", "background-image", "opacity", "filter",
                     "mix-blend-mode", "text-shadow", "-webkit-text-fill-color", "backdrop-filter"]

_COLORING_RULES = """([props, markers]) => {
  const found = [];
  const walk = (rules) => {
    for (const rule of rules) {
      if (rule instanceof CSSMediaRule) { if (matchMedia(rule.conditionText).matches) walk(rule.cssRules); continue; }
      if (!(rule instanceof CSSStyleRule)) { if (rule.cssRules) walk(rule.cssRules); continue; }
      if (!markers.some(m => rule.selectorText.includes(m))) continue;
      for (const p of props) {
        const value = rule.style.getPropertyValue(p);
        if (value) found.push(`${rule.selectorText} { ${p}: ${value} }`);
      }
    }
  };
  for (const sheet of document.styleSheets) walk(sheet.cssRules);
  return found;
}"""


def rules_coloring(page, markers: list[str]) -> list[str]:
    """Every rule of the page's stylesheets that applies on screen (outside ``@media print``) whose
    selector names one of ``markers`` (:data:`PRINT_MARKERS`: the printable book's) and sets a color,
    a background, opacity or a filter: the ways a style meant for one page could change the contrast
    of a text another page also shows."""
    return page.evaluate(_COLORING_RULES, [_COLOR_PROPERTIES, markers])
