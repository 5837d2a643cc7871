"""Hostile round 39c: where the offline check (``site_build.offline``) still reads a page or a style
sheet otherwise than a browser does. Each page starts with ``<p>`` so that it is read as HTML."""

from __future__ import annotations

from urllib.parse import quote_from_bytes

import pytest

from site_build import generated

from site_build.offline import remote_references

#: a style sheet whose string, read in UTF-8, runs over a ``url(//evil.example/…)`` (the byte 0x81 is no
#: UTF-8 and the backslash after it escapes the closing quote), while in Shift_JIS the bytes 0x81 0x5C are
#: one character (U+2015), the string closes at once, and the ``url()`` is a declaration that fetches
_SJIS_CSS = b'a{content:"\x81\\"}b{background:url(//evil.example/p.png)}c{content:"}'


def test_a_css_data_url_is_read_in_the_encoding_its_charset_rule_names():
    """Wrong: a ``data:text/css`` style sheet is always decoded as UTF-8 when its media type has no
    ``charset``, so one that starts ``@charset "shift_jis";`` is read with its ``url(//evil.example/…)``
    inside a string and passes. Right: CSS Syntax's "determine the fallback encoding" reads the
    ``@charset "…";`` at the start of the bytes when no BOM and no transport charset say otherwise; in
    Shift_JIS the string closes before the ``url()``, which a browser fetches: the check must report it
    (or decode as the ``@charset`` rule says)."""
    css = b'@charset "shift_jis";' + _SJIS_CSS
    url = "data:text/css," + quote_from_bytes(css)
    page = f'<p>x</p><link rel=stylesheet href="{url}">'
    assert remote_references(page) == ["//evil.example/p.png"], page


def test_a_css_data_url_of_a_shift_jis_page_is_read_in_shift_jis():
    """Wrong: a ``data:text/css`` style sheet linked from a ``data:text/html;charset=shift_jis`` page is
    decoded as UTF-8, so its ``url(//evil.example/…)``, hidden in a string as UTF-8 reads it, passes.
    Right: a style sheet with no BOM, no ``charset`` parameter and no ``@charset`` rule falls back to its
    environment encoding, the linking document's (CSS Syntax; CSSOM's fetch of a ``<link>``'s style sheet):
    Shift_JIS, where the string closes first and the ``url()`` fetches evil.example."""
    css_url = "data:text/css," + quote_from_bytes(_SJIS_CSS)
    inner = f'<link rel=stylesheet href="{css_url}">'.encode()
    page = f'<p>x</p><iframe src="data:text/html;charset=shift_jis,{quote_from_bytes(inner)}"></iframe>'
    assert remote_references(page) == ["//evil.example/p.png"], page


_FIGURE_IMG = '<img src="figures/ch1/loss.svg" alt="a">'


@pytest.mark.parametrize("page", [
    f"<div><figure><figcaption>Loss</figcaption></div><p>{_FIGURE_IMG}</p>",
    f"<section><figure><figcaption>Loss</figcaption></section>{_FIGURE_IMG}",
    f"<math><figure><figcaption>Loss</figcaption></math>{_FIGURE_IMG}",
], ids=["closed-by-div", "closed-by-section", "closed-by-math"])
def test_a_figure_closed_by_an_ancestors_end_tag_captions_nothing_after_it(page):
    """Wrong: ``check_rendered_figures`` follows ``<figure>`` by its own start and end tags only, so a
    figure that a browser closes with the element around it (``</div>`` closes every element opened inside
    the div; ``</math>`` every MathML element) stays open to the check, and a generated figure shown after
    it counts as captioned. Right: as HTML's tree builder reads it the image stands outside any figure,
    with no caption: a ValueError naming the page."""
    with pytest.raises(ValueError, match="docs/a.md"):
        generated.check_rendered_figures(f"<p>x</p>{page}", "docs/a.md")


@pytest.mark.parametrize("page", [
    f"<figure><svg><figcaption>Loss</figcaption></svg>{_FIGURE_IMG}</figure>",
    f"<figure><template><figcaption>Loss</figcaption></template>{_FIGURE_IMG}</figure>",
], ids=["svg-figcaption", "template-figcaption"])
def test_a_figcaption_a_browser_does_not_show_is_no_caption(page):
    """Wrong: any ``<figcaption>`` start tag inside a figure counts as its caption, also one inside
    ``<svg>`` (an SVG element of that name, no HTML caption: SVG draws no text outside a ``<text>``) and one in a ``<template>`` (its content is never rendered), so a generated
    figure shown with no visible caption passes. Right: only an HTML ``figcaption`` that is rendered
    captions the figure; here the check raises a ValueError naming the page."""
    with pytest.raises(ValueError, match="docs/a.md"):
        generated.check_rendered_figures(f"<p>x</p>{page}", "docs/a.md")


