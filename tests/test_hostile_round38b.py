"""Round 38b: hostile cache entries and settings for the build's caches and the compressor's command line,
each test failing on the code it was written against.

1. A named pipe left at the name of an entry of the build's other caches (highlighted sources, compiled
   templates, a dirty build's record, the shipped wheel) hangs the build for ever: each is read with
   ``Path.read_bytes`` / ``read_text``, which opens the pipe and waits for a writer. The execution cache
   (``store.lookup`` looks with ``is_file`` first) and the stored corpus (``files.read_regular``) read
   around one, and ``store.write_entry`` promises to replace a pipe left there -- but these readers never
   get as far as the write.
2. The key joins the NETCL_LITE_* / POCL_* variables one a line, so a value holding a line break that
   reads as another variable keys exactly as that other variable set on its own: two different settings,
   one key, and the cache serves one's results for the other.
3. ``capstone.split_ids`` loads a run folder's ``ids-validation.npy`` / ``ids-test.npy`` with no check at
   all: an emptied entry fails the measures with NumPy's error, and one edited or copied from another run
   is taken as the text's ids, so Chapter 9's numbers are computed from the wrong tokens (``ids.npz``, kept
   beside it, carries a digest and is encoded again when it does not match).
"""

from __future__ import annotations

import subprocess
import sys

import pytest

from cli_model import environment


# --- 1. a named pipe at a build cache's entry ----------------------------------------------------------------

#: each script makes a named pipe at one cache's entry (under the cache folder argv[1]) and then reads
#: that cache as the build does; it prints "read around" when the read came back
_PIPE_AT_ENTRY = {
    "highlighted source": """
import hashlib, os, sys
from pathlib import Path
os.environ["NETCL_LITE_CACHE"] = sys.argv[1]
from site_build import source_pages
from site_build.paths import ROOT
rel = "netcl_lite/checks.py"
digest = hashlib.sha256((ROOT / rel).read_bytes()).hexdigest()
whole = source_pages._highlighted(rel, digest)
(entry,) = Path(sys.argv[1], "source-pages").rglob("*.html")
entry.unlink()
os.mkfifo(entry)
source_pages._highlighted.cache_clear()                 # another build
assert source_pages._highlighted(rel, digest) == whole
print("read around")
""",
    "compiled template": """
import os, sys
from pathlib import Path
import jinja2
from site_build.templates import use_bytecode_cache
env = use_bytecode_cache(jinja2.Environment(loader=jinja2.DictLoader({"page.html": "Hello {{ name }}"})),
                         Path(sys.argv[1]))
bucket = env.bytecode_cache.get_bucket(env, "page.html", None, "Hello {{ name }}")
os.mkfifo(env.bytecode_cache._get_cache_filename(bucket))
assert env.get_template("page.html").render(name="you") == "Hello you"
print("read around")
""",
    "dirty build's record": """
import os, sys
from pathlib import Path
os.environ["NETCL_LITE_CACHE"] = sys.argv[1]
from site_build.dirty_pages import DirtyPages
site = Path(sys.argv[1]) / "site"
site.mkdir(parents=True)
record = DirtyPages.record_path(site)
record.parent.mkdir(parents=True)
os.mkfifo(record)
DirtyPages(dirty=True)._load(site)
print("read around")
""",
    "shipped wheel": """
import os, sys
from pathlib import Path
from site_build import shipped_wheel
wheel = Path(sys.argv[1]) / "wheel" / "0123" / "netcl_lite-0-py3-none-any.whl"
wheel.parent.mkdir(parents=True)
os.mkfifo(wheel)
assert shipped_wheel.intact(wheel) is False
print("read around")
""",
}


