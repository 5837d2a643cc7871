"""A reader outside the repository: install from the site, copy a block, run it.

The site carries the project's wheel and says how to install it; an extra is named by what it
serves, and a block that needs one says so above itself and stops at once without it. Library
excerpts are labelled, link to their file and have no copy button; a ``>>>`` session copies as
code. The slow test installs the wheel the built site serves into a fresh virtual environment
outside the repository and runs every copyable block and every drill notebook from there.
"""

from __future__ import annotations

import ast
import functools
import html
import http.server
import json
import os
import re
import subprocess
import sys
import threading
import zipfile
from pathlib import Path

import pytest

import doc_blocks
from netcl_lite import extras, fingerprint
from site_build import copyable, markers, runner

ROOT = doc_blocks.ROOT


def _pyproject() -> str:
    return (ROOT / "pyproject.toml").read_text(encoding="utf-8")


def _version() -> str:
    return re.search(r'^version = "([^"]+)"', _pyproject(), re.M).group(1)


WHEEL = f"netcl_lite-{_version()}-py3-none-any.whl"


def _extra_requirements(extra: str) -> list[str]:
    body = re.search(rf"^{extra} = \[(.*?)^\]", _pyproject(), re.M | re.S).group(1)
    return [re.split(r"[<>=\[ ]", r, maxsplit=1)[0].lower() for r in re.findall(r'"([^"]+)"', body)]


# ---- extras ------------------------------------------------------------------------------------

@pytest.mark.parametrize("extra", sorted(extras.EXTRAS))
def test_each_extra_brings_the_modules_its_blocks_import(extra):
    assert _extra_requirements(extra) == list(extras.EXTRAS[extra]), (
        f"pyproject's [{extra}] and netcl_lite.extras.EXTRAS[{extra!r}] name different packages")


def test_require_stops_at_once_with_the_pip_command(monkeypatch):
    monkeypatch.setitem(extras.EXTRAS, "compare", ("numpy", "no_such_module_for_this_test"))
    with pytest.raises(ImportError, match="no_such_module_for_this_test") as err:
        extras.require("compare")
    assert "pip install" in str(err.value) and "[compare]" in str(err.value)
    monkeypatch.setitem(extras.EXTRAS, "compare", ("numpy",))
    extras.require("compare")                                # present: returns quietly


def test_the_command_names_the_wheel_pip_installed_netcl_lite_from(monkeypatch):
    url = f"http://127.0.0.1:8000/{WHEEL}"
    monkeypatch.setattr(extras, "_source", lambda: url)
    assert extras.install_command("compare") == f'pip install "netcl_lite[compare] @ {url}"'
    monkeypatch.setattr(extras, "_source", lambda: "/home/reader/clone")
    assert extras.install_command("compare") == 'pip install -e "/home/reader/clone[compare]"'


def test_interop_command_takes_torch_from_the_cpu_only_index():
    first = extras.install_command("interop").split("\n")[0]
    assert first == "pip install torch==2.13.0 --index-url https://download.pytorch.org/whl/cpu"


@pytest.mark.parametrize("bad", ["gpu", "", None, 3])
def test_an_unknown_extra_is_refused(bad):
    with pytest.raises(ValueError, match="extra must be one of"):
        extras.require(bad)