@pytest.mark.parametrize("html", [
    "<p>x</p><math><mrow><font color=red>see @{key}</font></mrow></math>",
    "<p>x</p><math><font size=2>see @{key}</font></math>",
], ids=["font-color-in-mrow", "font-size-in-math"])
def test_the_rendered_citation_check_sees_a_font_break_out_of_math(html):
    """Wrong: ``citations.check_rendered`` gives its open elements no tag text
    (``OpenElements.tag(closing, name, self_closing)``), so a ``<font>`` with ``color``, ``face`` or ``size``
    in MathML is taken for a MathML element and what follows stays "in math", which the check skips: the
    typed ``@key`` passes. Right: HTML's tree builder reads such a ``<font>`` as a breakout tag, closes the
    ``<math>`` and puts the text in an HTML ``<font>``, where the reader sees ``@key`` typed: a ValueError
    naming the page."""
    from site_build import citations

    key = "vaswani2017attention"          # a key of the site's bibliography (tests/test_bibliography.py)
    with pytest.raises(ValueError, match="chapter-7.md"):
        citations.check_rendered(html.format(key=key), "chapter-7.md", f"see @{key}\n")


def test_a_data_url_of_text_xsl_is_an_xml_page():
    """Wrong: a ``data:text/xsl`` frame is read as no page (``text/xsl`` neither ends ``+xml`` nor is
    ``text/xml`` or ``application/xml``), so the SVG image it holds passes. Right: browsers render
    ``text/xsl`` as an XML document (Chromium's ``MIMETypeRegistry::IsXMLMIMEType`` and Firefox's
    document loader's XML types both list it), whose SVG ``<image>`` fetches evil.example: the check must
    read it as it reads ``text/xml``."""
    from urllib.parse import quote

    doc = '<svg xmlns="http://www.w3.org/2000/svg"><image href="//evil.example/x.png"/></svg>'
    page = f'<p>x</p><iframe src="data:text/xsl,{quote(doc)}"></iframe>'
    assert remote_references(page) == ["//evil.example/x.png"], page


def test_a_dirty_record_naming_a_path_no_system_can_hold_is_no_record(tmp_path, monkeypatch):
    """Wrong: a dirty build's record (``DirtyPages._load``) is checked for its fields' types only, so a
    record whose ``read`` list holds a lone surrogate (``"\\ud800"``, valid JSON, no file name any system
    gives: a record the build wrote holds only ``\\udc80``–``\\udcff`` escapes) is kept, and
    ``invalidate`` then dies in ``os.fsencode`` with a bare ``UnicodeEncodeError`` that names neither the
    record nor the page: every ``mkdocs build --dirty`` of that site fails until the cache is found and
    removed. Right: a record that cannot be used is no record, as an unreadable or malformed one is (every
    page rendered again)."""
    import json
    import os

    from netcl_lite import fingerprint
    from site_build.dirty_pages import DirtyPages, digest

    monkeypatch.setenv("NETCL_LITE_CACHE", str(tmp_path / "cache"))
    docs, site = tmp_path / "docs", tmp_path / "site"
    docs.mkdir()
    (docs / "a.md").write_text("# A\n")
    (site / "a").mkdir(parents=True)
    (site / "a" / "index.html").write_text("<p>a</p>")

    class Page:
        src_uri, abs_src_path, abs_dest_path = "a.md", str(docs / "a.md"), str(site / "a" / "index.html")

    class Files:
        def documentation_pages(self):
            return [Page()]

    now = digest(docs / "a.md", None, fingerprint.library_sources(), "a.md")
    st = os.stat(site / "a" / "index.html")
    record = DirtyPages.record_path(site)
    record.parent.mkdir(parents=True)
    record.write_text(json.dumps({"pages": {"a.md": {"digest": now, "read": ["\ud800"], "read_digest": "00",
                                                      "html": [st.st_mtime_ns, st.st_size]}}}))
    DirtyPages(dirty=True).invalidate(Files(), site)


def test_an_xml_data_url_is_read_in_the_encoding_its_xml_declaration_names():
    """Wrong: an XML ``data:`` page with no ``charset`` parameter is always decoded as UTF-8, whatever its
    XML declaration says, so in ``<?xml version="1.0" encoding="iso-2022-jp"?>`` the bytes ``ESC $ B``
    ``<!--`` ``ESC ( B`` are read as a comment's start that hides the SVG ``<image href="//evil.example/…">``
    after them, and the frame passes. Right: an XML document's encoding, when no BOM and no transport
    charset name one, is its XML declaration's (XML 1.0 appendix F, as browsers' XML parsers read it); in
    ISO-2022-JP those four bytes are two kanji, no comment opens, and the image fetches evil.example."""
    doc = (b'<?xml version="1.0" encoding="iso-2022-jp"?><svg xmlns="http://www.w3.org/2000/svg">'
           b'\x1b$B<!--\x1b(B<image href="//evil.example/x.png"/>--></svg>')
    page = f'<p>x</p><iframe src="data:image/svg+xml,{quote_from_bytes(doc)}"></iframe>'
    assert remote_references(page) == ["//evil.example/x.png"], page
