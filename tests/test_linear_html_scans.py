"""The build's two scans of generated HTML (a notebook page's loaders, the printable book's local
links) give what their defining patterns give, in one pass over the page, with elements left
unclosed by a notebook's or a page's own HTML."""

from __future__ import annotations

import random
import re
import time

import pytest

from site_build import apparatus, offline

# The definitions the scans follow, as regular expressions (which backtrack over unclosed elements).
# A script element runs from its tag to the first '</script>', as a browser reads it: text in its body
# that looks like a tag is text.
_SCRIPT = re.compile(r"<script\b([^>]*)>(.*?)</script>", re.I | re.S)
_LINK = re.compile(r'<a\b[^>]*\bhref="#([^"]+)"[^>]*>(.*?)</a>', re.S)


def _loader_or_remote(m: re.Match) -> bool:
    remote = re.search(r'\bsrc="(?:https?:)?//[^"]*"', m.group(1), re.I) is not None   # its body is ignored
    return remote or re.search("MathJax|mermaid", m.group(2), re.I) is not None

_SCRIPT_PIECES = ['<script>', '<SCRIPT type="x">', '<script src="//cdn.example/x.js">', '</script>', '</SCRIPT>',
                  'MathJax.Hub', 'mermaid.init()', 'var a = 1;', ' ', '\n', '<p>text</p>',
                  '<script src="local.js">', '>', 'plain']
_LINK_PIECES = ['<a href="#here">', '<a href="#gone">', '<a class="x" href="#gone" title="t">', '<a href="other.html">',
                '</a>', 'word', ' ', '<span id="here">', '>', '<a', '\n']


def _random_page(pieces: list[str], rng: random.Random) -> str:
    return "".join(rng.choice(pieces) for _ in range(rng.randrange(0, 30)))


def test_a_notebook_page_loses_the_scripts_its_definition_names_and_nothing_else():
    rng = random.Random(0)
    for _ in range(3000):
        page = _random_page(_SCRIPT_PIECES, rng)
        expected = _SCRIPT.sub(lambda m: "" if _loader_or_remote(m) else m.group(0), page)
        assert offline.strip_loaders(page, "drills/x.ipynb") == expected, page
    assert offline.strip_loaders("<script>MathJax</script>", "page.md") == "<script>MathJax</script>"


def test_the_printable_book_unwraps_the_links_its_definition_names_and_nothing_else(tmp_path):
    rng = random.Random(1)
    (tmp_path / apparatus.PRINT_PAGE).parent.mkdir(parents=True)
    for _ in range(2000):
        page = _random_page(_LINK_PIECES, rng)
        ids = set(re.findall(r"""\bid=["']([^"']+)["']""", page))
        expected_count = sum(m.group(1) not in ids for m in _LINK.finditer(page))
        expected = _LINK.sub(lambda m: m.group(0) if m.group(1) in ids else m.group(2), page)
        (tmp_path / apparatus.PRINT_PAGE).write_text(page, encoding="utf-8")
        assert apparatus.repair_print_page(tmp_path) == expected_count, page
        assert (tmp_path / apparatus.PRINT_PAGE).read_text(encoding="utf-8") == expected, page


@pytest.mark.parametrize("unit", ['<script>', '<script src="//x"', '<a href="#x">', '<a '], ids=str)
def test_unclosed_elements_take_one_pass(tmp_path, unit):
    """40,000 unclosed elements: a pattern that backtracks tries each start to the page's end, some
    10^10 steps (minutes); one pass takes milliseconds. The bound, a second, is 100 times that."""
    page = unit * 40_000
    (tmp_path / apparatus.PRINT_PAGE).parent.mkdir(parents=True)
    (tmp_path / apparatus.PRINT_PAGE).write_text(page, encoding="utf-8")
    start = time.process_time()
    assert offline.strip_loaders(page, "drills/x.ipynb") == page
    assert apparatus.repair_print_page(tmp_path) == 0
    assert time.process_time() - start < 1.0


# -- the rendered page's figures and their captions ---------------------------------------------------------

_FIG = '<img alt="a" src="../figures/chapter-9/curve.svg" />'


@pytest.mark.parametrize("page, shown", [
    (f"<figure><p>{_FIG}</p><figcaption><p>What to see.</p></figcaption></figure>", False),
    (f"<p>{_FIG}</p>", True),
    (f"<figure><p>{_FIG}</p></figure><figcaption>a caption of nothing</figcaption>", True),
    (f"<figure><figure><p>{_FIG}</p></figure><figcaption>the outer one's</figcaption></figure>", True),
    (f"<!-- <p>{_FIG}</p> -->", False),
    (f"<![CDATA[ {_FIG} ]]>", False),               # HTML reads it as a comment to the first '>': the <img
    (f"<?pi {_FIG} ?>", False),                      # ... tag is inside it
    (f"<p><img src='x.png' /></p>", False),          # not a generated figure
    (f"<img/src=../figures/chapter-9/curve.svg>", True),
], ids=["captioned", "bare", "caption-outside", "caption-of-the-outer-figure", "comment", "cdata", "processing",
        "other-image", "slash-src"])
def test_the_rendered_page_shows_every_figure_with_its_caption(page, shown):
    from site_build import generated

    source = "# Page\n\nText.\n\n![a](../figures/chapter-9/curve.svg)\n"
    if not shown:
        generated.check_rendered_figures(page, "docs/chapter-9.md", source)
        return
    with pytest.raises(ValueError, match=r"^docs/chapter-9\.md:5: figures/chapter-9/curve\.svg shows without a "
                                         r"caption"):
        generated.check_rendered_figures(page, "docs/chapter-9.md", source)


def test_many_unclosed_images_and_figures_take_one_pass():
    from site_build import generated

    page = "<figure><img src=" * 20_000 + "<!--" * 20_000
    start = time.process_time()
    generated.check_rendered_figures(page, "docs/x.md")
    assert time.process_time() - start < 2.0


@pytest.mark.parametrize("tag, end", [("<img class=it's src=x>", 22), ('<img alt="a > b" src=x>', 23),
                                      ("<img alt = 'q>' x>", 18), ('<img a"b=c>d', 11)])
def test_a_tag_ends_where_a_browser_ends_it(tag, end):
    """A quote opens a quoted value only right after an attribute's '='; elsewhere it is text."""
    from site_build.tags import Tags

    assert Tags(tag).end(len("<img")) == end


def test_a_remote_script_with_a_body_goes_too():
    """A browser runs what a script's ``src`` fetches and ignores its body: a body does not keep a
    script that loads from another host on a notebook's page."""
    page = '<p>a</p><script src="https://cdn.example/x.js">var fallback = 1;</script><p>b</p>'
    assert offline.strip_loaders(page, "drills/x.ipynb") == "<p>a</p><p>b</p>"
