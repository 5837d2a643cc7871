"""Hostile round 40c: pages that make a browser load from another host while the offline check
(site_build.offline.check / check_file) reports nothing. Each was confirmed with Debian's chromium, headless
and offline, every name of evil.example mapped to a local server that logged the requests."""

from __future__ import annotations

from site_build.offline import check, check_file


def test_css_hex_escape_eats_its_blank_in_an_unquoted_url(tmp_path):
    """An unquoted CSS ``url()`` whose hex escape is followed by its blank (``\\74 `` is 't' and the blank is
    part of the escape, CSS Syntax's "consume an escaped code point"): the check's reading of the url token
    stops at the blank, so it reads ``//localhost`` (the local server) where a browser reads
    ``//localhost.evil.example/x.png`` and fetches it (chromium requested it from localhost.evil.example).
    In a style sheet and in a ``style`` attribute nothing is reported (the inert-text backstop only reads a
    ``<style>`` element's text). The check should read an escape's trailing blank as part of the url, and
    report the URL."""
    sheet = "a{background:url(//localhos\\74 .evil.example/x.png)}"
    assert check(sheet, css=True), "style sheet: nothing reported"
    path = tmp_path / "site.css"
    path.write_text(sheet, encoding="utf-8")
    assert check_file(path), "built .css file: nothing reported"
    page = '<p>x</p><div style="background:url(//localhos\\74 .evil.example/x.png)">x</div>'
    assert check(page), "style attribute: nothing reported"


def test_prefixed_svg_set_and_animate_give_an_image_a_remote_href(tmp_path):
    """In an XML document SVG's elements may carry any prefix bound to SVG's namespace (``<s:set>``). The
    check reads what an SVG ``<set>``/``<animate>`` gives an ``href`` only when the tag's name is exactly
    ``set`` or starts with ``animate``, so ``<s:set attributeName="href" to="//evil.example/…">`` and
    ``<s:animate … values="//evil.example/…">`` are not read (the fail-closed layer compares local names for
    script URLs only, and looks for no other host there). Chromium loads both images from evil.example. The
    check should compare the local name (as _refuse_markup does) and report both URLs."""
    svg = ('<?xml version="1.0"?><s:svg xmlns:s="http://www.w3.org/2000/svg" width="100" height="100">'
           '<s:image width="10" height="10"><s:set attributeName="href" to="//evil.example/set.png"/></s:image>'
           '<s:image width="10" height="10" href="x.png">'
           '<s:animate attributeName="href" values="//evil.example/animate.png" dur="1s"/></s:image></s:svg>')
    path = tmp_path / "figure.svg"
    path.write_text(svg, encoding="utf-8")
    found = check_file(path)
    assert any("set.png" in f for f in found), found
    assert any("animate.png" in f for f in found), found


def test_prefixed_svg_style_element_is_neither_read_nor_refused(tmp_path):
    """A style element under a prefix bound to SVG's namespace (``<s:style>``) is SVG's style element: its
    text is CSS, and chromium fetches its ``url(//evil.example/…)``. The check tests the tag's name against
    ``style`` as written, so the CSS is never read, and the fail-closed layer's backstop for a script's or a
    style's text (_INERT_FOREIGN) does not look at it either: check_file reports nothing. It should read
    (or at least refuse) the text of a style element under any prefix."""
    svg = ('<?xml version="1.0"?><s:svg xmlns:s="http://www.w3.org/2000/svg" width="100" height="100">'
           '<s:style>rect{fill:url(//evil.example/paint.svg#g)}</s:style><s:rect width="10" height="10"/></s:svg>')
    path = tmp_path / "figure.svg"
    path.write_text(svg, encoding="utf-8")
    assert check_file(path), "nothing reported"


