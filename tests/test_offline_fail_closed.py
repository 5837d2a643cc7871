"""The offline check's fail-closed layer (site_build.offline.refusals, check, check_file): markup where the
check's reading and a browser's may part is refused, by name and place, whatever the precise reading finds;
the markup the site itself is built of (Material's header, navigation and search, MathML from the math
pass, inline SVG icons, Markdown tables, a notebook's style and MathJax configuration) is not.

Each page starts with ``<p>x</p>`` so that it is read as HTML (a text that starts with ``<svg`` is taken
for an XML document)."""

from __future__ import annotations

import base64
import time
import urllib.parse

import markdown
import pytest

from site_build import offline
from site_build.glossary import _BREAKOUT
from site_build.offline import check, check_file, refusals, remote_references

_EVIL = "//evil.example/x.png"
_IMG = f"<img src={_EVIL}>"


def _refused(page: str, *words: str) -> list[str]:
    """The refusals of ``page`` that hold every one of ``words``; the page must have one at least."""
    found = refusals(page)
    matching = [r for r in found if all(w in r for w in words)]
    assert matching, (page, found)
    assert all(r.startswith("refused: ") for r in found)
    return matching


# --- SVG and MathML that hold HTML's breakout tags ---------------------------------------------------------

@pytest.mark.parametrize("tag", sorted(_BREAKOUT))
@pytest.mark.parametrize("root", ["svg", "math"])
def test_a_breakout_tag_in_svg_or_mathml_is_refused(root, tag):
    # a browser ends the foreign content at the tag; the style after it is then HTML's raw text or SVG's
    # markup, whichever reading the model got wrong
    page = f"<p>x</p><{root}><g><{tag}><style>{_IMG}</style></{root}>"
    assert any(f"<{tag}> inside SVG or MathML" in r for r in _refused(page, "breakout"))


@pytest.mark.parametrize("attribute", ["color", "face", "size", "COLOR"])
def test_a_font_with_color_face_or_size_in_svg_is_refused(attribute):
    _refused(f"<p>x</p><svg><font {attribute}=x><style>{_IMG}</style></font></svg>", "<font> inside SVG")


def test_a_font_with_other_attributes_is_an_svg_element_and_not_refused():
    assert refusals("<p>x</p><svg><font x=1><text>a</text></font></svg>") == []


@pytest.mark.parametrize("end", ["p", "br", "P", "BR"])
@pytest.mark.parametrize("root", ["svg", "math"])
def test_an_end_p_or_br_in_svg_or_mathml_is_refused(root, end):
    _refused(f"<p>x</p><{root}><g></{end}><style>{_IMG}</style></{root}>", f"</{end.lower()}> inside SVG or MathML")


def test_a_breakout_in_an_integration_point_is_refused_too():
    # HTML's rules read a <div> in foreignObject as HTML, as the model does; refused all the same: the site
    # never needs one, and a model that misplaces the point would hide what follows
    _refused(f"<p>x</p><svg><foreignObject><div>{_IMG}</div></foreignObject></svg>", "<div> inside SVG")
    _refused("<p>x</p><math><mtext><b>x</b></mtext></math>", "<b> inside SVG or MathML")


def test_a_breakout_in_a_srcdoc_page_is_refused_and_says_where():
    page = '<p>x</p>\n<iframe srcdoc="<p>y</p><svg><p>"></iframe>'
    (found,) = _refused(page, "<p> inside SVG")
    assert "[in the srcdoc page at line 2, column 1]" in found


# --- data: documents in other encodings --------------------------------------------------------------------

@pytest.mark.parametrize("charset", ["utf-7", "UTF-16", "utf-16le", "shift_jis", "iso-2022-jp", "gbk",
                                     "windows-1252", "x-unknown"])
