"""Issue 58, an independent hostile check, round 23b: a build-output marker or include whose path the
operating system refuses (a NUL byte, a name longer than the file system allows) failed with a bare
``ValueError: embedded null byte`` or ``OSError: [Errno 36] File name too long`` that named no page;
every build error names the page. Each test failed on the code before its fix.
"""

from __future__ import annotations

import pytest

from site_build import includes


@pytest.mark.parametrize("path", ["snippets/a\x00b.py", "snippets/" + "a" * 300 + ".py",
                                  "snippets/" + "a" * 300 + "/b.py"])
def test_a_marker_path_the_system_refuses_is_named_with_its_page(path):
    with pytest.raises((includes.PathError, FileNotFoundError)) as caught:
        includes.marker_path(path, "docs/p.md:3")
    assert str(caught.value).startswith("docs/p.md:3: <!-- build-output: snippets/a"), caught.value


@pytest.mark.parametrize("path", ["snippets/a\x00b.py", "netcl_lite/" + "a" * 300 + ".py"])
def test_an_excerpt_path_the_system_refuses_is_named_with_its_page(path):
    from site_build import copyable

    with pytest.raises((includes.PathError, FileNotFoundError)) as caught:
        copyable.section_lines(path, None, "docs/p.md:4")
    assert str(caught.value).startswith("docs/p.md:4: "), caught.value
