"""Two neighbours of BPE, small enough to read: WordPiece segmentation and unigram (Viterbi) segmentation.

Both *segment* with a fixed vocabulary (how the vocabulary is learned is a
separate algorithm in each family, not shown here). Neither replays merges:
WordPiece takes the longest vocabulary piece at each position; unigram picks
the segmentation with the highest total log-probability. On the same word
and a similar vocabulary they can disagree with each other and with BPE.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping

from netcl_lite.checks import count

__all__ = ["Unigram", "WordPiece"]


class WordPiece:
    """Greedy longest-match-first segmentation (BERT's WordPiece), ``##`` marking word-internal pieces.

    A word that cannot be covered, or is longer than ``max_chars_per_word``, becomes
    ``unk_token`` as a whole. Words are split on whitespace only (no punctuation splitting).

    >>> WordPiece({"un", "##aff", "##able", "aff"}).tokenize("unaffable affable able")
    ['un', '##aff', '##able', 'aff', '##able', '[UNK]']
    """

    def __init__(self, vocab: Iterable[str], unk_token: str = "[UNK]", max_chars_per_word: int = 100,
                 continuation_prefix: str = "##"):
        if isinstance(vocab, str) or not isinstance(vocab, Iterable):
            raise TypeError(f"vocab must be a collection of str pieces (or a dict piece -> id), got "
                            f"{type(vocab).__name__}")
        self.vocab = frozenset(vocab)
        bad = [piece for piece in self.vocab if not isinstance(piece, str) or not piece]
        if bad:
            raise TypeError(f"vocab pieces must be non-empty str, got {bad[:5]!r}")
        if not isinstance(unk_token, str) or not isinstance(continuation_prefix, str):
            raise TypeError("unk_token and continuation_prefix must be str")
        max_chars_per_word = count("max_chars_per_word", max_chars_per_word, 1)
        self.unk_token = unk_token
        self.max_chars_per_word = max_chars_per_word
        self.continuation_prefix = continuation_prefix

    def tokenize(self, text: str) -> list[str]:
        """Segment each whitespace word of ``text``."""
        if not isinstance(text, str):
            raise TypeError(f"text must be a str, got {type(text).__name__}")
        return [piece for word in text.split() for piece in self._word(word)]

    def _word(self, word: str) -> list[str]:
        if len(word) > self.max_chars_per_word:
            return [self.unk_token]
        pieces, start = [], 0
        while start < len(word):
            prefix = self.continuation_prefix if start else ""
            end = next((e for e in range(len(word), start, -1) if prefix + word[start:e] in self.vocab),
                       None)
            if end is None:
                return [self.unk_token]
            pieces.append(prefix + word[start:end])
            start = end
        return pieces


class Unigram:
    """Viterbi segmentation under a unigram model: maximize the sum of the pieces' log-probabilities.

    ``scored_vocab``: ``{piece: log_probability}`` (finite, <= 0). Among equally scored
    segmentations the one whose last piece starts earliest (is longest) wins, position by position.

    >>> Unigram({"l": -5.0, "o": -5.0, "w": -5.0, "lo": -3.0, "low": -7.0, "ow": -1.0}).segment("low")
    ('l', 'ow')
    """

    def __init__(self, scored_vocab: Mapping[str, float]):
        if not isinstance(scored_vocab, Mapping):
            raise TypeError(f"scored_vocab must be a dict piece -> log-probability, got "
                            f"{type(scored_vocab).__name__}")
        for piece, score in scored_vocab.items():
            if not isinstance(piece, str) or not piece:
                raise TypeError(f"scored_vocab keys must be non-empty str, got {piece!r}")
            if isinstance(score, bool) or not isinstance(score, (int, float)) or not math.isfinite(score):
                raise ValueError(f"scored_vocab[{piece!r}] = {score!r}: scores are finite log-probabilities")
            if score > 0:
                raise ValueError(f"scored_vocab[{piece!r}] = {score!r} > 0: pass log-probabilities "
                                 f"(math.log(p)), not probabilities or counts")
        if not scored_vocab:
            raise ValueError("scored_vocab is empty")
        self.scores = dict(scored_vocab)
        self._longest = max(map(len, self.scores))

    def segment(self, word: str) -> tuple[str, ...]:
        """The best-scoring segmentation of ``word``; ``ValueError`` if no pieces cover it."""
        if not isinstance(word, str):
            raise TypeError(f"word must be a str, got {type(word).__name__}")
        n = len(word)
        best = [0.0] + [-math.inf] * n  # best[i]: best score of word[:i]
        back = [0] * (n + 1)
        for end in range(1, n + 1):
            for start in range(max(0, end - self._longest), end):
                score = self.scores.get(word[start:end])
                if score is not None and best[start] + score > best[end]:
                    best[end], back[end] = best[start] + score, start
        if best[n] == -math.inf:
            covered = max(i for i in range(n + 1) if best[i] > -math.inf)
            raise ValueError(f"cannot segment {word!r}: vocabulary pieces cover at most the prefix "
                             f"{word[:covered]!r}; add the single characters to scored_vocab")
        pieces, end = [], n
        while end:
            pieces.append(word[back[end]:end])
            end = back[end]
        return tuple(reversed(pieces))