def _imports(code: str) -> list[tuple[int, str]]:
    found = []
    for node in ast.walk(ast.parse(code)):
        if isinstance(node, ast.Import):
            found += [(node.lineno, a.name.split(".")[0]) for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            found.append((node.lineno, node.module.split(".")[0]))
    return found


def _requires(code: str) -> dict[str, int]:
    """extra -> the line of the block's ``require("extra")`` call."""
    calls = {}
    for node in ast.walk(ast.parse(code)):
        if (isinstance(node, ast.Call) and getattr(node.func, "attr", getattr(node.func, "id", None)) == "require"
                and node.args and isinstance(node.args[0], ast.Constant)):
            calls[node.args[0].value] = node.lineno
    return calls


def needed_extras(code: str) -> set[str]:
    modules = {m for _, m in _imports(code)}
    return {extra for extra, names in extras.EXTRAS.items() if modules & set(names)}


BLOCKS = [(page, block) for page in doc_blocks.pages() for block in doc_blocks.runnable(page)]


@pytest.mark.parametrize("page, block", BLOCKS, ids=[f"{p.relative_to(doc_blocks.DOCS)}:{b.lineno}" for p, b in BLOCKS])
def test_a_block_that_needs_an_extra_says_so_and_checks_first(page, block):
    needed = needed_extras(block.code)
    if not needed:
        return
    calls = _requires(block.code)
    for extra in sorted(needed):
        names = set(extras.EXTRAS[extra])
        first_import = min(line for line, m in _imports(block.code) if m in names)
        assert extra in calls and calls[extra] < first_import, (
            f"{page.name}:{block.lineno} imports a module of the {extra!r} extra: call "
            f"netcl_lite.extras.require({extra!r}) before importing it")
        text = doc_blocks.expand(page).split("\n")
        fence = block.lineno - 1 if block.lineno > 0 else 0
        above = "\n".join(text[max(0, fence - 6):fence + 1])
        assert markers.needs_extra(extra) in above, (
            f"{page.name}:{block.lineno} needs the {extra!r} extra: put {markers.needs_extra(extra)} right above it")


# ---- the install text ----------------------------------------------------------------------------

def _site_url() -> str:
    return re.search(r"^site_url:\s*(\S+)", (ROOT / "mkdocs.yml").read_text(encoding="utf-8"), re.M).group(1)


@pytest.mark.parametrize("doc", ["README.md", "docs/index.md"])
def test_install_text_names_this_versions_wheel_at_the_sites_address(doc):
    text = (ROOT / doc).read_text(encoding="utf-8")
    named = set(re.findall(r"netcl_lite-[\w.]+-py3-none-any\.whl", text))
    assert named == {WHEEL}, f"{doc} names {sorted(named)}; the wheel is {WHEEL}"
    assert f"pip install {_site_url()}{WHEEL}" in text, f"{doc}: no `pip install {_site_url()}{WHEEL}`"
    assert "--index-url https://download.pytorch.org/whl/cpu" in text, f"{doc}: no CPU-only torch command"


def test_home_page_names_every_page_with_build_output_boxes():
    """The home page says where machine-dependent outputs are: every page that has such boxes."""
    home = (doc_blocks.DOCS / "index.md").read_text(encoding="utf-8")
    claim = home[home.index("printed when this site was built"):][:900]
    for page in doc_blocks.pages():
        if "<!-- build-output:" in page.read_text(encoding="utf-8"):
            link = page.relative_to(doc_blocks.DOCS).as_posix()
            assert f"]({link})" in claim, f"index.md's list of build-output pages leaves out {link}"


# ---- the built site --------------------------------------------------------------------------------

def test_the_site_links_the_wheel_it_contains(built_site):
    wheel = built_site / WHEEL
    assert wheel.is_file(), f"{WHEEL} is not at the site's root"
    names = set(zipfile.ZipFile(wheel).namelist())
    assert "netcl_lite/__init__.py" in names and "netcl_lite/kernels/matmul.cl" in names
    home = (built_site / "index.html").read_text(encoding="utf-8")
    assert f'href="{WHEEL}"' in home, "the home page does not link the wheel"


_DIV = re.compile(r'<div class="([^"]*\bexcerpt\b[^"]*)"')


def test_excerpts_are_labelled_link_their_file_and_have_no_copy_button(built_site):
    problems, count = [], 0
    for page in doc_blocks.pages():
        out = doc_blocks.rendered_page(built_site, page)
        text = out.read_text(encoding="utf-8")
        for m in _DIV.finditer(text):
            count += 1
            where = f"{page.name} at {m.start()}"
            after = text[m.end():]
            if "no-copy" not in m.group(1).split():
                problems.append(f"{where}: excerpt without no-copy")
            title = re.search(r'<span class="filename">([^<]*)</span>', after[:400])
            if not title or not html.unescape(title.group(1)).startswith("Excerpt"):
                problems.append(f"{where}: excerpt title {title and title.group(1)!r} does not say Excerpt")
            note = re.search(r'<p class="excerpt-source">.*?href="([^"#]+)#L(\d+)-L(\d+)"',
                             after[:after.find("</div>\n") + 3000], re.S)
            if not note:
                problems.append(f"{where}: no line under the excerpt linking its file's lines")
                continue
            first, last = note.group(2), note.group(3)
            target = (out.parent / html.unescape(note.group(1))).resolve()
            shown = target.read_text(encoding="utf-8") if target.is_file() else ""
            if not all(f'id="{anchor}"' in shown for anchor in (f"L{first}-L{last}", f"L{first}", f"L{last}")):
                problems.append(f"{where}: its link {note.group(1)}#L{first}-L{last} leads nowhere")
    assert count, "no excerpt found on the built site"
    assert not problems, "\n".join(problems)


def test_docstring_sessions_copy_without_prompts_or_outputs(built_site):
    sessions = 0
    for page in (built_site / "reference").rglob("index.html"):
        text = page.read_text(encoding="utf-8")
        for m in re.finditer(r'<div class="language-pycon highlight"([^>]*)>', text):
            sessions += 1
            copy = re.search(r'data-copy="([^"]*)"', m.group(1))
            assert copy, f"{page}: a >>> session without data-copy"
            code = html.unescape(copy.group(1))
            assert ">>>" not in code and code.strip(), f"{page}: a session copies {code[:80]!r}"
            compile(code, "<copied>", "exec")                 # what is copied is Python
    assert sessions > 10, f"only {sessions} >>> sessions on the reference pages"


# ---- a fresh environment outside the repository -------------------------------------------------

class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


@pytest.fixture(scope="module")
def served_site(built_site):
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(_Quiet, directory=str(built_site)))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}/"
    server.shutdown()


