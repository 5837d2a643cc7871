"""Hostile round 37c: the offline check's reading of tags inside raw-text elements and comments."""

from __future__ import annotations

import pytest

from site_build.offline import remote_references

_IMG = "<img src=//evil.example/x.png>"


@pytest.mark.parametrize("page", [
    f'<!-- <a title=" -->{_IMG}<!-- " -->',
    f"<script>var s = \"<a title='\";</script>{_IMG}<script>'</script>",
    f'<textarea><a title="</textarea>{_IMG}<textarea>"</textarea>',
    f"<style>a[title=\"<a title='\"]{{}}</style>{_IMG}<style>'</style>",
    f'<title><a title="</title>{_IMG}<title>"</title>',
    f'<xmp><a title="</xmp>{_IMG}<xmp>"</xmp>',
    f'<![CDATA[ <a title=" ]]>{_IMG}<![CDATA[ " ]]>',
    f'<? <a title=" ?>{_IMG}<? " ?>',
])
def test_a_quote_inside_a_comment_or_raw_text_hides_no_later_tag(page):
    """A browser reads no tag inside an HTML comment (a bogus one too: ``<![CDATA[`` or ``<?`` in HTML
    runs to the next '>') or the raw text of a ``script``, ``style``,
    ``textarea``, ``title`` or ``xmp``: the comment ends at ``-->`` and the element at its end tag, so the
    ``<img>`` after them is a tag and fetches evil.example. ``remote_references`` reads a tag from every
    ``<`` + letter, inside those too: the ``<a title="`` in the comment opens a quoted value that runs
    past the comment's end, across the real ``<img>``, to the quote in the next comment, and the whole
    stretch is read as one ``<a>`` tag: the image is never seen, and a page holding it passes the site's
    offline test. The check must skip comments and raw text (or at least never let a tag read inside
    them swallow what follows them) and report ``//evil.example/x.png``."""
    assert remote_references(page) == ["//evil.example/x.png"], page


@pytest.mark.parametrize("close", ["</style x>", "</style/>", "</style\tmedia=x>"])
def test_a_style_element_ends_where_html_ends_it(close):
    """HTML ends a ``style`` element at ``</style`` followed by a blank, '/' or '>' (the end tag then
    runs to its '>', whatever it holds), so ``</style/>`` and ``</style x>`` close it: the text after it is
    the page's, and the second ``<style>`` is a style sheet whose ``@import`` fetches evil.example (Python-
    Markdown keeps both raw blocks as written). ``remote_references`` ends a style only at
    ``</style\\s*>``: it reads the first style's CSS on, across the prose, into the second one, where the
    apostrophe of "It's" opens a CSS string that swallows the ``@import``: nothing is reported. The
    style's body must end where :data:`~site_build.offline._SCRIPT_END`-like reading ends it, and
    ``//evil.example/a.css`` be reported."""
    page = f"<style>a{{}}{close}<p>It's here.</p><style>@import \"//evil.example/a.css\";</style>"
    assert remote_references(page) == ["//evil.example/a.css"], page


@pytest.mark.parametrize("src", ["https://cdn.example/x.js", "https://cdn.example/mathjax/tex.js"])
@pytest.mark.parametrize("before", ["<!-- see <script> -->", "<textarea><script></textarea>"])
def test_a_script_tag_written_in_a_comment_leaves_the_notebook_page_whole(before, src):
    """In a notebook page, ``<script>`` written inside an HTML comment (or a textarea's raw text) is no
    element: the comment ends at ``-->`` and the remote loader after it is the page's script.
    ``strip_loaders`` reads an element from every ``<script``: it takes the comment's ``<script>`` for
    one, running to the loader's ``</script>``. When the loader's URL names MathJax, that whole stretch
    goes, the comment's ``-->`` with it: the comment stays open and hides the rest of the page (here
    ``<p>b</p>``) with no error; otherwise the remote loader is kept (its opening tag is not read as
    one). The comment must stay as written, the remote loader go, and the text after it stay."""
    from site_build.offline import strip_loaders

    page = f'<p>a</p>{before}<script src="{src}"></script><p>b</p>'
    assert strip_loaders(page, "drills/x.ipynb") == f"<p>a</p>{before}<p>b</p>"


