"""kernel_source reads a kernel's quoted includes as the C preprocessor does: after line splicing, with
comments as blanks (outside string literals), a directive being a line whose first token is ``#``;
nested includes beside the file that includes them; ``#pragma once``; nothing outside the kernel folder.
The compiler gets the text with every include written in, so anything read differently here is a
kernel the compiler never sees as written. No device needed: these read text only."""

from __future__ import annotations

import re

import pytest

from netcl_lite import fingerprint
from netcl_lite.core import kernels

KERNEL = "__kernel void k(__global float *x) { x[0] = TWO; }\n"


@pytest.fixture
def folder(tmp_path, monkeypatch):
    """An empty kernel folder holding ``common.h`` (``#define TWO 2``), which the loader reads from."""
    root = tmp_path / "kernels"
    root.mkdir()
    (root / "common.h").write_text("#define TWO 2\n", encoding="utf-8")
    monkeypatch.setattr(kernels, "kernel_dir", lambda: root)
    return root


def source(folder, text: str, name: str = "a.cl") -> str:
    (folder / name).write_text(text, encoding="utf-8")
    return kernels.kernel_source(name)


@pytest.mark.parametrize("directive", [
    '#include "common.h"',
    '#  include   "common.h"',
    '  #\tinclude "common.h"',
    '# /* a comment */ include /* another */ "common.h"',
    '#include \\\n"common.h"',                                   # a line spliced by a backslash
    '#inc\\\nlude "common.h"',                                   # splicing comes before reading words
    '#include "common.h" /* over\n two lines */',
    '#include "common.h" // a line comment',
    '/* a comment\n   before it */ #include "common.h"',         # a comment is one blank: the line starts here
], ids=["plain", "spaces", "indented", "comments-inside", "spliced", "spliced-word", "comment-over-lines",
        "line-comment", "comment-before"])
def test_an_include_the_preprocessor_reads_is_written_in(folder, directive):
    text = source(folder, f"{directive}\n{KERNEL}")
    assert "#define TWO 2" in text and "#include" not in text, text


@pytest.mark.parametrize("text", [
    '/* no longer used:\n#include "gone.h"\n*/\n',
    '// #include "gone.h"\n',
    '// a line comment that goes on \\\n#include "gone.h"\n',    # a spliced line comment covers the next line
    'int x; #include "gone.h"\n',                               # not the line's first token
    'constant char *s = "\\"/*";\n#include "common.h"\nconstant char *t = "*/";\n',
    "constant char c = '\"';\n#include \"common.h\"\n",
], ids=["block-comment", "line-comment", "spliced-line-comment", "mid-line", "comment-opener-in-a-string",
        "quote-in-a-char"])
def test_what_the_preprocessor_does_not_read_as_an_include_is_left_alone(folder, text):
    out = source(folder, text + KERNEL)
    assert "gone.h" not in out or out.count("gone.h") == text.count("gone.h"), out
    assert ("#define TWO 2" in out) == ('#include "common.h"' in text), out


def test_the_lines_after_an_include_keep_their_numbers(folder):
    """After a directive that covers three lines, the compiler is told the next line is line 4."""
    out = source(folder, '#include "common.h" /* one\ntwo\nthree */\nint after_it;\n')
    assert re.search(r'#line 1 "common.h"\n#define TWO 2\n#line 4 "a.cl"\nint after_it;', out), out
    out = source(folder, '#include \\\n  "common.h"\nint after_it;\n')
    assert '#line 3 "a.cl"\nint after_it;' in out, out


def test_a_nested_include_is_read_beside_its_file_then_in_the_kernel_folder(folder):
    (folder / "sub").mkdir()
    (folder / "sub" / "common.h").write_text("#define TWO 22\n", encoding="utf-8")
    (folder / "only_top.h").write_text("#define TOP 1\n", encoding="utf-8")
    (folder / "sub" / "b.h").write_text('#include "common.h"\n#include "only_top.h"\n#include "../common.h"\n',
                                        encoding="utf-8")
    out = source(folder, '#include "sub/b.h"\n' + KERNEL)
    assert out.index("#define TWO 22") < out.index("#define TOP 1") < out.index("#define TWO 2\n"), out
    assert '#line 1 "sub/common.h"' in out and '#line 2 "sub/b.h"' in out, "messages name the file's own path"


