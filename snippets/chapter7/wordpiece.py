from netcl_lite.text import WordPiece


def wordpiece(word, vocab, unk="[UNK]", max_chars=200):  # BERT's limit
    """Greedy longest-match-first: the longest piece that fits, then the next one."""
    if len(word) > max_chars:
        return [unk]
    pieces, start = [], 0
    while start < len(word):
        prefix = "##" if start else ""  # a piece that continues a word carries ##
        for end in range(len(word), start, -1):  # the longest candidate first
            if prefix + word[start:end] in vocab:
                pieces.append(prefix + word[start:end])
                start = end
                break
        else:  # no piece fits here: the whole word is unknown; nothing is undone
            return [unk]
    return pieces


vocab = {"token", "##izer", "##ize", "##s", "##d", "un", "una", "##able", "##beat",
         "play", "##er"}
words = ["tokenizers", "tokenized", "unbeatable", "players", "unable", "tökenize"]
for word in words:
    print(f"{word:10} -> {' '.join(wordpiece(word, vocab))}")

for word in words[:4]:
    pieces = wordpiece(word, vocab)
    assert "".join(p.removeprefix("##") for p in pieces) == word, \
        "without their ##, the pieces spell the word again"
assert {"un", "##able"} <= vocab and wordpiece("unable", vocab) == ["[UNK]"], \
    "unable is [UNK] although un ##able would cover it"
ours = [piece for word in words for piece in wordpiece(word, vocab)]
assert WordPiece(vocab, max_chars_per_word=200).tokenize(" ".join(words)) == ours, \
    "netcl_lite.text.WordPiece follows the same rule"
