"""Hostile round 38c: where the shared HTML tokenizer and its open-element tracking
(``site_build.tags.tokens``, ``site_build.glossary.elements``) still read foreign content (SVG,
MathML) otherwise than a browser's HTML parser does, and where the XML-document detection of the
offline check misses an SVG file. Each page starts with ``<p>`` so that it is read as HTML, not as an
XML document, unless the test is about XML detection."""

from __future__ import annotations

import pytest

from site_build import generated
from site_build.offline import remote_references

_IMG = "<img src=https://evil.example/x.png>"


@pytest.mark.parametrize("page", [
    f"<p>x</p><math><title><script>{_IMG}</script></title></math>",
    f"<p>x</p><math><desc><textarea>{_IMG}</textarea></desc></math>",
    f"<p>x</p><svg><mi><script>{_IMG}</script></mi></svg>",
    f"<p>x</p><math><foreignObject><style>{_IMG}</style></foreignObject></math>",
], ids=["math-title", "math-desc", "svg-mi", "math-foreignobject"])
def test_integration_points_are_those_of_their_own_namespace(page):
    """Wrong: every ``title``, ``desc``, ``foreignObject``, ``mi``/``mo``/``mn``/``ms``/``mtext`` is taken
    for an integration point whatever its namespace, so ``<math><title><script>`` opens an HTML raw-text
    script and the ``<img>`` in it is hidden from the offline check. Right: HTML's integration points are
    SVG's ``foreignObject``, ``desc`` and ``title`` and MathML's text ones (``mi``…) and ``annotation-xml``
    only; a MathML ``title`` is a plain MathML element, so ``<script>`` in it is a MathML element whose
    content is tokenized as usual, ``<img`` is an HTML breakout tag, and the browser fetches evil.example."""
    assert remote_references(page) == ["https://evil.example/x.png"], page


def test_a_figure_in_a_math_title_script_is_shown_and_checked():
    """The same misreading in the figure check: ``<math><title><script><img src=…figures/…svg>`` shows
    the figure (the image breaks out of MathML into HTML) but ``check_rendered_figures`` reads it as a
    script's text and lets an uncaptioned figure pass. Right: a ValueError naming the page."""
    page = '<p>x</p><math><title><script><img src="figures/ch1/loss.svg"></script></title></math>'
    with pytest.raises(ValueError, match="docs/a.md"):
        generated.check_rendered_figures(page, "docs/a.md")


@pytest.mark.parametrize("encoding", ["text/html", "application/xhtml+xml", "TEXT/HTML"])
def test_annotation_xml_of_html_is_an_html_integration_point(encoding):
    """Wrong: ``<annotation-xml encoding="text/html">`` is not taken for an HTML integration point, so a
    ``<style>`` in it is read as an SVG/MathML style (no raw text): the ``<!-- … -->`` in its CSS is taken
    for an HTML comment and the ``@import`` in it is never read. Right: a browser parses a start tag in
    such an ``annotation-xml`` as HTML; the style is HTML raw text, ``<!--``/``-->`` are CSS's CDO/CDC
    (ignored), and the ``@import`` fetches evil.example."""
    page = (f'<p>x</p><math><annotation-xml encoding="{encoding}"><style><!-- @import url(//evil.example/a.css);'
            ' --></style></annotation-xml></math>')
    assert remote_references(page) == ["//evil.example/a.css"], page


@pytest.mark.parametrize("attribute", ["color=red", "face=serif", "SIZE=3"])
def test_font_with_color_face_or_size_breaks_out_of_svg(attribute):
    """Wrong: ``<font color=…>`` (or ``face``, ``size``) in ``<svg>`` is taken for an SVG element, so the
    ``<style>`` after it stays foreign and the ``<!-- … -->`` in its CSS hides the ``@import``. Right: HTML's
    foreign-content rules end the SVG at a ``<font>`` with any of those attributes (as at ``<p>``), the
    style is HTML raw text, and the ``@import`` fetches evil.example."""
    page = f"<p>x</p><svg><font {attribute}><style><!-- @import url(//evil.example/a.css); --></style></svg>"
    assert remote_references(page) == ["//evil.example/a.css"], page


