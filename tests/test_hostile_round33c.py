"""Hostile round 33c: an execution-cache entry served under a key it was not written for, pages with
MkDocs' other Markdown suffixes left out of the build's own page lists, and the tag scanner's time on
many unclosed ``<img``."""

from __future__ import annotations

import hashlib
import random

import pytest

from netcl_lite import fingerprint
from site_build import capstone_run, dirty_pages, generated, includes, source_pages
from site_build import store as executed
from site_build.tags import Tags


# -- 1. an entry checked against the key it is served under ----------------------------------------

@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("NETCL_LITE_CACHE", str(tmp_path))
    monkeypatch.delenv(fingerprint.RERUN, raising=False)
    return tmp_path / "executed"


@pytest.mark.parametrize("to", [("build_output", "def456"), ("figure", "abc123")],
                         ids=["another key", "another kind"])
def test_an_entry_copied_under_another_key_is_a_miss_not_the_other_snippets_output(cache, to):
    """Each entry held a digest of its bytes only: copied (or renamed) under another key, or another
    kind's folder, it matched that digest and was shown as the output of a snippet that never printed
    it. The digest covers the kind and key, so such an entry is a miss (removed, run again)."""
    executed.store("build_output", "abc123", b"model: 1.234 bits per byte\n")
    source = cache / "build_output" / "abc123"
    copied = cache / to[0] / to[1]
    copied.parent.mkdir(parents=True, exist_ok=True)
    copied.write_bytes(source.read_bytes())
    assert executed.lookup(*to) is None
    assert not copied.exists(), "an entry written for another key is removed, so the item runs again"
    assert executed.lookup("build_output", "abc123") == b"model: 1.234 bits per byte\n"


def test_an_entry_of_the_older_format_is_a_miss_not_a_crash(cache, caplog):
    """An entry written before the digest covered its key (its own digest intact) runs again, quietly:
    every entry of a cache that outlived an upgrade is one, and a warning fails ``mkdocs build --strict``."""
    data = b"model: 1.234 bits per byte\n"
    path = cache / "build_output" / "abc123"
    path.parent.mkdir(parents=True)
    path.write_bytes(b"netcl-lite-cache-entry 1 sha256=" + hashlib.sha256(data).hexdigest().encode()
                     + b" %d\n" % len(data) + data)
    with caplog.at_level("INFO"):
        assert executed.lookup("build_output", "abc123") is None and not path.exists()
    assert [r.levelname for r in caplog.records] == ["INFO"], caplog.text
    executed.store("build_output", "abc123", data)
    assert executed.lookup("build_output", "abc123") == data


def test_an_entry_read_for_another_key_gives_nothing():
    data = b"<svg/>"
    assert executed.payload(executed.entry(data, "figure/k1"), "figure/k1") == data
    assert executed.payload(executed.entry(data, "figure/k1"), "figure/k2") is None
    assert executed.payload(executed.entry(data, "a"), "a\0") is None


def test_a_highlighted_listing_copied_to_another_files_place_is_highlighted_again(tmp_path, monkeypatch):
    """The source pages keep each file's highlighted lines by the digest of its bytes, checked as the
    execution cache checks an entry: one copied to another file's place showed that file's listing
    with the first file's code."""
    from site_build.paths import ROOT

    monkeypatch.setenv("NETCL_LITE_CACHE", str(tmp_path))
    first, second = "netcl_lite/files.py", "netcl_lite/fingerprint.py"
    source_pages._highlighted.cache_clear()
    source_pages.listing(first, [])
    expected = source_pages.listing(second, [])
    places = {p.stem: p for p in tmp_path.rglob("*.html")}
    digest = {rel: hashlib.sha256((ROOT / rel).read_bytes()).hexdigest() for rel in (first, second)}
    places[digest[second]].write_bytes(places[digest[first]].read_bytes())
    source_pages._highlighted.cache_clear()
    try:
        shown = source_pages.listing(second, [])
    finally:
        source_pages._highlighted.cache_clear()
    assert shown == expected


def test_a_compiled_template_copied_to_another_templates_place_is_compiled_again(tmp_path):
    """Two templates of the same text: Jinja's own check (the source's checksum) passes the one's
    compiled code in the other's place, which then runs as the first (its name, in every error)."""
    import jinja2

    from site_build import templates

    (tmp_path / "templates").mkdir()
    for name in ("a.html", "b.html"):
        (tmp_path / "templates" / name).write_text("Text {{ n }}\n", encoding="utf-8")

    def env():
        return templates.use_bytecode_cache(
            jinja2.Environment(loader=jinja2.FileSystemLoader(str(tmp_path / "templates"))), tmp_path / "cache")

    first = env()
    first.get_template("a.html")
    before = {p.name for p in (tmp_path / "cache").rglob("*") if p.is_file()}
    first.get_template("b.html")
    [a_entry] = [p for p in (tmp_path / "cache").rglob("*") if p.name in before]
    [b_entry] = [p for p in (tmp_path / "cache").rglob("*") if p.is_file() and p.name not in before]
    b_entry.write_bytes(a_entry.read_bytes())
    assert env().get_template("b.html").name == "b.html"


