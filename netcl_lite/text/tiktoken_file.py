"""tiktoken's ``.tiktoken`` file: one line per token, ``<token bytes in base64> <rank>``, in rank order.

Example (the first and last lines of a tiktoken file with 257 tokens)::

    AA== 0
    ...
    aGk= 256

Reading is strict, since a damaged file must not load as a smaller vocabulary: every line
is exactly base64, one space and a decimal rank; the N lines hold ranks 0..N-1 once each;
the file ends with a newline. A file cut exactly at a line boundary is still a valid,
shorter file: pass ``expected_sha256`` (as tiktoken does) to rule that out too.
"""

from __future__ import annotations

import binascii
import hashlib
import os
import sys
from base64 import b64encode
from collections.abc import Sequence
from functools import partial

from netcl_lite.files import read_regular
from netcl_lite.text.model_file import MAX_FILE_BYTES

__all__ = ["check_sha256", "read_tiktoken_file", "tiktoken_file_bytes"]

if sys.version_info >= (3, 11):  # strict_mode also rejects data after the padding
    _from_base64 = partial(binascii.a2b_base64, strict_mode=True)
else:  # pragma: no cover
    import base64
    _from_base64 = partial(base64.b64decode, validate=True)


def read_tiktoken_file(path: str | os.PathLike, expected_sha256: str | None = None) -> tuple[list[bytes], list[int]]:
    """Read a ``.tiktoken`` file: ``(token bytes by rank, line number of each rank)``.

    Every problem is a ``ValueError`` naming the file and the line.

    >>> import os, tempfile; path = os.path.join(tempfile.mkdtemp(), "x.tiktoken")
    >>> tokens = [bytes([b]) for b in range(256)] + [b"hi"]
    >>> _ = open(path, "wb").write(tiktoken_file_bytes(tokens))
    >>> by_rank, line_of = read_tiktoken_file(path); by_rank[256], line_of[256]
    (b'hi', 257)
    """
    data = read_regular(path, MAX_FILE_BYTES, "a .tiktoken file")   # no device, pipe or huge file
    if expected_sha256 is not None:
        check_sha256(data, expected_sha256, path)
    lines = data.split(b"\n")
    if lines[-1]:
        raise ValueError(f"{path}: line {len(lines)}: the file does not end with a newline; it is "
                         f"truncated")
    if len(lines) == 1:
        raise ValueError(f"{path}: line 1: the file is empty")
    del lines[-1]
    n = len(lines)
    by_rank: list[bytes | None] = [None] * n
    line_of = [0] * n
    seen: set[bytes] = set()
    for number, line in enumerate(lines, 1):
        encoded, _, rank_text = line.partition(b" ")
        if not rank_text.isdigit():  # ASCII digits only: no sign, space or second field
            raise ValueError(f"{path}: line {number}: {line[:80]!r} is not '<base64> <rank>'")
        try:
            token = _from_base64(encoded)
        except (binascii.Error, ValueError):
            raise ValueError(f"{path}: line {number}: {encoded[:80]!r} is not valid base64") from None
        # a rank of more digits than any line count has is out of range: int() would refuse past
        # 4,300 digits with a message naming neither the file nor the line
        digits = rank_text.lstrip(b"0")
        rank = int(digits or b"0") if len(digits) <= 80 else n
        if rank >= n:
            shown = rank if len(digits) <= 80 else f"{digits[:20].decode()}... ({len(digits):,} digits)"
            raise ValueError(f"{path}: line {number}: rank {shown} is out of range: {n} lines need "
                             f"ranks 0..{n - 1} (is a line missing, or the file truncated?)")
        if not token:
            raise ValueError(f"{path}: line {number}: the token is empty")
        if by_rank[rank] is not None:
            raise ValueError(f"{path}: lines {line_of[rank]} and {number} both have rank {rank}")
        if token in seen:
            other = next(line_of[r] for r, t in enumerate(by_rank) if t == token)
            raise ValueError(f"{path}: lines {other} and {number} both hold the token {token!r}")
        seen.add(token)
        by_rank[rank] = token
        line_of[rank] = number
    # n lines, n distinct ranks in 0..n-1: no rank is missing
    if n < 256 or any(len(by_rank[r]) != 1 for r in range(256)):
        bad = next((r for r in range(min(n, 256)) if len(by_rank[r]) != 1), n)
        where = f"line {line_of[bad]}" if bad < n else f"line {n}"
        raise ValueError(f"{path}: {where}: ranks 0..255 must be the 256 single bytes (in any order)")
    return by_rank, line_of


def tiktoken_file_bytes(token_bytes: Sequence[bytes]) -> bytes:
    """The file for tokens listed by rank, byte for byte as tiktoken writes it.

    >>> tiktoken_file_bytes([b"b", b"a"])
    b'Yg== 0\\nYQ== 1\\n'
    """
    return b"".join(b64encode(token) + b" %d\n" % rank for rank, token in enumerate(token_bytes))


def check_sha256(data: bytes, expected_sha256: str, source) -> None:
    """Raise ``ValueError`` unless ``data`` hashes to ``expected_sha256`` (64 hex digits)."""
    if not isinstance(expected_sha256, str):
        raise TypeError(f"expected_sha256 must be a str of 64 hex digits, got {type(expected_sha256).__name__}")
    expected = expected_sha256.strip().lower()
    if len(expected) != 64 or any(c not in "0123456789abcdef" for c in expected):
        raise ValueError(f"expected_sha256={expected_sha256!r} is not a sha256 hex digest (64 hex digits)")
    actual = hashlib.sha256(data).hexdigest()
    if actual != expected:
        raise ValueError(f"{source}: sha256 is {actual}, expected {expected}; the file is damaged, "
                         f"truncated or a different vocabulary")
