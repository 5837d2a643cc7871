"""Text to token ids: byte-level BPE (tiktoken-compatible), word BPE, chat templates, and two neighbours.

>>> from netcl_lite.text import BPETokenizer
>>> tok = BPETokenizer()
>>> _ = tok.train_from_iterator(["Hello world!", "Attention is all you need."])
>>> tok.decode(tok.encode("Hello world!"))
'Hello world!'

Modules: :mod:`~netcl_lite.text.bpe` (the tokenizer), :mod:`~netcl_lite.text.bpe_training`
(incremental merge learning), :mod:`~netcl_lite.text.byte_pair` (applying merges, under
tiktoken's rule or a merge list), :mod:`~netcl_lite.text.patterns` (pre-split regexes),
:mod:`~netcl_lite.text.vocabulary` (tokens in any id layout), :mod:`~netcl_lite.text.model_file`
(netcl_lite's saved format), :mod:`~netcl_lite.text.ranks` (tiktoken's ``mergeable_ranks``),
:mod:`~netcl_lite.text.tiktoken_file` (tiktoken's ``.tiktoken`` files),
:mod:`~netcl_lite.text.tokenizer_json` (Hugging Face's ``tokenizer.json``),
:mod:`~netcl_lite.text.word_bpe`, :mod:`~netcl_lite.text.chat`, :mod:`~netcl_lite.text.segmenters`.
"""

from netcl_lite.text.bpe import BPETokenizer
from netcl_lite.text.chat import ChatFormat
from netcl_lite.text.patterns import GPT2_PATTERN, GPT4_PATTERN
from netcl_lite.text.segmenters import Unigram, WordPiece
from netcl_lite.text.word_bpe import WordBPE

__all__ = ["GPT2_PATTERN", "GPT4_PATTERN", "BPETokenizer", "ChatFormat", "Unigram", "WordBPE", "WordPiece"]
