"""A sixth hostile check of the compressor, its command line and the build plugin: cases beyond those
of tests/test_compression_hostile.py, tests/test_site_build_hostile.py, tests/test_hostile_inputs.py,
tests/test_hostile_state.py and tests/test_hostile_round4.py and round5.py. Each test states what
should happen and fails on today's code (``xfail(strict=True)``), so that it flips to a pass, and
must then lose its marker, once the defect is fixed."""

from __future__ import annotations

import html
import json
import re
from html.parser import HTMLParser
from pathlib import Path

import markdown
import numpy as np
import pytest

from netcl_lite import compression as cz
from netcl_lite import fingerprint
from netcl_lite.context_mixing import ContextMixer, StreamCache
from netcl_lite.match import MatchModel
from netcl_lite.ngram import Mixer, NGram, WordNGram
from netcl_lite.nn import DecoderLM, LMConfig
from netcl_lite.text import BPETokenizer
from site_build import build_output, generated
from site_render import render_page

ROOT = Path(__file__).resolve().parent.parent

TEXT = ("Each stream is coded from the model's predictions; a header says how to read it back.\n"
        "Counts of what followed each context sharpen the guesses as the text goes on.\r\n") * 6

#: a one-layer model over a 16-token window (as tests/test_compression_hostile.py's)
SMALL = dict(hidden_size=16, intermediate_size=32, num_hidden_layers=1, num_attention_heads=2,
             num_key_value_heads=1, max_position_embeddings=16)


@pytest.fixture(scope="module")
def tiny(queue):
    """(model, tokenizer): a small untrained model and a 300-token BPE trained on TEXT."""
    tok = BPETokenizer()
    tok.train_from_iterator([TEXT], 300, progress=False)
    return DecoderLM(LMConfig(vocab_size=300, **SMALL), queue=queue, seed=1), tok


class Tags(HTMLParser):
    """Every start tag of an HTML text, with its attributes."""

    def __init__(self, text: str):
        super().__init__()
        self.found: list[tuple[str, dict]] = []
        self.feed(text)

    def handle_starttag(self, tag, attrs):
        self.found.append((tag, dict(attrs)))


def handlers(page_html: str) -> list:
    """The elements of ``page_html`` that carry an event handler (``onerror``, ``onload``, ...)."""
    return [(t, a) for t, a in Tags(page_html).found if any(name.startswith("on") for name in a)]


# -- the compressor ------------------------------------------------------------------------------------

def test_compress_codes_the_bytes_its_length_check_saw(tiny):
    """``compress`` measures ``memoryview(data)`` and then codes ``bytes(data)``: for a bytes subclass with
    ``__bytes__`` those differ, so the blob holds other bytes than the object's (and one whose
    ``__bytes__`` returns over MAX_INPUT_BYTES passes the limit and gives a blob ``decompress``
    refuses). The bytes coded should be those of the buffer it measured (or the object refused)."""
    model, tok = tiny

    class Other(bytes):
        def __bytes__(self):
            return b"something else entirely"

    data = Other(b"abc def abc def")
    try:
        blob = cz.compress(data, model, tok, mix=False)
    except TypeError as err:                          # refused, naming data: also right
        assert "data" in str(err)
        return
    assert cz.decompress(blob, model, tok) == b"abc def abc def"


@pytest.mark.parametrize("call", ["compress", "decompress", "read_header", "tokenize"])
def test_a_released_memoryview_is_refused_naming_the_parameter(tiny, call):
    model, tok = tiny
    view = memoryview(b"abc")
    view.release()
    name = "data" if call in ("compress", "tokenize") else "blob"
    run = {"compress": lambda: cz.compress(view, model, tok), "decompress": lambda: cz.decompress(view, model, tok),
           "read_header": lambda: cz.read_header(view), "tokenize": lambda: cz.tokenize(view, tok)}[call]
    with pytest.raises((TypeError, ValueError), match=rf"\b{name}\b"):
        run()


EMPTY = np.zeros(0, np.int64)
BYTES = {i: bytes([i]) for i in range(256)}
#: the mixer's parts given sizes no input has: each should be refused, naming the parameter, before
#: anything is allocated (today: NumPy's MemoryError for TiBs, or a uint64 sum that wraps to 0)
PARTS = {
    "MatchModel, uint64 lengths whose sum wraps to 0": (lambda: MatchModel(EMPTY, np.array([2**63, 2**63], np.uint64)),
                                                         "lengths"),
    "MatchModel, int64 lengths whose sum overflows": (lambda: MatchModel(EMPTY, np.full(3, 2**62, np.int64)), "lengths"),
    "MatchModel, 10^12 tokens": (lambda: MatchModel(EMPTY, np.array([10**12])), "lengths"),
    "ContextMixer, 10^12 tokens": (lambda: ContextMixer(EMPTY, 256, np.array([10**12]), BYTES), "lengths"),
    "StreamCache, 10^12 tokens": (lambda: StreamCache(256, np.array([10**12])), "lengths"),
    "NGram, 10^12 streams": (lambda: NGram(EMPTY, 256, 10**12), "streams"),
    "NGram, a vocabulary of 2^40": (lambda: NGram(EMPTY, 2**40, 1), "vocab"),
    "Mixer, orders -1": (lambda: Mixer(-1), "orders"),
    "WordNGram, pieces of str": (lambda: WordNGram(EMPTY, 256, 1, {i: chr(i) for i in range(256)}), "pieces"),
}


