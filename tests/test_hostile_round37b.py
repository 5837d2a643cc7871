"""Round 37b: hostile settings for the compressor's command line and the execution cache, each test failing
on the code it was written against.

1. NETCL_LITE_CACHE naming a regular file: the stored corpus's read fails with ENOTDIR and is taken for a
   damaged cache entry, so a UserWarning (with a line of the library's source) says the entry will be
   replaced before the real error; under PYTHONWARNINGS=error that warning is the whole message, blaming
   the entry instead of the cache folder.
2. A NETCL_LITE_* or POCL_* variable whose value is not UTF-8 makes every key a UnicodeEncodeError (a
   ValueError that names no variable); the command line blames the default model for it.
3. A stored corpus copied under another key's name is returned as that library's documents (its digest
   covers the body only).
4. A trained run folder copied under another key is loaded as that key's run (done.json names no key).
5. The execution cache (site_build.store) writes an entry through a symlink at its name, overwriting the
   file the link names.
"""

from __future__ import annotations

import re
import subprocess
import sys

import pytest

from cli_model import TEXT, environment, seed_corpus


# --- 1. NETCL_LITE_CACHE naming a file --------------------------------------------------------------------

@pytest.mark.parametrize("warnings_setting", [None, "error"])
def test_a_cache_setting_that_names_a_file_is_named_without_a_warning_about_a_damaged_entry(
        tmp_path, queue, warnings_setting):
    """``NETCL_LITE_CACHE=<a regular file>`` with ``--model``: reading the stored corpus fails with "Not a
    directory", which ``corpus._stored_documents`` takes for a damaged entry. Standard error then shows a
    Python warning (file, line number and the library's source line) saying that
    ``<file>/corpus/<key>.json`` "cannot be read ...; reading the library again and replacing that cache
    entry" -- which never happens -- before the real message about the cache folder. Under
    ``PYTHONWARNINGS=error`` that warning becomes the only message: the cache folder is not named as the
    fault, and the advice (the entry will be replaced) is wrong. Right: one message naming the cache
    folder (NETCL_LITE_CACHE), with no warning about an entry that is no fault of its own."""
    from cli_model import write_model_folder

    folder = write_model_folder(queue, tmp_path / "model")
    cache = tmp_path / "cache-file"
    cache.write_text("not a folder\n")
    src = tmp_path / "in.txt"
    src.write_text(TEXT, encoding="utf-8")
    run = subprocess.run([sys.executable, "-m", "netcl_lite.compression", "compress", str(src),
                          str(tmp_path / "out"), "--model", str(folder)], cwd=tmp_path, stdin=subprocess.DEVNULL,
                         capture_output=True, text=True, timeout=120,
                         env=environment(NETCL_LITE_CACHE=str(cache), PYTHONWARNINGS=warnings_setting))
    assert run.returncode == 1 and "Traceback" not in run.stderr, run.stderr[-2000:]
    assert "replacing that cache entry" not in run.stderr, run.stderr[-2000:]
    assert "Warning" not in run.stderr, run.stderr[-2000:]
    last = run.stderr.strip().splitlines()[-1]
    assert f"cache folder {cache}" in last or "NETCL_LITE_CACHE" in last, last
    assert not (tmp_path / "out").exists()


# --- 2. a variable of the key whose value is not UTF-8 ------------------------------------------------------

@pytest.mark.parametrize("name", ["NETCL_LITE_ZZZ_ROUND37B", "POCL_ZZZ_ROUND37B"])
def test_a_key_variable_that_is_not_utf8_is_keyed_or_named(monkeypatch, queue, name):
    """``fingerprint.result_variables`` puts every NETCL_LITE_* / POCL_* variable into the key as text; a
    value that is not UTF-8 (os.environ holds it with surrogate escapes, as any byte string a shell can
    export) makes ``key`` raise ``UnicodeEncodeError: 'utf-8' codec can't encode character '\\udcff' ...:
    surrogates not allowed``, which names no variable. The command line takes that ValueError for the
    default model's fault ("the default model (Chapter 9's): 'utf-8' codec can't encode ..."), and the
    build's execution cache fails alike. Right: the variable keyed by its bytes, or refused naming it."""
    from netcl_lite import fingerprint

    monkeypatch.setenv(name, "a\udcff")
    try:
        got = fingerprint.key("print(1)\n", shared=None)
    except ValueError as exc:
        assert name in str(exc), f"the error names no variable: {exc}"
        return
    assert re.fullmatch(r"[0-9a-f]{24}", got)


