"""Hostile round 41c: pages that make a browser load from another host while the offline check
(site_build.offline.check / check_file) reports nothing. Each was confirmed with Debian's chromium, headless
and offline, every name of evil.example mapped to a local server that logged the requests."""

from __future__ import annotations

from site_build.offline import check, check_file


def test_meta_refresh_url_cut_at_a_quote_inside_it(tmp_path):
    """A meta refresh's URL that does not start with a quote runs to the end of ``content`` (HTML's
    "shared declarative refresh steps": only a URL that starts with a quote ends at the matching quote).
    The check's _REFRESH reads ``[^'"]*`` and stops at the first quote of either kind inside the URL, so
    ``0;url=//localhost'x.evil.example/r1`` reads as ``//localhost`` (the local server) and nothing is
    reported, while chromium navigates to the host ``localhost'x.evil.example`` (its request was logged;
    the same with a '"' inside a single-quoted content). The check should read an unquoted refresh URL to
    the end of ``content`` (and a quoted one to its own closing quote), and report it."""
    page = '<!doctype html><meta http-equiv="refresh" content="0;url=//localhost\'x.evil.example/r1">'
    assert check(page), "single quote inside the URL: nothing reported"
    page2 = "<!doctype html><meta http-equiv=\"refresh\" content='0;url=//localhost\"x.evil.example/r2'>"
    assert check(page2), "double quote inside the URL: nothing reported"
    path = tmp_path / "page.html"
    path.write_text(page, encoding="utf-8")
    assert check_file(path), "built page: nothing reported"


def test_embed_code_attribute_loads_a_document(tmp_path):
    """Chromium's ``<embed>`` reads a ``code`` attribute as its URL (a legacy attribute Blink still
    honours, not in HTML's standard): ``<embed type="image/svg+xml" code="//evil.example/e3.svg">`` and
    ``<embed type="text/html" code="//evil.example/e4.html">`` were both requested from evil.example. The
    check's _URL_ATTRIBUTES has ``codebase`` and ``archive`` but not ``code``, and the fail-closed layer does
    not look at attribute values that it takes for no URL: nothing is reported. The check should read an
    embed's (and an applet's/object's legacy) ``code`` as a URL and report it."""
    page = ('<!doctype html><body><embed type="image/svg+xml" width=50 height=50 code="//evil.example/e3.svg">'
            '<embed type="text/html" code="//evil.example/e4.html"></body>')
    assert check(page), "nothing reported"
    path = tmp_path / "page.html"
    path.write_text(page, encoding="utf-8")
    assert check_file(path), "built page: nothing reported"


def test_custom_property_string_substituted_into_image_set(tmp_path):
    """A plain string in a custom property (``--u:"//evil.example/v3.png"``) becomes a URL when ``var()``
    puts it into an ``image-set()`` (``background-image:image-set(var(--u) 1x)``): chromium fetched it, from
    a built style sheet, from a ``style`` attribute and from an XHTML ``style`` in an SVG file. The check
    reads a string as a URL only after ``url(``, ``@import`` or inside ``image-set(``, so the string in the
    custom property is taken for text, and the backstop reads only a ``<style>`` element's text: nothing
    is reported. The check should read every string that a custom property holds as a possible URL (or
    refuse ``var()`` inside ``image-set()``)."""
    sheet = 'div{--u:"//evil.example/v3.png";background-image:image-set(var(--u) 1x);width:20px;height:20px}'
    assert check(sheet, css=True), "style sheet: nothing reported"
    path = tmp_path / "site.css"
    path.write_text(sheet, encoding="utf-8")
    assert check_file(path), "built .css file: nothing reported"
    page = ('<!doctype html><p style=\'--w:"//evil.example/v2.png" 1x;'
            'background-image:-webkit-image-set(var(--w));width:20px;height:20px\'>y</p>')
    assert check(page), "style attribute: nothing reported"
    svg = tmp_path / "figure.svg"
    svg.write_text('<svg xmlns="http://www.w3.org/2000/svg" width="50" height="50"><foreignObject width="50" '
                   'height="50"><div xmlns="http://www.w3.org/1999/xhtml" style=\'--w:"//evil.example/v4.png";'
                   'width:20px;height:20px;background-image:image-set(var(--w) 1x)\'>y</div></foreignObject></svg>',
                   encoding="utf-8")
    assert check_file(svg), "SVG file: nothing reported"
