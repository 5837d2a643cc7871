"""Issue 58, an independent hostile check, round 25c: URLs a browser reads as another host that the
offline check (``site_build.offline.remote_references``) let through."""

from __future__ import annotations

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