@pytest.mark.parametrize("case", PARTS.values(), ids=PARTS.keys())
def test_the_mixer_s_parts_refuse_sizes_no_input_has_naming_the_parameter(case):
    make, name = case
    with pytest.raises((ValueError, TypeError), match=rf"\b{name}\b"):
        make()


# -- the command line ----------------------------------------------------------------------------------

@pytest.mark.parametrize("content", ["not a blob", "a stored blob"])
def test_decompress_reads_the_header_before_loading_the_model(tiny, tmp_path, monkeypatch, capsys, content):
    """``decompress`` of a file that is no blob, or of a stored one (which needs no model), loads the
    default model first: in a fresh clone that trains Chapter 9's model (minutes of CPU) before
    saying the file is not a blob. The header is read and checked first; the model is loaded only
    for a coded blob."""
    model, tok = tiny
    loaded = []
    monkeypatch.setattr(cz, "_load", lambda folder: loaded.append(folder) or (model, tok))
    src, out = tmp_path / "in", tmp_path / "out"
    if content == "not a blob":
        src.write_bytes(b"hello")
    else:
        blob = cz.compress(b"hello", model, tok, mix=False)
        assert cz.read_header(blob)["mode"] == cz.STORED
        src.write_bytes(blob)
    rc = cz.main(["decompress", str(src), str(out)])
    err = capsys.readouterr().err
    if content == "not a blob":
        assert rc == 1 and "blob is truncated" in err, err
    else:
        assert rc == 0 and out.read_bytes() == b"hello", err
    assert loaded == [], "the model was loaded for a file that needs none"