@pytest.mark.parametrize("kind", ["text/html", "image/svg+xml", "text/css", "application/xml"])
def test_a_data_document_with_a_charset_other_than_utf8_is_refused(kind, charset):
    payload = urllib.parse.quote("@import '//evil.example/a.css';" if kind == "text/css" else
                                 f"<svg xmlns='http://www.w3.org/2000/svg'><image href='{_EVIL}'/></svg>")
    attribute = "href" if kind == "text/css" else "src"
    tag = "link rel=stylesheet" if kind == "text/css" else "iframe" if kind == "text/html" else "img"
    page = f'<p>x</p><{tag} {attribute}="data:{kind};charset={charset},{payload}">'
    _refused(page, "names the charset")


def test_a_quoted_charset_is_read_as_its_label():
    _refused("<p>x</p><img src='data:image/svg+xml;charset=\"utf-7\",%3Csvg/%3E'>", "names the charset")


@pytest.mark.parametrize("charset", ["utf-8", "UTF8", "us-ascii", " utf-8 "])
def test_a_data_document_in_utf8_or_ascii_is_not_refused_for_its_encoding(charset):
    page = (f'<p>x</p><img src="data:image/svg+xml;charset={charset},'
            "%3Csvg xmlns='http://www.w3.org/2000/svg'%3E%3C/svg%3E\">")
    assert refusals(page) == []


@pytest.mark.parametrize("label", ["utf-7", "utf-16", "shift_jis", "iso-2022-jp"])
def test_a_data_style_sheet_whose_at_charset_names_another_encoding_is_refused(label):
    sheet = urllib.parse.quote(f'@charset "{label}"; @import "//evil.example/a.css";')
    _refused(f'<p>x</p><link rel=stylesheet href="data:text/css,{sheet}">', "declares the encoding")
    # and in a style sheet, a style element and a style attribute alike
    _refused(f'<p>x</p><style>a{{background:url("data:text/css,{sheet}")}}</style>', "declares the encoding")
    assert any("declares the encoding" in r for r in refusals(f'a{{b:url("data:text/css,{sheet}")}}', css=True))


@pytest.mark.parametrize("label", ["utf-7", "UTF-16", "euc-jp", "iso-2022-jp"])
def test_a_data_xml_document_whose_declaration_names_another_encoding_is_refused(label):
    svg = urllib.parse.quote(f'<?xml version="1.0" encoding="{label}"?><svg><image href="{_EVIL}"/></svg>')
    _refused(f'<p>x</p><img src="data:image/svg+xml,{svg}">', "declares the encoding")


def test_a_data_html_page_whose_meta_names_another_encoding_is_refused():
    page_in = urllib.parse.quote(f'<meta charset="iso-2022-jp"><p>\x1b$B<!--\x1b(B {_IMG} \x1b$B-->\x1b(B')
    found = refusals(f'<p>x</p><iframe src="data:text/html,{page_in}"></iframe>')
    assert any("declares the encoding 'iso-2022-jp'" in r for r in found), found
    assert any("ESC" in r or "<meta> naming" in r for r in found) or len(found) >= 2, found


@pytest.mark.parametrize("bom", [b"\xfe\xff", b"\xff\xfe"])
def test_a_data_document_with_a_utf16_byte_order_mark_is_refused(bom):
    body = bom + f"<svg><image href='{_EVIL}'/></svg>".encode("utf-16-be" if bom == b"\xfe\xff" else "utf-16-le")
    page = f'<p>x</p><img src="data:image/svg+xml;base64,{base64.b64encode(body).decode()}">'
    _refused(page, "UTF-16 byte order mark")


def test_a_data_document_that_is_no_utf8_or_holds_an_esc_byte_is_refused():
    # a browser guesses the encoding of a page with no label: bytes that are no UTF-8, or ISO-2022's escapes
    _refused('<p>x</p><iframe src="data:text/html,%82%A0<p>x"></iframe>', "no UTF-8")
    _refused('<p>x</p><iframe src="data:text/html,%1B$B<!--%1B(B"></iframe>', "ESC byte")


def test_base64_data_a_browser_would_not_decode_is_refused():
    _refused('<p>x</p><img src="data:image/svg+xml;base64,PHN2Zy8+!!">', "base64 has no place")


