"""What the build keeps across the rebuilds of ``mkdocs serve`` cannot show a stale page: the
compiled theme templates (:mod:`site_build.templates`), the digests of the files a page shows
(:mod:`site_build.dirty_pages`) and the site's copies of the wheel and its pages
(:mod:`site_build.shipped_wheel`)."""

from __future__ import annotations

import os
from pathlib import Path
from types import SimpleNamespace

import jinja2
import pytest
from mkdocs.config.defaults import MkDocsConfig

from site_build import dirty_pages, shipped_wheel, templates
from site_build.plugin import SiteBuild


def _env(folder: Path, **settings) -> jinja2.Environment:
    """A fresh environment over ``folder``, as MkDocs makes one for every build."""
    return jinja2.Environment(loader=jinja2.FileSystemLoader(str(folder)), auto_reload=False, **settings)


def _compiles(env: jinja2.Environment, monkeypatch) -> list[str]:
    """The names of the templates ``env`` compiles from now on."""
    names: list[str] = []
    compile_ = env.compile

    def counted(source, name=None, filename=None, raw=False, defer_init=False):
        names.append(name)
        return compile_(source, name, filename, raw, defer_init)

    monkeypatch.setattr(env, "compile", counted)
    return names


def test_a_rebuild_loads_the_compiled_templates_and_an_edited_one_renders_anew(tmp_path, monkeypatch):
    theme, cache = tmp_path / "theme", tmp_path / "cache"
    theme.mkdir()
    page = theme / "page.html"
    page.write_text("{% extends 'base.html' %}{% block body %}{{ title }}: one{% endblock %}")
    (theme / "base.html").write_text("<main>{% block body %}{% endblock %}</main>")
    first = templates.use_bytecode_cache(_env(theme), cache)
    assert first.get_template("page.html").render(title="T") == "<main>T: one</main>"

    second = templates.use_bytecode_cache(_env(theme), cache)      # the next build's environment
    compiled = _compiles(second, monkeypatch)
    assert second.get_template("page.html").render(title="T") == "<main>T: one</main>"
    assert compiled == []                                          # both loaded, none compiled

    stat = page.stat()
    page.write_text("{% extends 'base.html' %}{% block body %}{{ title }}: two{% endblock %}")
    os.utime(page, ns=(stat.st_atime_ns, stat.st_mtime_ns))         # same size, same modification time
    third = templates.use_bytecode_cache(_env(theme), cache)
    compiled = _compiles(third, monkeypatch)
    assert third.get_template("page.html").render(title="T") == "<main>T: two</main>"
    assert compiled == ["page.html"]                               # the edited one only


def test_the_cache_folder_names_what_the_compiled_code_depends_on(tmp_path):
    def key(filters=None, policies=None, **settings) -> str:
        env = _env(tmp_path, **settings)
        env.filters.update(filters or {})
        env.policies.update(policies or {})
        return templates.environment_key(env)

    def shout(value):
        return str(value).upper()

    @jinja2.pass_context
    def shout_in_context(context, value):
        return str(value).upper()

    plain = key()
    assert key() == plain                                          # the same environment, the same folder
    changed = [key(trim_blocks=True), key(block_start_string="<%"), key(extensions=["jinja2.ext.i18n"]),
               key(filters={"shout": shout}), key(filters={"shout": shout_in_context}),
               key(policies={"ext.i18n.trimmed": True})]
    assert len({plain, *changed}) == 1 + len(changed)              # each change its own folder
    env = _env(tmp_path)
    assert templates.cache_folder(env, tmp_path) == tmp_path / "jinja" / templates.environment_key(env)


def test_the_template_cache_refuses_what_is_not_an_environment_or_a_folder(tmp_path):
    with pytest.raises(TypeError, match="env must be a jinja2.Environment"):
        templates.environment_key("theme")
    with pytest.raises(TypeError, match="root must be a pathlib.Path"):
        templates.cache_folder(_env(tmp_path), str(tmp_path))


def test_the_plugin_gives_the_theme_environment_its_cache_under_the_cache_root(tmp_path, monkeypatch):
    monkeypatch.setenv("NETCL_LITE_CACHE", str(tmp_path / "cache"))
    env = SiteBuild().on_env(_env(tmp_path), config=None, files=None)
    assert isinstance(env.bytecode_cache, jinja2.FileSystemBytecodeCache)
    assert Path(env.bytecode_cache.directory) == templates.cache_folder(env, tmp_path / "cache")