@pytest.mark.parametrize("which", ["IN", "OUT"])
def test_a_path_with_a_newline_or_an_escape_is_named_on_one_line(tmp_path, monkeypatch, capsys, which):
    """A file name may hold any byte but / and NUL: one with a newline reads as two messages, one with
    ESC [ 31 m turns the terminal red. The message names the path quoted (as ``repr`` or ``ls``
    would), on one line, with no control character."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "in.txt").write_bytes(TEXT.encode())
    odd = "no\nsuch\x1b[31mred"
    args = ["compress", odd, "out"] if which == "IN" else ["compress", "in.txt", f"{odd}/out"]
    assert cz.main([*args, "--model", str(tmp_path / "nomodel")]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "\x1b" not in err, err


@pytest.fixture(scope="module")
def model_dir(tiny, tmp_path_factory):
    """A folder the command line's --model reads: :func:`tiny`'s model and tokenizer."""
    model, tok = tiny
    folder = tmp_path_factory.mktemp("model")
    model.save_pretrained(folder)
    tok.save(folder / "tokenizer.json")
    return folder


@pytest.mark.parametrize("side", ["standard input", "standard output"])
def test_main_with_a_text_only_standard_stream_fails_naming_it(tiny, model_dir, tmp_path, monkeypatch, capsys, side):
    """``main`` is public: called where ``sys.stdin`` or ``sys.stdout`` is a text stream without a
    binary ``buffer`` (an ``io.StringIO``, ``contextlib.redirect_stdout``, some notebook kernels), ``-``
    raises ``AttributeError: '_io.StringIO' object has no attribute 'buffer'`` (for OUT, after the
    whole input is coded). It should exit 1 naming the stream, as it does for a closed one."""
    import io

    src = tmp_path / "in.txt"
    src.write_bytes(TEXT.encode())
    if side == "standard input":
        monkeypatch.setattr("sys.stdin", io.StringIO(TEXT))
        args = ["compress", "-", str(tmp_path / "out")]
    else:
        monkeypatch.setattr("sys.stdout", io.StringIO())
        args = ["compress", str(src), "-"]
    rc = cz.main([*args, "--model", str(model_dir), "--model-only"])
    err = capsys.readouterr().err
    if side == "standard input" and rc == 0:        # read as the text it is: also right
        assert cz.decompress((tmp_path / "out").read_bytes(), *tiny) == TEXT.encode()
        return
    assert rc == 1 and side in err, err


@pytest.mark.parametrize("tail", ["/.", "/.//."])
def test_an_out_that_names_a_folder_by_a_trailing_dot_is_refused(model_dir, tmp_path, capsys, tail):
    """``name/.`` names the folder ``name`` (``cp x name/.`` fails when there is none), as ``name/`` does,
    which OUT refuses; ``Path('name/.')`` is ``Path('name')``, so today a file ``name`` is written."""
    src = tmp_path / "in.txt"
    src.write_bytes(TEXT.encode())
    rc = cz.main(["compress", str(src), str(tmp_path / "name") + tail, "--model", str(model_dir), "--model-only"])
    err = capsys.readouterr().err
    assert rc == 1 and not (tmp_path / "name").exists() and "name" in err, err


# -- the build plugin: drill notebooks -----------------------------------------------------------------

def _notebook_page(tmp_path: Path, cells: list) -> str:
    """The HTML mkdocs-jupyter makes of a notebook of ``cells``, as the site renders a drill."""
    from mkdocs_jupyter import convert

    nb = {"cells": cells, "nbformat": 4, "nbformat_minor": 5,
          "metadata": {"kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"},
                       "language_info": {"name": "python"}}}
    path = tmp_path / "drill.ipynb"
    path.write_text(json.dumps(nb), encoding="utf-8")
    return convert.nb2html(str(path))


def test_an_image_s_size_in_a_drill_output_puts_no_attribute_on_the_page(tmp_path):
    """A drill step may ``display(Image(png, width="1 onerror=alert(document.domain)"))``: the notebook
    keeps the raster image (a safe type) and its metadata, and nbconvert's template writes
    ``width={{ width | escape_html }}`` without quotes, so the page gets an ``onerror`` handler. What
    the notebook keeps of an output should put no attribute of its own choosing on the page."""
    outputs = generated._plain_outputs([
        {"output_type": "display_data", "data": {"image/png": "iVBORw0KGgo=", "text/plain": "<Image>"},
         "metadata": {"image/png": {"width": "1 onerror=alert(document.domain)", "height": "2 onload=alert(2)"}}},
        {"output_type": "execute_result", "execution_count": 1, "data": {"image/jpeg": "/9j/", "text/plain": "<J>"},
         "metadata": {"image/jpeg": {"width": "3 onmouseover=alert(3)"}}},
    ])
    page = _notebook_page(tmp_path, [{"cell_type": "code", "id": "step-1", "metadata": {}, "execution_count": 1,
                                      "source": ["show()"], "outputs": outputs}])
    assert len([t for t, _ in Tags(page).found if t == "img"]) == 2, "the images are still shown"
    assert handlers(page) == []


def test_a_drill_step_s_heading_is_shown_as_the_text_it_is(tmp_path):
    """A step's first line, ``# Step 1 — the <img src=x onerror=alert(1)> tag``, becomes the notebook's
    heading ``## Step 1 — the <img …> tag``, which mkdocs-jupyter renders as Markdown with raw HTML:
    an element with an event handler on the page (and ``*stars*`` turn into emphasis). On the week's
    page the same line is code, shown as written; the notebook's heading should show it as written too."""
    week = tmp_path / "week99"
    week.mkdir()
    first = "# Step 1 — the <img src=x onerror=alert(1)> tag and *stars*"
    (week / "drill_1_show.py").write_text(first + "\nprint(1)\n", encoding="utf-8")
    page = _notebook_page(tmp_path, generated.drill_notebook(week)["cells"])
    assert handlers(page) == []
    headings = [html.unescape(re.sub(r"<[^>]+>", "", h)).strip().removesuffix("¶")      # the anchor link
                for h in re.findall(r"<h2[^>]*>(.*?)</h2>", page, re.S)]
    assert first.lstrip("# ") in headings, headings


# -- the build plugin: pages ---------------------------------------------------------------------------

@pytest.fixture
def scratch(tmp_path, monkeypatch):
    """A scratch project (its ``snippets/hostile/``), the working folder, as the build reads includes."""
    root = tmp_path / "project"
    (root / "snippets" / "hostile").mkdir(parents=True)
    monkeypatch.chdir(root)
    monkeypatch.setattr(build_output, "ROOT", root)
    monkeypatch.setenv("NETCL_LITE_CACHE", str(tmp_path / "cache"))
    monkeypatch.delenv(fingerprint.RERUN, raising=False)
    return root


def test_an_included_file_cannot_close_the_block_that_includes_it(scratch):
    """A snippet holding a line of three backticks (in a string: the program runs) ends the page's
    python block there, and the rest of the file becomes the page's Markdown: a ``<script>`` and a
    heading. The build should fail naming the page and the included file (or keep its text inside
    the block)."""
    (scratch / "snippets" / "hostile" / "fenced.py").write_text(
        'SHOWN = """\n```\n<script>window.injected = 1</script>\n\n# Injected\n```\n"""\nprint(len(SHOWN))\n',
        encoding="utf-8")
    page = '# Hostile\n\n```python\n--8<-- "snippets/hostile/fenced.py"\n```\n\nAfter the block.\n'
    try:
        page_html = render_page(page, label="hostile round 6")
    except (ValueError, RuntimeError) as err:        # refused, naming the page and the file: also right
        assert "docs/hostile.md" in str(err) and "fenced.py" in str(err), str(err)
        return
    tags = [t for t, _ in Tags(page_html).found]
    assert "script" not in tags and tags.count("h1") == 1, tags


