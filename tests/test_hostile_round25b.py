"""Issue 58, an independent hostile check, round 25b: the execution cache's place that cannot hold an
entry (the cache folder is a file, a kind's folder is a file, an entry is a folder) must not stop a
build with a Python traceback: what ran is shown, and the entry it could not keep is reported."""

from __future__ import annotations

import logging

import pytest

from netcl_lite import fingerprint
from site_build import build_output, runner, store

SNIPPET = "snippets/chapter7/bpe_batch.py"


def _in_the_way(root, where):
    """Put a file or a folder where the store writes the build output's entry of SNIPPET."""
    if where == "the cache folder is a file":
        root.write_bytes(b"not a folder\n")
        return
    key = build_output.snippet_key(SNIPPET, "ctx")
    if where == "the kind's folder is a file":
        (root / "executed").mkdir(parents=True)
        (root / "executed" / "build_output").write_bytes(b"not a folder\n")
    else:                                           # the entry is a folder
        (root / "executed" / "build_output" / key).mkdir(parents=True)


@pytest.mark.parametrize("where", ["the cache folder is a file", "the kind's folder is a file",
                                   "the entry is a folder"])
def test_a_cache_place_that_cannot_hold_an_entry_shows_the_output_and_says_so(tmp_path, monkeypatch, caplog,
                                                                               where):
    root = tmp_path / "cache"
    monkeypatch.setenv("NETCL_LITE_CACHE", str(root))
    monkeypatch.delenv(fingerprint.RERUN, raising=False)
    _in_the_way(root, where)
    monkeypatch.setattr(runner, "run_snippet", lambda path, **kw: "merges: 3\n")
    with caplog.at_level(logging.WARNING, logger=store.log.name):
        text = build_output.BuildOutputs(lambda: "ctx").cached_output(SNIPPET, "docs/chapter-7.md:12")
    assert text == "merges: 3\n"
    warned = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    assert any("execution cache" in m and str(root) in m for m in warned), warned
    # the same lookup later is a miss, not an error
    assert store.lookup("build_output", build_output.snippet_key(SNIPPET, "ctx")) is None