def test_a_page_whose_meta_names_another_encoding_is_refused():
    _refused('<p>x</p><meta charset="shift_jis">', "<meta> naming the encoding")
    _refused('<p>x</p><meta http-equiv=Content-Type content="text/html; charset=utf-16">', "<meta> naming")
    assert refusals('<meta charset="utf-8"><p>x</p>') == []


# --- data: URLs loaded as documents ------------------------------------------------------------------------

@pytest.mark.parametrize("tag, attribute", [("iframe", "src"), ("frame", "src"), ("object", "data"),
                                            ("embed", "src"), ("IFRAME", "SRC")])
def test_a_data_url_loaded_as_a_frame_or_document_is_refused(tag, attribute):
    inner = urllib.parse.quote(_IMG)
    _refused(f'<p>x</p><{tag} {attribute}=" data:text/html,{inner}"></{tag}>', "loaded as a document")
    # whatever its MIME type says: the frame renders what it is given
    _refused(f'<p>x</p><{tag} {attribute}="data:,hello"></{tag}>', "loaded as a document")


# --- constructs a browser reads otherwise ------------------------------------------------------------------

def test_cdata_outside_foreign_content_is_refused():
    page = f"<p>x</p><![CDATA[ > {_IMG} ]]>"
    _refused(page, "CDATA outside SVG and MathML")
    assert remote_references(page) == [_EVIL]          # the precise reading still reports its URL


def test_cdata_in_svg_is_not_refused():
    assert refusals("<p>x</p><svg><style><![CDATA[ a { fill: red } ]]></style></svg>") == []


@pytest.mark.parametrize("tag", ["plaintext", "xmp", "noembed", "noframes", "noscript", "listing", "XMP"])
def test_elements_browsers_read_otherwise_are_refused(tag):
    _refused(f"<p>x</p><{tag}>{_IMG}</{tag}>", f"<{tag.lower()}>")


@pytest.mark.parametrize("inside", ["<img src=//evil.example/x.png>", "<div>", "<svg>", "<b>", "<iframe>",
                                    "<select>", "<style>", "<script>"])
def test_a_select_holding_anything_but_options_is_refused(inside):
    # a browser that parses a customizable select keeps what an older one drops
    _refused(f"<p>x</p><select><option>a</option>{inside}</select>", "inside <select>")


def test_a_select_of_options_groups_and_rules_is_not_refused():
    page = "<p>x</p><select><optgroup label=a><option>1</option><hr><option>2</option></optgroup></select>"
    assert refusals(page) == []


@pytest.mark.parametrize("context", ["<table>", "<table><tbody>", "<table><thead>", "<table><tfoot>",
                                     "<table><tbody><tr>", "<table><tr>"])
@pytest.mark.parametrize("tag", ["img src=//evil.example/x.png", "div", "svg", "a href=#x", "p", "input"])
def test_an_element_a_browser_moves_out_of_a_table_is_refused(context, tag):
    _refused(f"<p>x</p>{context}<{tag}></table>", "foster parenting")


# --- remote URLs in text the tokenizer reads as no markup --------------------------------------------------