def test_prefixed_xhtml_style_and_meta_refresh_in_an_xml_file(tmp_path):
    """A built ``.xml`` file (read as XML by check_file) whose elements are XHTML's under a prefix
    (``<h:style>``, ``<h:meta http-equiv="refresh">``): chromium renders it as XHTML, fetches the style's
    ``url(//evil.example/…)`` and follows the refresh to evil.example. The check compares the names ``style``
    and ``meta`` as written, so neither is read, and nothing is refused: check_file reports nothing. It
    should read them by local name (or refuse what it does not read)."""
    page = ('<?xml version="1.0"?><h:html xmlns:h="http://www.w3.org/1999/xhtml"><h:head>'
            '<h:style>body{background:url(//evil.example/bg.png)}</h:style>'
            '<h:meta http-equiv="refresh" content="0;url=//evil.example/next"/></h:head>'
            '<h:body><h:p>x</h:p></h:body></h:html>')
    path = tmp_path / "feed.xml"
    path.write_text(page, encoding="utf-8")
    found = check_file(path)
    assert any("bg.png" in f for f in found), found
    assert any("next" in f for f in found), found
    # the same in an SVG file (which the site test checks): XHTML's style, under a prefix, styles the SVG
    svg = tmp_path / "figure.svg"
    svg.write_text('<svg xmlns="http://www.w3.org/2000/svg" xmlns:h="http://www.w3.org/1999/xhtml" width="100" '
                   'height="100"><h:style>rect{fill:url(//evil.example/paint.svg#g)}</h:style>'
                   '<rect width="9" height="9"/></svg>', encoding="utf-8")
    assert check_file(svg), "SVG file: nothing reported"


def test_quirks_mode_page_loads_a_data_style_sheet_of_any_mime_type():
    """A page in quirks mode (no doctype, as every page here that starts ``<p>x</p>``) applies a same-origin
    style sheet whatever its Content-Type, and a ``data:`` URL is same-origin to Fetch: chromium applies
    ``<link rel=stylesheet href="data:,…">`` (text/plain, the default) and ``data:text/plain,…`` and fetches
    the ``url(//evil.example/…)`` inside. The check reads a ``data:`` URL as a document only for HTML, CSS
    and XML MIME types, so nothing is reported; written in base64 in an ``@import`` (where the inert-text
    backstop reads base64 documents of those types only) it is not refused either. The check should read a
    style sheet's ``data:`` URL as CSS whatever its MIME type (or refuse one of another type), at least in a
    page with no doctype."""
    import base64

    plain = ('<p>x</p><link rel="stylesheet" href="data:,body{background:url(//evil.example/plain.png)}">'
             '<link rel="stylesheet" href="data:text/plain,div{background:url(//evil.example/textplain.png)}">')
    found = check(plain)
    assert any("plain.png" in f for f in found), found
    assert any("textplain.png" in f for f in found), found
    sheet = base64.b64encode(b"p{background:url(//evil.example/imported.png)}").decode()
    imported = f'<p>x</p><style>@import url("data:text/plain;base64,{sheet}");</style>'
    assert check(imported), "base64 text/plain sheet imported: nothing reported"


_XSLT = ('<?xml version="1.0"?><xsl:stylesheet version="1.0" xmlns:xsl="http://www.w3.org/1999/XSL/Transform" '
         'xmlns="http://www.w3.org/1999/xhtml"><xsl:template match="/"><html><body><img>'
         '<xsl:attribute name="src">//evil.example/xslt.png</xsl:attribute></img></body></html>'
         '</xsl:template></xsl:stylesheet>')


