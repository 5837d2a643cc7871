"""Hostile round 29b: the build plugin's hooks and the mkdocs.yml settings they read, called on small
inputs (no site build). Covered: a ``site_url`` holding a query or a fragment, which MkDocs keeps (it
only adds the trailing slash to the path), glued before the wheel's file name in the needs-extra
notes and in the drill notebooks' install cell; a ``docs_dir`` other than the project's docs/, whose
pages were shown with the references, glossary and figures of docs/; under ``mkdocs serve --dirty``,
a draft page (``draft_docs``), which serve renders, never rendered again when its inputs changed.
Each test asserts the correct behaviour, and failed on the code before its fix."""

from __future__ import annotations

import pytest

from site_build import copyable, generated

NOTE_PAGE = "<!-- needs-extra: compare -->\n\n```python\nprint(1)\n```\n"


@pytest.mark.parametrize("site_url", ["https://example.org/book/?x=1", "https://example.org/book/#top",
                                      "https://example.org/book/?"])
def test_a_site_url_with_a_query_or_fragment_is_refused_by_the_needs_extra_note(site_url):
    """MkDocs keeps ``site_url: https://example.org/book?x=1`` as ``https://example.org/book/?x=1``; the
    needs-extra note appended the wheel's name to it and showed
    ``pip install "netcl_lite[compare] @ https://example.org/book/?x=1netcl_lite-...whl"``, a command
    that fetches the site's front page, without a word. It must stop naming the page and site_url."""
    with pytest.raises(ValueError, match=r"docs/a\.md.*site_url"):
        copyable.render_markdown(NOTE_PAGE, "a.md", site_url)


def test_a_plain_site_url_still_gives_the_wheels_address():
    """The fix refuses only a query or a fragment: a plain address and no address work as before."""
    wheel = copyable.wheel_name()
    assert f"https://example.org/book/{wheel}" in copyable.render_markdown(NOTE_PAGE, "a.md",
                                                                           "https://example.org/book/")
    assert f"@ /{wheel}" in copyable.render_markdown(NOTE_PAGE, "a.md", None)


@pytest.mark.parametrize("site_url", ["https://example.org/book/?x=1", "https://example.org/book#top"])
def test_the_drill_notebooks_refuse_a_site_url_with_a_query_or_fragment(tmp_path, monkeypatch, site_url):
    """``site_address`` accepted any http(s) address and added a slash: the install cell's wheel became
    ``https://example.org/book/?x=1/netcl_lite-...whl`` (or after a ``#``, which pip never fetches)."""
    (tmp_path / "mkdocs.yml").write_text(f"site_name: x\nsite_url: {site_url}\n", encoding="utf-8")
    monkeypatch.setattr(generated, "ROOT", tmp_path)
    with pytest.raises(ValueError, match=r"mkdocs\.yml.*site_url"):
        generated.site_address()


def _config(tmp_path, docs_dir: str):
    from mkdocs.config import load_config

    (tmp_path / "mkdocs.yml").write_text(f"site_name: x\ndocs_dir: {docs_dir}\n", encoding="utf-8")
    return load_config(str(tmp_path / "mkdocs.yml"))


def test_a_docs_dir_other_than_docs_is_refused_naming_docs_dir(tmp_path):
    """With ``docs_dir: book``, MkDocs rendered book/'s pages while the plugin read references.bib and
    glossary.yml from docs/ and wrote the figures and drill notebooks there: citations, the glossary's
    tooltips and figures came from another folder (or were missing) without a word. on_config must stop,
    naming docs_dir."""
    from mkdocs.exceptions import PluginError

    from site_build.plugin import SiteBuild

    (tmp_path / "book").mkdir()
    (tmp_path / "book" / "index.md").write_text("# x\n", encoding="utf-8")
    plugin = SiteBuild()
    plugin.on_startup(command="build", dirty=False)
    with pytest.raises(PluginError, match="docs_dir"):
        plugin.on_config(_config(tmp_path, "book"))


def test_a_docs_dir_linking_to_docs_is_taken(tmp_path):
    """The check compares resolved folders: a link to the project's docs/ is the same folder."""
    from site_build.paths import DOCS
    from site_build.plugin import SiteBuild

    (tmp_path / "linked").symlink_to(DOCS, target_is_directory=True)
    plugin = SiteBuild()
    plugin.on_startup(command="build", dirty=False)
    assert plugin.on_config(_config(tmp_path, "linked")) is not None


def _draft_site(tmp_path, monkeypatch, draft: str):
    """A project (its root, its site folder, its MkDocs config) whose docs/ holds index.md and the page
    draft.md, holding ``draft``, that ``draft_docs`` names; the dirty record reads this root."""
    from mkdocs.config.defaults import MkDocsConfig

    from site_build import dirty_pages

    root, site = tmp_path / "repo", tmp_path / "site"
    (root / "docs").mkdir(parents=True)
    (root / "snippets").mkdir()
    monkeypatch.setattr(dirty_pages, "ROOT", root)
    (root / "docs" / "index.md").write_text("# Home\n")
    (root / "docs" / "draft.md").write_text(draft)
    config = MkDocsConfig()
    config.load_dict({"site_name": "t", "docs_dir": str(root / "docs"), "site_dir": str(site),
                      "draft_docs": "draft.md\n"})
    assert not config.validate()[0]
    return root, site, config


def test_under_serve_dirty_a_draft_page_is_rendered_again_when_a_file_it_includes_changed(tmp_path, monkeypatch):
    """``mkdocs serve`` renders the pages ``draft_docs`` names (with a draft banner), but
    ``DirtyPages.invalidate`` looked only at ``files.documentation_pages()``, MkDocs' included pages,
    which leave the drafts out: under ``mkdocs serve --dirty`` a draft whose include changed kept its
    stale HTML, build after build."""
    from mkdocs.structure.files import get_files

    from site_build import dirty_pages

    root, site, config = _draft_site(tmp_path, monkeypatch, '# A draft\n\n```python\n--8<-- "snippets/a.py"\n```\n')
    snippet = root / "snippets" / "a.py"
    snippet.write_text("print(1)\n")
    built = site / "draft" / "index.html"

    def build_again() -> bool:
        built.parent.mkdir(parents=True, exist_ok=True)
        if not built.exists():
            built.write_text("<html>")                 # what serve renders for the draft
        watch.invalidate(get_files(config))
        return built.exists()

    watch = dirty_pages.DirtyPages(dirty=True)
    assert build_again() and build_again()
    snippet.write_text("print(2)\n")
    assert not build_again()                           # the draft's include changed: rendered again


def test_under_serve_dirty_an_unchanged_draft_keeps_its_html(tmp_path, monkeypatch):
    """The record of the HTML each build wrote (``DirtyPages.save``) must hold the drafts serve renders,
    or every rebuild finds a draft's HTML unrecorded and renders it again."""
    from mkdocs.structure.files import get_files

    from site_build import dirty_pages

    monkeypatch.setenv("NETCL_LITE_CACHE", str(tmp_path / "cache"))
    root, site, config = _draft_site(tmp_path, monkeypatch, "# A draft\n")
    built = site / "draft" / "index.html"
    watch = dirty_pages.DirtyPages(dirty=True)

    def build_again() -> bool:
        files = get_files(config)
        watch.invalidate(files, site)
        rendered = not built.exists()
        if rendered:
            built.parent.mkdir(parents=True, exist_ok=True)
            watch.rendering("draft.md")
            built.write_text("<html>")
            watch.rendered()
        watch.save(files, site)
        return rendered

    assert build_again()                               # the first build renders it
    assert not build_again()                           # nothing changed: its HTML is kept