@pytest.mark.parametrize("tag", ["<style x=y/>", "<style media=/>", "<style media=all/>"])
def test_a_slash_in_an_unquoted_value_does_not_self_close(tag):
    """Wrong: a start tag whose last character before '>' is '/' is taken as self-closed even when that
    '/' is part of an unquoted attribute value (``x=y/>``: the value is ``y/``), so in ``<svg>`` the
    style is taken as empty and its CSS is never read. Right: HTML's tokenizer sets the self-closing flag
    only for a '/' read between attributes (its self-closing start tag state); the SVG style stays open,
    its text is its CSS, and the ``@import`` fetches evil.example."""
    page = f"<p>x</p><svg>{tag}@import url(//evil.example/a.css);</style></svg>"
    assert remote_references(page) == ["//evil.example/a.css"], page


def test_cdata_in_an_svg_integration_point_is_cdata():
    """Wrong: ``<![CDATA[`` right inside ``<svg><foreignObject>`` is read as a bogus comment ending at its
    first '>', so an ``<img>`` written in the CDATA text is taken for an image: the figure check raises on
    a figure no reader sees. Right: a browser opens a CDATA section wherever the current node is not an
    HTML element, and ``foreignObject`` is an SVG element: all up to ``]]>`` is text, no image shows."""
    page = ('<p>x</p><svg><foreignObject><![CDATA[ a > b <img src="figures/ch1/loss.svg"> ]]>'
            '</foreignObject></svg>')
    generated.check_rendered_figures(page, "docs/a.md")
    assert remote_references(page.replace("figures/ch1/loss.svg", "//evil.example/x.png")) == []


_ENTITY_SVG = ('<!DOCTYPE svg [<!ENTITY u "https://evil.example/x.png">]>'
               '<svg xmlns="http://www.w3.org/2000/svg"><image href="&u;"/></svg>')


@pytest.mark.parametrize("svg", [
    '<?xml-stylesheet type="text/css" href="a.css"?>\n' + _ENTITY_SVG,
    "<?foo bar?>" + _ENTITY_SVG,
    _ENTITY_SVG.replace("DOCTYPE svg", "DOCTYPE x"),
    _ENTITY_SVG.replace("DOCTYPE svg", "DOCTYPE s:svg").replace("<svg", "<s:svg").replace("</svg", "</s:svg")
    .replace('xmlns="', 'xmlns:s="').replace("<image", "<s:image"),
], ids=["stylesheet-pi-first", "other-pi-first", "doctype-of-another-name", "prefixed-root"])
def test_an_svg_file_is_an_xml_document_whatever_comes_first(svg):
    """Wrong: an SVG file is taken for an XML document only when it starts with ``<?xml``, an SVG doctype
    named ``svg`` or an ``<svg`` root; one that starts with ``<?xml-stylesheet …?>`` (or any other
    processing instruction), a doctype of another name, or a prefixed root (``<s:svg>``) is read as HTML,
    so its DTD's entity, which a browser expands in ``href="&u;"`` and fetches, is neither reported nor
    read. Right: as for any XML document, the declaration of the DTD is reported (unread)."""
    assert remote_references(svg) != [], svg


@pytest.mark.parametrize("name", ["mglyph", "malignmark"])
def test_mglyph_and_malignmark_in_a_math_text_element_stay_mathml(name):
    """Wrong: every start tag in ``<mi>`` (a MathML text integration point) is read as HTML, so
    ``<mi><mglyph><textarea>`` opens an HTML raw-text textarea and hides the ``<img>`` in it. Right: HTML
    reads ``mglyph`` and ``malignmark`` there by the foreign-content rules: they are MathML elements, the
    ``textarea`` in them is a MathML element with ordinary content, ``<img`` breaks out to HTML and the
    browser fetches evil.example."""
    page = f"<p>x</p><math><mi><{name}><textarea>{_IMG}</textarea></{name}></mi></math>"
    assert remote_references(page) == ["https://evil.example/x.png"], page


