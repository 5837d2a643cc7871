"""Round 31b, an independent hostile check of how the build plugin runs snippets and keeps what they
made: the runner, the execution cache, the shipped wheel and the page events."""

from __future__ import annotations

import os
import stat

import pytest

from site_build import plugin, shipped_wheel


def test_a_served_site_makes_its_wheel_again_when_a_wheel_file_becomes_executable(tmp_path, monkeypatch):
    """Hatchling writes each file's mode into the wheel (644 or 755 as the owner's executable bit
    says), and the wheel's cache key covers it (:func:`shipped_wheel.sources_digest`); but under
    ``mkdocs serve`` the plugin reused the wheel of the last build while the files it is made from kept
    their bytes, so after ``chmod +x`` on a library file the site went on shipping the wheel with the
    old mode, which a fresh build would not."""
    source = tmp_path / "module.py"
    source.write_text("x = 1\n", encoding="utf-8")
    made = []

    def site_files():
        made.append(shipped_wheel._recorded(source, True))
        return made[-1]

    monkeypatch.setattr(shipped_wheel, "wheel_sources", lambda: [source])
    monkeypatch.setattr(shipped_wheel, "site_files", site_files)
    build = plugin.SiteBuild()

    def wheel():
        return build.inputs.value("wheel", shipped_wheel.wheel_sources(), shipped_wheel.site_files)

    assert wheel().endswith("644")
    assert wheel().endswith("644") and len(made) == 1            # unchanged: reused
    os.chmod(source, os.stat(source).st_mode | stat.S_IXUSR)
    assert wheel().endswith("755"), "the wheel of the file's old mode was reused"
