"""Issue 58, an independent hostile check, round 22a: reproducers of defects beyond the cases of earlier
rounds (tests/test_hostile*.py, tests/test_compression_hostile.py), in the tokenizer's file formats and
the compressor's command line.

Each test asserts the correct behaviour; each failed on the code before its fix.
"""

from __future__ import annotations

import base64

import numpy as np
import pytest

from netcl_lite.checks import token_ids
from netcl_lite.text import BPETokenizer
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


# -- decoding an array of ids that is not 1-D ------------------------------------------------------------

@pytest.mark.parametrize("ids", [np.array([[104, 105], [33, 33]]), np.array(104), np.zeros((0, 2), np.int64)])
@pytest.mark.parametrize("call", ["decode", "decode_bytes"])
def test_decoding_an_array_that_is_not_1d_is_refused_naming_ids(ids, call):
    """``token_ids`` took any integer array's ``tolist()``: a 2-D array gave nested lists, which the
    vocabulary lookup met as "unhashable type: 'list'", and a 0-D array one int ("'int' object is not
    iterable"), neither naming the parameter; an empty 2-D array decoded to nothing."""
    with pytest.raises(TypeError, match=r"ids must be a 1-D sequence of token ids, got an array of shape"):
        getattr(BPETokenizer(), call)(ids)


def test_decoding_a_1d_array_still_works():
    assert BPETokenizer().decode(np.array([104, 105], np.uint16)) == "hi"
    assert token_ids(np.array([3, 1])) == [3, 1]
