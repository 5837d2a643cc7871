"""Issue 58, an independent hostile check, round 22a: reproducers of defects beyond the cases of earlier
rounds (tests/test_hostile*.py, tests/test_compression_hostile.py), in the tokenizer's file formats and
the compressor's command line.

Each test asserts the correct behaviour; each failed on the code before its fix.
"""

from __future__ import annotations

import base64

import pytest

from netcl_lite.text.tiktoken_file import read_tiktoken_file

_BYTES = b"".join(base64.b64encode(bytes([b])) + b" %d\n" % b for b in range(256))


# -- a .tiktoken file's rank of thousands of digits -----------------------------------------------------

@pytest.mark.parametrize("rank", [b"9" * 5000, b"1" + b"0" * 4400])
def test_a_tiktoken_rank_of_thousands_of_digits_is_out_of_range_naming_the_line(tmp_path, rank):
    """``read_tiktoken_file`` promises a ValueError naming the file and the line for every problem; a
    rank of more than 4,300 digits reached ``int()``, whose own error (Python's limit on converting
    long digit strings, advising ``sys.set_int_max_str_digits``) named neither."""
    path = tmp_path / "v.tiktoken"
    path.write_bytes(_BYTES + b"aGk= " + rank + b"\n")
    with pytest.raises(ValueError, match=r"v\.tiktoken: line 257: rank .*out of range") as err:
        read_tiktoken_file(path)
    assert "set_int_max_str_digits" not in str(err.value)
    assert len(str(err.value)) < 400


def test_a_tiktoken_rank_with_leading_zeros_is_still_read(tmp_path):
    """Leading zeros do not count toward the digits: ``000...0256`` is rank 256."""
    path = tmp_path / "v.tiktoken"
    path.write_bytes(_BYTES + b"aGk= " + b"0" * 5000 + b"256\n")
    by_rank, line_of = read_tiktoken_file(path)
    assert by_rank[256] == b"hi" and line_of[256] == 257
