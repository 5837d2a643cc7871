"""How the offline check reads a ``data:`` URL (the Fetch standard's processor, the MIME Sniffing
standard's parser) and how the figure and citation checks read a rendered page: as a browser does."""

from __future__ import annotations

import base64
import time
from urllib.parse import quote

import pytest

from site_build import generated
from site_build.offline import attribute_spans, remote_references, srcset_urls

_SVG = '<svg xmlns="http://www.w3.org/2000/svg"><image href="//evil.example/x.png"/></svg>'


@pytest.mark.parametrize("head", ["IMAGE/SVG+XML;BASE64", "image/svg+xml ; base64", "image/svg+xml;charset=utf-8;base64"])
def test_a_base64_data_url_is_read_in_ascii_case_and_its_spaces(head):
    page = f'<p>x</p><iframe src="data:{head},{base64.b64encode(_SVG.encode()).decode()}"></iframe>'
    assert remote_references(page) == ["//evil.example/x.png"], page


@pytest.mark.parametrize("head", ["text/html x", "text /html", "/html", "text/", "text/plain", "image/png"])
def test_a_data_url_whose_mime_type_is_no_page_s_is_read_as_no_page(head):
    """A MIME type that does not parse (a blank in its type or subtype, one of them empty) is
    ``text/plain`` to a browser: it shows the text, and fetches nothing."""
    page = f'<p>x</p><iframe src="data:{head},{quote(_SVG)}"></iframe>'
    assert remote_references(page) == [], page


@pytest.mark.parametrize("label", ["\xa0utf-16", "utf-16\x85", "\u3000utf-16"])
def test_a_data_url_s_charset_label_loses_ascii_blanks_only(label):
    """A label is stripped of ASCII blanks only (Python's ``str.strip`` strips U+00A0 and U+0085 too): with
    another blank before or after it, ``utf-16`` is no label a browser knows, the page is read in the
    default encoding, which reads ASCII as ASCII, and its image fetches."""
    page = f'<p>x</p><iframe src="data:text/html;charset={label},{quote(_SVG)}"></iframe>'
    assert remote_references(page) == ["//evil.example/x.png"], page


def test_attributes_and_srcsets_are_read_as_html_reads_them():
    assert [(n, v) for n, v, _, _ in attribute_spans('<img title="a"SRC=\'b\' alt=c&amp;d x>')] == [
        ("title", "a"), ("src", "b"), ("alt", "c&d"), ("x", "")]
    assert srcset_urls("a.png 1x,b.png\t2x, c,d.png (1, 2) 3x ,e.png,,") == ["a.png", "b.png", "c,d.png", "e.png"]


@pytest.mark.parametrize("shown", [
    '<img title="a"src="figures/ch1/loss.svg">',
    '<img src="figures/ch1/loss.svg?v=2">',
    '<img src=" figures/ch1/lo%73s.svg#top ">',
    '<img src="plain.png" srcset="figures/ch1/loss.svg\t2x" alt="a">',
    '<input type=IMAGE src="figures/ch1/loss.svg" alt="a">',
    '<video poster="figures/ch1/loss.svg"></video>',
    '<svg><image xlink:href="figures/ch1/loss.svg"/></svg>',
], ids=["no-blank-after-a-quoted-value", "query", "blanks-escapes-fragment", "srcset-tab", "image-button",
        "poster", "xlink-href"])
def test_a_figure_shown_however_its_url_is_written_is_checked_for_its_caption(shown):
    with pytest.raises(ValueError, match="docs/a.md"):
        generated.check_rendered_figures(f"<p>x</p><p>{shown}</p>", "docs/a.md")


def test_a_figure_in_a_captioned_figure_and_an_svg_image_of_another_file_pass():
    generated.check_rendered_figures('<figure><picture><source srcset="figures/ch1/loss.svg"><img src="a.png" alt="a">'
                                     '</picture><figcaption>c</figcaption></figure>'
                                     '<svg><image href="#m"/></svg><object data="a.svg"></object>', "docs/a.md")


def test_an_image_start_tag_gets_its_figure_s_description(tmp_path, monkeypatch):
    (tmp_path / "ch1").mkdir()
    (tmp_path / "ch1" / "loss.svg").write_text("<svg/>")
    monkeypatch.setattr(generated, "FIGURES", tmp_path)
    monkeypatch.setattr(generated, "figure_description", lambda svg: "the loss falls")
    out = generated.with_alt('<figure><IMAGE src="figures/ch1/loss.svg" ALT=x alt=y><figcaption>c</figcaption>'
                             '</figure><svg><image href="figures/ch1/loss.svg"/></svg>', "docs/a.md")
    assert out == ('<figure><IMAGE src="figures/ch1/loss.svg" alt="the loss falls"><figcaption>c</figcaption>'
                   '</figure><svg><image href="figures/ch1/loss.svg"/></svg>'), out


@pytest.mark.parametrize("html", [
    "<p><code>x</code></p><svg><text><![CDATA[see @{key}]]></text></svg>",
    "<p><code>x<code>y</code> z</code> see @{key}</p>",
], ids=["cdata-in-svg", "nested-code"])
def test_the_rendered_citation_check_reads_what_shows(html):
    from site_build import citations

    key = "vaswani2017attention"
    with pytest.raises(ValueError, match="chapter-7.md"):
        citations.check_rendered(html.format(key=key), "chapter-7.md", f"see @{key}\n")


@pytest.mark.parametrize("url", ["data:text/html" + "; " * 50_000 + ",x", "data:text/html;a=\"" + "\\\\" * 50_000,
                                 "data:" + " " * 100_000 + "base64,", "data:text/html;" + " " * 100_000 + "base64,x"])
def test_a_data_url_is_read_once(url):
    start = time.process_time()
    remote_references(f'<iframe src="{url}"></iframe>')
    srcset_urls("a (" * 40_000)
    srcset_urls(" ,a" * 40_000)
    assert time.process_time() - start < 4.0