@pytest.mark.parametrize("page", [
    f"<p>x</p><!-- {_IMG} -->",
    f"<p>x</p><!x {_IMG}",                                  # a bogus comment, to the img's '>'
    f"<p>x</p><? {_IMG} ?>",
    f"<p>x</p></ {_IMG}",
    f"<p>x</p><script>fetch('{_EVIL}')</script>",
    f"<p>x</p><script>document.write('{_IMG}')</script>",
    f"<p>x</p><style>/* {_IMG} */</style>",
    f"<p>x</p><textarea>{_IMG}</textarea>",
    f"<p>x</p><title>{_IMG}</title>",
    f"<p>x</p><iframe>{_IMG}</iframe>",
    f"<p>x</p><svg><script>fetch('{_EVIL}')</script></svg>",
    "<p>x</p><!-- <img src=https://evil.example/x.png> -->",
    "<p>x</p><!-- <img src=https:evil.example/x.png> -->",        # a special scheme needs no slashes
    "<p>x</p><!-- <img src=\\\\evil.example/x.png> -->",        # backslashes read as slashes
    "<p>x</p><!-- <img src=&#x2f;&#x2f;evil.example/x.png> -->",  # references resolved in an attribute
    "<p>x</p><!-- <img srcset='a.png 1x,//evil.example/b.png 2x'> -->",
    "<p>x</p><script>const u = \"https:\\/\\/evil.example/x\";</script>",
    "<p>x</p><!-- <iframe src=\"data:text/html,<img src=%27%2F%2Fevil.example%27>\"> -->",
    "<p>x</p><!-- <link rel=stylesheet href=\"data:text/css;base64,"
    + base64.b64encode(b"@import '//evil.example/a.css';").decode() + "\"> -->",
    f"<p>x</p><script>{_IMG}",                              # never closed: the rest is its text
    # a srcdoc written in a comment: its references are resolved twice
    "<p>x</p><!--<iframe srcdoc=\"<img src=&amp;#x2f;&amp;#x2f;evil.example/x.png>\">-->",
    "<p>x</p><!--<meta http-equiv=refresh content=\"0;https://evil.example/\">-->",
    "<p>x</p><!--<img src=/\n/evil.example/x.png>-->",        # a URL's parser drops tabs and newlines
    "<p>x</p><!--<link rel=stylesheet href=\"data:text/css;base64,"
    + base64.b64encode(b"@import '//evil.example/a.css';").decode()[:20] + " "
    + base64.b64encode(b"@import '//evil.example/a.css';").decode()[20:] + "\">-->",   # base64 with a blank
    f"<p>x</p><img src=x.png onerror=\"fetch('{_EVIL}')\">",
    "<p>x</p><!--<img src=//\u00e9vil.example/x.png>-->",       # a host of other letters
    "<p>x</p><!--<img src=\"\x01//evil.example/x.png\">-->",   # a URL's parser drops a leading control
    "<p>x</p><!--<img src=//@evil.example/x.png>-->",            # an empty user before the host
    "<p>x</p><!--<img src=ftp://evil.example/x.png>-->",
], ids=lambda p: p[8:40])
def test_a_remote_url_in_inert_text_is_refused(page):
    _refused(page, "no markup")


@pytest.mark.parametrize("page", [
    "<p>x</p><script>// a comment\nlet a = 1; /* // */</script>",
    "<p>x</p><!-- http://localhost:8000/ and //127.0.0.1/x -->",
    '<p>x</p><!-- <svg xmlns="http://www.w3.org/2000/svg" xmlns:xlink="http://www.w3.org/1999/xlink"> -->',
    '<!DOCTYPE html PUBLIC "-//W3C//DTD XHTML 1.0 Strict//EN" '
    '"http://www.w3.org/TR/xhtml1/DTD/xhtml1-strict.dtd"><p>x</p>',
    "<p>x</p><style>/* a */\\n.highlight .c { color: red }</style>",
    '<p>x</p><script>tex2jax = {displayMath: [["$$","$$"], ["\\\\[","\\\\]"]]};</script>',
    "<p>x</p><script>let a = 1;\n//@ sourceMappingURL=a.js.map\n//# sourceMappingURL=a.js.map</script>",
    '<p>x</p><script>const sep = "//" + b;</script>',
    "<p>x</p><!-- <img src=\"data:image/svg+xml;base64,"
    + base64.b64encode(b"<svg xmlns='http://www.w3.org/2000/svg'/>").decode() + "\"> -->",
], ids=["js-comment", "local-hosts", "namespace-names", "doctype", "css-comment-end", "tex-delimiters",
        "base64-svg-that-loads-nothing", "source-map-comments", "two-slashes-alone"])
def test_text_that_names_no_other_host_is_not_refused(page):
    assert refusals(page) == [], page


def test_an_xml_comment_is_read_as_xml_reads_it_and_not_refused():
    # Material's icons carry their licence's address in a comment; an XML comment ends at its first '-->'
    svg = '<svg xmlns="http://www.w3.org/2000/svg"><!--! Icons by https://example.org/icons --><path d="M0 0"/></svg>'
    assert check(svg, xml=True) == []
    assert check(f'a{{mask-image:url("data:image/svg+xml;charset=utf-8,{svg}")}}', css=True) == []


