"""The n-gram's primer counts kept on disk (``ngram._stored_counts``): the command line counts its
default primer (Chapter 9's training text) in every process, so a long primer's counts are stored
under the cache folder, bound to a key of the counting code, the primer, the vocabulary and the
orders. An entry is only a shortcut: whatever is at its name, the counts are the ones counted."""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path

import numpy as np
import pytest

from netcl_lite import ngram

VOCAB = 300


@pytest.fixture
def cache(tmp_path, monkeypatch):
    """A fresh cache folder, primers of 64 ids and up stored, and no counts kept in this process."""
    monkeypatch.setenv("NETCL_LITE_CACHE", str(tmp_path / "cache"))
    monkeypatch.delenv("NETCL_LITE_RERUN", raising=False)
    monkeypatch.setattr(ngram, "STORED_MIN_IDS", 64)
    monkeypatch.setattr(ngram, "_STORED_READ", True)
    _unkept()
    yield tmp_path / "cache"
    _unkept()


def _unkept() -> None:
    """No counts kept in this process (as in a new one), stored ones still read."""
    with ngram._COUNTED_LOCK:
        ngram._COUNTED.clear()


def _primer(seed: int = 0, size: int = 5000) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return (rng.integers(0, 40, size) * 7 % VOCAB).astype(np.int64)


def _counted(primer, orders: int = ngram.ORDERS):
    _unkept()
    return ngram._primed_counts(primer, VOCAB, orders)


def _fresh(primer, orders: int = ngram.ORDERS):
    """The counts of ``primer`` with no cache at all (a primer too short to be stored)."""
    with pytest.MonkeyPatch.context() as m:
        m.setattr(ngram, "STORED_MIN_IDS", 1 << 40)
        return _counted(primer, orders)


def _same(a, b) -> None:
    assert a[0].dtype == b[0].dtype and np.array_equal(a[0], b[0])
    for field in dataclasses.fields(a[1]):
        x, y = getattr(a[1], field.name), getattr(b[1], field.name)
        assert x.dtype == y.dtype and np.array_equal(x, y), field.name


def _entries(cache) -> list:
    return sorted((cache / "ngram").iterdir()) if (cache / "ngram").is_dir() else []


def test_stored_counts_are_the_counted_ones_and_are_read_back(cache, monkeypatch):
    primer = _primer()
    first = _counted(primer)
    [entry] = _entries(cache)
    _same(first, _fresh(primer))
    calls = []
    monkeypatch.setattr(ngram, "_prime", lambda *a: calls.append(a))       # a hit counts nothing
    _same(_counted(primer), first)
    assert calls == [] and _entries(cache) == [entry]


def test_another_primer_vocabulary_or_order_is_another_entry(cache):
    primer = _primer()
    _counted(primer)
    _counted(_primer(seed=1))
    _counted(primer, orders=3)
    assert len(_entries(cache)) == 3
    _same(_counted(primer, orders=3), _fresh(primer, orders=3))


def test_a_primer_shorter_than_the_bound_is_never_stored(cache, monkeypatch):
    monkeypatch.setattr(ngram, "STORED_MIN_IDS", 10_000)
    _counted(_primer(size=9_999))
    assert _entries(cache) == []


@pytest.mark.parametrize("damage", ["emptied", "truncated", "a byte of its arrays edited", "its digest edited",
                                    "another primer's entry under this name", "a folder", "a named pipe",
                                    "a link to /dev/zero", "unreadable"])