#: the command line with the default model, its training replaced by an exit with status 7: a run
#: that gets as far as training has keyed every setting
_UP_TO_TRAINING = """
import runpy, sys
from netcl_lite import capstone
def train_into(*args, **kwargs):
    sys.exit(7)
capstone._train_into = train_into
sys.argv = ["compression", "compress", sys.argv[1], sys.argv[2]]
runpy.run_module("netcl_lite.compression", run_name="__main__", alter_sys=True)
"""


def test_the_command_line_keys_a_variable_that_is_not_utf8_and_goes_on(tmp_path, corpus_cache):
    """The same variable on the command line, with the default model: the message said "the default
    model (Chapter 9's): 'utf-8' codec can't encode character '\\udcff' in position ...", blaming the
    model for a setting. Right: the variable keyed by its bytes and the command gone on, here as far as
    training the default model in the fresh cache (replaced by an exit, so nothing is trained)."""
    src = tmp_path / "in.txt"
    src.write_text(TEXT, encoding="utf-8")
    seed_corpus(tmp_path / "cache", corpus_cache)
    env = environment(NETCL_LITE_CACHE=str(tmp_path / "cache"))
    env = {k.encode(): v.encode() for k, v in env.items()}
    env[b"NETCL_LITE_ZZZ_ROUND37B"] = b"a\xff"
    run = subprocess.run([sys.executable, "-c", _UP_TO_TRAINING, str(src), str(tmp_path / "out")], cwd=tmp_path,
                         stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=300, env=env)
    assert run.returncode == 7 and "Traceback" not in run.stderr, (run.returncode, run.stderr[-2000:])


# --- 3. a stored corpus copied under another key ------------------------------------------------------------

def test_a_stored_corpus_copied_under_another_key_is_a_miss_not_the_other_library_s_documents(tmp_path,
                                                                                              monkeypatch):
    """A stored corpus's first line is a SHA-256 of its body alone, not of the key it is stored under: an
    entry copied (or renamed) to another key's name -- another Python version's library, another folder --
    matches its digest and is returned as that library's documents. The execution cache had the same
    fault (round 33c) and now ties each entry's digest to its key. Right: the entry read for another key is
    a miss and the library at hand is read again."""
    from netcl_lite import corpus

    monkeypatch.setenv("NETCL_LITE_CACHE", str(tmp_path / "cache"))
    monkeypatch.delenv("NETCL_LITE_RERUN", raising=False)
    a, b = tmp_path / "lib_a", tmp_path / "lib_b"
    for root, word in ((a, "Alpha"), (b, "Beta")):
        root.mkdir()
        (root / "mod.py").write_text(f'"""{word} module: the text of library {word}."""\n', encoding="utf-8")
    corpus._documents.cache_clear()
    try:
        assert "Alpha" in corpus.stdlib_documents(a)["mod.py"]
        stored = set((tmp_path / "cache" / "corpus").iterdir())
        assert "Beta" in corpus.stdlib_documents(b)["mod.py"]
        (entry_b,) = set((tmp_path / "cache" / "corpus").iterdir()) - stored
        (entry_a,) = stored
        entry_b.write_bytes(entry_a.read_bytes())          # A's entry under B's name
        corpus._documents.cache_clear()
        got = corpus.stdlib_documents(b)["mod.py"]
    finally:
        corpus._documents.cache_clear()
    assert "Beta" in got, f"library B's documents are library A's: {got!r}"


# --- 4. a trained run copied under another key --------------------------------------------------------------

