"""Build the tokenizer benchmark corpus from freely licensed text already on this machine.

Three kinds of documents, each split into train / held-out *by document*
(a stable hash of its source name, so a file's code and its docstrings land
on the same side):

* ``code``: CPython's standard-library ``.py`` files (PSF license), test suites left out;
* ``prose``: English prose, the docstrings of those same files (read with ``ast``, nothing
  imported), the ``pydoc_data`` topics, then docstrings of installed packages with free
  licenses where present (NumPy, Matplotlib, pip, IPython, Hypothesis, pytest, Pygments);
* ``multilingual``: the translated messages (``msgstr``) of the gettext catalogs under
  ``/usr/share/locale`` (free-software packages' translations, mostly GPL/LGPL), taken
  round-robin over languages so every script contributes. Skipped if the directory is absent.

Writes ``benchmarks/data/{train,heldout}.jsonl`` (one ``{"kind", "source", "text"}`` per line)
and ``manifest.json``; ``benchmarks/data/`` is git-ignored and nothing here is committed.

    python benchmarks/corpus.py            # ~8 MB of training text, ~1 MB held out per kind
"""

from __future__ import annotations

import argparse
import ast
import importlib.util
import json
import struct
import sysconfig
import zlib
from itertools import zip_longest
from pathlib import Path

DATA = Path(__file__).resolve().parent / "data"
LOCALE = Path("/usr/share/locale")
SKIP_DIRS = {"site-packages", "dist-packages", "test", "tests", "idle_test", "__pycache__"}
PROSE_PACKAGES = ("numpy", "matplotlib", "pip", "IPython", "hypothesis", "_pytest", "pygments")


def held_out(source: str, every: int = 5) -> bool:
    return zlib.crc32(source.encode()) % every == 0


def stdlib_documents():
    """(kind, source, text) for each stdlib file: its code, then its docstrings as prose."""
    root = Path(sysconfig.get_paths()["stdlib"])
    for path in sorted(root.rglob("*.py")):
        if SKIP_DIRS & set(path.relative_to(root).parts):
            continue
        code = path.read_text(encoding="utf-8", errors="replace")
        source = f"stdlib/{path.relative_to(root)}"
        yield "code", source, code
        docs = docstrings(code)
        if docs:
            yield "prose", source, docs
    try:
        from pydoc_data.topics import topics
    except ImportError:
        return
    for name in sorted(topics):
        yield "prose", f"pydoc_data/{name}", topics[name]


def package_documents():
    """Docstrings of installed, freely licensed packages (whichever of PROSE_PACKAGES exist)."""
    for package in PROSE_PACKAGES:
        spec = importlib.util.find_spec(package)
        if spec is None or not spec.submodule_search_locations:
            continue
        root = Path(next(iter(spec.submodule_search_locations)))
        for path in sorted(root.rglob("*.py")):
            if SKIP_DIRS & set(path.relative_to(root).parts):
                continue
            docs = docstrings(path.read_text(encoding="utf-8", errors="replace"))
            if docs:
                yield "prose", f"{package}/{path.relative_to(root)}", docs


def docstrings(code: str) -> str:
    try:
        tree = ast.parse(code)
    except (SyntaxError, ValueError):
        return ""
    nodes = [tree] + [n for n in ast.walk(tree)
                      if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))]
    return "\n\n".join(d for n in nodes if (d := ast.get_docstring(n)) and len(d) > 40)


def read_mo(path: Path) -> list[str]:
    """The translated strings of a GNU .mo catalog (UTF-8 ones only; plural forms split)."""
    data = path.read_bytes()
    if len(data) < 28:
        return []
    magic = struct.unpack("<I", data[:4])[0]
    order = "<" if magic == 0x950412DE else ">" if magic == 0xDE120495 else None
    if order is None:
        return []
    count, _, translations = struct.unpack(order + "3I", data[8:20])
    out = []
    for i in range(1, count):  # entry 0 is the catalog header
        length, offset = struct.unpack(order + "2I", data[translations + 8 * i: translations + 8 * i + 8])
        try:
            text = data[offset:offset + length].decode("utf-8")
        except UnicodeDecodeError:
            return []  # a catalog in a legacy charset: skip it whole
        out += [s for s in text.split("\x00") if s.strip()]
    return out


def locale_documents():
    if not LOCALE.is_dir():
        return
    by_language: dict[str, list[Path]] = {}
    for path in sorted(LOCALE.glob("*/LC_MESSAGES/*.mo")):
        language = path.parts[-3]
        if not language.startswith("en"):
            by_language.setdefault(language, []).append(path)
    for row in zip_longest(*by_language.values()):  # round-robin: every language early on
        for path in row:
            if path is not None and (strings := read_mo(path)):
                yield "multilingual", f"locale/{path.parts[-3]}/{path.name}", "\n".join(strings) + "\n"


def build(train_mb: float = 8.0, heldout_mb: float = 1.0, out: Path = DATA) -> dict:
    shares = {"code": 0.45, "prose": 0.35, "multilingual": 0.20}
    if not LOCALE.is_dir():
        shares = {"code": 0.55, "prose": 0.45}
    want = {("train", k): train_mb * 1e6 * s for k, s in shares.items()}
    want |= {("heldout", k): heldout_mb * 1e6 for k in shares}
    got = {key: 0 for key in want}
    docs = {"train": [], "heldout": []}
    for source in (stdlib_documents(), package_documents(), locale_documents()):
        for kind, name, text in source:
            split = "heldout" if held_out(name) else "train"
            if got[(split, kind)] < want[(split, kind)]:
                docs[split].append({"kind": kind, "source": name, "text": text})
                got[(split, kind)] += len(text.encode())
    out.mkdir(parents=True, exist_ok=True)
    for split, rows in docs.items():
        rows.sort(key=lambda r: zlib.crc32(r["source"].encode() + r["kind"].encode()))  # mix the kinds
        with open(out / f"{split}.jsonl", "w", encoding="utf-8") as f:
            f.writelines(json.dumps(row, ensure_ascii=False) + "\n" for row in rows)
    manifest = {"bytes": {f"{s}/{k}": n for (s, k), n in got.items()},
                "documents": {s: len(rows) for s, rows in docs.items()},
                "sources": "CPython stdlib .py files and docstrings, pydoc_data topics, docstrings of "
                           f"installed packages {PROSE_PACKAGES}, /usr/share/locale gettext catalogs"}
    (out / "manifest.json").write_text(json.dumps(manifest, indent=2) + "\n")
    return manifest


def load(split: str, kind: str | None = None, data: Path = DATA) -> list[str]:
    """Texts of one split (``train`` / ``heldout``), optionally one kind; builds the corpus if missing."""
    path = data / f"{split}.jsonl"
    if not path.exists():
        build(out=data)
    with open(path, encoding="utf-8") as f:
        rows = map(json.loads, f)
        return [r["text"] for r in rows if kind is None or r["kind"] == kind]


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--train-mb", type=float, default=8.0)
    parser.add_argument("--heldout-mb", type=float, default=1.0)
    parser.add_argument("--out", type=Path, default=DATA)
    args = parser.parse_args()
    print(json.dumps(build(args.train_mb, args.heldout_mb, args.out), indent=2))