def test_svg_or_xml_file_transformed_by_an_xslt_style_sheet(tmp_path):
    """An SVG (or XML) file whose ``<?xml-stylesheet type="text/xsl" href=…?>`` names an XSLT style sheet:
    chromium runs the transform and renders its output, here an ``<img>`` whose ``src`` the transform writes
    as an ``<xsl:attribute>``'s text, and fetches //evil.example/xslt.png (confirmed for an .svg and an .xml
    file, with the sheet a file of the site or a ``data:`` URL). The check reads a ``data:`` sheet of
    text/xsl (here in base64) as an XML document, where that URL is element text, and a sheet of the site
    not at all (the site test checks only .html, .css and .svg files); it never reads the transform's
    output: check_file reports nothing. The fail-closed layer should refuse an XSLT style sheet (the page
    a browser shows is whatever the transform writes)."""
    import base64

    sheet = base64.b64encode(_XSLT.encode()).decode()
    svg = '<svg xmlns="http://www.w3.org/2000/svg" width="100" height="100"/>'
    path = tmp_path / "figure.svg"
    path.write_text('<?xml version="1.0"?><?xml-stylesheet type="text/xsl" '
                    f'href="data:text/xsl;base64,{sheet}"?>{svg}', encoding="utf-8")
    assert check_file(path), "data: XSLT sheet: nothing reported"
    local = tmp_path / "local.svg"
    local.write_text(f'<?xml version="1.0"?><?xml-stylesheet type="text/xsl" href="t.xsl"?>{svg}', encoding="utf-8")
    (tmp_path / "t.xsl").write_text(_XSLT, encoding="utf-8")
    assert check_file(local), "XSLT sheet of the site: nothing reported"


def test_xhtml_file_is_read_as_html(tmp_path):
    """check_file reads a built ``.xhtml`` file as HTML (only ``.svg`` and ``.xml`` are read as XML), but a
    server sends it as application/xhtml+xml and a browser parses it as XML, where ``<title>`` is no raw
    text: a ``<link rel=stylesheet>`` written in the title is an element, and chromium loads its ``data:``
    sheet and the ``url(\\2f\\2f evil.example/…)`` in it. The HTML reading takes the title's content for
    text, and the inert-text backstop does not resolve CSS escapes, so nothing is reported. check_file
    should read ``.xhtml`` (any suffix a server sends as XML) as XML, or refuse a file it cannot tell."""
    path = tmp_path / "page.xhtml"
    path.write_text('<html xmlns="http://www.w3.org/1999/xhtml"><head><title><link rel="stylesheet" '
                    'href="data:text/css,body{background:url(\\2f\\2f evil.example/title.png)}"/></title></head>'
                    '<body><p>x</p></body></html>', encoding="utf-8")
    assert check_file(path), "nothing reported"


def test_image_set_string_after_an_unquoted_url_candidate(tmp_path):
    """In ``image-set(url(a.png) 3x, "//evil.example/x.png" 1x)`` the check counts the ``image-set(``'s
    parentheses, but an unquoted ``url(`` is read as one token with its value and never counted, while its
    ')' is: the depth falls to 0 there, and the next candidate's string is no longer read as a URL.
    Chromium picks the 1x candidate and fetches //evil.example/x.png; the check reports nothing, in a style
    sheet, a built .css file and a ``style`` attribute. Every string of the image-set should be read."""
    sheet = 'a{background:image-set(url(a.png) 3x, "//evil.example/x.png" 1x)}'
    assert check(sheet, css=True), "style sheet: nothing reported"
    path = tmp_path / "site.css"
    path.write_text(sheet, encoding="utf-8")
    assert check_file(path), "built .css file: nothing reported"
    page = '<p>x</p><div style=\'background:image-set(url(a.png) 3x, "//evil.example/x.png" 1x)\'>x</div>'
    assert check(page), "style attribute: nothing reported"


def test_link_charset_attribute_decodes_a_data_style_sheet(tmp_path):
    """A ``<link rel=stylesheet charset=utf-16le href="data:text/css,…">`` whose sheet has no byte order
    mark, no ``charset`` parameter and no ``@charset``: chromium decodes the sheet in the link's ``charset``
    (its environment encoding), so the percent-encoded UTF-16LE bytes are ``html{background:url(//evil…)}``
    and it fetches the URL. The check reads the sheet as UTF-8 (NULs between the letters: no url()), and the
    fail-closed layer refuses another encoding only in a ``<meta>``, a ``data:`` URL's own type or text, or a
    built file's bytes: with the attribute written in a ``srcdoc`` (its name spelled ``char&#115;et`` in the
    file), check_file reports nothing, and check() of the page itself nothing either. The check should
    refuse a ``charset`` attribute naming another encoding (or read the sheet in it)."""
    import urllib.parse

    sheet = urllib.parse.quote("html{background:url(//evil.example/charset.png)}".encode("utf-16-le"))
    page = f"<p>x</p><link rel=stylesheet charset=utf-16le href='data:text/css,{sheet}'>"
    assert check(page), "check(): nothing reported"
    path = tmp_path / "page.html"
    path.write_text('<!doctype html><iframe srcdoc="<!doctype html><link rel=stylesheet char&#115;et=utf-16le '
                    f"href='data:text/css,{sheet}'><p>x</p>\"></iframe>", encoding="utf-8")
    assert check_file(path), "check_file(): nothing reported"