@pytest.mark.parametrize("recorded", ["another key", "no key"])
def test_a_trained_run_copied_under_another_key_is_trained_again_not_loaded(tmp_path, monkeypatch, queue,
                                                                            corpus_cache, recorded):
    """``capstone.run`` loads ``<cache>/capstone/<key>`` when its files match the digests in its
    ``done.json``; nothing there said which key (recipe, text, library, device, settings) the run was
    trained for. A run folder copied or renamed under another key -- a cache carried to another machine or
    library version, an old run restored under the new name -- passed the check and was loaded as the
    default model of a recipe it was never trained with. The execution cache refuses such an entry (round
    33c); here the run should be a miss (trained again), as a run whose files were edited is.

    The run is made up: every file of a run, and a ``done.json`` whose digests match them but which
    records another key (or none, as runs did before they recorded theirs)."""
    import json

    from netcl_lite import capstone

    seed_corpus(tmp_path / "cache", corpus_cache)
    monkeypatch.setenv("NETCL_LITE_CACHE", str(tmp_path / "cache"))
    monkeypatch.delenv("NETCL_LITE_RERUN", raising=False)
    d = capstone.data()
    key = capstone.run_key(queue, d.train_text + "\0" + d.held_out_text)
    folder = tmp_path / "cache" / "capstone" / key
    folder.mkdir(parents=True)
    for name in capstone.RUN_FILES:
        (folder / name).write_text(f"{name} of a run trained elsewhere\n", encoding="utf-8")
    record = {"files": {name: capstone._sha256(folder / name) for name in capstone.RUN_FILES}}
    if recorded == "another key":
        record["key"] = "0" * len(key)
    (folder / "done.json").write_text(json.dumps(record), encoding="utf-8")
    problem = capstone._check_run_folder(folder, key)
    assert problem is not None and "key" in problem, problem
    assert capstone._check_run_folder(folder) is None       # without a key to check, its digests match

    class Trained(Exception):
        pass

    def train_into(*args, **kwargs):
        raise Trained

    monkeypatch.setattr(capstone, "_train_into", train_into)
    with pytest.warns(UserWarning, match="key"), pytest.raises(Trained):
        capstone.run(queue, progress=False)


# --- 5. the execution cache writes through a symlink at an entry's name ----------------------------------

def test_an_execution_cache_entry_that_is_a_symlink_never_overwrites_the_file_it_names(tmp_path, monkeypatch):
    """``site_build.store.store`` writes an entry with ``files.atomic_write``, which follows a symlink at
    the name and replaces the file the link names ("a symlink keeps pointing at the file"): a link left at
    ``<cache>/executed/<kind>/<key>`` (a shared or restored cache) makes storing a snippet's output
    overwrite whatever file it names elsewhere -- a user's file outside the cache -- with the entry. The
    library's other caches replace the name itself (``files.replace_entry``: the lock file and the stored
    corpus, rounds 33d). Right: the link itself is replaced (or the entry refused), the file it names left
    as it was."""
    from site_build import store

    monkeypatch.setenv("NETCL_LITE_CACHE", str(tmp_path / "cache"))
    monkeypatch.delenv("NETCL_LITE_RERUN", raising=False)
    victim = tmp_path / "notes.txt"
    victim.write_bytes(b"precious notes\n")
    entry = tmp_path / "cache" / "executed" / "build_output" / "abc123"
    entry.parent.mkdir(parents=True)
    entry.symlink_to(victim)
    store.store("build_output", "abc123", b"model: 1.234 bits per byte\n")
    assert victim.read_bytes() == b"precious notes\n", "the file the entry's link names was overwritten"
    assert store.lookup("build_output", "abc123") in (None, b"model: 1.234 bits per byte\n")


def test_the_dirty_build_s_record_that_is_a_symlink_never_overwrites_the_file_it_names(tmp_path, monkeypatch):
    """The same for the other writers of cache entries: ``DirtyPages.save`` wrote the record of a dirty
    build (``<cache>/dirty-pages/<site>.json``) with ``atomic_write``, through a symlink at its name.
    Right: the link itself replaced by the record, the file it names left as it was."""
    from mkdocs.structure.files import Files

    from site_build.dirty_pages import DirtyPages

    monkeypatch.setenv("NETCL_LITE_CACHE", str(tmp_path / "cache"))
    victim = tmp_path / "notes.txt"
    victim.write_bytes(b"precious notes\n")
    site = tmp_path / "site"
    site.mkdir()
    record = DirtyPages.record_path(site)
    record.parent.mkdir(parents=True)
    record.symlink_to(victim)
    DirtyPages(dirty=True).save(Files([]), site)
    assert victim.read_bytes() == b"precious notes\n", "the file the record's link names was overwritten"
    assert not record.is_symlink() and record.read_bytes() == b'{"pages": {}}'