def _reader_env() -> dict:
    """A reader's environment (site_build.runner's), outside this checkout's venv and cache, and with
    Python keeping the bytecode it compiles, as it does unless told otherwise."""
    return runner.reader_env(drop=("VIRTUAL_ENV", "NETCL_LITE_CACHE", "PYTHONDONTWRITEBYTECODE"))


#: pip's flags for the test's venvs: quiet, and without compiling every installed module to bytecode
#: up front (torch's thousands of files), which Python then does for the modules a block imports, as
#: it would for any module without a cached .pyc: the same programs run, the install takes half the time
_PIP_QUIET_NO_COMPILE = ("-q", "--disable-pip-version-check", "--no-compile")


@pytest.fixture(scope="module")
def reader_python(served_site, tmp_path_factory) -> Path:
    """A fresh venv outside the repository with the wheel installed from the served site (plus the
    extras the pages name, and ipykernel for the notebooks); pip may reuse its download cache."""
    home = tmp_path_factory.mktemp("reader")
    assert not home.resolve().is_relative_to(ROOT)
    venv = home / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=300)
    python = venv / "bin" / "python"
    named = sorted({m["extra"] for p in doc_blocks.pages()
                    for m in markers.NEEDS_EXTRA.finditer(p.read_text(encoding="utf-8"))})
    spec = f"netcl_lite[{','.join(named)}] @ {served_site}{WHEEL}" if named else f"{served_site}{WHEEL}"
    proc = subprocess.run([str(python), "-m", "pip", "install", *_PIP_QUIET_NO_COMPILE, spec, "ipykernel",
                           "nbclient", "nbformat"], cwd=home, env=_reader_env(), capture_output=True, text=True, timeout=1200)
    assert proc.returncode == 0, f"pip install {spec} failed:\n{proc.stderr[-3000:]}"
    where = subprocess.run([str(python), "-c", "import netcl_lite; print(netcl_lite.__file__)"], cwd=home,
                           env=_reader_env(), capture_output=True, text=True).stdout.strip()
    assert where.startswith(str(venv)), f"the reader's netcl_lite is {where}, not the installed wheel"
    return python


def _clean(text: str) -> str:
    return "\n".join(line.rstrip() for line in text.strip("\n").split("\n"))


@pytest.mark.slow
@pytest.mark.parametrize("page", doc_blocks.pages(), ids=lambda p: str(p.relative_to(doc_blocks.DOCS)))
def test_every_copyable_block_runs_from_the_wheel_outside_the_repository(page, reader_python, tmp_path):
    """Each runnable block, pasted into block.py in an empty folder and run with the reader's python,
    prints what the page shows."""
    failures = []
    for i, block in enumerate(doc_blocks.runnable(page)):
        folder = tmp_path / f"block{i}"
        folder.mkdir()
        # the build's cache: Chapter 9's training run is keyed on the library's files, the packages
        # it computes with and the device, not on where it is installed, so the reader's install
        # finds the run the build trained when (and only when) those are the same
        env = dict(_reader_env(), NETCL_LITE_CACHE=str(fingerprint.cache_root()))
        try:
            proc = runner.run_code(block.code, folder, timeout=900, python=reader_python, env=env)
        except runner.SnippetError as err:           # it printed what is not UTF-8
            failures.append(f"{page.name}:{block.lineno}: {err}")
            continue
        if proc.returncode:
            failures.append(f"{page.name}:{block.lineno} failed:\n{proc.stderr[-1500:]}")
        elif block.expected_output is not None and _clean(proc.stdout) != _clean(block.expected_output):
            failures.append(f"{page.name}:{block.lineno} printed something else than the page:\n{proc.stdout[-1500:]}")
    assert not failures, "\n\n".join(failures)


WEEKS = sorted({p.parent.name.replace("week", "week-") for p in ROOT.glob("snippets/week*/drill_*.py")})


@pytest.fixture(scope="module")
def jupyter_python(tmp_path_factory) -> Path:
    """A fresh venv outside the repository with a Jupyter kernel and no netcl_lite: the notebook's
    first cell has to install it."""
    venv = tmp_path_factory.mktemp("jupyter") / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=300)
    python = venv / "bin" / "python"
    proc = subprocess.run([str(python), "-m", "pip", "install", *_PIP_QUIET_NO_COMPILE, "ipykernel",
                           "nbclient", "nbformat"], env=_reader_env(), capture_output=True, text=True, timeout=1200)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return python