def test_xml_stylesheet_charset_pseudo_attribute_decodes_a_data_sheet(tmp_path):
    """An SVG file's ``<?xml-stylesheet type="text/css" charset="utf-16le" href="data:text/css,…"?>``:
    chromium decodes the sheet (no byte order mark, no ``charset`` parameter, no ``@charset``) in the
    processing instruction's ``charset``, reads ``svg{background:url(//evil.example/…)}`` from the
    percent-encoded UTF-16LE bytes and fetches it. check_file reads the sheet as UTF-8, and refuses another
    encoding in an XML file only in its XML declaration: nothing is reported. The check should refuse a
    ``charset`` pseudo-attribute naming another encoding (or read the sheet in it)."""
    import urllib.parse

    sheet = urllib.parse.quote("svg{background:url(//evil.example/pi.png)}".encode("utf-16-le"))
    path = tmp_path / "figure.svg"
    path.write_text('<?xml version="1.0"?><?xml-stylesheet type="text/css" charset="utf-16le" '
                    f'href="data:text/css,{sheet}"?><svg xmlns="http://www.w3.org/2000/svg" width="100" '
                    'height="100"><rect width="9" height="9"/></svg>', encoding="utf-8")
    assert check_file(path), "nothing reported"


def test_svg_style_sheet_is_its_own_text_not_its_childrens(tmp_path):
    """An SVG ``<style>``'s sheet is the text of its own text children only: chromium drops the text of an
    element inside it. The check reads every text up to ``</style>``, children's text included, so in
    ``fill:url("\\2f\\2f evil.example<x>@localhost</x>/p.svg#g")`` it reads the URL
    ``//evil.example@localhost/p.svg`` (the local server, evil.example its user), where chromium reads
    ``//evil.example/p.svg`` and fetches it. The inert-text backstop does not resolve CSS escapes: nothing is
    reported, for an SVG file and for the same SVG inline in a page. The check should read the style's own
    text only (or refuse an element inside an SVG style)."""
    svg = ('<svg xmlns="http://www.w3.org/2000/svg" width="100" height="100"><style>'
           'rect{fill:url("\\2f\\2f evil.example<x>@localhost</x>/p.svg#g")}</style>'
           '<rect width="9" height="9"/></svg>')
    path = tmp_path / "figure.svg"
    path.write_text(svg, encoding="utf-8")
    assert check_file(path), "SVG file: nothing reported"
    assert check("<p>x</p>" + svg), "inline SVG: nothing reported"


def test_inert_text_backstop_is_quadratic_in_slashes_with_no_host():
    """The fail-closed backstop (_remote_looking) searches, for each place that looks like a URL's start in
    a comment (or a script's, a style's text…), for where that URL ends, from that place to the first blank,
    quote or bracket. In ``=//_=//_=//_…`` (no blank anywhere, each "host" ``_=`` with no letter or digit,
    so none ends the scan) every one of the n places reads on to the end of the comment: quadratic. An
    80 KB comment takes over 10 s here (20 KB: under 1 s; 40 KB: about 3 s). The check should stay linear
    in the page (each URL read to its end once, or the end found without rescanning the rest)."""
    import time

    page = "<p>x</p><!--" + "=//_" * 20000 + "-->"
    started = time.perf_counter()
    check(page)
    elapsed = time.perf_counter() - started
    assert elapsed < 4.0, f"{len(page)} characters checked in {elapsed:.1f} s"


