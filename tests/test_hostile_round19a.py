"""Issue 58, an independent hostile check, round 19a: reproducers of defects in the compressor's file
helpers and its command line beyond the cases of earlier rounds (tests/test_hostile*.py,
tests/test_compression_hostile.py): a yes/no default read by truthiness, a byte limit too large for a
read, a replaced file that lost its permission bits, buffers the writers could not write.

Each test asserts the correct behaviour; each failed on the code before its fix.
"""

from __future__ import annotations

import os
import stat

import numpy as np
import pytest

from netcl_lite import files


# -- files.env_flag: the default ----------------------------------------------------------------------------

@pytest.mark.parametrize("default", ["no", "false", "0", 0.5, None, np.bool_(True)])
def test_env_flag_refuses_a_default_that_is_not_a_bool(monkeypatch, default):
    """``env_flag(name, default)`` gave ``bool(default)`` for an unset variable, so ``default="no"`` (or
    ``"false"``, ``"0"``) meant True: the opposite of what was written, which the function exists to
    prevent for the variable's own value. A default that is no bool is a TypeError naming it."""
    monkeypatch.delenv("NETCL_LITE_ROUND19A", raising=False)
    with pytest.raises(TypeError, match="default must be a bool"):
        files.env_flag("NETCL_LITE_ROUND19A", default)
    assert files.env_flag("NETCL_LITE_ROUND19A", False) is False
    assert files.env_flag("NETCL_LITE_ROUND19A", True) is True


# -- files.read_regular: a limit past what one read takes ---------------------------------------------------

@pytest.mark.parametrize("limit", [2**36, 2**45, 2**63 - 1, 2**63, 10**30])
def test_read_regular_takes_any_limit_above_the_file(tmp_path, limit):
    """``read_regular(path, max_bytes)`` asked one read for ``max_bytes + 1`` bytes, which allocates
    them first: a generous limit (64 GiB, any "no real limit" a caller passes) was a ``MemoryError``,
    and one of 2**63 or more an ``OverflowError: cannot fit 'int' into an index-sized integer``, for a
    3-byte file well under it. The file's bytes should come back, whatever the limit above them."""
    path = tmp_path / "small.txt"
    path.write_bytes(b"abc")
    assert files.read_regular(path, limit, "a text file") == b"abc"


def test_read_regular_still_refuses_a_file_past_its_limit_or_grown_past_it(tmp_path, monkeypatch):
    path = tmp_path / "big.txt"
    path.write_bytes(b"x" * 10)
    assert files.read_regular(path, 10, "a text file") == b"x" * 10
    with pytest.raises(ValueError, match="10 bytes; a text file is read only up to 9 bytes"):
        files.read_regular(path, 9, "a text file")
    real_fstat = os.fstat                      # the file grows between the check and the read
    monkeypatch.setattr(files.os, "fstat", lambda fd: (path.write_bytes(b"y" * 20), real_fstat(fd))[1]
                        if path.stat().st_size == 10 else real_fstat(fd))
    with pytest.raises(ValueError, match="grew past 15 bytes"):
        files.read_regular(path, 15, "a text file")


# -- files.atomic_write: the replaced file's permission bits ------------------------------------------------

@pytest.mark.parametrize("bits", [0o600, 0o640, 0o444])
def test_atomic_write_keeps_the_permission_bits_of_the_file_it_replaces(tmp_path, bits):
    """``atomic_write`` replaces a file by a new one created with the umask's bits, so a private file
    (0600: a tokenizer, a config, a run's record) became readable by everyone (0644) once saved over.
    The new file should get the bits of the one it replaces (a new name gets the umask's, as before)."""
    path = tmp_path / "private.json"
    path.write_bytes(b"old")
    os.chmod(path, bits)
    files.atomic_write(path, b"new")
    assert path.read_bytes() == b"new"
    assert stat.S_IMODE(os.stat(path).st_mode) == bits
    fresh = tmp_path / "fresh.json"
    files.atomic_write(fresh, b"x")
    umask = os.umask(0)
    os.umask(umask)
    assert stat.S_IMODE(os.stat(fresh).st_mode) == 0o666 & ~umask


def test_atomic_write_through_a_link_keeps_the_target_s_bits(tmp_path):
    target = tmp_path / "target.json"
    target.write_bytes(b"old")
    os.chmod(target, 0o600)
    link = tmp_path / "link.json"
    link.symlink_to(target)
    files.atomic_write(link, b"new")
    assert link.is_symlink() and target.read_bytes() == b"new"
    assert stat.S_IMODE(os.stat(target).st_mode) == 0o600


# -- files.write_new / atomic_write: buffers of any layout --------------------------------------------------

@pytest.mark.parametrize("writer", ["write_new", "atomic_write"])
def test_the_writers_write_a_strided_or_typed_buffer_s_bytes(tmp_path, writer):
    """The writers take a memoryview, but one of a strided array (``memoryview(a[::2])``) ended in
    ``BufferError: memoryview: underlying buffer is not C-contiguous`` from inside the write: no
    TypeError or ValueError naming ``data``. Its bytes, in order, should be written, as for any
    other buffer (a typed one writes its raw bytes, as ``bytes(view)`` gives them)."""
    strided = np.arange(10, dtype=np.uint8)[::2]
    getattr(files, writer)(tmp_path / "strided.bin", memoryview(strided))
    assert (tmp_path / "strided.bin").read_bytes() == strided.tobytes()
    typed = np.arange(4, dtype=np.int32)
    getattr(files, writer)(tmp_path / "typed.bin", memoryview(typed))
    assert (tmp_path / "typed.bin").read_bytes() == typed.tobytes()