@pytest.mark.parametrize("cache", sorted(_PIPE_AT_ENTRY))
def test_a_named_pipe_at_a_build_cache_s_entry_is_read_around_not_waited_on(tmp_path, cache):
    """A named pipe at the name of an entry of the highlighting cache (``source_pages._highlighted``), the
    compiled templates' cache (``CheckedBytecodeCache.load_bytecode``), a dirty build's record
    (``DirtyPages._load``) or the stored wheel (``shipped_wheel.intact``) is opened with
    ``Path.read_bytes`` / ``read_text`` and waited on for ever: the build hangs with no message. The
    execution cache and the stored corpus read around a pipe (round 25b), and ``store.write_entry``, which
    writes these entries, says a pipe left at the name is replaced. Right: the entry read as no entry (a
    miss, a template compiled again, no record, a wheel that is not intact), never waited on."""
    try:
        run = subprocess.run([sys.executable, "-c", _PIPE_AT_ENTRY[cache], str(tmp_path / "cache")],
                             cwd=tmp_path, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=12,
                             env=environment(NETCL_LITE_RERUN=None))
    except subprocess.TimeoutExpired:
        pytest.fail(f"reading the {cache} cache waits on the named pipe at its entry's name (still waiting "
                    f"after 12 s)")
    assert run.returncode == 0 and "read around" in run.stdout, run.stderr[-2000:]


# --- 2. a variable whose value holds a line break keys as two variables ---------------------------------------

_KEY = "from netcl_lite import fingerprint; print(fingerprint.key('print(1)\\n'))"


def _key_under(variables: dict) -> str:
    """``fingerprint.key`` of one item in a new process whose NETCL_LITE_* and POCL_* variables are
    ``variables`` alone."""
    import os

    env = {k: v for k, v in environment().items() if not k.startswith(("NETCL_LITE_", "POCL_"))}
    env.update(variables)
    run = subprocess.run([sys.executable, "-c", _KEY], env=env, capture_output=True, text=True, timeout=60,
                         stdin=subprocess.DEVNULL, cwd=os.getcwd())
    assert run.returncode == 0, run.stderr[-2000:]
    return run.stdout.strip()


def test_a_variable_whose_value_holds_a_line_break_keys_apart_from_two_variables():
    """``fingerprint.environment`` ends with ``result_variables()`` joined by line breaks, each
    ``NAME=value`` as it is: ``NETCL_LITE_ZA="1\\nNETCL_LITE_ZB=2"`` (one variable whose value holds a line
    break, which any shell can export) gives the very text of ``NETCL_LITE_ZA=1`` and ``NETCL_LITE_ZB=2``
    set apart, so both settings share every key of the execution cache, the stored runs and the
    compressor's default model: what one computed is served for the other. (Likewise for a ``POCL_*``
    value, such as build flags.) Right: every setting keyed apart -- each variable's name and value
    delimited (their lengths, or escaped), or a value holding a line break refused naming it."""
    one = _key_under({"NETCL_LITE_ZA": "1\nNETCL_LITE_ZB=2"})
    two = _key_under({"NETCL_LITE_ZA": "1", "NETCL_LITE_ZB": "2"})
    assert one != two, "one variable holding a line break has the key of two variables"


# --- 3. a run's stored validation and test ids are loaded unchecked -------------------------------------------

@pytest.mark.parametrize("damage", ["emptied", "another run's ids"])
def test_a_run_s_stored_split_ids_that_do_not_match_are_encoded_again(tmp_path, small, damage):
    """``split_ids(run, "validation")`` keeps the encoded validation text as ``ids-validation.npy`` in the
    run's folder and, once it is there, returns ``np.load`` of it unchecked. Emptied (a full disk, an
    interrupted copy of the cache), it makes ``measures`` fail with "EOFError: No data left in file";
    replaced by other ids (a file copied from another run, edited), they are returned as this text's
    tokens and every measure of Chapter 9 (the model's bits per byte, the n-gram baselines) is computed
    from them, then stored in ``measures.json`` as this run's. ``_stored_ids`` keeps ``ids.npz`` with a
    digest tied to the run and encodes the text again when it does not match. Right: the same for these
    files -- the ids of the text returned, the damaged entry replaced."""
    import types

    import numpy as np

    from netcl_lite import capstone

    text = "the river and the road; the quick brown fox jumps over the road\n" * 4
    run = types.SimpleNamespace(directory=tmp_path, tokenizer=small,
                                data=types.SimpleNamespace(validation_text=text, test_text=text))
    right = capstone.split_ids(run, "validation")
    stored = tmp_path / "ids-validation.npy"
    assert stored.is_file() and np.array_equal(np.load(stored), right)
    if damage == "emptied":
        stored.write_bytes(b"")
    else:
        np.save(stored, right[::-1].copy())               # ids of another text, as another run's are
    got = capstone.split_ids(run, "validation")
    assert np.array_equal(got, right), "the stored ids are not the text's"