_RUN_NOTEBOOK = """import sys, nbformat
from nbclient import NotebookClient
nb = nbformat.reads(sys.stdin.read(), as_version=4)
NotebookClient(nb, timeout=900, kernel_name="python3", allow_errors=False,
               resources={"metadata": {"path": "."}}).execute()
print(nbformat.writes(nb))
"""


@pytest.mark.slow
@pytest.mark.parametrize("week", WEEKS)
def test_downloaded_drill_notebook_installs_the_wheel_and_runs(week, built_site, served_site, jupyter_python, tmp_path):
    """The notebook as the site offers it, run top to bottom in a kernel of a venv that has no
    netcl_lite: its first cell installs the wheel from the site, and every step runs."""
    name = f"{week}-drill"
    nb = json.loads((built_site / "drills" / name / f"{name}.ipynb").read_text(encoding="utf-8"))
    intro = "".join(nb["cells"][0]["source"])
    assert "ipykernel" in intro, f"{name}: the first cell does not say which Jupyter kernel it needs"
    code = [c for c in nb["cells"] if c["cell_type"] == "code"]
    assert f"{_site_url()}{WHEEL}" in "".join(code[0]["source"]), f"{name}: the first code cell installs no wheel"
    for cell in code:
        cell["outputs"], cell["execution_count"] = [], None
    source = json.dumps(nb).replace(f"{_site_url()}{WHEEL}", f"{served_site}{WHEEL}")  # where this test serves it
    env = dict(_reader_env(), PATH=f"{jupyter_python.parent}:{os.environ.get('PATH', '')}")
    proc = subprocess.run([str(jupyter_python), "-c", _RUN_NOTEBOOK], input=source, cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=1800)
    assert proc.returncode == 0, f"{name} failed in a fresh kernel:\n{proc.stderr[-3000:]}"
    ran = json.loads(proc.stdout)
    install = next(c for c in ran["cells"] if c["cell_type"] == "code")
    first = "".join("".join(o["text"]) for o in install["outputs"]              # nbformat splits text into lines
                    if o["output_type"] == "stream" and o["name"] == "stdout")  # pip may warn on stderr
    assert first.strip() == f"netcl_lite {_version()}", f"{name}: the install cell printed {first!r}"


# ---- the build's markup, on a page of its own --------------------------------------------------------

class _Page:
    class file:
        src_uri = "concepts/example.md"


class _Config:
    site_url = "http://127.0.0.1:8000/"


def test_needs_extra_marker_becomes_a_note_with_the_pip_command():
    page = "Text.\n\n<!-- needs-extra: interop -->\n```python\nimport torch\n```\n"
    out = copyable.render_markdown(page, _Page.file.src_uri, _Config.site_url)
    assert '!!! note "This block needs the `interop` extra"' in out
    assert extras.TORCH_CPU in out
    assert f'pip install "netcl_lite[interop] @ http://127.0.0.1:8000/{WHEEL}"' in out
    assert out.index("!!! note") < out.index("```python\nimport torch")
    with pytest.raises(ValueError, match="no such extra"):
        copyable.render_markdown("<!-- needs-extra: gpu -->\n```python\nx = 1\n```\n", _Page.file.src_uri,
                                 _Config.site_url)


def test_an_excerpt_is_titled_uncopyable_and_linked_to_its_lines():
    page = '=== "tab"\n\n    ```{.c .excerpt title="kernels/bpe.cl"}\n    --8<-- "kernels/bpe.cl:bpe_split"\n    ```\n'
    out = copyable.render_markdown(page, _Page.file.src_uri, _Config.site_url)
    first, last = copyable.section_lines("kernels/bpe.cl", "bpe_split")
    lines = (ROOT / "kernels/bpe.cl").read_text(encoding="utf-8").splitlines()
    assert "[start:bpe_split]" in lines[first - 2] and "[end:bpe_split]" in lines[last]
    assert '    ```{.c .excerpt .no-copy title="Excerpt · kernels/bpe.cl"}' in out
    assert f"(../source/kernels/bpe.cl.md#L{first}-L{last})" in out and f"lines {first}–{last}" in out


def test_a_session_copies_its_code_without_prompts_or_results():
    code = ('<span class="gp">&gt;&gt;&gt; </span>x = [1,\n<span class="gp">... </span>     2]\n'
            '<span class="gp">&gt;&gt;&gt; </span>x\n<span class="go">[1, 2]</span>\n')
    assert copyable.pycon_code(code) == "x = [1,\n     2]\nx\n"