def test_a_file_read_again_only_when_its_status_changed(tmp_path, monkeypatch):
    snippet = tmp_path / "snippet.py"
    snippet.write_text("print(1)\n")
    digests = dirty_pages.FileDigests()
    reads: list[Path] = []
    read_bytes = Path.read_bytes
    monkeypatch.setattr(Path, "read_bytes", lambda self: reads.append(self) or read_bytes(self))
    first = digests(snippet)
    assert digests(snippet) == first and reads == [snippet]        # unchanged: not read again
    stat = snippet.stat()
    snippet.write_text("print(2)\n")
    os.utime(snippet, ns=(stat.st_atime_ns, stat.st_mtime_ns))      # same size, same modification time
    assert digests(snippet) != first and len(reads) == 2
    snippet.unlink()
    assert digests(snippet) == b"(missing)" and digests(tmp_path) == b"(missing)"


def test_under_dirty_a_page_is_rendered_again_when_a_file_it_includes_changed(tmp_path, monkeypatch):
    root, site = tmp_path / "repo", tmp_path / "site"
    (root / "docs").mkdir(parents=True)
    (root / "snippets").mkdir()
    monkeypatch.setattr(dirty_pages, "ROOT", root)
    snippet = root / "snippets" / "a.py"
    snippet.write_text("print(1)\n")
    page = root / "docs" / "page.md"
    page.write_text('# A page\n\n```python\n--8<-- "snippets/a.py"\n```\n')
    built = site / "page" / "index.html"
    config = MkDocsConfig()
    config.load_dict({"site_name": "t", "docs_dir": str(root / "docs"), "site_dir": str(site)})
    config.validate()
    from mkdocs.structure.files import get_files

    def build_again() -> bool:
        built.parent.mkdir(parents=True, exist_ok=True)
        if not built.exists():
            built.write_text("<html>")
        files = get_files(config)
        watch.invalidate(files)
        return built.exists()

    watch = dirty_pages.DirtyPages(dirty=True)
    assert build_again() and build_again()                         # unchanged inputs: the HTML stays
    stat = snippet.stat()
    snippet.write_text("print(2)\n")
    os.utime(snippet, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    assert not build_again()                                       # the included snippet changed
    assert build_again()
    with pytest.raises(TypeError, match="files must be a FileDigests"):
        dirty_pages.digest(page, {})



def _one_page(src: Path, dest: Path):
    """MkDocs' files of a site of one page, ``page.md`` (``src``) built to ``dest``, as DirtyPages reads them."""
    page = SimpleNamespace(src_uri="page.md", abs_src_path=str(src), abs_dest_path=str(dest))
    return SimpleNamespace(documentation_pages=lambda: [page])


def test_under_dirty_a_page_is_rendered_again_when_a_file_it_read_as_it_rendered_changed(tmp_path):
    """What a page's stages read as it renders is among its inputs, whether or not page_inputs names it;
    what they write is not."""
    data, written = tmp_path / "data.json", tmp_path / "written.txt"
    data.write_text("1\n")
    src, dest = tmp_path / "page.md", tmp_path / "site" / "page.html"
    src.write_text("# A page\n")
    dest.parent.mkdir()

    Files = _one_page(src, dest)

    def build(watch: dirty_pages.DirtyPages) -> bool:
        watch.invalidate(Files)
        rendered = not dest.exists()
        watch.rendering("page.md")
        data.read_text()
        written.write_text("out\n")
        watch.rendered()
        dest.write_text("<html>")
        return rendered

    watch = dirty_pages.DirtyPages(dirty=True)
    assert build(watch) and not build(watch)
    assert watch.read["page.md"][0] == [data]
    stat = data.stat()
    data.write_text("2\n")
    os.utime(data, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    assert build(watch) and not build(watch)
    clean = dirty_pages.DirtyPages(dirty=False)            # without --dirty nothing is recorded
    build(clean)
    assert clean.read == {}


def test_a_page_s_inputs_hold_the_apparatus_it_shows():
    """The glossary's tooltip pages show its definitions; the Bibliography lists the pages that cite."""
    from site_build import citations, glossary
    from site_build.paths import DOCS

    tooltips = dirty_pages.page_inputs("# Ch\n\nText.\n", library=[], page_uri=glossary.TOOLTIP_PAGES[0])
    assert tooltips == [glossary.SOURCE]
    assert dirty_pages.page_inputs("# Ch\n\nText.\n", library=[], page_uri="index.md") == []
    listing = dirty_pages.page_inputs("# Bibliography\n\n<!-- bibliography -->\n", library=[])
    assert citations.SOURCE in listing and DOCS / "chapter-7.md" in listing


def test_under_dirty_a_page_not_utf8_or_including_a_name_the_system_refuses_is_left_to_mkdocs(tmp_path, monkeypatch):
    """Under --dirty each page's inputs are digested before MkDocs reads the pages: a page that is not
    UTF-8, or that includes a name the system cannot look up (past NAME_MAX, a NUL), stopped the build
    with a bare UnicodeDecodeError, OSError or ValueError naming no page. Its digest is taken, and
    MkDocs (or the include's check) reports it naming the page; an edit still changes the digest."""
    monkeypatch.setattr(dirty_pages, "ROOT", tmp_path)
    page = tmp_path / "page.md"
    seen = set()
    for text in (b"# A \xff page\n", b"# A \xfe page\n", b'--8<-- "snippets/' + b"a" * 300 + b'.py"\n',
                 b'--8<-- "snippets/a\x00b.py"\n'):
        page.write_bytes(text)
        seen.add(dirty_pages.digest(page))
    assert len(seen) == 4


def _site_copy(tmp_path, content: str | None = None,
               abs_src_path: str | None = None) -> shipped_wheel.SiteCopy:
    """A file of the site as ``File.generated`` makes it during a build (in memory or on disk)."""
    copy = shipped_wheel.SiteCopy("source/x.py.html", src_dir=None, dest_dir=str(tmp_path / "site"),
                                  use_directory_urls=True)
    if content is not None:
        copy.content_string = content
    else:
        copy.abs_src_path = abs_src_path
    return copy


def test_a_dirty_build_writes_a_source_page_exactly_when_the_site_holds_other_text(tmp_path):
    page = _site_copy(tmp_path, content="<pre>one</pre>")
    dest = Path(page.abs_dest_path)
    page.copy_file(dirty=True)
    assert dest.read_text() == "<pre>one</pre>"
    os.utime(dest, ns=(0, 0))
    page.copy_file(dirty=True)                                     # the same text: not written again
    assert dest.stat().st_mtime_ns == 0
    dest.write_text("<pre>two</pre>")
    page.copy_file(dirty=True)
    assert dest.read_text() == "<pre>one</pre>"


def test_a_dirty_build_puts_back_a_wheel_older_than_the_sites_copy(tmp_path):
    """The wheel of restored sources comes back from the cache, older than the one in the site."""
    stored = tmp_path / "stored.whl"
    stored.write_bytes(b"wheel of the restored sources")
    os.utime(stored, ns=(0, 0))
    wheel = _site_copy(tmp_path, abs_src_path=str(stored))
    dest = Path(wheel.abs_dest_path)
    dest.parent.mkdir(parents=True)
    dest.write_bytes(b"wheel of the edited sources")
    wheel.copy_file(dirty=True)
    assert dest.read_bytes() == b"wheel of the restored sources"


def test_mkdocs_build_dirty_in_a_new_process_renders_again_a_page_whose_inputs_changed(tmp_path, monkeypatch):
    """``mkdocs build --dirty`` runs in a new process each time: the digests of the last dirty build are
    read from its record, so a page whose included file changed is rendered again though its Markdown
    is older than its HTML; a page whose HTML another build wrote since (or that has no record) is
    rendered again too, and one whose inputs and HTML are as recorded is not."""
    monkeypatch.setenv("NETCL_LITE_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(dirty_pages, "ROOT", tmp_path)
    data = tmp_path / "data.txt"
    data.write_text("1\n")
    src, site = tmp_path / "page.md", tmp_path / "site"
    src.write_text("# A page\n")
    dest = site / "page.html"
    site.mkdir()

    Files = _one_page(src, dest)

    def build(html: str = "<html>") -> bool:               # one `mkdocs build --dirty`: a new process
        watch = dirty_pages.DirtyPages(dirty=True)
        watch.invalidate(Files, site)
        rendered = not dest.exists()
        if rendered:
            watch.rendering("page.md")
            data.read_text()
            watch.rendered()
            dest.write_text(html)
        watch.save(Files, site)
        return rendered

    dest.write_text("<html> of a plain build")            # HTML with no record: rendered again
    assert build() and not build()
    stat = data.stat()
    data.write_text("2\n")                                 # what the page read changed, its Markdown did not
    os.utime(data, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    assert build() and not build()
    dest.write_text("<html> written by another build")    # not the HTML the record names
    assert build() and not build()
    dirty_pages.DirtyPages.record_path(site).write_text("{not json")   # a damaged record is no record
    assert build() and not build()