def test_inert_text_backstop_is_quadratic_in_data_css_with_no_comma():
    """The backstop's search for ``data:`` documents in base64 (_DATA_DOCUMENT_BASE64,
    ``data:…text/css[^,]*;…base64``) reads, from every ``data:text/css`` in a comment or a script's text, on
    to the next comma (then back, looking for a ';'): with no comma after them, each of the n occurrences
    reads the rest of the text, quadratic. A 560 KB comment of ``data:text/css `` takes about 15 s here
    (140 KB: 1 s). The check should stay linear (the media type is short: bound it, or stop at the first
    character a media type cannot hold)."""
    import time

    page = "<p>x</p><!--" + "data:text/css " * 40000 + "-->"
    started = time.perf_counter()
    check(page)
    elapsed = time.perf_counter() - started
    assert elapsed < 5.0, f"{len(page)} characters checked in {elapsed:.1f} s"


def test_check_file_is_quadratic_in_xml_declarations_with_no_end(tmp_path):
    """check_file of an SVG or XML file looks for an encoding declaration with ``<\\?xml[^>]*?encoding…``
    over the whole file (_XML_ENCODING in _not_utf8): from every ``<?xml`` with no '>' after it, the lazy
    ``[^>]*?`` tries "encoding" at each later place, to the end of the file: quadratic. A 72 KB SVG whose
    comment holds ``<?xml `` 12000 times takes several seconds here, a 120 KB one about 20 s (a data: XML
    document pays the same). The declaration can only stand at the very start of the document: the search
    should be bounded (anchored at the start, or stopped at the declaration's end)."""
    import time

    path = tmp_path / "figure.svg"
    path.write_text('<svg xmlns="http://www.w3.org/2000/svg"><!--' + "<?xml " * 12000 + "--></svg>", encoding="utf-8")
    started = time.perf_counter()
    check_file(path)
    elapsed = time.perf_counter() - started
    assert elapsed < 2.5, f"{path.stat().st_size} bytes checked in {elapsed:.1f} s"


def test_check_file_hangs_on_a_fifo(tmp_path):
    """check_file reads the path with read_bytes(), whatever it is: a FIFO in the built site named like a
    page (the site test passes every ``rglob("*.html")`` match, FIFOs included) blocks the check forever,
    with no writer. The library's own readers refuse what is not a regular file
    (netcl_lite.files.read_regular); check_file should refuse it too, with an error or a report naming the
    path, never hang."""
    import os
    import subprocess
    import sys

    fifo = tmp_path / "page.html"
    os.mkfifo(fifo)
    code = "import sys; from site_build.offline import check_file; print(check_file(sys.argv[1]))"
    try:
        subprocess.run([sys.executable, "-c", code, str(fifo)], timeout=20, capture_output=True)
    except subprocess.TimeoutExpired:
        raise AssertionError("check_file of a FIFO did not return in 20 s") from None


def test_svg_style_holding_another_style_keeps_its_text_after_the_inner_end_tag(tmp_path):
    """An SVG ``<style>`` holding another (``<style>a{}<style></style>rect{fill:url(//evil…)}</style>``): the
    outer sheet is all its own text, ``rect{…}`` after the inner end tag included, and chromium fetches
    //evil.example/p.svg. The check ends the outer style's CSS and its inert-text scan at the first
    ``</style>``, so the text after it is read as neither CSS nor refused text: nothing is reported, for an
    SVG file or the same SVG inline in a page (no escape needed: a plain URL). (Round 40 lists the like of
    this for an SVG ``<script>``, whose text is JavaScript; for a style it hides a fetch the check exists to
    find.) The check should read a style element's text to its own end tag, or refuse a style inside one."""
    svg = ('<svg xmlns="http://www.w3.org/2000/svg" width="100" height="100"><style>a{}<style></style>'
           'rect{fill:url(//evil.example/p.svg#g)}</style><rect width="9" height="9"/></svg>')
    path = tmp_path / "figure.svg"
    path.write_text(svg, encoding="utf-8")
    assert check_file(path), "SVG file: nothing reported"
    assert check("<p>x</p>" + svg), "inline SVG: nothing reported"