@pytest.mark.parametrize("name", ["../../outside.h", "../outside.h"])
def test_a_nested_include_that_leads_outside_the_kernel_folder_is_refused(folder, name):
    (folder.parent / "outside.h").write_text("#define OUT 1\n", encoding="utf-8")
    (folder / "sub").mkdir()
    (folder / "sub" / "b.h").write_text(f'#include "{name}"\n', encoding="utf-8")
    # "../outside.h" is missing beside sub/b.h; in the kernel folder it names the file outside it
    with pytest.raises(ValueError, match=rf"must name a file in .*'{re.escape(name)}' \(included by sub/b\.h\)"):
        source(folder, '#include "sub/b.h"\n')


def test_pragma_once_writes_a_file_in_once_and_guards_do_not_stop_a_cycle(folder):
    (folder / "once.h").write_text("#pragma once\n#define ONCE 1\n", encoding="utf-8")
    out = source(folder, '#include "once.h"\n#include "once.h"\n' + KERNEL)
    assert out.count("#define ONCE 1") == 1 and "pragma" not in out, out
    (folder / "x.h").write_text('#pragma once\n#include "y.h"\n', encoding="utf-8")
    (folder / "y.h").write_text('#include "x.h"\n#define Y 1\n', encoding="utf-8")
    assert source(folder, '#include "x.h"\n').count("#define Y 1") == 1      # as the preprocessor: no loop
    (folder / "g.h").write_text('#ifndef G\n#define G\n#include "h.h"\n#endif\n', encoding="utf-8")
    (folder / "h.h").write_text('#include "g.h"\n', encoding="utf-8")
    with pytest.raises(kernels.KernelBuildError, match=r"includes itself: a\.cl -> g\.h -> h\.h -> g\.h"):
        source(folder, '#include "g.h"\n')


@pytest.mark.parametrize("text, message", [
    ('#include "common.h" int x;\n', r'a\.cl:1: #include "common\.h" is followed by more than a comment'),
    ('\n#include "common.h\nint x;\n', r"a\.cl:2: an #include's \"name\" has no closing quote"),
])
def test_a_malformed_include_is_refused_naming_its_file_and_line(folder, text, message):
    with pytest.raises(kernels.KernelBuildError, match=message):
        source(folder, text)


def test_an_include_the_compiler_resolves_is_left_to_it(folder):
    """``#include <name>`` and ``#include MACRO`` are the compiler's: left as written."""
    text = "#include <opencl-c.h>\n#define H \"common.h\"\n#include H\n"
    assert source(folder, text) == text


def test_every_shipped_kernel_has_its_includes_written_in():
    real = kernels.kernel_dir()
    for path in sorted(real.glob("*.cl")):
        text = kernels.kernel_source(path.name)
        assert '#include "' not in text, path.name
        includes = len(re.findall(r'^#include "', path.read_text(), re.M))
        assert text.count('#line 1 "common.h"') == includes, path.name


def test_the_cache_key_reads_every_file_a_kernel_can_include(folder):
    """Includes are read from the kernel folder and its subfolders: the key reads every file there."""
    (folder / "sub").mkdir()
    (folder / "sub" / "deep.inc").write_text("#define DEEP 1\n", encoding="utf-8")
    source(folder, '#include "sub/deep.inc"\n' + KERNEL)
    listed = fingerprint.library_sources()
    assert folder / "sub" / "deep.inc" in listed and folder / "a.cl" in listed and folder / "common.h" in listed
    names = {fingerprint.file_name(p) for p in listed}
    assert "kernels/sub/deep.inc" in names
