"""Hostile round 20b: the build plugin (``site_build``) under a ``mkdocs serve`` rebuild race, and
with unusual inputs. Each test failed on the code before its fix."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

from site_build import dirty_pages


def _one_page(src: Path, dest: Path):
    page = SimpleNamespace(src_uri="page.md", abs_src_path=str(src), abs_dest_path=str(dest))
    return SimpleNamespace(documentation_pages=lambda: [page])


def test_a_file_changed_while_its_page_renders_renders_the_page_again(tmp_path):
    """Under ``mkdocs serve --dirty``, a file a page read as it rendered and that was saved again before
    the render ended (an editor's second save during the build) was recorded with its new digest, while
    the HTML showed the old text: the next build found nothing changed and kept the stale page."""
    data = tmp_path / "data.json"
    data.write_text("1\n")
    src, dest = tmp_path / "page.md", tmp_path / "site" / "page.html"
    src.write_text("# A page\n")
    dest.parent.mkdir()
    files = _one_page(src, dest)
    watch = dirty_pages.DirtyPages(dirty=True)
    watch.invalidate(files)
    watch.rendering("page.md")
    shown = data.read_text()
    data.write_text("2, saved while the page rendered\n")
    watch.rendered()
    dest.write_text(f"<html>{shown}")
    watch.invalidate(files)                     # the rebuild the save started
    assert not dest.exists(), "the page showing the old text was kept"


def test_a_run_cannot_reserve_more_memory_than_a_stated_bound(tmp_path):
    """A snippet that asks for 1 TiB of address space (reserved, never touched: it costs no memory here)
    is refused as a run past a stated memory bound is (``DATA_LIMIT``, from the measured peaks of the
    build's runs: see runner.py), as FILE_LIMIT refuses a file; a run within it still runs."""
    from site_build import runner

    code = (b"import mmap\n"
            b"m = mmap.mmap(-1, 1 << 40, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS | getattr(mmap, 'MAP_NORESERVE', 0x4000))\n"
            b"print('reserved')\n")
    run = runner.run_as_snippet(code, tmp_path, timeout=60, limit=1 << 16)
    assert run.stdout != b"reserved\n", "a run reserved 1 TiB: no memory bound"
    assert b"Cannot allocate memory" in run.stderr or b"MemoryError" in run.stderr, run.stderr
    within = runner.run_as_snippet(b"b = bytearray(256 << 20)\nprint(len(b))\n", tmp_path, timeout=60, limit=1 << 16)
    assert within.stdout == b"268435456\n", within.stderr