def test_a_compiled_template_of_an_older_format_is_compiled_again_without_a_warning(tmp_path, caplog):
    """A template cache that outlived an upgrade holds entries in the older format: each a quiet miss (a
    warning per template failed the strict build of a site whose cache was made before the upgrade)."""
    import jinja2

    from site_build import templates

    (tmp_path / "templates").mkdir()
    (tmp_path / "templates" / "a.html").write_text("Text {{ n }}\n", encoding="utf-8")

    def env():
        return templates.use_bytecode_cache(
            jinja2.Environment(loader=jinja2.FileSystemLoader(str(tmp_path / "templates"))), tmp_path / "cache")

    env().get_template("a.html")
    [stored] = [p for p in (tmp_path / "cache").rglob("*") if p.is_file()]
    data = stored.read_bytes().partition(b"\n")[2]
    stored.write_bytes(b"netcl-lite-cache-entry 1 sha256=" + hashlib.sha256(data).hexdigest().encode()
                       + b" %d\n" % len(data) + data)
    with caplog.at_level("INFO"):
        assert env().get_template("a.html").render(n=1) == "Text 1"
    assert "WARNING" not in [r.levelname for r in caplog.records], caplog.text
    stored.write_bytes(b"damaged")                 # damage is still reported
    with caplog.at_level("INFO"):
        env().get_template("a.html")
    assert "WARNING" in [r.levelname for r in caplog.records], caplog.text


# -- 2. pages as MkDocs finds them -------------------------------------------------------------------

def _shown(name: str) -> str:
    return f'```python\n--8<-- "snippets/p/{name}"\n```\n\n<!-- build-output: snippets/p/{name} -->\n\n'


@pytest.mark.parametrize("suffix", [".markdown", ".mdown", ".mkd"])
def test_a_snippet_shown_on_a_page_with_another_markdown_suffix_runs_ahead(tmp_path, monkeypatch, suffix):
    """MkDocs makes a page of ``notes.markdown`` as of ``notes.md``; the run-ahead stage read only
    ``*.md``, so the snippets such a page shows never ran ahead."""
    (tmp_path / "docs").mkdir()
    (tmp_path / "snippets" / "p").mkdir(parents=True)
    (tmp_path / "snippets" / "p" / "a.py").write_text("print(1)\n", encoding="utf-8")
    (tmp_path / "snippets" / "p" / "b.py").write_text("print(2)\n", encoding="utf-8")
    (tmp_path / "docs" / "a.md").write_text(_shown("a.py"), encoding="utf-8")
    (tmp_path / "docs" / f"b{suffix}").write_text(_shown("b.py"), encoding="utf-8")
    (tmp_path / "docs" / "c.txt").write_text(_shown("c.py"), encoding="utf-8")     # not a page
    monkeypatch.setattr(capstone_run, "DOCS", tmp_path / "docs")
    monkeypatch.setattr(capstone_run, "marker_path",
                        lambda path, page: includes.marker_path(path, page, root=tmp_path))
    assert capstone_run.untimed_snippets() == ["snippets/p/a.py", "snippets/p/b.py"]


def test_the_timed_snippets_of_a_page_with_another_markdown_suffix_are_listed(tmp_path, monkeypatch):
    """The benchmark of the build's stages lists the snippets that read a clock as the run-ahead stage
    lists the others: from every page MkDocs makes, ``.markdown`` included."""
    from site_build.paths import ROOT

    monkeypatch.syspath_prepend(str(ROOT / "benchmarks"))
    import build_stages

    (tmp_path / "docs").mkdir()
    (tmp_path / "snippets" / "p").mkdir(parents=True)
    (tmp_path / "snippets" / "p" / "t.py").write_text("import time\nprint(time.time())\n", encoding="utf-8")
    (tmp_path / "docs" / "b.markdown").write_text(_shown("t.py"), encoding="utf-8")
    monkeypatch.setattr(build_stages, "DOCS", tmp_path / "docs")
    monkeypatch.setattr(build_stages, "marker_path",
                        lambda path, page: includes.marker_path(path, page, root=tmp_path))
    assert build_stages.timed_snippets() == ["snippets/p/t.py"]


@pytest.fixture
def docs(tmp_path, monkeypatch):
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "a.md").write_text("![x](figures/f.svg)\n", encoding="utf-8")
    (docs / "b.markdown").write_text("![x](figures/f.svg) [@smith2020]\n", encoding="utf-8")
    (docs / "c.markdown.txt").write_text("![x](figures/f.svg)\n", encoding="utf-8")     # not a page
    (docs / "d.md").mkdir()                                                             # a folder
    monkeypatch.setattr(generated, "DOCS", docs)
    monkeypatch.setattr(dirty_pages, "DOCS", docs)
    return docs