@pytest.mark.parametrize("url", ["javascript:fetch('//evil.example/')", " JavaScript:void(0)", "java\tscript:x",
                                 "vbscript:x"])
def test_a_script_url_is_refused(url):
    _refused(f'<p>x</p><a href="{url}">a</a>', "a script URL")
    _refused(f'<p>x</p><iframe src="{url}"></iframe>', "a script URL")


def test_a_tag_in_a_colgroup_is_moved_out_of_the_table_and_refused():
    _refused(f"<p>x</p><table><colgroup>{_IMG}</colgroup></table>", "directly in <colgroup>")
    assert refusals("<p>x</p><table><colgroup><col><col></colgroup><tr><td>a</td></tr></table>") == []


# --- what the layer leaves as it was ------------------------------------------------------------------------

@pytest.mark.parametrize("page", [
    f"<p>x</p><svg><p>{_IMG}</svg>",
    f"<p>x</p><table><img src=https://evil.example/x.png></table>",
    f"<p>x</p><select><img src={_EVIL}></select>",
])
def test_the_layer_adds_refusals_and_removes_no_report(page):
    found = check(page)
    assert found[:len(remote_references(page))] == remote_references(page) != []
    assert found[len(remote_references(page)):] == refusals(page) != []


def test_remote_references_alone_is_unchanged_by_the_layer():
    # the precise reading reports URLs only: a refused construct with no URL is no report of it
    assert remote_references("<p>x</p><svg><p>y</svg><xmp></xmp><![CDATA[x]]>") == []


# --- the markup the site is built of -----------------------------------------------------------------------

_MATERIAL_PAGE = """<!doctype html>
<html lang="en" class="no-js">
  <head>
    <meta charset="utf-8">
    <meta name="viewport" content="width=device-width,initial-scale=1">
    <link rel="icon" href="../assets/images/favicon.png">
    <meta name="generator" content="mkdocs, mkdocs-material">
    <title>Chapter 7 - Tokens</title>
    <link rel="stylesheet" href="../assets/stylesheets/main.css">
    <script>__md_scope=new URL("..",location),__md_hash=e=>[...e].reduce(((e,_)=>(e<<5)-e+_.charCodeAt(0)),0),__md_get=(e,_=localStorage,t=__md_scope)=>JSON.parse(_.getItem(t.pathname+"."+e))</script>
  </head>
  <body dir="ltr" data-md-color-scheme="default">
    <input class="md-toggle" data-md-toggle="drawer" type="checkbox" id="__drawer" autocomplete="off">
    <label class="md-overlay" for="__drawer"></label>
    <div data-md-component="skip"><a href="#tokens" class="md-skip">Skip to content</a></div>
    <header class="md-header md-header--shadow" data-md-component="header">
      <nav class="md-header__inner md-grid" aria-label="Header">
        <a href=".." title="Home" class="md-header__button md-logo" aria-label="Home" data-md-component="logo">
          <svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 24 24"><path d="M12 8a3 3 0 0 0 3-3"/></svg>
        </a>
        <label class="md-header__button md-icon" for="__drawer">
          <svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 24 24"><path d="M3 6h18v2H3z"/></svg>
        </label>
        <form class="md-header__option" data-md-component="palette">
          <input class="md-option" data-md-color-media="(prefers-color-scheme: light)" aria-label="Dark mode"
                 type="radio" name="__palette" id="__palette_0">
          <label class="md-header__button md-icon" title="Dark mode" for="__palette_1" hidden>
            <svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 24 24"><path d="m17.75 4.09-2.53 1.94z"/></svg>
          </label>
        </form>
        <div class="md-search" data-md-component="search" role="dialog">
          <label class="md-search__overlay" for="__search"></label>
          <div class="md-search__inner" role="search">
            <form class="md-search__form" name="search">
              <input type="text" class="md-search__input" name="query" aria-label="Search" placeholder="Search"
                     autocapitalize="off" autocorrect="off" autocomplete="off" spellcheck="false"
                     data-md-component="search-query" required>
              <label class="md-search__icon md-icon" for="__search">
                <svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 24 24"><path d="M9.5 3A6.5 6.5 0 0 1 16 9.5"/></svg>
              </label>
              <nav class="md-search__options" aria-label="Search">
                <button type="reset" class="md-search__icon md-icon" title="Clear" aria-label="Clear" tabindex="-1">
                  <svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 24 24"><path d="M19 6.41 17.59 5z"/></svg>
                </button>
              </nav>
            </form>
            <div class="md-search__output"><div class="md-search__scrollwrap" tabindex="0" data-md-scrollfix>
              <div class="md-search-result" data-md-component="search-result">
                <div class="md-search-result__meta">Initializing search</div>
                <ol class="md-search-result__list" role="presentation"></ol>
              </div>
            </div></div>
          </div>
        </div>
      </nav>
    </header>
    <div class="md-container" data-md-component="container">
      <main class="md-main" data-md-component="main">
        <div class="md-sidebar md-sidebar--primary" data-md-component="sidebar" data-md-type="navigation">
          <nav class="md-nav md-nav--primary" aria-label="Navigation" data-md-level="0">
            <ul class="md-nav__list" data-md-scrollfix>
              <li class="md-nav__item md-nav__item--active">
                <input class="md-nav__toggle md-toggle" type="checkbox" id="__toc">
                <a href="./" class="md-nav__link md-nav__link--active"><span class="md-ellipsis">Tokens</span></a>
              </li>
            </ul>
          </nav>
        </div>
        <article class="md-content__inner md-typeset">
          <h1 id="tokens">Tokens<a class="headerlink" href="#tokens" title="Permanent link">&para;</a></h1>
          <!-- a comment the theme leaves -->
        </article>
      </main>
    </div>
    <script id="__config" type="application/json">{"base": "..", "features": [], "search": "../assets/javascripts/workers/search.js", "translations": {"search.result.placeholder": "Type to start searching"}}</script>
    <script src="../assets/javascripts/bundle.js"></script>
  </body>
</html>
"""


