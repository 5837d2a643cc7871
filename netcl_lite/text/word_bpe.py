"""Word-level BPE (Sennrich et al., 2016): merges over characters of whitespace words, with ``</w>``.

Unlike :class:`~netcl_lite.text.BPETokenizer`, the base symbols are
characters (not bytes), words come from whitespace splitting, and each word
ends in an end-of-word marker, so ``low</w>`` (a whole word) and ``low`` (a
prefix, as in ``lower``) are different symbols. Characters never seen in
training stay single symbols: there is no byte alphabet behind them.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from itertools import pairwise

__all__ = ["END_OF_WORD", "WordBPE"]

END_OF_WORD = "</w>"

Symbols = tuple[str, ...]


class WordBPE:
    """Train merges on words weighted by frequency, then segment new words with them.

    Tie rule: the most frequent adjacent pair, and among equal counts the lexically smallest
    pair ``(left, right)``. Training stops early if no word has two symbols left.

    >>> bpe = WordBPE()
    >>> bpe.train("low low lower", 2)
    [(('l', 'o'), 3), (('lo', 'w'), 3)]
    >>> bpe.segment("lowest")
    ('low', 'e', 's', 't', '</w>')
    """

    def __init__(self) -> None:
        self.merges: list[tuple[str, str]] = []  # in merge order
        self.vocab: Counter[Symbols] = Counter()  # segmented training word -> frequency
        self._ranks: dict[tuple[str, str], int] = {}

    def train(self, words: str | Iterable[str], num_merges: int) -> list[tuple[tuple[str, str], int]]:
        """Learn up to ``num_merges`` merges; return the trace ``[((left, right), weighted count), ...]``.

        ``words``: a text, or an iterable of texts, split on whitespace. Retraining starts over.
        """
        if isinstance(num_merges, bool) or not isinstance(num_merges, int):
            raise TypeError(f"num_merges must be an int, got {type(num_merges).__name__}")
        if num_merges < 0:
            raise ValueError(f"num_merges={num_merges} must be >= 0")
        texts = [words] if isinstance(words, str) else words
        if not isinstance(texts, Iterable):
            raise TypeError(f"words must be a str or an iterable of str, got {type(words).__name__}")
        counts: Counter[str] = Counter()
        for i, text in enumerate(texts):
            if not isinstance(text, str):
                raise TypeError(f"words: item {i} is {type(text).__name__}, expected str")
            counts.update(text.split())
        vocab = Counter({tuple(word) + (END_OF_WORD,): n for word, n in counts.items()})
        trace = []
        for _ in range(num_merges):
            pairs = _pair_counts(vocab)
            if not pairs:
                break
            best = min(pairs, key=lambda pair: (-pairs[pair], pair))
            trace.append((best, pairs[best]))
            vocab = Counter({_merge(symbols, best): n for symbols, n in vocab.items()})
        self.merges = [pair for pair, _ in trace]
        self._ranks = {pair: rank for rank, pair in enumerate(self.merges)}
        self.vocab = vocab
        return trace

    def segment(self, word: str) -> Symbols:
        """Apply the learned merges to one word (earliest-learned adjacent pair first).

        >>> WordBPE().segment("hi")
        ('h', 'i', '</w>')
        """
        if not isinstance(word, str):
            raise TypeError(f"word must be a str, got {type(word).__name__}")
        if not word or any(c.isspace() for c in word):
            raise ValueError(f"word must be one non-empty word without whitespace, got {word!r}; "
                             f"segment each of text.split()")
        symbols = tuple(word) + (END_OF_WORD,)
        while len(symbols) > 1:
            ranked = [(self._ranks[p], p) for p in pairwise(symbols) if p in self._ranks]
            if not ranked:
                break
            symbols = _merge(symbols, min(ranked)[1])
        return symbols


def _pair_counts(vocab: Counter[Symbols]) -> Counter[tuple[str, str]]:
    counts: Counter[tuple[str, str]] = Counter()
    for symbols, n in vocab.items():
        for pair in pairwise(symbols):
            counts[pair] += n
    return counts


def _merge(symbols: Symbols, pair: tuple[str, str]) -> Symbols:
    """Merge every adjacent occurrence of ``pair``, left to right, never across other symbols.

    >>> _merge(("ab", "c", "a", "b"), ("a", "b"))
    ('ab', 'c', 'ab')
    """
    out, i = [], 0
    while i < len(symbols):
        if i + 1 < len(symbols) and (symbols[i], symbols[i + 1]) == pair:
            out.append(symbols[i] + symbols[i + 1])
            i += 2
        else:
            out.append(symbols[i])
            i += 1
    return tuple(out)