@pytest.mark.parametrize("tag", ['<style media="(width > 600px)">', '<style title="a>b">'])
def test_a_style_tag_with_a_quoted_greater_than_sign_is_read_from_its_real_end(tag):
    """A ``>`` inside a quoted attribute value does not end a tag (``media="(width > 600px)"``, the media
    queries' range syntax, is ordinary), so the style sheet starts after the tag's own '>' and its
    ``@import`` fetches evil.example (Python-Markdown keeps the raw block as written). ``remote_references``
    starts a ``<style>``'s CSS at the first '>' after ``<style``: the rest of the attribute value, its
    closing quote and all, is read as CSS, where that quote opens a string that runs over the ``@import``'s
    own: nothing is reported. The tag must end where :class:`~site_build.tags.Tags` ends it, and
    ``//evil.example/a.css`` be reported."""
    page = f'{tag}@import "//evil.example/a.css";</style>'
    assert remote_references(page) == ["//evil.example/a.css"], page


_LINKED = ('<svg xmlns="http://www.w3.org/2000/svg" xmlns:l="http://www.w3.org/1999/xlink">'
           '<image l:href="//evil.example/a.png"/></svg>')
_ENTITY = ('<?xml version="1.0"?><!DOCTYPE svg [<!ENTITY u "//evil.example/a.png">]>'
           '<svg xmlns="http://www.w3.org/2000/svg"><image href="&u;"/></svg>')


@pytest.mark.parametrize("svg", [_LINKED, _ENTITY], ids=["xlink-prefix", "internal-entity"])
@pytest.mark.parametrize("how", ["file", "object"])
def test_an_svg_document_read_as_xml_is_read_as_a_browser_reads_xml(svg, how):
    """An SVG file (the site test reads every built ``*.svg`` with ``remote_references``) and a
    ``data:image/svg+xml`` page (which the check reads as a page of its own) are XML documents. In XML
    an attribute's prefix is whatever the document binds to the XLink namespace (``l:href`` with
    ``xmlns:l="http://www.w3.org/1999/xlink"`` is XLink's href, as ``xlink:href`` is), and an entity the
    document's internal DTD declares is expanded in attribute values (``href="&u;"``): a browser that
    shows the document (opened, or in an ``<object>``) fetches evil.example. The check knows only the
    literal ``xlink:href`` and HTML's character references: nothing is reported. It must read the
    XLink namespace by its binding and expand a document's own entities (or report such a document
    unread)."""
    from urllib.parse import quote

    page = svg if how == "file" else f'<object data="data:image/svg+xml,{quote(svg)}"></object>'
    assert remote_references(page), page



@pytest.mark.parametrize("alt", [' alt="typed by hand"', ""], ids=["hand-typed-alt", "no-alt"])
def test_a_quote_in_a_comment_keeps_no_figure_from_its_description(tmp_path, monkeypatch, alt):
    """``generated.with_alt`` gives each generated figure's ``<img>`` its script's description as alt ("no
    alt text is typed by hand"). It reads an ``<img`` wherever it stands, in a comment too: ``<img title="``
    in a comment opens a quoted value that runs over the comment's end and the real figure's tag, to the
    quote in a later comment, so the figure keeps the alt typed by hand, or has none at all. The check
    that runs next (``check_rendered_figures``) skips comments, finds the figure captioned and passes: the
    build succeeds with the wrong alt. Comments must be skipped, and the figure get its description."""
    from site_build import generated

    (tmp_path / "ch1").mkdir()
    (tmp_path / "ch1" / "loss.svg").write_text("<svg/>")
    monkeypatch.setattr(generated, "FIGURES", tmp_path)
    monkeypatch.setattr(generated, "figure_description", lambda svg: "the loss falls")
    page = f'<!-- <img title=" --><figure><img src="figures/ch1/loss.svg"{alt}><figcaption>c</figcaption></figure><!-- " -->'
    out = generated.with_alt(page, "docs/a.md")
    generated.check_rendered_figures(out, "docs/a.md")
    assert 'alt="the loss falls"' in out, out
