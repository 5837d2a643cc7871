"""Foreign content (SVG, MathML) as a browser's HTML parser reads it, beyond hostile round 38c's cases:
which end tag closes what, where CDATA opens, which '/' makes a start tag self-closing, and HTML's
ASCII-only lowering of names. Each page starts with ``<p>`` so that it is read as HTML."""

from __future__ import annotations

import time

import pytest

from site_build.glossary import elements
from site_build.offline import remote_references
from site_build.tags import attributes, tokens

_IMG = "<img src=https://evil.example/x.png>"


@pytest.mark.parametrize("page", [
    # </span> in SVG is read by HTML's rules, which stop at the special <dt>: the SVG stays open, its
    # style is no raw text, and the <img> in it breaks out
    f"<p>x</p><span><dt><svg></span><style>{_IMG}</style></svg>",
    # </svg> in foreignObject's HTML <div> is ignored (the div is special); </foreignObject> then closes
    # the integration point and the style is an SVG one again
    f"<p>x</p><svg><foreignObject><div></svg></div></foreignObject><style>{_IMG}</style></svg>",
    # MathML's annotation-xml of no HTML encoding is no integration point: its style is MathML's
    f'<p>x</p><math><annotation-xml encoding="image/svg+xml"><style>{_IMG}</style></annotation-xml></math>',
    # <svg> in annotation-xml is SVG (HTML's rules read it there), and its style is SVG's
    f"<p>x</p><math><annotation-xml><svg><style>{_IMG}</style></svg></annotation-xml></math>",
    # a <font> with none of color, face, size is an SVG element: the style after it is SVG's
    f"<p>x</p><svg><font x=1><style>{_IMG}</style></font></svg>",
    # in foreignObject's HTML content, CDATA is a bogus comment that ends at its first '>'
    f"<p>x</p><svg><foreignObject><div><![CDATA[ a > {_IMG} ]]></div></foreignObject></svg>",
], ids=["html-end-tag-stops-at-special", "svg-end-tag-in-html-content", "annotation-xml-of-svg",
        "svg-in-annotation-xml", "font-without-breakout-attributes", "cdata-in-html-content"])
def test_foreign_content_is_read_as_a_browser_reads_it(page):
    assert remote_references(page) == ["https://evil.example/x.png"], page


@pytest.mark.parametrize("tag, closed", [
    ("<a/>", True), ("<a x/>", True), ('<a x="y"/>', True), ("<a x='y' />", True), ("<a x=y />", True),
    ("<a x=y/>", False), ("<a x=/>", False), ("<a x = y/>", False), ("<a / >", False), ("<a/x>", False),
])
def test_a_start_tag_is_self_closing_only_for_a_slash_between_attributes(tag, closed):
    (_, _, _, name, self_closing), = tokens(tag)
    assert (name, self_closing) == ("a", "/" if closed else ""), tag


def test_attributes_are_read_as_the_tokenizer_reads_them():
    assert attributes('<font COLOR=red color=blue>') == {"color": "red"}
    assert attributes('<x a="1"b=\'2\' c=3/ d /e=&#116;ext&sol;html>') == {"a": "1", "b": "2", "c": "3/", "d": "",
                                                                          "e": "text/html"}
    assert attributes("<x \u212aey=1 =y>") == {"\u212aey": "1", "=y": ""}


def test_names_are_lowered_in_ascii_only():
    assert [t[3] for t in tokens("<STYLE></STYLE><Stri\u212ae><\u017fvg>")] == ["style", "style", "stri\u212ae"]
    # an SVG element's end tag is matched in ASCII case too: </FOREIGNOBJECT> closes foreignObject
    page = f"<p>x</p><svg><foreignObject></FOREIGNOBJECT><style>{_IMG}</style></svg>"
    assert remote_references(page) == ["https://evil.example/x.png"]


def test_each_token_says_whether_it_stands_in_foreign_content():
    page = "<svg><foreignObject><![CDATA[x]]><div><!--y--></div></foreignObject></svg><p>"
    found = [(page[s:e], foreign) for s, e, _, _, _, foreign in elements(page)]
    assert found == [("<svg>", True), ("<foreignObject>", True), ("<![CDATA[x]]>", True), ("<div>", False),
                     ("<!--y-->", False), ("</div>", False), ("</foreignObject>", True), ("</svg>", True),
                     ("<p>", False)]


@pytest.mark.parametrize("piece", ["<svg><g>", "<svg><g></x>", "<span><div></span>", "<svg><font color=x>",
                                   '<math><annotation-xml encoding="text/html">', "<svg><style x=y/>",
                                   "<math><mi><mglyph>", "<svg></p>", "<h1><svg></h2>", "<svg><x/>"])
def test_each_scan_of_foreign_content_reads_the_page_once(piece):
    page = piece * 40_000
    start = time.process_time()
    remote_references(page)
    list(elements(page))
    assert time.process_time() - start < 4.0, piece


def test_an_image_start_tag_opens_no_element_in_html_and_an_svg_image_in_svg():
    from site_build.glossary import OpenElements

    open_ = OpenElements()
    assert open_.tag("", "image", "", "<image>") is False         # HTML's <img>: void
    assert open_.tag("", "svg", "", "<svg>") and open_.tag("", "image", "", "<image>")   # SVG's, open
    assert open_.stack == ["svg", "image"]
