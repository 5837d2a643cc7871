"""A match model: the token that followed the longest earlier occurrence of the current context.

:class:`MatchModel` keeps one text of token ids, the primer's (the training text) followed by
every stream's segment of the coded text at its own offset, and an index from a hash of each
:data:`MIN_LENGTH` tokens to the position after their most recent occurrence. When a stream has
no match (or a short one), it looks up the hash of its last :data:`MIN_LENGTH` tokens, checks
how far back the candidate really agrees (up to :data:`MAX_VERIFY` tokens), and keeps it if it
is longer; while the predicted tokens keep coming, the match grows by one each step. What it
predicts, and its length, are inputs to :class:`netcl_lite.context_mixing.ContextMixer`, which
learns online how far to trust a match of each length. Everything is integer work on arrays
that depend only on the tokens coded, so both sides of a coder hold the same state.

    >>> m = MatchModel(np.array([5, 1, 2, 3, 4, 5, 6, 7, 8, 9]), np.array([8]), min_length=3)
    >>> for t in [2, 3, 4]:
    ...     _ = m.predict(); m.update(np.array([t]), np.array([True]))
    >>> m.predict()                      # "2 3 4" occurred in the primer, followed by 5
    (array([5]), array([3]))
"""

from __future__ import annotations

import numpy as np

from . import checks

MIN_LENGTH = 6          # tokens of context whose hash finds a match
MAX_VERIFY = 48         # a new candidate's agreement is checked this many tokens back, at most
RELOOK = 16             # a stream whose match is shorter than this looks for a longer one each step
INDEX_BITS = 22         # the index has 2^22 slots (16 MiB); a later occurrence takes a slot over
_GOLDEN = np.uint64(0x9E3779B97F4A7C15)


def _hash(windows: np.ndarray) -> np.ndarray:
    """(..., n) token ids -> (...,) slots of the index."""
    h = np.zeros(windows.shape[:-1], np.uint64)
    for j in range(windows.shape[-1]):          # unsigned array arithmetic wraps without a warning
        h = (h + np.uint64(1) + windows[..., j].astype(np.uint64)) * _GOLDEN
    return (h >> np.uint64(64 - INDEX_BITS)).astype(np.int64)


def _rows(name: str, index: np.ndarray, rows: int) -> np.ndarray:
    """``index`` (integers in [-rows, rows)) with each negative one as the row NumPy takes it for
    (i + rows): sorted as it was, -1 was another index than rows - 1, though it names the same row.
    IndexError naming ``name`` for an index past the table either side."""
    if index.dtype.kind not in "iu":
        raise IndexError(f"{name} must hold integer row indices, got {index.dtype}")
    low, high = (index.min(), index.max()) if index.size else (0, 0)
    if low < -rows or high >= rows:
        bad = low if low < -rows else high
        raise IndexError(f"{name} holds {bad}, outside [-{rows}, {rows}) (the table's {rows} rows)")
    # in int64: index + rows in a narrow index's own type (int8 and 200 rows) overflows
    return np.where(index < 0, index.astype(np.int64) + rows, index) if low < 0 else index


def last_wins(slots: np.ndarray, values: np.ndarray, table: np.ndarray) -> None:
    """table[slots[i]] = values[i], the last i winning where slots repeat (stable, so both sides agree);
    a negative slot is the row NumPy takes it for (-1 the last), one past the table an IndexError.
    ``slots`` and ``values`` are one-dimensional, of one length; a masked array is refused (TypeError naming
    it): its masked-out entries would be written."""
    checks.not_masked("slots", slots)
    checks.not_masked("values", values)
    slots = np.asarray(slots)
    values = np.asarray(values)               # a list: values[order] was "only integer scalar arrays ..."
    if slots.ndim != 1 or values.ndim != 1 or values.size != slots.size:
        raise ValueError(f"slots and values must be one-dimensional and of one length, got shapes "
                         f"{slots.shape} and {values.shape}")
    if slots.dtype.kind not in "iu":          # float, NaN, object: NumPy's indexing error named nothing
        slots = _rows("slots", slots, table.shape[0])
    order = np.argsort(slots, kind="stable")
    s = slots[order]
    if s.size and (s[0] < 0 or s[-1] >= table.shape[0]):    # sorted: its first is the least, its last the most
        slots = _rows("slots", slots, table.shape[0])
        order = np.argsort(slots, kind="stable")
        s = slots[order]
    last = np.concatenate((s[1:] != s[:-1], [True])) if s.size else np.zeros(0, bool)
    table[s[last]] = values[order][last]


