"""Hostile round 28b: the compressor's file handling (``netcl_lite.files``).

Covers the error that :func:`netcl_lite.files.atomic_write` raises when the file cannot be made
(its folder is missing, a symlink points into a missing folder, or the file system is read-only):
it must name the path the caller gave (or the file the link names), never the hidden temporary
file it writes first, and leave no temporary file behind; a cleanup that fails too (EROFS) must
not replace the write's own error.
"""

from __future__ import annotations

import os

import pytest

from netcl_lite.files import atomic_write


def test_atomic_write_into_a_missing_folder_names_the_path_not_the_temporary_file(tmp_path):
    """atomic_write into a missing folder raised FileNotFoundError naming
    '.x.txt.<pid>.<thread>.<random>.tmp', a file the caller never named, instead of the path given."""
    target = tmp_path / "nodir" / "x.txt"
    with pytest.raises(FileNotFoundError) as info:
        atomic_write(target, b"data")
    assert info.value.filename == str(target)
    assert ".tmp" not in str(info.value)
    assert list(tmp_path.iterdir()) == []


def test_atomic_write_through_a_link_into_a_missing_folder_names_the_link_target(tmp_path):
    """atomic_write through a symlink whose target's folder is missing named the temporary file beside
    that target ('.t.<pid>....tmp'), not the target itself."""
    link = tmp_path / "link"
    target = tmp_path / "gone" / "t"
    os.symlink(target, link)
    with pytest.raises(FileNotFoundError) as info:
        atomic_write(link, b"data")
    assert info.value.filename == str(target)
    assert ".tmp" not in str(info.value)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["link"]


def _read_only_tmpfs(tmp_path):
    """A small tmpfs mounted read-only under ``tmp_path`` (root only), or skip."""
    import subprocess

    folder = tmp_path / "ro"
    folder.mkdir()
    if os.geteuid() != 0 or subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k,ro", "tmpfs", str(folder)],
                                           capture_output=True).returncode:
        pytest.skip("needs root and mount to make a read-only file system")
    return folder


def test_atomic_write_on_a_read_only_file_system_says_so_naming_the_path(tmp_path):
    """atomic_write on a read-only file system raised, from its cleanup, a second EROFS error naming the
    temporary file (removing a name that was never made fails with EROFS there too, not ENOENT), chained
    over the real one: the caller saw the hidden temporary name, not the path it gave."""
    import subprocess

    folder = _read_only_tmpfs(tmp_path)
    try:
        target = folder / "a.txt"
        with pytest.raises(OSError) as info:
            atomic_write(target, b"data")
        assert info.value.filename == str(target)
        assert ".tmp" not in str(info.value)
        assert "Read-only" in str(info.value) or info.value.errno == 30
    finally:
        subprocess.run(["umount", str(folder)], capture_output=True)
