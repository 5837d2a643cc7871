"""The one HTML tokenizer the page scans share (``site_build.tags.tokens``): what HTML hides from a
browser (comments, bogus comments, raw text, a script's escaped text) hides no later tag from the offline
check, an SVG style sheet is read as SVG reads it, an XML document's DTD is reported, and each reading
stays linear in the page."""

from __future__ import annotations

import time
from urllib.parse import quote

import pytest

from site_build.offline import remote_references, strip_loaders
from site_build.tags import tokens

_IMG = "<img src=//evil.example/x.png>"


@pytest.mark.parametrize("page", [
    f'<script><!--<script></script><a title="</script>{_IMG}<script>"</script>',
    f'<!-- <a title=" --!>{_IMG}<!-- " -->',
    f'</ <a title=" >{_IMG}<!-- " -->',
    f'<noscript><a title="</noscript>{_IMG}<noscript>"</noscript>',
    f'<iframe><a title="</iframe>{_IMG}<iframe>"</iframe>',
    f'<noembed><a title="</noembed >{_IMG}<noembed>"</noembed>',
], ids=["script-escaped-text", "comment-ended-by-bang", "bogus-end-tag", "noscript", "iframe", "noembed"])
def test_what_html_hides_hides_no_later_tag(page):
    """A script's ``<!--<script>`` text goes on past the first ``</script>`` (HTML's escaped script
    text), ``--!>`` ends a comment, ``</ …>`` is a bogus comment to its '>', and the text of every raw
    text element ends at its own end tag: the image after each is a tag, and it fetches evil.example."""
    assert remote_references(page) == ["//evil.example/x.png"], page


@pytest.mark.parametrize("page", [
    f"<plaintext>{_IMG}",
    f"<!-- {_IMG} -->",
    f"<textarea>{_IMG}</textarea>",
    f"<![CDATA[ {_IMG} ]]>",
    f"<script><!--<script>{_IMG}</script>",
])
def test_a_tag_a_browser_never_reads_is_no_request(page):
    assert remote_references(page) == [], page


@pytest.mark.parametrize("page", [
    '<svg><style><![CDATA[@import "//evil.example/a.css";]]></style></svg>',
    '<svg><style>@import &quot;//evil.example/a.css&quot;;</style></svg>',
    '<svg><style><!-- " -->@import "//evil.example/a.css";</style></svg>',
    '<?xml version="1.0"?><svg><style>a{}</style x><style>@import "//evil.example/a.css";</style></svg>',
    "data:image/svg+xml,"
    + quote('<svg><style><![CDATA[@import url(//evil.example/a.css)]]></style></svg>'),
], ids=["cdata", "character-reference", "comment", "xml-end-tag", "data-url"])
def test_an_svg_style_sheet_is_its_text_and_cdata(page):
    """In ``<svg>`` (and in an XML document) a ``style`` element is no raw text: its CSS is its text,
    character references resolved, and its CDATA sections; a comment in it is none of its CSS."""
    page = f'<object data="{page}"></object>' if page.startswith("data:") else page
    assert remote_references(page) == ["//evil.example/a.css"], page


def test_an_html_tag_ends_svg_content_and_what_follows_is_html():
    """``<img>`` inside ``<svg>`` ends the SVG as a browser parses it: the image is HTML's, and fetches."""
    assert remote_references(f"<svg><style>a{{}}{_IMG}</style></svg>") == ["//evil.example/x.png"]


def test_an_attribute_list_in_an_xml_document_is_reported_and_a_script_s_entity_list_is_not():
    """An XML document's ``<!ATTLIST`` may give every ``<image>`` an ``href`` by default: reported. A
    notebook page's Mermaid script holds HTML's entity list as ``<!ENTITY`` lines: in an HTML page that
    is text, and no request."""
    svg = '<?xml version="1.0"?><!DOCTYPE svg [<!ATTLIST image href CDATA "//evil.example/a.png">]><svg><image/></svg>'
    assert remote_references(svg)
    assert remote_references('<script>const E = `<!ENTITY Aacute "&#193;">`;</script>') == []


def test_a_site_svg_as_matplotlib_writes_it_names_no_other_host():
    svg = ('<?xml version="1.0" encoding="utf-8" standalone="no"?>\n'
           '<!DOCTYPE svg PUBLIC "-//W3C//DTD SVG 1.1//EN"\n  "http://www.w3.org/Graphics/SVG/1.1/DTD/svg11.dtd">\n'
           '<svg xmlns:xlink="http://www.w3.org/1999/xlink" xmlns="http://www.w3.org/2000/svg"><metadata>'
           '<rdf:RDF xmlns:dc="http://purl.org/dc/elements/1.1/"><cc:Work>'
           '<dc:type rdf:resource="http://purl.org/dc/dcmitype/StillImage"/></cc:Work></rdf:RDF></metadata>'
           '<defs><style type="text/css">*{stroke-linejoin: round}</style></defs><use xlink:href="#m1"/></svg>')
    assert remote_references(svg) == []


def test_a_loader_inside_a_script_s_escaped_text_is_not_cut_out_alone():
    """``<!--<script></script>`` in a script's text does not end it: the whole element, MathJax's loader,
    goes, and what follows stays."""
    page = "<script><!--<script></script>MathJax</script><p>b</p>"
    assert strip_loaders(page, "drills/x.ipynb") == "<p>b</p>"


def test_tokens_reads_an_empty_comment_and_drops_an_empty_end_tag():
    text = "<!--><!---></><b>"
    assert [(s, e, name) for s, e, _, name, _ in tokens(text)] == [(0, 5, ""), (5, 11, ""), (11, 14, ""),
                                                                   (14, 17, "b")]


@pytest.mark.parametrize("piece", ["<script><!--<script>", "<script><!--", "<svg><style>", "<svg><style><![CDATA[",
                                   "</ ", "<!--<!--", "<svg><p><style>", "\ufeff<!-- x -->", "<!ENTITY ",
                                   "<script>-->", "</style "])
def test_each_scan_reads_a_page_of_unclosed_pieces_once(piece):
    page = piece * 40_000
    start = time.process_time()
    remote_references(page)
    remote_references(page, xml=True)
    strip_loaders(page, "drills/x.ipynb")
    assert time.process_time() - start < 4.0, piece


def test_an_xml_processing_instruction_runs_to_its_own_end():
    """In an XML document a processing instruction ends at ``?>``: a quote in it hides no later tag."""
    svg = ('<?xml version="1.0"?><svg><?x a> <a title=" ?><image href="//evil.example/a.png"/>'
           '<?x " ?></svg>')
    assert remote_references(svg) == ["//evil.example/a.png"]


def test_an_xml_document_with_any_markup_declaration_is_reported():
    """A notation's quoted system identifier may hold a '>' (and then a quote that would swallow a later
    tag): a document whose DTD declares anything is reported, unread."""
    svg = ('<?xml version="1.0"?><!DOCTYPE svg [<!NOTATION n SYSTEM "x> <a title=\'">]>'
           '<svg><image href="a.png"/></svg>')
    assert remote_references(svg)


def test_an_xml_doctype_with_a_greater_than_sign_in_a_literal_is_reported():
    svg = ('<?xml version="1.0"?><!DOCTYPE svg PUBLIC "x> <a title=\'" "y">'
           '<svg><image href="a.png"/></svg>')
    assert remote_references(svg)