def add_in_order(table: np.ndarray, index: np.ndarray, values: np.ndarray) -> None:
    """``np.add.at(table, index, values)`` bit for bit, for ``index`` (N,) into ``table``'s first
    axis and ``values`` (N, ...) of its rows' shape: the rows of each repeated index added in
    the order they come, in rounds of distinct indices (the first of each, then the second...),
    each round one gather and one scatter; ``np.add.at`` adds row by row, which costs ~10x more
    when rows are long. As there, a negative index is the row NumPy takes it for (-1 the last), and
    one past the table an IndexError. A masked ``index`` or ``values`` is refused (TypeError naming it): its
    masked-out entries would be added."""
    checks.not_masked("index", index)
    checks.not_masked("values", values)
    index = np.asarray(index)
    if index.ndim != 1 or not isinstance(values, np.ndarray) or values.shape[:1] != index.shape \
            or values.shape[1:] != table.shape[1:]:
        raise ValueError(f"add_in_order: index must be 1-D and values (N, *table.shape[1:]) with N = index.size; "
                         f"got index of shape {index.shape}, values of shape {getattr(values, 'shape', None)}, "
                         f"table of shape {table.shape}")
    if not index.size:
        return
    values = np.asarray(values)            # an np.matrix's rows were 2-D
    order = np.argsort(index, kind="stable")
    s = index[order]
    if s[0] < 0 or s[-1] >= table.shape[0] or index.dtype.kind not in "iu":   # sorted: the least first, the most last
        index = _rows("index", index, table.shape[0])       # -1 is the row NumPy takes it for, not another one
        order = np.argsort(index, kind="stable")
        s = index[order]
    starts = np.flatnonzero(np.concatenate(([True], s[1:] != s[:-1])))
    if starts.size == s.size:                            # every index once: one round
        table[index] += values
        return
    rank = np.empty(s.size, np.int64)
    rank[order] = np.arange(s.size) - np.repeat(starts, np.diff(np.append(starts, s.size)))
    for k in range(int(rank.max()) + 1):
        sel = np.flatnonzero(rank == k)                  # in the order they come, each index once
        table[index[sel]] += values[sel]