def test_a_compiled_template_s_entry_that_is_a_dangling_symlink_never_makes_the_file_it_names(tmp_path):
    """``CheckedBytecodeCache.dump_bytecode`` wrote a compiled template with ``atomic_write``: a link at the
    entry's name that names no file yet (read as no entry) made the build create that file, wherever it is,
    holding the entry. Right: the link itself replaced, nothing made outside the cache."""
    import jinja2

    from site_build.templates import use_bytecode_cache

    env = use_bytecode_cache(jinja2.Environment(loader=jinja2.DictLoader({"page.html": "Hello {{ name }}"})),
                             tmp_path / "cache")
    bucket = env.bytecode_cache.get_bucket(env, "page.html", None, "Hello {{ name }}")
    entry = env.bytecode_cache._get_cache_filename(bucket)
    elsewhere = tmp_path / "elsewhere.txt"
    import os

    os.symlink(elsewhere, entry)
    assert env.get_template("page.html").render(name="you") == "Hello you"
    assert not os.path.lexists(elsewhere), "the build made the file that the entry's link names"
    assert not os.path.islink(entry)


def test_a_stored_corpus_of_the_older_format_is_parsed_again_and_replaced_without_a_warning(tmp_path, monkeypatch):
    """The stored corpus's format changed (its key now goes under the digest): an entry a previous
    version wrote, which matches its own digest, must be a quiet miss -- a warning per old entry once
    failed MkDocs' strict build when a warm cache outlived a format change -- and be replaced."""
    import hashlib
    import json
    import warnings

    from netcl_lite import corpus

    monkeypatch.setenv("NETCL_LITE_CACHE", str(tmp_path / "cache"))
    monkeypatch.delenv("NETCL_LITE_RERUN", raising=False)
    lib = tmp_path / "lib"
    lib.mkdir()
    (lib / "mod.py").write_text('"""The text of a module."""\n', encoding="utf-8")
    corpus._documents.cache_clear()
    try:
        whole = corpus.stdlib_documents(lib)
        (stored,) = (tmp_path / "cache" / "corpus").iterdir()
        body = json.dumps([["mod.py", "An older version's text."]]).encode()
        stored.write_bytes(b"netcl-lite corpus sha256=" + hashlib.sha256(body).hexdigest().encode() + b"\n" + body)
        corpus._documents.cache_clear()
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            assert corpus.stdlib_documents(lib) == whole
    finally:
        corpus._documents.cache_clear()
    assert stored.read_bytes().startswith(corpus._DIGEST)


@pytest.mark.parametrize("where", ["a loop of links", "a name too long"])
def test_a_cache_folder_that_cannot_be_reached_is_no_damaged_corpus_entry(tmp_path, monkeypatch, where):
    """As the first test, for the other errors of a path that never reaches the entry (ELOOP,
    ENAMETOOLONG): the error itself, naming the cache's path, and no warning about a damaged entry."""
    import warnings

    from netcl_lite import corpus

    if where == "a loop of links":
        cache = tmp_path / "loop"
        cache.symlink_to(cache)
    else:
        cache = tmp_path / ("x" * 300)
    monkeypatch.setenv("NETCL_LITE_CACHE", str(cache))
    monkeypatch.delenv("NETCL_LITE_RERUN", raising=False)
    lib = tmp_path / "lib"
    lib.mkdir()
    (lib / "mod.py").write_text('"""The text of a module."""\n', encoding="utf-8")
    corpus._documents.cache_clear()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            with pytest.raises(OSError) as caught:
                corpus.stdlib_documents(lib)
    finally:
        corpus._documents.cache_clear()
    assert str(cache) in str(caught.value), caught.value
