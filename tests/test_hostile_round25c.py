"""Issue 58, an independent hostile check, round 25c: URLs a browser reads as another host that the
offline check (``site_build.offline.remote_references``) let through."""

from __future__ import annotations

import base64

import pytest


@pytest.mark.parametrize("html", [
    # a browser's URL parser drops every tab and newline inside a URL before it reads it
    '<img src="/&#9;/evil.example/x.png">',
    '<script src="/\n/evil.example/x.js"></script>',
    '<img src="ht&#10;tps://evil.example/x.png">',
    # a special scheme needs no slashes: from a file:// page (or another scheme's), https:host is that host
    '<img src="https:evil.example/x.png">',
    '<link rel="stylesheet" href="http:\\evil.example/x.css">',
])
def test_the_offline_check_reads_a_url_as_a_browser_parses_it(html):
    """A URL with a tab or newline among its leading slashes or its scheme, and a special scheme
    (``http:``, ``https:``…) followed straight by the host, fetch from another host; the check saw none."""
    from site_build import offline

    assert offline.remote_references(f"<p>A page</p>{html}<p>end</p>") != []


@pytest.mark.parametrize("css", [
    '@import"//evil.example/x.css";',
    '@import/**/"//evil.example/x.css";',
    "a { background-image: image-set('//evil.example/a.png' 1x, 'b.png' 2x) }",
    'a { background-image: -webkit-image-set("https://evil.example/a.png" 1x) }',
    r'a { background: url("\2f\2f evil.example/x.png") }',
    r'a { background: url(\2f\2f evil.example/x.png) }',
    'a { content: "/*" } b { background: url(//evil.example/x.png) } /* */',
])
def test_the_offline_check_reads_css_requests_without_url(css):
    """``@import`` needs no blank before its string (a comment or nothing will do), ``image-set()``
    takes plain strings, and a URL's escapes (``\\2f``) are its characters: each fetches from another
    host, in a style sheet and in a ``style`` element; a comment's opening inside a string hides nothing."""
    from site_build import offline

    assert offline.remote_references(css, css=True) != []
    assert offline.remote_references(f"<style>{css}</style>") != []


def test_the_offline_check_still_leaves_local_and_relative_urls_alone():
    from site_build import offline

    page = ('<img src="img/a.png"><a href="http://127.0.0.1:8000/x">l</a><a href="#https:x">f</a>'
            '<a href="mailto:a@b.example">m</a><style>@import "local.css"; '
            'a { background-image: image-set("a.png" 1x, "b.png" 2x) } b::after { content: "https://x.example" }'
            '/* url(//x.example) */</style>')
    assert offline.remote_references(page) == []


_SVG = base64.b64encode(b'<svg xmlns="http://www.w3.org/2000/svg"><image href="//evil.example/x.png"/></svg>').decode()


@pytest.mark.parametrize("html", [
    '<iframe srcdoc="&lt;img src=//evil.example/x.png&gt;"></iframe>',
    '<iframe src="data:text/html,%3Cscript%20src=%22//evil.example/x.js%22%3E%3C/script%3E"></iframe>',
    '<link rel="stylesheet" href="data:text/css,@import%20%22//evil.example/a.css%22;">',
    f'<object data="data:image/svg+xml;base64,{_SVG}"></object>',
    '<style>@import url("data:text/css,@import \'//evil.example/a.css\';");</style>',
])
def test_the_offline_check_reads_the_pages_a_page_holds(html):
    """A frame's ``srcdoc`` and a ``data:`` URL of HTML, SVG or CSS are documents a browser loads, and
    what they request goes to the other host all the same; the check read neither."""
    from site_build import offline

    assert offline.remote_references(f"<p>A page</p>{html}<p>end</p>") != []


def test_the_offline_check_reads_nested_pages_without_a_traceback():
    """Frames nested in frames, however deep, end in a finding, never in a ``RecursionError``; a
    harmless ``data:`` image is no finding."""
    from site_build import offline

    page = "<img src=//evil.example/x.png>"
    for _ in range(60):
        page = '<iframe srcdoc="' + page.replace("&", "&amp;").replace('"', "&quot;") + '"></iframe>'
    assert offline.remote_references(page) != []
    assert offline.remote_references('<img src="data:image/png;base64,iVBORw0KGgo=">'
                                     '<img src="data:image/svg+xml,%3Csvg%3E%3C/svg%3E">') == []