class MatchModel:
    """The longest earlier match of each stream's context, in ``primer`` ids and every stream's
    coded tokens. ``lengths`` (B,): each stream's token count (stream b is coded at offset
    Σ lengths[:b] of the coded text); :meth:`predict` then :meth:`update` once per step."""

    __copy__ = checks.whole_copy     # a shallow copy shared the arrays updated in place

    def __init__(self, primer: np.ndarray, lengths: np.ndarray, min_length: int = MIN_LENGTH):
        checks.coder_sizes(lengths=lengths)            # before anything is sized by them
        # the text is int32, -1 marking what is not coded yet: a larger id would wrap (2**32 - 1 to -1)
        primer = checks.id_array("primer", primer, np.iinfo(np.int32).max + 1)
        lengths = checks.id_array("lengths", lengths, what="token counts, one per stream")
        if lengths.size == 0:
            raise ValueError("lengths must give at least one stream's token count, got none")
        min_length = checks.int_in("min_length", min_length, 1, MAX_VERIFY + 1, "tokens of context a match needs")
        self.min_length = min_length
        self.base = primer.size + np.r_[0, np.cumsum(lengths)[:-1]].astype(np.int64)
        self.text = np.full(primer.size + int(np.sum(lengths)), -1, np.int32)   # -1: not coded yet
        self.text[:primer.size] = primer
        self.index = np.full(1 << INDEX_BITS, -1, np.int32 if self.text.size < 2**31 else np.int64)
        if primer.size > min_length:
            windows = np.lib.stride_tricks.sliding_window_view(primer[:-1], min_length)
            last_wins(_hash(windows), np.arange(min_length, primer.size), self.index)
        streams = np.asarray(lengths).size
        self.lengths = lengths.astype(np.int64)        # each stream's tokens: an update past them is refused
        self.pointer = np.zeros(streams, np.int64)     # where the predicted token is in ``text``
        self.length = np.zeros(streams, np.int64)      # tokens of context that agree; 0: no match
        self.step = 0
        self.predicted = None                          # what :meth:`predict` said, until :meth:`update`

    def predict(self) -> tuple[np.ndarray, np.ndarray]:
        """(predicted token (B,), -1 where none; the match's length (B,), 0 where none)."""
        # an empty text (no primer, every stream of 0 tokens) has nothing to read: text[0] was an IndexError
        at = self.text[self.pointer] if self.text.size else -1
        token = np.where(self.length > 0, at, -1).astype(np.int64)
        self.length[token < 0] = 0                    # a match that runs into text not coded yet
        self.predicted = token
        return token.copy(), self.length.copy()      # the caller's to edit: update reads its own

    def refuse_finished(self, active: np.ndarray) -> None:
        """ValueError naming ``active`` when it marks a stream that has coded all its ``lengths``
        tokens: its token would land in the next stream's text, or past the text's end."""
        done = np.flatnonzero(np.asarray(active, bool) & (self.step >= self.lengths))
        if done.size:
            raise ValueError(f"active marks stream {int(done[0])} as coding its token {self.step}, but lengths gives "
                             f"it {int(self.lengths[done[0]])} tokens: mark a stream inactive once it is coded")

    def update(self, tokens: np.ndarray, active: np.ndarray) -> None:
        """Write the ``active`` streams' coded ``tokens`` (B,) into the text, extend or drop their
        matches, look for new ones, and index the newest :data:`MIN_LENGTH` tokens. Each step's
        update follows its :meth:`predict` (ValueError otherwise: a match extended by a stale
        prediction, or a step counted twice)."""
        tokens, active = checks.step_ids(tokens, active, self.pointer.size, np.iinfo(np.int32).max + 1)
        if self.predicted is None:
            raise ValueError("update follows predict: call predict() for the step first (once per update)")
        self.refuse_finished(active)
        rows = np.flatnonzero(active)
        at = self.base[rows] + self.step
        self.text[at] = tokens[rows]
        hit = (self.length[rows] > 0) & (self.predicted[rows] == tokens[rows])
        self.predicted = None
        self.length[rows] = np.where(hit, self.length[rows] + 1, 0)
        self.pointer[rows] = np.where(hit, self.pointer[rows] + 1, 0)
        self.step += 1
        if self.step < self.min_length:
            return
        windows = self.text[at[:, None] - np.arange(self.min_length - 1, -1, -1)]
        slots = _hash(windows)
        candidate = self.index[slots].astype(np.int64)
        look = np.flatnonzero((self.length[rows] < RELOOK) & (candidate >= 0))
        if look.size:
            back = np.arange(MAX_VERIFY)
            theirs = candidate[look, None] - 1 - back          # the candidate's context, newest first
            ours = at[look, None] - back
            valid = (theirs >= 0) & (ours >= self.base[rows[look], None])
            same = valid & (self.text[np.maximum(theirs, 0)] == self.text[np.maximum(ours, 0)])
            agree = np.cumprod(same, axis=1).sum(axis=1)
            longer = agree > self.length[rows[look]]
            self.length[rows[look[longer]]] = agree[longer]
            self.pointer[rows[look[longer]]] = candidate[look[longer]]
        last_wins(slots, at + 1, self.index)
