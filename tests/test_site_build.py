"""The site builds under --strict and asks no other host for anything."""

from __future__ import annotations

import html
import re

import doc_blocks
from site_build import offline


def test_strict_build_renders_every_page(built_site):
    for page in doc_blocks.pages():
        assert doc_blocks.rendered_page(built_site, page).is_file(), f"{page} was not built"


def test_built_html_css_and_svg_reference_no_other_host(built_site):
    """Every built page, sheet and image, through the whole offline check: the URLs of other hosts it
    fetches, and what the fail-closed layer refuses (offline.check_file)."""
    found = {}
    for path in sorted(p for p in built_site.rglob("*")
                       if p.suffix.lower() in offline.CHECKED_SUFFIXES and not p.is_dir()):
        remote = sorted(set(offline.check_file(path)))
        if remote:
            found[str(path.relative_to(built_site))] = remote
    assert not found, f"references to other hosts, or markup the check refuses: {found}"


def test_math_is_rendered_to_mathml(built_site):
    for page in doc_blocks.pages():
        html = doc_blocks.rendered_page(built_site, page).read_text(encoding="utf-8")
        assert 'class="arithmatex"' not in html, f"{page.name}: math left for a client-side renderer"
        assert "\\(" not in re.sub(r"<(pre|code)[^>]*>.*?</\1>", "", html, flags=re.S), f"{page.name}: raw \\( in text"


def test_reference_documents_every_public_op_and_text_name(built_site):
    """The API reference is an index: a public name it leaves out is a test failure."""
    import netcl_lite.capstone as capstone
    import netcl_lite.corpus as corpus
    import netcl_lite.nn as nn
    import netcl_lite.nn.checkpoint as checkpoint
    import netcl_lite.nn.lm as lm
    import netcl_lite.ops as ops
    import netcl_lite.optim as optim
    import netcl_lite.text as text
    import netcl_lite.train as train

    ops_html = (built_site / "reference" / "ops" / "index.html").read_text(encoding="utf-8")
    missing = [n for n in ops.__all__ if callable(getattr(ops, n)) and f'id="netcl_lite.ops.{getattr(ops, n).__module__.rsplit(".", 1)[-1]}.{n}"' not in ops_html]
    text_html = (built_site / "reference" / "text" / "index.html").read_text(encoding="utf-8")
    missing += [n for n in text.__all__ if not re.search(rf'id="netcl_lite\.text\.(?:\w+\.)?{n}"', text_html)]
    nn_html = "".join((built_site / "reference" / page / "index.html").read_text(encoding="utf-8") for page in ("nn", "training"))
    missing += [n for n in nn.__all__ if not re.search(rf'id="netcl_lite\.nn\.\w+\.{n}"', nn_html)]
    training_html = (built_site / "reference" / "training" / "index.html").read_text(encoding="utf-8")
    for module in (lm, checkpoint, optim, train, corpus, capstone):   # every public function and class defined there, cached ones too
        defined = [n for n, obj in vars(module).items() if not n.startswith("_")
                   and callable(obj) and getattr(obj, "__module__", None) == module.__name__]
        missing += [f"{module.__name__}.{n}" for n in defined if f'id="{module.__name__}.{n}"' not in training_html]
    assert not missing, f"public names missing from the API reference: {missing}"


_IMG = re.compile(r"<img\b[^>]*>")
_SRC_ALT = re.compile(r'\b(src|alt)="([^"]*)"')


def test_generated_figures_carry_the_alt_text_their_script_computed(built_site):
    """A figure drawn at build time describes itself (numbers included); its <img> alt is that text."""
    seen = 0
    for page in doc_blocks.pages():
        source = page.read_text(encoding="utf-8")
        for alt, target in re.findall(r"!\[([^\]]*)\]\(((?:\.\./)*figures/[^)]+)\)", source):
            assert not re.search(r"\d", alt), f"{page.name}: typed numbers in the alt text of {target}: {alt!r}"
        html_text = doc_blocks.rendered_page(built_site, page).read_text(encoding="utf-8")
        for tag in _IMG.findall(html_text):
            attrs = dict(_SRC_ALT.findall(tag))
            if "figures/" not in attrs.get("src", ""):
                continue
            svg = (built_site / "figures" / attrs["src"].split("figures/", 1)[1]).read_text(encoding="utf-8")
            described = re.search(r"<dc:description>(.*?)</dc:description>", svg, re.S)
            assert described, f"{attrs['src']} has no description for its alt text"
            expected = " ".join(html.unescape(described.group(1)).split())
            assert html.unescape(attrs["alt"]) == expected, f"{page.name}: alt of {attrs['src']} is not the figure's own description"
            assert re.search(r"\d", expected), f"{attrs['src']}: its description names no number it drew"
            seen += 1
    assert seen >= 5, f"only {seen} generated figures found on the pages"


RECALL_SECTIONS = ["assessment-scope", "sessions-covered", "the-90-minute-structure", "blank-page-reconstruction",
                   "hands-on-drill", "answer-constraints-and-corrections", "quiz", "gap-analysis-and-next-week",
                   "corrective-source-notes"]


def test_recall_pages_keep_the_sheets_sections(built_site):
    """Each section of a recall sheet is on its page under a title a reader of the sheet recognizes, in order."""
    for name in ("week-22", "week-23"):
        html_text = (built_site / name / "index.html").read_text(encoding="utf-8")
        ids = re.findall(r'<h[23] id="([^"]+)"', html_text)
        found = [i for i in ids if i in RECALL_SECTIONS]
        assert found == RECALL_SECTIONS, f"{name}: sections {found}, expected {RECALL_SECTIONS}"