def test_nested_includes_that_double_at_each_level_are_refused_naming_the_page(scratch):
    """Thirteen files of at most 1 KiB, each including the one below twice, bring 4 MiB into the page
    (4,096 copies of the last); at 25 levels, 2^25 of them: hours and gigabytes. Each file is far
    under INCLUDE_LIMIT and none includes itself, so the build takes them all. What includes bring
    into one page should be bounded as one included file is, failing the build naming the page."""
    from site_build import includes

    folder = scratch / "snippets" / "hostile"
    (folder / "l0.txt").write_text("x" * 1023 + "\n", encoding="utf-8")
    for k in range(1, 13):
        (folder / f"l{k}.txt").write_text(f'--8<-- "snippets/hostile/l{k - 1}.txt"\n' * 2, encoding="utf-8")
    page = includes.CurrentPage("docs/hostile.md", '```text\n--8<-- "snippets/hostile/l12.txt"\n```\n', 1)
    md = markdown.Markdown(extensions=[includes.contained_snippets(page, base_path=["."], check_paths=True)])
    with pytest.raises(ValueError, match="docs/hostile.md"):
        md.preprocessors["snippet"].run(page.markdown.split("\n"))


@pytest.mark.parametrize("img", ['<img src="figures/hostile/plot.svg">',
                                 "<img alt='typed by hand' src='figures/hostile/plot.svg'>",
                                 '<img src="figures/hostile/plot.svg" alt=\'typed by hand\'>'],
                         ids=["no alt", "single quotes", "alt in single quotes"])
def test_a_figure_shown_as_raw_html_gets_its_description_as_alt(tmp_path, monkeypatch, img):
    """The caption check takes a figure shown as a raw ``<img>`` (any quotes); its alt text should be
    the description its script gave, as for ``![alt](…)``, never missing or typed by hand."""
    figures = tmp_path / "figures"
    (figures / "hostile").mkdir(parents=True)
    (figures / "hostile" / "plot.svg").write_text(
        "<svg><metadata><dc:description>Loss falls from 5.2 to 1.3 &lt;nats&gt;</dc:description>"
        "</metadata></svg>", encoding="utf-8")
    monkeypatch.setattr(generated, "FIGURES", figures)
    out = generated.with_alt(f"<p>{img}</p>", "docs/hostile.md")
    [(tag, attrs)] = Tags(out).found[1:]
    assert attrs.get("alt") == "Loss falls from 5.2 to 1.3 <nats>", out


EXCERPT_INCLUDES = {
    "single quotes": "--8<-- 'netcl_lite/text/patterns.py:gpt4_pattern'",
    "one dash each side": '-8<- "netcl_lite/text/patterns.py:gpt4_pattern"',
    "a line range": '--8<-- "netcl_lite/text/patterns.py:1:3"',
}


@pytest.mark.parametrize("include", EXCERPT_INCLUDES.values(), ids=EXCERPT_INCLUDES.keys())
def test_an_excerpt_in_any_include_form_is_labelled_or_refused(tmp_path, monkeypatch, include):
    """pymdownx.snippets includes ``--8<-- 'path:section'``, ``-8<- "path:section"`` and
    ``--8<-- "path:first:last"`` as it does ``--8<-- "path:section"``; the build's excerpt stages
    (:func:`site_build.copyable.check_excerpts`, :func:`~site_build.copyable.label_excerpts`) see
    only the last, so the others show library code with a copy button, no "Excerpt" title and no
    note linking its lines, and their section is never checked. Each should be an excerpt like any
    other, or fail naming the page and the line."""
    monkeypatch.chdir(ROOT)                          # excerpts are read from the repository
    monkeypatch.setenv("NETCL_LITE_CACHE", str(tmp_path / "cache"))
    page = f'# Hostile\n\n```{{.python .excerpt title="netcl_lite/text/patterns.py"}}\n{include}\n```\n\nAfter.\n'
    try:
        page_html = render_page(page, label="hostile round 6")
    except (ValueError, RuntimeError) as err:        # refused, naming the page and the line: also right
        assert "docs/hostile.md:4" in str(err), str(err)
        return
    assert "Excerpt · netcl_lite/text/patterns.py" in page_html and "no-copy" in page_html
    assert "excerpt-source" in page_html, "no note links the lines it shows"
