"""MkDocs hook: show what a block printed when this build ran it.

Some outputs cannot be typed into a page: a training loss, a timing, sampled text
depend on the machine and the run. For those a page puts a marker under the block,

    <!-- build-output: snippets/chapter9/training.py -->

and this hook runs that snippet at build time, in a fresh interpreter and a scratch
folder (as the doc tests run every block), and puts its stdout in the marker's place
as a text block titled "printed when this site was built". A snippet that prints a
Markdown table (its last lines) takes the marker ``<!-- build-output: PATH as markdown -->``:
its stdout goes into the page as Markdown, and the table gets the caption "printed as
Markdown when this site was built, by the block above". It is not an ``output``
block: those are the outputs the doc tests compare, and the browser test counts them. The shown numbers are therefore this build's; what must hold on any
machine is asserted inside the snippet, so a run that misses it fails the build (and
the doc test that runs the same block). tests/test_capstone.py checks that each
marker sits right under the block that includes its snippet.

A snippet's stdout is kept in :mod:`netcl_lite.execution_cache`, keyed by the snippet,
the library, the packages and the device: a rebuild runs only the snippets whose key
changed (``NETCL_LITE_RERUN=1`` runs them all).

Paths stay inside the project. A marker's path must be relative, without ``..``, and lead
(symlinks resolved) to a regular ``.py`` file under ``snippets/``; and every ``--8<--``
include that ``pymdownx.snippets`` resolves, nested ones too, must lead to a file under
``snippets/`` or, for an excerpt, ``netcl_lite/`` or ``kernels/`` (:class:`ContainedSnippets`,
put in place of the extension by :func:`on_config`). Anything else, and a missing file,
fails the build with an error naming the page and the marker or include.
"""

from __future__ import annotations

import logging
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

from netcl_lite import execution_cache as cache

ROOT = Path(__file__).resolve().parents[2]
MARKER = re.compile(r"^<!-- build-output: (?P<path>\S+)(?P<markdown> as markdown)? -->$", re.M)
#: where an include may lead (resolved, symlinks followed), relative to the base of the includes
INCLUDE_ROOTS = ("snippets", "netcl_lite", "kernels")
_state: dict = {"page": "(no page)"}
_RUN = "stdout of: python <snippet>, fresh interpreter, scratch folder, PYTHONPATH unset"   # part of the key
_build: dict = {}
log = logging.getLogger("mkdocs.hooks.execution_cache")


class PathError(ValueError):
    """A marker or an include names a file outside the folders a page may show or run."""


def _inside(path: str, allowed: tuple[Path, ...], base: Path, what: str, page: str) -> Path:
    """``base / path`` resolved, symlinks followed, if it lies under one of ``allowed`` (resolved);
    raises :class:`PathError` or ``FileNotFoundError`` naming ``page`` and ``what`` otherwise."""
    parts = Path(path).parts
    if Path(path).is_absolute() or ".." in parts:
        raise PathError(f"{page}: {what}: the path must be relative to the repository root and "
                        f"must not contain '..'")
    target = (base / path).resolve()
    if not any(target.is_relative_to(root.resolve()) for root in allowed):
        names = ", ".join(f"{root.name}/" for root in allowed)
        raise PathError(f"{page}: {what}: leads to {target}, outside {names} (a symlink out of the "
                        f"project?); a page shows and runs only files under {names}")
    if not target.is_file():
        raise FileNotFoundError(f"{page}: {what}: no such file ({target})")
    return target


def marker_path(path: str, page: str, root: Path = ROOT) -> Path:
    """The snippet a ``build-output`` marker on ``page`` names, checked: relative, no ``..``, a
    ``.py`` file that lies under ``root/snippets`` once symlinks are resolved."""
    what = f"<!-- build-output: {path} -->"
    if not path.endswith(".py"):
        raise PathError(f"{page}: {what}: a build output runs a snippet, snippets/<page>/<name>.py")
    return _inside(path, (root / "snippets",), root, what, page)


def _snippet_preprocessor():
    from pymdownx.snippets import SnippetPreprocessor

    class ContainedPreprocessor(SnippetPreprocessor):
        def get_snippet_path(self, path):
            bases = [Path(base) for base, is_dir in self.get_bases() if is_dir]
            base = bases[0].resolve() if bases else ROOT
            what = f'--8<-- "{path}"'
            found = _inside(path, tuple(base / name for name in INCLUDE_ROOTS), base, what, _state["page"])
            return str(found)

    return ContainedPreprocessor


def contained_snippets(**options):
    """``pymdownx.snippets`` with ``options``, whose every include (nested ones too) must lead, symlinks
    resolved, to a file under ``snippets/``, ``netcl_lite/`` or ``kernels/`` of its base path, without
    ``..``; a missing file or any other path raises an error naming the page (:func:`on_page_markdown`
    records it) and the include."""
    from pymdownx.snippets import SnippetExtension

    preprocessor = _snippet_preprocessor()

    class ContainedSnippets(SnippetExtension):
        def extendMarkdown(self, md):
            self.md = md
            md.registerExtension(self)
            md.preprocessors.register(preprocessor(self.getConfigs(), md), "snippet", 32)

    return ContainedSnippets(**options)


def on_config(config):
    """Put :func:`contained_snippets` in place of ``pymdownx.snippets``, with the same options."""
    extensions = config.markdown_extensions
    if "pymdownx.snippets" in extensions:
        options = config.mdx_configs.pop("pymdownx.snippets", {})
        extensions[extensions.index("pymdownx.snippets")] = contained_snippets(**options)
    return config


def run_snippet(path: str) -> str:
    """The stdout of ``python <path>`` run as a reader would run the block (fails loudly)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST")}
    env.pop("PYTHONPATH", None)
    with tempfile.TemporaryDirectory() as tmp:
        proc = subprocess.run([sys.executable, str(ROOT / path)], cwd=tmp, env=env, capture_output=True,
                              text=True, timeout=900)
    if proc.returncode:
        raise RuntimeError(f"{path} failed at build time:\n{proc.stderr[-4000:]}")
    return proc.stdout


def snippet_key(path: str, shared: str | None = None) -> str:
    """The execution-cache key of a build-output snippet (its text and how it is run)."""
    return cache.key(_RUN + "\n" + (ROOT / path).read_text(encoding="utf-8"), shared=shared)


def cached_output(path: str) -> str:
    """What the snippet prints: from the store when its key is there, else run now and stored."""
    if "shared" not in _build:
        _build["shared"] = cache.context()
    key = snippet_key(path, _build["shared"])
    stored = cache.lookup("build_output", key)
    if stored is not None:
        _build["reused"] = _build.get("reused", 0) + 1
        return stored.decode("utf-8")
    log.info(f"execution cache: ran {path}")
    text = run_snippet(path)
    cache.store("build_output", key, text.encode("utf-8"))
    return text


def on_pre_build(config) -> None:
    _build.clear()        # the library or the device may have changed since the last build


def on_post_build(config) -> None:
    if _build.get("reused"):
        log.info(f"execution cache: {_build['reused']} build outputs reused")


def on_page_markdown(markdown: str, page, config, files) -> str:
    _state["page"] = f"docs/{page.file.src_uri}"

    def output(m: re.Match) -> str:
        marker_path(m.group("path"), _state["page"])
        text = cached_output(m.group("path")).rstrip("\n")
        if m.group("markdown"):
            return f"{text}\n\n/// table-caption\nPrinted as Markdown when this site was built, by the block above.\n///"
        return f'```text title="printed when this site was built"\n{text}\n```'

    return MARKER.sub(output, markdown)
