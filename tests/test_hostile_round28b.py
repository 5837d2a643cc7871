"""Hostile round 28b: the compressor's file handling (``netcl_lite.files``).

Covers the error that :func:`netcl_lite.files.atomic_write` raises when the file cannot be made
(its folder is missing, or a symlink points into a missing folder): it must name the path the
caller gave (or the file the link names), never the hidden temporary file it writes first, and
leave no temporary file behind.
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