def test_a_material_page_header_navigation_and_search_are_not_refused():
    assert check(_MATERIAL_PAGE) == []


def test_mathml_from_the_math_pass_is_not_refused():
    from site_build import mathml

    page = mathml.render('<p>Attention: <span class="arithmatex">\\(\\mathrm{softmax}(QK^\\top/\\sqrt{d_k})V\\)'
                         '</span></p><div class="arithmatex">\\[\\sum_{i=1}^{n} x_i^2 \\le \\frac{a}{b}\\]</div>',
                         "fail-closed.md")
    assert "<math" in page
    assert check(page) == []


def test_a_markdown_table_is_not_refused():
    table = markdown.markdown("| token | id |\n|---|---:|\n| `the` | 1 |\n| *a* | 2 |", extensions=["tables"])
    assert "<table>" in table
    assert check(f"<p>x</p>{table}") == []


def test_an_inline_svg_icon_is_not_refused():
    icon = ('<span class="twemoji"><svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 24 24">'
            '<title>copy</title><desc>an icon</desc><g fill="currentColor"><path d="M19 21H8V7h11m0-2H8"/>'
            '<circle cx="1" cy="2" r="3"/></g></svg></span>')
    assert check(f"<p>x</p>{icon}") == []


def test_a_notebook_style_and_mathjax_configuration_are_not_refused():
    icon = base64.b64encode(b"<svg width='14' xmlns='http://www.w3.org/2000/svg'><path d='M0 0'/></svg>").decode()
    page = ("<p>x</p><style type=\"text/css\">.jp-x{background:url(\"data:image/svg+xml;base64,"
            f"{icon}\")}}.jp-y{{background:url(\"data:image/svg+xml,%3csvg xmlns='http://www.w3.org/2000/svg'"
            " viewBox='0 0 16 16'%3e%3c/svg%3e\")}</style>"
            "<script type=\"text/x-mathjax-config\">MathJax.Hub.Config({tex2jax: {inlineMath: [['$','$'], "
            "[\"\\\\(\",\"\\\\)\"]], displayMath: [['$$','$$'], [\"\\\\[\",\"\\\\]\"]]}});</script>")
    assert check(page) == []