@pytest.mark.parametrize("damage", ["emptied", "truncated", "not UTF-8"])
def test_damaged_measured_results_are_named_not_a_json_traceback(tmp_path, damage):
    import shutil

    from site_build import measured

    bench = tmp_path / "benchmarks"
    (bench / "results").mkdir(parents=True)
    shutil.copyfile(measured.REPORT, bench / "report_kernels.py")
    whole = measured.RESULTS.read_bytes()
    (bench / "results" / "kernels.json").write_bytes(
        {"emptied": b"", "truncated": whole[:len(whole) // 2], "not UTF-8": b"\xff\xfe{}"}[damage])
    with pytest.raises(ValueError, match=r"kernels\.json") as caught:
        measured.MeasuredSections(bench / "report_kernels.py")
    assert type(caught.value) is ValueError, type(caught.value)      # not a bare json or Unicode error


def _template_env(root, templates_module):
    import jinja2

    env = jinja2.Environment(loader=jinja2.FileSystemLoader(str(root / "templates")))
    return templates_module.use_bytecode_cache(env, root / "cache")


@pytest.mark.parametrize("damage", ["truncated in its header", "a byte of its text edited", "emptied"])
def test_a_damaged_compiled_template_is_compiled_again_not_an_error_nor_shown(tmp_path, damage):
    from site_build import templates

    (tmp_path / "templates").mkdir()
    (tmp_path / "templates" / "page.html").write_text("Chapter text {{ n }}\n", encoding="utf-8")
    assert _template_env(tmp_path, templates).get_template("page.html").render(n=1) == "Chapter text 1"
    [entry] = [p for p in (tmp_path / "cache").rglob("*") if p.is_file()]
    raw = entry.read_bytes()
    if damage == "truncated in its header":
        import jinja2.bccache

        raw = raw[:len(jinja2.bccache.bc_magic) + 3]         # inside the source's checksum
    elif damage == "a byte of its text edited":
        assert raw.count(b"Chapter text ") == 1
        raw = raw.replace(b"Chapter text ", b"Chapter tExt ")
    else:
        raw = b""
    entry.write_bytes(raw)
    assert _template_env(tmp_path, templates).get_template("page.html").render(n=2) == "Chapter text 2"


def test_a_template_cache_folder_that_is_a_file_leaves_templates_compiled_each_time(tmp_path):
    from site_build import templates

    (tmp_path / "templates").mkdir()
    (tmp_path / "templates" / "page.html").write_text("Chapter text {{ n }}\n", encoding="utf-8")
    (tmp_path / "cache").write_bytes(b"not a folder\n")
    assert _template_env(tmp_path, templates).get_template("page.html").render(n=3) == "Chapter text 3"


def test_a_highlighting_cache_folder_that_is_a_file_still_shows_the_source_page(tmp_path, monkeypatch, caplog):
    import hashlib

    from site_build import source_pages, store as executed

    text = "".join(f"value_{i} = {i} * 2\n" for i in range(5))
    (tmp_path / "a.py").write_text(text, encoding="utf-8")
    digest = hashlib.sha256(text.encode()).hexdigest()
    monkeypatch.setattr(source_pages, "ROOT", tmp_path)
    (tmp_path / "cache").write_bytes(b"not a folder\n")
    monkeypatch.setenv("NETCL_LITE_CACHE", str(tmp_path / "cache"))
    source_pages._highlighted.cache_clear()
    try:
        with caplog.at_level(logging.WARNING, logger=executed.log.name):
            lines = source_pages._highlighted("a.py", digest)
    finally:
        source_pages._highlighted.cache_clear()
    assert len(lines) == 5 and "value_4" in lines[4]
    assert any(str(tmp_path / "cache") in r.getMessage() for r in caplog.records), caplog.records


@pytest.mark.parametrize("where", ["the cache folder is a file", "the wheel's place is a folder"])
def test_a_wheel_cache_that_cannot_hold_the_wheel_is_named(tmp_path, monkeypatch, where):
    import subprocess

    from site_build import shipped_wheel

    root = tmp_path / "cache"
    monkeypatch.setenv("NETCL_LITE_CACHE", str(root))
    if where == "the cache folder is a file":
        root.write_bytes(b"not a folder\n")
    else:
        (root / "wheel" / shipped_wheel.sources_digest() / shipped_wheel.wheel_name()).mkdir(parents=True)

    def built(args, **kwargs):                  # pip's work, quickly: an empty wheel where it puts one
        out = Path(args[args.index("-w") + 1])
        with zipfile.ZipFile(out / shipped_wheel.wheel_name(), "w") as archive:
            archive.writestr("netcl_lite/__init__.py", "")
        return subprocess.CompletedProcess(args, 0, "", "")

    import zipfile
    from pathlib import Path

    monkeypatch.setattr(shipped_wheel.subprocess, "run", built)
    with pytest.raises(RuntimeError, match=r"cache") as caught:
        shipped_wheel.build_wheel()
    assert str(root) in str(caught.value)


@pytest.mark.parametrize("damage", ["emptied", "truncated", "a text edited"])
def test_a_damaged_corpus_entry_is_parsed_again_not_an_error_nor_trained_on(tmp_path, monkeypatch, damage):
    from netcl_lite import corpus

    lib = tmp_path / "lib"
    lib.mkdir()
    (lib / "mod.py").write_text("'''The text of a module, long enough to cut.'''\n")
    monkeypatch.setenv("NETCL_LITE_CACHE", str(tmp_path / "cache"))
    monkeypatch.delenv(fingerprint.RERUN, raising=False)
    corpus._documents.cache_clear()
    try:
        whole = corpus.stdlib_documents(lib)
        (stored,) = (tmp_path / "cache" / "corpus").iterdir()
        raw = stored.read_bytes()
        stored.write_bytes({"emptied": b"", "truncated": raw[:len(raw) // 2],
                            "a text edited": raw.replace(b"The text", b"The TEXT")}[damage])
        corpus._documents.cache_clear()                          # another process
        assert corpus.stdlib_documents(lib) == whole
    finally:
        corpus._documents.cache_clear()


@pytest.mark.parametrize("damage", ["a folder", "a named pipe", "a link to /dev/zero", "a link to a user's file",
                                    "nested too deep, its digest matching"])
def test_a_corpus_entry_that_is_no_file_of_the_cache_is_read_around_and_replaced_itself(tmp_path, monkeypatch,
                                                                                        damage):
    import hashlib
    import os
    import re

    from netcl_lite import corpus

    lib = tmp_path / "lib"
    lib.mkdir()
    (lib / "mod.py").write_text('"""The text of a module."""\n')
    victim = tmp_path / "notes.txt"
    victim.write_text("a file of the user's\n")
    monkeypatch.setenv("NETCL_LITE_CACHE", str(tmp_path / "cache"))
    monkeypatch.delenv(fingerprint.RERUN, raising=False)
    corpus._documents.cache_clear()
    try:
        whole = corpus.stdlib_documents(lib)
        (stored,) = (tmp_path / "cache" / "corpus").iterdir()
        stored.unlink()
        if damage == "a folder":
            stored.mkdir()
        elif damage == "a named pipe":
            if not hasattr(os, "mkfifo"):
                pytest.skip("named pipes are POSIX's")
            os.mkfifo(stored)
        elif damage == "a link to /dev/zero":
            stored.symlink_to("/dev/zero")
        elif damage == "a link to a user's file":
            stored.symlink_to(victim)
        else:
            body = b"[" * 100_000
            stored.write_bytes(corpus._DIGEST + hashlib.sha256(body).hexdigest().encode() + b"\n" + body)
        corpus._documents.cache_clear()                          # another process
        if damage == "a link to a user's file":                  # no digest: parsed again, as an edit is
            assert corpus.stdlib_documents(lib) == whole
        else:
            with pytest.warns(UserWarning, match="corpus: .*" + re.escape(stored.name)):
                assert corpus.stdlib_documents(lib) == whole
        assert stored.is_file() and not stored.is_symlink()
        assert victim.read_text() == "a file of the user's\n"
        corpus._documents.cache_clear()
        assert corpus.stdlib_documents(lib) == whole             # read back from the replaced entry
    finally:
        corpus._documents.cache_clear()