@pytest.mark.parametrize("end", ["</p>", "</br>"])
def test_end_p_and_end_br_break_out_of_svg(end):
    """Wrong: ``</p>`` or ``</br>`` in ``<svg>`` with no open ``<p>`` is ignored and what follows stays SVG,
    so a ``<style>`` after it is an SVG style whose ``<!-- … -->`` hides the ``@import``. Right: HTML's
    foreign-content rules end the SVG at an end tag ``p`` or ``br`` (as at a breakout start tag) and
    reprocess it as HTML; the style is HTML raw text and the ``@import`` fetches evil.example."""
    page = f"<p>x</p><svg>{end}<style><!-- @import url(//evil.example/a.css); --></style></svg>"
    assert remote_references(page) == ["//evil.example/a.css"], page


@pytest.mark.parametrize("tag", ["image", "IMAGE"])
def test_an_image_start_tag_is_an_img(tag):
    """Wrong: the figure passes look at ``<img>`` only, so ``<image src="figures/…svg">`` in HTML, which a
    browser's tree builder turns into an ``<img>`` and shows, passes ``check_rendered_figures`` without a
    caption and gets no alt from ``with_alt``. Right: outside SVG/MathML an ``image`` start tag is an
    ``img`` (HTML's "image" start tag rule): the uncaptioned figure raises a ValueError naming the page."""
    page = f'<p><{tag} src="figures/ch1/loss.svg"></p>'
    with pytest.raises(ValueError, match="docs/a.md"):
        generated.check_rendered_figures(page, "docs/a.md")


@pytest.mark.parametrize("before", [
    "import atexit\natexit.register(lambda: print('atexit ran'))",
    "import threading, time\n"
    "threading.Thread(target=lambda: (time.sleep(0.3), print('thread ran'))).start()",
], ids=["atexit", "thread"])
def test_a_snippet_ending_on_keyboard_interrupt_is_finalized_as_under_python(tmp_path, before):
    """Wrong: the snippet wrapper ends a script that raises ``KeyboardInterrupt`` by ``os.kill(SIGINT)`` at
    once, so its ``atexit`` handlers never run (temporary folders a ``TemporaryDirectory`` or
    ``weakref.finalize`` would remove are left) and its non-daemon threads are killed unjoined: their output
    is missing from the failure. Right: as ``python <script>``, which finalizes the interpreter (joins the
    threads, runs ``atexit``) and only then re-raises SIGINT: the same output and the same status."""
    import subprocess
    import sys

    from site_build.runner import python_command

    script = tmp_path / "snippet.py"
    script.write_text(f"{before}\nraise KeyboardInterrupt\n", encoding="utf-8")
    plain = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=30)
    wrapped = subprocess.run(python_command(script), capture_output=True, text=True, timeout=30)
    assert "ran" in plain.stdout
    assert (wrapped.returncode, wrapped.stdout) == (plain.returncode, plain.stdout), (wrapped, plain)


@pytest.mark.parametrize("media_type", ["application/mathml+xml", "application/atom+xml", "application/x-anything+xml"])
def test_a_data_url_of_any_xml_mime_type_is_a_page(media_type):
    """Wrong: a ``data:`` URL is read as a page only for ``text/html``, ``image/svg+xml``,
    ``application/xhtml+xml``, ``text/xml`` and ``application/xml``, so a frame of
    ``data:application/mathml+xml,<svg xmlns=…><image href="//evil.example/…"/></svg>`` passes. Right: a
    browser renders every XML MIME type (any ``…/…+xml``, HTML's definition) as an XML document, whose
    SVG image fetches evil.example: the check reads it as it reads ``image/svg+xml``."""
    from urllib.parse import quote

    doc = '<svg xmlns="http://www.w3.org/2000/svg"><image href="//evil.example/x.png"/></svg>'
    page = f'<p>x</p><iframe src="data:{media_type},{quote(doc)}"></iframe>'
    assert remote_references(page) == ["//evil.example/x.png"], page


