"""Word runs shared with the seed documents, without keeping the seeds' text in this repository.

The pages are written from three seed documents (``../shared/seeds/`` beside a
checkout) and must say things in their own words. ``tests/data/seed_shingles.txt``
holds a short hash of every run of ``RUN`` consecutive words of the seeds;
``python tests/seed_text.py ../shared/seeds`` rewrites it. A page's run of
``RUN`` words whose hash is in that set was taken from a seed.
"""

from __future__ import annotations

import hashlib
import re
import sys
from html.parser import HTMLParser
from pathlib import Path

RUN = 12
SHINGLES = Path(__file__).resolve().parent / "data" / "seed_shingles.txt"
SEEDS = Path(__file__).resolve().parents[1].parent / "shared" / "seeds"
BREAK = "|"  # stands where excluded text was: no run crosses it


def words(text: str) -> list[str]:
    """Lower-case words and numbers; punctuation, dashes and symbols separate them."""
    return re.findall(r"[a-z0-9]+(?:'[a-z]+)?", text.lower().replace("’", "'"))


def _hash(run: list[str]) -> str:
    return hashlib.blake2b(" ".join(run).encode(), digest_size=6).hexdigest()


def shingles(tokens: list[str]) -> set[str]:
    return {_hash(tokens[i:i + RUN]) for i in range(len(tokens) - RUN + 1) if BREAK not in tokens[i:i + RUN]}


def seed_files(folder: Path = SEEDS) -> list[Path]:
    return sorted(p for p in folder.glob("*.txt"))


def seed_shingles_from(folder: Path = SEEDS) -> set[str]:
    found: set[str] = set()
    for path in seed_files(folder):
        found |= shingles(words(path.read_text(encoding="utf-8")))
    return found


def stored_shingles() -> set[str]:
    return set(SHINGLES.read_text().split())


class _Prose(HTMLParser):
    """The words a reader reads as prose in a page's main content.

    Left out: code and outputs (and the notebooks' hidden copies of them), math,
    headings (the sheets' step and section titles are kept as the seeds name them),
    the recall questions (their stems are the seeds' questions on purpose), and
    everything outside the article. Runs do not cross a paragraph, list item or
    table cell.
    """

    SKIP_TAGS = {"pre", "code", "math", "script", "style", "svg", "nav", "header", "footer",
                 "h1", "h2", "h3", "h4", "h5", "h6"}
    SKIP_CLASSES = {"recall-questions", "clipboard-copy-txt"}
    BLOCKS = {"p", "li", "td", "th", "tr", "div", "details", "summary", "blockquote", "dd", "dt", "figcaption"}
    VOID = {"img", "br", "hr", "input", "meta", "link", "source", "wbr", "col", "area", "base", "embed", "param", "track"}

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.stack: list[tuple[str, bool]] = []  # open elements: (tag, starts an excluded part?)
        self.skipping = 0
        self.parts: list[str] = []

    def handle_starttag(self, tag, attrs):
        if tag in self.VOID:
            return
        classes = set((dict(attrs).get("class") or "").split())
        skip = tag in self.SKIP_TAGS or bool(classes & self.SKIP_CLASSES)
        self.stack.append((tag, skip))
        self.skipping += skip
        if skip or tag in self.BLOCKS:
            self.parts.append(BREAK)

    def handle_endtag(self, tag):
        if tag in self.VOID or all(open_tag != tag for open_tag, _ in self.stack):
            return
        while True:  # close it, and whatever was left open inside it
            open_tag, skip = self.stack.pop()
            self.skipping -= skip
            if open_tag == tag:
                break
        if tag in self.BLOCKS:
            self.parts.append(BREAK)

    def handle_data(self, data):
        if not self.skipping:
            self.parts.append(data)


def page_words(html: str) -> list[str]:
    """Words of the article's prose, with BREAK where something was left out."""
    start = html.find('<article')
    end = html.find('</article>', start)
    parser = _Prose()
    parser.feed(html[start:end] if start >= 0 and end > start else html)
    tokens: list[str] = []
    for part in parser.parts:
        tokens += [BREAK] if part == BREAK else words(part)
    return tokens


def shared_runs(tokens: list[str], seed: set[str]) -> list[str]:
    """Each maximal stretch of the page made of RUN-word runs found in the seeds, as text."""
    hit = [i for i in range(len(tokens) - RUN + 1) if BREAK not in tokens[i:i + RUN] and _hash(tokens[i:i + RUN]) in seed]
    runs, start, end = [], None, None
    for i in hit:
        if start is not None and i <= end:
            end = i + RUN
        else:
            if start is not None:
                runs.append(" ".join(tokens[start:end]))
            start, end = i, i + RUN
    if start is not None:
        runs.append(" ".join(tokens[start:end]))
    return runs


if __name__ == "__main__":
    folder = Path(sys.argv[1]) if len(sys.argv) > 1 else SEEDS
    found = seed_shingles_from(folder)
    if not found:
        sys.exit(f"no seed text under {folder}")
    SHINGLES.parent.mkdir(parents=True, exist_ok=True)
    SHINGLES.write_text("\n".join(sorted(found)) + "\n")
    print(f"wrote {len(found)} hashes of {RUN}-word runs from {len(seed_files(folder))} seeds to {SHINGLES}")