def test_a_damaged_or_foreign_entry_is_a_miss_and_the_counts_are_counted(cache, damage, monkeypatch):
    primer, other = _primer(), _primer(seed=1)
    _counted(other)
    [foreign] = _entries(cache)
    _counted(primer)
    [entry] = [p for p in _entries(cache) if p != foreign]
    raw = entry.read_bytes()
    entry.unlink()
    if damage == "emptied":
        entry.write_bytes(b"")
    elif damage == "truncated":
        entry.write_bytes(raw[:len(raw) // 2])
    elif damage == "a byte of its arrays edited":
        entry.write_bytes(raw[:-100] + bytes([raw[-100] ^ 1]) + raw[-99:])
    elif damage == "its digest edited":
        head, _, body = raw.partition(b"\n")
        entry.write_bytes(head[:-1] + (b"0" if head[-1:] != b"0" else b"1") + b"\n" + body)
    elif damage == "another primer's entry under this name":      # matches its digest, bound to its own key
        entry.write_bytes(foreign.read_bytes())
    elif damage == "a folder":
        (entry / "inside").mkdir(parents=True)
    elif damage == "a named pipe":
        os.mkfifo(entry)
    elif damage == "a link to /dev/zero":
        entry.symlink_to("/dev/zero")
    else:
        entry.write_bytes(raw)
        entry.chmod(0)
        if os.access(entry, os.R_OK):                # root reads mode 000: refuse the read as the system would
            from netcl_lite import files

            real = files.read_regular

            def refusing(path, *args, **kwargs):
                if Path(path) == entry:
                    raise PermissionError(13, "Permission denied", str(path))
                return real(path, *args, **kwargs)
            monkeypatch.setattr(files, "read_regular", refusing)
    _same(_counted(primer), _fresh(primer))
    if damage not in ("a folder", "unreadable"):      # replaced by the counts again (a folder is left alone)
        assert entry.is_file() and not entry.is_symlink() and entry.read_bytes() == raw
    assert not [p for p in (cache / "ngram").iterdir() if p.name.endswith(".tmp")]


@pytest.mark.parametrize("setting", ["a file", "relative", "read-only"])
def test_a_cache_that_cannot_be_used_still_gives_the_counts(tmp_path, monkeypatch, setting):
    monkeypatch.setattr(ngram, "STORED_MIN_IDS", 64)
    monkeypatch.setattr(ngram, "_STORED_READ", True)
    if setting == "a file":
        (tmp_path / "cache").write_bytes(b"")
        monkeypatch.setenv("NETCL_LITE_CACHE", str(tmp_path / "cache"))
    elif setting == "relative":
        monkeypatch.setenv("NETCL_LITE_CACHE", "relative/cache")
    else:
        (tmp_path / "cache" / "ngram").mkdir(parents=True)
        (tmp_path / "cache" / "ngram").chmod(0o500)
        monkeypatch.setenv("NETCL_LITE_CACHE", str(tmp_path / "cache"))
    primer = _primer()
    try:
        _same(_counted(primer), _fresh(primer))
    finally:
        _unkept()
        if setting == "read-only":
            (tmp_path / "cache" / "ngram").chmod(0o700)


def test_rerun_counts_again_and_replaces_the_entry(cache, monkeypatch):
    primer = _primer()
    _counted(primer)
    [entry] = _entries(cache)
    raw = entry.read_bytes()
    entry.write_bytes(b"stale")
    monkeypatch.setenv("NETCL_LITE_RERUN", "1")
    calls = []
    real = ngram._prime
    monkeypatch.setattr(ngram, "_prime", lambda *a: calls.append(1) or real(*a))
    _same(_counted(primer), _fresh(primer))
    assert calls and entry.read_bytes() == raw


def test_after_forget_primed_counts_every_call_counts_its_primer(cache, monkeypatch):
    """A timing forgets the counts before each call (a primed classical coder reads its primer on
    every call): the call counts again rather than read the stored counts."""
    primer = _primer()
    _counted(primer)
    calls = []
    real = ngram._prime
    monkeypatch.setattr(ngram, "_prime", lambda *a: calls.append(1) or real(*a))
    _counted(primer)
    assert calls == []
    ngram.forget_primed_counts()
    ngram._primed_counts(primer, VOCAB, ngram.ORDERS)
    assert calls == [1]