@pytest.mark.parametrize("shown", [
    '<object data="figures/ch1/loss.svg" type="image/svg+xml"></object>',
    '<embed src="figures/ch1/loss.svg">',
    '<picture><source srcset="figures/ch1/loss.svg"><img src="plain.png" alt="a"></picture>',
    '<img src="plain.png" srcset="figures/ch1/loss.svg 2x" alt="a">',
    '<svg><image href="figures/ch1/loss.svg"/></svg>',
], ids=["object", "embed", "picture-source", "img-srcset", "svg-image"])
def test_every_element_that_shows_a_figure_is_checked_for_its_caption(shown):
    """Wrong: ``check_rendered_figures`` knows a figure only as an ``<img>``'s ``src``, so a generated
    figure that the rendered page shows through an ``<object>``, an ``<embed>``, a ``<picture>``'s
    ``<source srcset>``, an ``<img srcset>`` candidate or an SVG ``<image href>`` shows with no caption and
    passes. Right: the figure is shown, so the missing caption is a ValueError naming the page."""
    page = f"<p>x</p><p>{shown}</p>"
    with pytest.raises(ValueError, match="docs/a.md"):
        generated.check_rendered_figures(page, "docs/a.md")


@pytest.mark.parametrize("page", [
    f"<p>x</p><style></\u017ftyle><!--</style>{_IMG}-->",
    f"<p>x</p><script></\u017fcript><!--</script>{_IMG}-->",
    f"<p>x</p><script><!--<\u017fcript></script>{_IMG}<script>--></script>",
    f"<p>x</p><svg><stri\u212ae><textarea>{_IMG}</textarea></svg>",
], ids=["long-s-end-style", "long-s-end-script", "long-s-double-escape", "kelvin-strike-breakout"])
def test_tag_names_are_matched_in_ascii_case_only(page):
    """Wrong: tag names are compared with Python's Unicode case folding (``re.I``, ``str.lower``), where
    U+017F LATIN SMALL LETTER LONG S matches ``s`` and U+212A KELVIN SIGN lowers to ``k``: ``</ſtyle>``
    ends a style's raw text, ``<ſcript`` starts a script's doubly escaped text and ``<striKe>`` ends SVG
    content, so a later ``<!--`` or raw text hides the ``<img>``. Right: HTML lowercases only ASCII
    letters; none of those is ``style``, ``script`` or ``strike`` to a browser, and the image is a tag
    that fetches evil.example."""
    assert remote_references(page) == ["https://evil.example/x.png"], page


def test_a_data_url_is_base64_only_for_an_ascii_base64():
    """Wrong: ``;base64`` of a ``data:`` URL is matched with Unicode case folding, so ``;baſe64``
    (U+017F LONG S) makes the check decode the SVG text as base64, find garbage and pass. Right: the
    fetch standard's data: URL processor compares ``base64`` in ASCII case only; this URL is not base64,
    its percent-decoded body is the SVG, whose image fetches evil.example."""
    from urllib.parse import quote

    doc = '<svg xmlns="http://www.w3.org/2000/svg"><image href="//evil.example/x.png"/></svg>'
    page = f'<p>x</p><iframe src="data:image/svg+xml;ba\u017fe64,{quote(doc)}"></iframe>'
    assert remote_references(page) == ["//evil.example/x.png"], page


@pytest.mark.parametrize("html", [
    "<p><!-- <code> --> see @{key}</p><p><code>x</code></p>",
    '<p><a title="<pre>">a</a> see @{key}</p><pre>x</pre>',
    "<p><code>x</code class=y> see @{key}</p>",
], ids=["code-in-a-comment", "pre-in-an-attribute", "end-tag-with-an-attribute"])
def test_the_rendered_citation_check_reads_the_page_as_a_browser(html):
    """Wrong: ``citations.check_rendered`` is still a regex scan, not the shared tokenizer: a ``<code>``
    written in a comment or a ``<pre>`` in an attribute's value starts "code" up to the next real end tag,
    and ``</code class=y>`` (an end tag to a browser) is not taken for one, so the citation the reader sees
    typed (``@key``, not a link) is skipped as code and the page passes. Right: read as a browser reads it
    (:func:`site_build.glossary.elements`), the ``@key`` is text, and the check raises a ValueError naming
    the page."""
    from site_build import citations

    key = "vaswani2017attention"          # a key of the site's bibliography (tests/test_bibliography.py)
    with pytest.raises(ValueError, match="chapter-7.md"):
        citations.check_rendered(html.format(key=key), "chapter-7.md", f"see @{key}\n")