def test_a_page_with_another_markdown_suffix_is_among_the_pages_showing_a_figure(docs):
    """A figure's pages (rebuilt when it changes) left out a ``.markdown`` page that shows it."""
    assert generated.pages_showing("figures/f.svg") == ["docs/a.md", "docs/b.markdown"]


def test_a_page_with_another_markdown_suffix_is_an_input_of_the_bibliography(docs):
    """The bibliography lists the pages citing each entry: a ``.markdown`` page's citations changed
    without the bibliography page being made again."""
    inputs = dirty_pages.page_inputs("<!-- bibliography -->\n", library=[])
    assert docs / "b.markdown" in inputs and docs / "a.md" in inputs
    assert docs / "c.markdown.txt" not in inputs and docs / "d.md" not in inputs


def test_the_source_page_names_a_markdown_page_without_its_suffix():
    text = source_pages.markdown("kernels/bpe.cl", [("notes.markdown", 1, 2), ("week-3.mkd", 1, 2)], "w.whl")
    assert "Notes" in text and "Week 3" in text and "markdown" not in text.split("Excerpts of it:")[1].split("(")[0]


# -- 3. the tag scanner ------------------------------------------------------------------------------

def _reference_end(text: str, start: int) -> int | None:
    """The tag's end read one character at a time in the tokenizer's states, from nothing kept."""
    blanks = " \t\n\r\f"
    i, state = start, "name"
    while i < len(text):
        c = text[i]
        if state in ("dq", "sq"):
            if c == ('"' if state == "dq" else "'"):
                state = "after_quoted"
            i += 1
            continue
        if c == ">":
            return i + 1
        blank = c in blanks
        if state in ("name", "unquoted"):
            if blank:
                state = "before_attribute"
            elif c == "/" and state == "name":
                state = "solidus"
            i += 1
        elif state == "before_attribute":
            if c == "/":
                state = "after_name"
                continue
            if not blank:
                state = "attribute"
            i += 1
        elif state == "attribute":
            if blank or c == "/":
                state = "after_name"
                continue
            if c == "=":
                state = "before_value"
            i += 1
        elif state == "after_name":
            if c == "/":
                state = "solidus"
            elif c == "=":
                state = "before_value"
            elif not blank:
                state = "attribute"
            i += 1
        elif state == "before_value":
            if c in "\"'":
                state = "dq" if c == '"' else "sq"
            elif not blank:
                state = "unquoted"
                continue
            i += 1
        elif state == "after_quoted":
            state = "solidus" if c == "/" else "before_attribute"
            if blank or c == "/":
                i += 1
        else:
            state = "before_attribute"
    return None


def _tricky_texts():
    rng = random.Random("round 33c tags")
    fixed = ['<img a="x>" b>', "<a\"b=\">", '<a /="x>', "<img src='a>b' alt=c>", "<img a = \"b\"/>",
             "<img ", "<img " * 20, "<img " * 20 + ">", "<img a=" * 10, '<img a="' * 5 + ">", "", ">", "=",
             "<img a=b c='d' e=\"f\" g >tail", "<img a=\"x\"/>", "<img a=\"x\"b=c>", "<img a=/>", "<img\t=\"x\">"]
    return fixed + ["".join(rng.choice("<img a=b\"'/> \t\nx") for _ in range(rng.randint(0, 40)))
                    for _ in range(400)]


@pytest.mark.parametrize("order", ["forward", "backward", "shuffled"])
def test_the_tag_scanner_finds_what_reading_each_character_finds(order):
    """The end found from every place of tricky texts, on one scanner (what it kept from earlier places
    shared), in three orders, is the end a plain character-by-character reading finds."""
    rng = random.Random(order)
    for text in _tricky_texts():
        starts = list(range(len(text) + 2))
        if order == "backward":
            starts.reverse()
        elif order == "shuffled":
            rng.shuffle(starts)
        tags = Tags(text)
        got = {s: tags.end(s) for s in starts}
        assert got == {s: _reference_end(text, s) for s in starts}, text


@pytest.mark.parametrize("closed", [False, True], ids=["never closed", "closed at the very end"])
def test_many_unclosed_img_tags_are_answered_without_reading_each_character(closed):
    """``<img `` repeated (no ``=``, so no quoted value can open) took a step and a kept state for each
    character read from the first place; the next ``>`` now answers at once. Counted, not timed: no
    state is kept per character."""
    text = "<img " * 20000 + (">" if closed else "")
    tags = Tags(text)
    ends = {tags.end(at + len("<img")) for at in range(0, 5 * 20000, 5)}
    assert ends == {len(text) if closed else None}
    assert len(tags.known) < 100
