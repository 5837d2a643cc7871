"""Hostile round 33e: the offline check on URLs and tags as a browser reads them (attributes with no
blank between them, a URL whose userinfo looks like the local server, SVG animation that sets an
``href``, an SVG page's style-sheet processing instruction); a notebook's remote script closed
``</script >``; math signs written inside inline raw HTML (an attribute, ``<code>``, ``<kbd>``, a
textarea, a script), which became MathML there; and source pages of a module that is not UTF-8, holds
a control character or has a backtick in its name."""

from __future__ import annotations

from html.parser import HTMLParser

import pytest

from site_build.offline import remote_references
from site_render import render_page

# -- 1. the offline check ---------------------------------------------------------------------------


@pytest.mark.parametrize("tag", [
    '<img alt="a"src="//evil.example/x.png">',
    "<img alt='a'src=//evil.example/x.png>",
    '<a title="x"href="//evil.example/">x</a>',
    '<svg><image x="1"href="//evil.example/x.png"/></svg>',
])
def test_an_attribute_written_right_after_a_quoted_value_is_read(tag):
    """HTML reads an attribute that follows a quoted value with no blank between them (a parse error it
    recovers from: the attribute counts), so the browser fetches this ``src``/``href``; the check needed a
    blank or '/' before each name and missed it."""
    assert remote_references(tag) != [], "a request to another host went unreported"


@pytest.mark.parametrize("url", [
    "http://localhost:1@evil.example/x.png",
    "//127.0.0.1:8000@evil.example/x.png",
])
def test_a_url_whose_userinfo_looks_like_the_local_server_is_another_host(url):
    """``http://localhost:1@evil.example/`` is a request to evil.example (``localhost:1`` is the user and
    password); the check's local-server exception read the start of the URL and let it through."""
    assert remote_references(f'<img src="{url}">') == [url]


def test_the_local_server_itself_is_still_local():
    assert remote_references('<img src="http://localhost:8000/x.png">') == []
    # a backslash ends the host in a special scheme's URL: this is localhost's path /@evil.example/x.png
    assert remote_references('<img src="http://localhost\\@evil.example/x.png">') == []
    assert remote_references('<img src="http://127.0.0.1:8000/x.png">') == []


@pytest.mark.parametrize("svg", [
    '<svg><image href="a.png"><set attributeName="href" to="//evil.example/x.png"/></image></svg>',
    '<svg><image href="a.png"><animate attributeName="href" values="a.png;//evil.example/x.png" dur="1s"/>'
    '</image></svg>',
    '<svg><use href="#a"><set attributeName="xlink:href" to="//evil.example/s.svg#a"/></use></svg>',
])
def test_svg_animation_that_sets_an_href_of_another_host_is_reported(svg):
    """SMIL's ``<set>``/``<animate>`` give an ``<image>`` or ``<use>`` a new ``href`` (``to``, ``values``,
    ``from``, ``by``), which the browser then fetches; the check never read these attributes."""
    assert remote_references(svg) != [], "an animated href to another host went unreported"


def test_an_svg_page_s_stylesheet_processing_instruction_is_reported():
    """An SVG document (here a ``data:`` URL an ``<object>`` loads) fetches the style sheet its
    ``<?xml-stylesheet href=…?>`` names; the check reads only tags, so the request went unreported."""
    svg = ("data:image/svg+xml,%3C%3Fxml-stylesheet href=%22//evil.example/x.css%22%3F%3E"
           "%3Csvg xmlns=%22http://www.w3.org/2000/svg%22/%3E")
    assert remote_references(f'<object data="{svg}"></object>') != []


# -- 2. math inside a raw HTML attribute ------------------------------------------------------------


class _Tags(HTMLParser):
    def __init__(self):
        super().__init__()
        self.tags: list[tuple[str, dict]] = []

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))


def _tag(html: str, name: str) -> dict:
    parser = _Tags()
    parser.feed(html[html.find("</h1>"):])
    return next(attrs for tag, attrs in parser.tags if tag == name)


@pytest.mark.parametrize("page, name, attribute, kept", [
    ('# T\n\n<span title="$\\color{red}{a}$" id="k">a</span>\n', "span", "id", "k"),
    ('# T\n\nsee <a href="b.md" title="$\\mathbin{<}$">b</a>\n', "a", "href", "b.md"),
])
def test_math_in_a_raw_html_attribute_stays_inside_the_attribute(page, name, attribute, kept):
    """``$…$`` inside a raw HTML tag's attribute became MathML inside the attribute value, and the MathML's
    own quotes (``style="color:…"``, ``stretchy="false"``) closed it: the tag's later attributes were
    lost or new ones made from the MathML (``<a title="<math><mo stretchy=" false" lspace="0" …>``).
    The build must keep the attribute whole (the formula as written, as an image's Markdown alt keeps
    ``\\(x\\)``) or fail naming the page."""
    try:
        html = render_page(page)
    except (ValueError, RuntimeError) as err:       # a refusal naming the page is fine too
        assert "hostile.md" in str(err)
        return
    attrs = _tag(html, name)
    assert attrs.get(attribute) == kept, f"the tag's attributes changed: {attrs}"
    assert not any(k in attrs for k in ("style", "lspace", "rspace", 'false"', 'color:#ff0000;"')), attrs
    assert "<math" not in attrs.get("title", ""), attrs


# -- 3. source pages of unusual files ----------------------------------------------------------------


@pytest.fixture
def package(tmp_path, monkeypatch):
    """A scratch project root with a folder ``pkg/`` whose files get source pages, and a cache of its own."""
    from site_build import source_pages

    (tmp_path / "pkg").mkdir()
    monkeypatch.setattr(source_pages, "ROOT", tmp_path)
    monkeypatch.setenv("NETCL_LITE_CACHE", str(tmp_path / "cache"))
    source_pages._highlighted.cache_clear()
    yield tmp_path / "pkg"
    source_pages._highlighted.cache_clear()