# --- files, the printable book, and time --------------------------------------------------------------------

def test_check_file_refuses_a_file_that_is_no_utf8(tmp_path):
    page = tmp_path / "page.html"
    page.write_bytes(b"<p>x</p><p>\x82\xa0</p>")
    assert any("no UTF-8" in r for r in check_file(page))
    page.write_bytes(b"\xff\xfe" + "<p>x</p>".encode("utf-16-le"))
    assert any("UTF-16 byte order mark" in r for r in check_file(page))
    page.write_bytes(b"<p>x</p><p>\x1b$B</p>")
    assert any("ESC byte" in r for r in check_file(page))
    page.write_bytes("\ufeff<p>x é</p>".encode("utf-8"))
    assert check_file(page) == []
    sheet = tmp_path / "a.css"
    sheet.write_bytes(b'@charset "shift_jis"; a { color: red }')
    assert any("declares the encoding 'shift_jis'" in r for r in check_file(sheet))
    icon = tmp_path / "a.svg"
    icon.write_bytes(b'<?xml version="1.0" encoding="utf-7"?><svg xmlns="http://www.w3.org/2000/svg"/>')
    assert any("declares the encoding 'utf-7'" in r for r in check_file(icon))


def test_check_file_reads_by_suffix(tmp_path):
    sheet = tmp_path / "a.css"
    sheet.write_text("@import '//evil.example/a.css';", encoding="utf-8")
    assert check_file(sheet) == ["//evil.example/a.css"]
    icon = tmp_path / "a.svg"
    icon.write_text('<svg xmlns="http://www.w3.org/2000/svg"><!-- https://example.org --></svg>', encoding="utf-8")
    assert check_file(icon) == []


def test_the_printable_book_loses_the_notebooks_cdn_loaders(tmp_path):
    book = tmp_path / "index.html"
    book.write_text('<p>x</p><script type="module">const m = (await import('
                    '"https://cdn.example/mermaid.esm.min.mjs")).default;</script><p>kept</p>', encoding="utf-8")
    assert check_file(book)
    assert offline.strip_print_page_loaders(book) is True
    assert book.read_text(encoding="utf-8") == "<p>x</p><p>kept</p>"
    assert check_file(book) == []
    assert offline.strip_print_page_loaders(book) is False
    assert offline.strip_print_page_loaders(tmp_path / "none.html") is False


@pytest.mark.parametrize("piece", ["<svg><p>", "<table><img>", "<select><b>", "<!--<img src=//a.b>-->",
                                   '<img src="data:text/css;charset=x,">', "<script>//a.b</script>",
                                   '<img src="data:image/svg+xml;base64,PHN2Zy8+">', "<xmp>"])
def test_the_layer_reads_a_page_once(piece):
    page = "<p>x</p>" + piece * 20_000
    start = time.process_time()
    found = refusals(page)
    assert time.process_time() - start < 4.0, piece
    assert len(found) <= 20_000 + 1


@pytest.mark.parametrize("levels", [3, 30])
def test_base64_pages_nested_in_comments_are_read_to_the_depth_the_check_reads_and_reported_past_it(levels):
    doc = f"<p>x</p><!--{_IMG}-->".encode()
    for _ in range(levels):
        doc = f'<p>x</p><!--<iframe src="data:text/html;base64,{base64.b64encode(doc).decode()}">-->'.encode()
    start = time.process_time()
    _refused(doc.decode(), "data:text/html;base64,", "no markup")
    assert time.process_time() - start < 4.0


@pytest.mark.parametrize("animation", ['<set attributeName="href" to="javascript:fetch(1)"/>',
                                       '<animate attributeName="xlink:href" values="#a; javascript:x"/>'])
def test_a_script_url_an_svg_animation_gives_a_link_is_refused(animation):
    _refused(f'<p>x</p><svg><a href="#a">{animation}<text>a</text></a></svg>', "a script URL that")
