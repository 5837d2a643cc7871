"""Hostile round 28c: the book's apparatus as the build makes it.

Covers :mod:`site_build.offline`'s check for requests to another host, on tags whose
unquoted attribute values hold a quote character (HTML keeps such a quote as part of the
value; it opens no quoted string), on a ``<style>`` never closed and on SVG presentation
attributes (``fill``, ``filter``, ``mask``…) whose ``url()`` fetches; :mod:`site_build.docstrings` on Sphinx role forms it did not read (the domain
written out, a call's parentheses, ``!``), which the page showed as typed; and
:func:`site_build.apparatus.repair_print_page`, which unwrapped links of the printable book that
do lead somewhere (a ``data-href`` read as the link's own, an anchor percent-encoded or holding a
character reference); and :func:`site_build.citations.bibliography` and ``Work.reference``, whose
full stops doubled after a '?', '!' or a note's own '.', or stood alone where an entry has no venue.
"""

from __future__ import annotations

from site_build.offline import remote_references


def test_apostrophe_in_unquoted_value_does_not_hide_the_tag():
    """An unquoted ``alt=it's`` made the tag scanner read the apostrophe as an opening quote that
    never closed, so the whole ``<img>`` was skipped and its ``src`` of another host went unreported."""
    assert remote_references("<img alt=it's src=//evil.example/x.png>") == ["//evil.example/x.png"]


def test_double_quote_in_unquoted_value_does_not_hide_the_tag():
    """The same with a '"' inside an unquoted value: the image request to another host was missed."""
    assert remote_references('<p><img alt=a"b src=//evil.example/x.png></p>') == ["//evil.example/x.png"]


def test_quote_in_attribute_name_does_not_hide_the_tag():
    """A quote in an attribute's name (HTML keeps it in the name) hid the tag's later ``src``."""
    assert remote_references("<img data-x'y src=//evil.example/x.png>") == ["//evil.example/x.png"]


def test_a_role_with_its_domain_written_out_leaves_no_stray_text():
    """``:py:func:`a.b``` matched from its ``:func:``, so the page showed a stray ``:py`` before the link."""
    from site_build.docstrings import markup

    assert markup("See :py:func:`a.b` here.") == 'See <autoref identifier="a.b" optional>`a.b`</autoref> here.'


def test_a_role_naming_a_call_is_a_cross_reference():
    """``:func:`a.train()``` (Sphinx allows the parentheses) matched no role: the page showed
    ``:func:`` as typed before the code."""
    from site_build.docstrings import markup

    assert markup(":func:`a.train()`") == '<autoref identifier="a.train" optional>`a.train()`</autoref>'


def test_a_role_marked_not_to_link_shows_its_name_in_code():
    """``:class:`!Thing``` (Sphinx: the name, no link) matched no role: the page showed ``:class:``
    and the ``!`` as typed."""
    from site_build.docstrings import markup

    assert markup("a :class:`!Thing` b") == "a `Thing` b"


def _repaired(tmp_path, body: str) -> tuple[int, str]:
    from site_build import apparatus

    (tmp_path / "print_page").mkdir()
    page = tmp_path / "print_page" / "index.html"
    page.write_text(body, encoding="utf-8")
    return apparatus.repair_print_page(tmp_path), page.read_text(encoding="utf-8")


def test_a_data_href_does_not_unwrap_a_link_to_another_page(tmp_path):
    """``data-href="#gone"`` was read as the link's own ``href``: the printable book lost the link of
    ``<a data-href="#gone" href="https://example.org/">``, its text left plain."""
    body = '<p><a data-href="#gone" href="https://example.org/">ext</a></p>'
    assert _repaired(tmp_path, body) == (0, body)


def test_a_percent_encoded_anchor_that_exists_is_kept(tmp_path):
    """A link to ``#%E6%B3%A8%E6%84%8F`` (the id ``注意`` percent-encoded, which a browser follows) was
    counted broken and unwrapped."""
    body = '<h2 id="注意">h</h2><p><a href="#%E6%B3%A8%E6%84%8F">link</a></p>'
    assert _repaired(tmp_path, body) == (0, body)


def test_an_anchor_with_a_character_reference_that_exists_is_kept(tmp_path):
    """``href="#q&a"`` and ``id="q&amp;a"`` name one id once their references are read; the link was
    unwrapped all the same."""
    body = '<h2 id="q&amp;a">h</h2><p><a href="#q&a">link</a></p>'
    assert _repaired(tmp_path, body) == (0, body)


def test_a_link_to_no_anchor_is_still_unwrapped(tmp_path):
    """The repair itself still holds: a link to an id the book lacks becomes its text."""
    assert _repaired(tmp_path, '<h2 id="x">h</h2><p><a href="#X">case</a></p>') \
        == (1, '<h2 id="x">h</h2><p>case</p>')


def test_a_style_element_never_closed_still_counts():
    """A ``<style>`` with no ``</style>`` (a browser reads the rest of the page as its CSS) was not read:
    its ``@import url(//host/…)`` went unreported."""
    assert remote_references("<p>x</p><style>@import url(//evil.example/a.css);") == ["//evil.example/a.css"]


def test_svg_presentation_attributes_that_fetch_are_reported():
    """``fill``, ``filter``, ``mask``, ``clip-path`` and ``marker-*`` hold CSS, and a ``url()`` of another
    host there is fetched (a paint server, a filter, a mask of another document); none was reported."""
    page = ('<svg><rect fill="url(//evil.example/p.svg#g)"/><g filter="url(https://evil.example/f.svg#f)"/>'
            '<path marker-end="url(//evil.example/m.svg#m)"/><rect clip-path="url(#local)"/></svg>')
    assert remote_references(page) == ["//evil.example/p.svg#g", "https://evil.example/f.svg#f",
                                       "//evil.example/m.svg#m"]


class _NoPages:
    def documentation_pages(self):
        return []


def _entry(tmp_path, fields: str):
    from site_build import citations

    path = tmp_path / "references.bib"
    path.write_text("@misc{smith2020x, author = {Smith, John}, year = {2020}" + fields + "}\n", encoding="utf-8")
    known = citations.works(path)
    return known["smith2020x"], citations.bibliography(_NoPages(), known).split("\n")[1]


def test_a_title_ending_in_a_question_mark_gets_no_full_stop(tmp_path):
    """A title ending in '?' or '!' showed "What is attention?." in the Bibliography and in every
    citation's link title."""
    work, item = _entry(tmp_path, ", title = {What is attention?}, journal = {J}")
    assert "*What is attention?* J." in item and "?." not in item
    assert work.reference() == "John Smith (2020). What is attention? J."


def test_an_entry_with_no_venue_shows_no_stray_full_stop(tmp_path):
    """An entry with no journal, book, institution or publisher showed a lone " ." after its title."""
    work, item = _entry(tmp_path, ", title = {T}")
    assert item.endswith("(2020). *T.*</li>"), item
    assert work.reference() == "John Smith (2020). T."


def test_a_note_ending_in_a_full_stop_shows_one(tmp_path):
    """A note that ends in '.' (``note = {Preprint.}``) showed two: "Preprint..\""""
    _, item = _entry(tmp_path, ", title = {T}, journal = {J}, note = {Preprint.}")
    assert item.endswith("J. Preprint.</li>"), item