def test_a_source_file_that_is_not_utf8_fails_naming_the_file(package):
    """A module in Latin-1 with its coding line is valid Python, and the wheel carries it; its source page
    failed the build with a bare UnicodeDecodeError (``'utf-8' codec can't decode byte 0xe9 in position
    …``) that names no file. It must fail with a message naming ``pkg/latin.py`` (or show the file)."""
    from site_build import source_pages

    (package / "latin.py").write_bytes(b"# -*- coding: latin-1 -*-\nname = 'caf\xe9'\n")
    for make in (lambda: source_pages.markdown("pkg/latin.py", [], "w.whl"),
                 lambda: source_pages.listing("pkg/latin.py", [(1, 2)])):
        try:
            make()
        except UnicodeDecodeError as err:
            pytest.fail(f"a bare UnicodeDecodeError naming no file: {err}")
        except ValueError as err:
            assert "pkg/latin.py" in str(err)


@pytest.mark.parametrize("char", ["\x00", "\x1b", "\x07"])
def test_a_source_listing_does_not_copy_a_control_character_into_the_page(package, char):
    """A NUL, ESC or BEL in a string of a module went into the source page's HTML as it is (HTML allows
    no such character; a build output writes them out as ``\\x1b``, and a formula holding one fails).
    The listing must write it out or fail naming the file and its line."""
    from site_build import source_pages

    (package / "ctl.py").write_text(f"x = 1\ncolour = '{char}[31m'\n", encoding="utf-8")
    try:
        html = source_pages.listing("pkg/ctl.py", [(1, 2)])
    except ValueError as err:
        assert "pkg/ctl.py:2" in str(err)
        return
    assert char not in html, "a control character copied into the page's HTML"


def test_a_source_page_title_shows_a_file_name_holding_a_backtick(package):
    """The title is written ``# `pkg/a`b.py` ``: a backtick in the name ended the code span, so the page was
    titled ``pkg/a`` in code, then ``b.py`` and a stray backtick as text."""
    import markdown

    from site_build import source_pages

    (package / "a`b.py").write_text("x = 1\n", encoding="utf-8")
    text = source_pages.markdown("pkg/a`b.py", [], "w.whl")
    title = markdown.markdown(text.split("---\n", 2)[2], extensions=["attr_list"]).split("</h1>", 1)[0]
    assert "<code>pkg/a`b.py</code>" in title, title


# -- 4. a notebook page's loaders, closed as HTML closes a script -------------------------------------


@pytest.mark.parametrize("close", ["</script >", "</script\n>", "</script/>", "</script\t>"])
def test_a_remote_script_closed_with_a_blank_before_its_bracket_is_removed(close):
    """HTML ends a script at ``</script`` followed by a blank, '/' or '>'; strip_loaders looked for
    ``</script>`` exactly, found none, and kept the script that loads from another host."""
    from site_build.offline import strip_loaders

    page = f'<p>a</p><script src="https://cdn.example/x.js">{close}<p>b</p>'
    out = strip_loaders(page, "drills/d.ipynb")
    assert "cdn.example" not in out, out
    assert "<p>a</p>" in out and "<p>b</p>" in out


def test_the_text_between_a_remote_script_and_a_later_one_stays_on_the_page():
    """With the first script closed ``</script >``, strip_loaders took the element to run to the next
    script's ``</script>``: everything between them (here ``<p>b</p>``, a notebook's own output) was
    removed from the page without a word."""
    from site_build.offline import strip_loaders

    page = ('<p>a</p><script src="https://cdn.example/x.js"></script ><p>b</p>'
            '<script>MathJax.Hub.Config({})</script><p>c</p>')
    out = strip_loaders(page, "drills/d.ipynb")
    assert out == "<p>a</p><p>b</p><p>c</p>", out


@pytest.mark.parametrize("page, kept", [
    ("# T\n\nsee <code>$x$</code> here\n", "<code>$x$</code>"),
    ("# T\n\npress <kbd>$y$</kbd> here\n", "<kbd>$y$</kbd>"),
    ("# T\n\nsee <a href=\"$x$\">b</a>\n", 'href="$x$"'),
    ("# T\n\ntext <textarea>$x$</textarea>\n", "<textarea>$x$</textarea>"),
])
def test_math_signs_in_inline_raw_code_or_a_url_stay_as_written(page, kept):
    """Inline raw HTML ``<code>``, ``<kbd>``, a textarea's text and an ``href`` are not prose: the page
    author's ``$x$`` there is text (the citations pass leaves them alone for that reason). The build put
    MathML into them: code showing a formula, a textarea showing ``<math><mi>x</mi></math>`` as its
    text, a link to ``<math><mi>x</mi></math>``."""
    try:
        html = render_page(page)
    except (ValueError, RuntimeError) as err:       # a refusal naming the page is fine too
        assert "hostile.md" in str(err)
        return
    assert kept in html, html[html.find("</h1>"):]


def test_math_signs_inside_an_inline_script_do_not_put_mathml_into_it():
    """``<script>var a = "$\\color{red}{a}$";</script>`` inline: the script's text became MathML, whose
    ``style="…"`` closed the JavaScript string; a script's text must reach the page as written (or the
    build fail naming the page)."""
    page = '# T\n\ntext <script>var a = "$\\color{red}{a}$";</script>\n'
    try:
        html = render_page(page)
    except (ValueError, RuntimeError) as err:
        assert "hostile.md" in str(err)
        return
    assert "<math" not in html.split("<script>", 1)[1].split("</script>", 1)[0], html[html.find("</h1>"):]
