"""Issue 58's leftovers: a blob from sources whose forward pass differs, decompress options that
the format records, an OUT folder that takes no file, a loader's message naming odd paths, and the
build's includes that open a fence or bring lines a block keeps as code."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from netcl_lite import compression as cz
from netcl_lite.files import shown_path
from netcl_lite.nn import DecoderLM, LMConfig
from netcl_lite.text import BPETokenizer

TEXT = ("A header says how the stream was coded; the decoder reads it back the same way.\n"
        "Counts of what followed each context sharpen the guesses as the text goes on.\n") * 4


@pytest.fixture(scope="module")
def small(queue, tmp_path_factory):
    """(model, tokenizer, its folder): a one-layer model over a 16-token window, saved as --model takes it."""
    tok = BPETokenizer()
    tok.train_from_iterator([TEXT], 280, progress=False)
    model = DecoderLM(LMConfig(vocab_size=280, hidden_size=16, intermediate_size=32, num_hidden_layers=1,
                               num_attention_heads=2, num_key_value_heads=1, max_position_embeddings=16),
                      queue=queue, seed=3)
    folder = tmp_path_factory.mktemp("model")
    model.save_pretrained(folder)
    tok.save(folder / "tokenizer.json")
    return model, tok, folder


# -- 1. the fingerprint covers the Python of the forward pass ---------------------------------------

#: run by the library's copy: decompress the blob, failing loudly once decoding starts
_DECODE = """
import json, sys
import netcl_lite
from netcl_lite import compression as cz
from netcl_lite.nn import DecoderLM
from netcl_lite.text import BPETokenizer
blob, folder, copy = sys.argv[1:]
assert netcl_lite.__file__.startswith(copy), netcl_lite.__file__
model = DecoderLM.from_pretrained(folder)
tok = BPETokenizer.load(folder + "/tokenizer.json")
def started(*args, **kwargs):
    raise RuntimeError("decoding started")
cz.make_predictor = started
try:
    cz.decompress(open(blob, "rb").read(), model, tok)
    print(json.dumps({"kind": "decoded"}))
except Exception as exc:
    print(json.dumps({"kind": type(exc).__name__, "message": str(exc)}))
"""


@pytest.mark.slow
def test_a_blob_from_sources_whose_forward_pass_differs_is_refused_before_decoding(small, tmp_path):
    model, tok, folder = small
    blob = cz.compress(TEXT.encode(), model, tok, mix=False)
    assert cz.read_header(blob)["mode"] == cz.MODEL, "the text was stored, not coded: nothing to decode"
    (tmp_path / "in.nclz").write_bytes(blob)
    root = Path(cz.__file__).resolve().parent
    copy = tmp_path / "src"
    shutil.copytree(root, copy / "netcl_lite", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(root.parent / "kernels", copy / "kernels")
    lm = copy / "netcl_lite" / "nn" / "lm.py"
    text = lm.read_text()
    assert text.count("eps=c.rms_norm_eps, rope_base=c.rope_theta") == 1
    lm.write_text(text.replace("eps=c.rms_norm_eps, rope_base=c.rope_theta",
                               "eps=c.rms_norm_eps, rope_base=c.rope_theta / 4"))   # another version's decode step
    env = {**os.environ, "PYTHONPATH": str(copy)}
    done = subprocess.run([sys.executable, "-c", _DECODE, str(tmp_path / "in.nclz"), str(folder), str(copy)],
                          env=env, cwd=tmp_path, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result["kind"] == "ValueError", result
    fingerprint = cz.read_header(blob)["fingerprint"].hex()
    assert fingerprint in result["message"] and "another version" in result["message"], result["message"]


def test_the_forward_pass_sources_are_hashed_once_per_process(small, monkeypatch):
    model, _, _ = small
    first = cz.arithmetic(model), cz.coder(cz.MIXED | cz.ADAPTING, cz.AdaptConfig())
    reads = []
    original = Path.read_bytes
    monkeypatch.setattr(Path, "read_bytes", lambda self: reads.append(self) or original(self))
    again = cz.arithmetic(model), cz.coder(cz.MIXED | cz.ADAPTING, cz.AdaptConfig())
    assert again == first and reads == [], f"the sources were read again: {reads[:6]}"
    assert {"core", "ops", "nn", "autograd.py"} <= set(cz.FORWARD_SOURCES)


# -- 2. decompress refuses the options the header records --------------------------------------------

@pytest.mark.parametrize("option", [["--adapt"], ["--model-only"], ["--model-only", "--adapt"]])
def test_decompress_refuses_the_options_a_blob_s_header_records(option, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "in.nclz").write_bytes(b"NCLZ")
    with pytest.raises(SystemExit) as done:
        cz.main(["decompress", "in.nclz", "out.txt", *option])
    err = capsys.readouterr().err
    assert done.value.code == 2, err
    assert all(name in err for name in option) and "compress options only" in err, err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.nclz"]


def test_help_says_decompress_refuses_the_compress_options(capsys):
    with pytest.raises(SystemExit):
        cz.main(["--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "decompress refuses them (a usage error, exit status 2)" in text, text


# -- 3. OUT's folder is checked before any coding --------------------------------------------------

def _unwritable_folder(tmp_path) -> Path:
    """A folder that takes no new file, even for root: sysfs refuses every file made there."""
    if os.geteuid() != 0:
        folder = tmp_path / "locked"
        folder.mkdir()
        folder.chmod(0o555)
        return folder
    if not Path("/sys/fs").is_dir():
        pytest.skip("no sysfs here to stand for a folder root cannot write")
    return Path("/sys/fs")


@pytest.mark.parametrize("command", ["compress", "decompress"])
def test_an_out_folder_that_takes_no_file_is_named_before_any_model_is_loaded(command, tmp_path, monkeypatch,
                                                                              capsys):
    folder = _unwritable_folder(tmp_path)
    src = tmp_path / "in.bin"
    src.write_bytes(TEXT.encode() if command == "compress" else b"NCLZ\x04\x01" + bytes(40))
    calls = []
    monkeypatch.setattr(cz, "_load", lambda *a: calls.append("load") or (_ for _ in ()).throw(RuntimeError("load")))
    monkeypatch.setattr(cz, "_stored_original", lambda *a: calls.append("header") or None)
    out = folder / "out.nclz"
    try:
        status = cz.main([command, str(src), str(out)])
    finally:
        if folder.name == "locked":
            folder.chmod(0o755)
    err = capsys.readouterr().err
    assert status == 1, err
    assert calls == [], f"the work started before OUT's folder was checked: {calls}"
    assert f"{shown_path(out)}: cannot write there: its folder {shown_path(folder)} takes no new file" in err, err
    assert not out.exists()


# -- 4. a loader's message names the model's files as shown_path does ---------------------------------

def test_a_loader_s_message_about_a_model_folder_with_an_odd_name_stays_on_one_line(small, tmp_path, monkeypatch,
                                                                                     capsys):
    _, _, good = small
    folder = tmp_path / "model\nnext line \x1b[31mred"
    folder.mkdir()
    shutil.copy(good / "tokenizer.json", folder / "tokenizer.json")
    shutil.copy(good / "model.safetensors", folder / "model.safetensors")
    (folder / "config.json").write_text("{not json")
    src = tmp_path / "in.txt"
    src.write_bytes(TEXT.encode())
    monkeypatch.chdir(tmp_path)
    status = cz.main(["compress", str(src), str(tmp_path / "out.nclz"), "--model", str(folder)])
    err = capsys.readouterr().err
    assert status == 1
    assert "\x1b" not in err and len(err.strip().splitlines()) == 1, f"the message spans lines or escapes: {err!r}"
    assert shown_path(folder) in err and "config.json: not valid JSON" in err, err


# -- 5 and 6. an include keeps the page's fenced blocks where they are ---------------------------------

def _render(root, monkeypatch, page: str, files: dict[str, str]) -> str:
    """``page`` rendered as the site renders it (its Markdown extensions, includes contained), with
    ``files`` under ``root/snippets``."""
    import markdown

    from site_build import includes
    from site_build.markers import page_extensions

    (root / "snippets").mkdir(exist_ok=True)
    for name, text in files.items():
        (root / "snippets" / name).write_text(text)
    monkeypatch.chdir(root)                       # pymdownx.snippets reads includes from here
    names, configs = page_extensions()
    snippets = includes.contained_snippets(includes.CurrentPage("docs/hostile.md", page),
                                           base_path=["."], check_paths=True, dedent_subsections=True)
    return markdown.Markdown(extensions=[*names, snippets], extension_configs=configs).convert(page)


UNCLOSED = {"a.md": "Some text.\n\n```text\nopened, never closed\n"}


@pytest.mark.parametrize("after", ["\nMiddle.\n\n```python\ny = 2\n```\n\n## Later\n\nAfter.\n", "\n## Later\n\nAfter.\n"],
                         ids=["a block follows", "text follows"])
def test_an_included_file_that_opens_a_fence_and_leaves_it_open_fails_naming_page_line_and_file(
        after, tmp_path, monkeypatch):
    page = '# Hostile\n\n--8<-- "snippets/a.md"\n' + after
    with pytest.raises(ValueError) as err:
        html = _render(tmp_path, monkeypatch, page, UNCLOSED)
        assert "<h2" in html and "<p>After.</p>" in html, "the include swallowed the rest of the page"
    message = str(err.value)
    assert message.startswith('docs/hostile.md:3: --8<-- "snippets/a.md": line 3 of what snippets/a.md brings'), message
    assert "opens a code block that the file does not close" in message, message


def test_an_included_file_whose_fences_close_within_it_renders_outside_a_block(tmp_path, monkeypatch):
    files = {"a.md": "Some text.\n\n```text\nclosed\n```\n"}
    html = _render(tmp_path, monkeypatch, '# Hostile\n\n--8<-- "snippets/a.md"\n\n```python\ny = 2\n```\n\nAfter.\n',
                   files)
    assert html.count("<pre>") == 2 and html.rstrip().endswith("<p>After.</p>"), html


KEPT_AS_CODE = {
    "a longer fence": ("```python\n--8<-- \"snippets/a.txt\"\n```\n", "x = 1\n````\n<b>bold</b>\n"),
    "the fence indented more": ("```python\n--8<-- \"snippets/a.txt\"\n```\n", "x = 1\n    ```\n<b>bold</b>\n"),
    "an indented include": ("```python\n    --8<-- \"snippets/a.txt\"\n```\n", "x = 1\n```\n<b>bold</b>\n"),
    "a longer fence in a list item": ("1. Item:\n\n    ```python\n    --8<-- \"snippets/a.txt\"\n    ```\n",
                                      "x = 1\n````\n<b>bold</b>\n"),
}


@pytest.mark.parametrize("case", KEPT_AS_CODE, ids=list(KEPT_AS_CODE))
def test_an_included_line_that_superfences_keeps_as_code_is_accepted(case, tmp_path, monkeypatch):
    block, text = KEPT_AS_CODE[case]
    html = _render(tmp_path, monkeypatch, f"# Hostile\n\n{block}\nAfter.\n", {"a.txt": text})
    shown = re.sub(r"</?span[^>]*>", "", html)                      # the code as highlighted, marks left out
    assert "<b>" not in html and "&lt;b&gt;bold&lt;/b&gt;" in shown, html
    assert html.rstrip().endswith("<p>After.</p>") and html.count("<pre>") == 1, html


@pytest.mark.parametrize("line", ["```", "```   ", "``\x02`"], ids=["the fence", "with spaces", "stx inside"])
def test_an_included_line_that_closes_the_block_is_still_refused(line, tmp_path, monkeypatch):
    page = '# Hostile\n\n```python\n--8<-- "snippets/a.txt"\n```\n\nAfter.\n'
    with pytest.raises(ValueError, match=r'^docs/hostile.md:4: --8<-- "snippets/a.txt": line 2 of what '
                                         r"snippets/a.txt brings into the page, '```', would close"):
        _render(tmp_path, monkeypatch, page, {"a.txt": f"x = 1\n{line}\n<script>alert(1)</script>\n"})


# -- 7. citations read indented code as Python-Markdown does -------------------------------------------

KEY = "vaswani2017attention"
#: (page text, whether Python-Markdown shows the citation in a code block): rendered with the site's
#: extensions, each of these is checked in the test below
INDENTED = {
    "after a heading": (f"# Title\n    code @{KEY}\n", True),
    "after a rule": (f"Text\n\n---\n    code @{KEY}\n", True),
    "in a block quote": (f"> quote\n>\n>     code @{KEY}\n", True),
    "a nested list item's paragraph": (f"- a\n    - b\n\n        para @{KEY}\n", False),
    "a list item's continuation": (f"- item\n    continuation [@{KEY}]\n", False),
    "code in a list item": (f"- item\n\n    para\n\n        code @{KEY}\n", True),
    "after a fenced block in a list item": (f"- item\n\n    ```\n    x\n    ```\n\n    after [@{KEY}]\n", False),
    "after a fenced block, no blank line": (f"```\nx\n```\n    lazy @{KEY}\n", False),
    "an admonition's body": (f"!!! note\n    body [@{KEY}]\n", False),
    "code in an admonition": (f"!!! note\n\n    body\n\n        code @{KEY}\n", True),
    "after an admonition": (f"!!! note\n    body\n\nPara.\n\n    code @{KEY}\n", True),
}


@pytest.mark.parametrize("case", INDENTED, ids=list(INDENTED))
def test_a_citation_in_indented_code_is_text_where_python_markdown_shows_code(case):
    import markdown

    from site_build import citations
    from site_build.markers import page_extensions

    text, in_code = INDENTED[case]
    names, configs = page_extensions()
    html = markdown.Markdown(extensions=names, extension_configs=configs).convert(text)
    shown = re.findall(r"<code>(.*?)</code>", html, re.S)
    assert any(KEY in block for block in shown) == in_code, f"the case misstates Python-Markdown: {html}"
    rendered = citations.render(text, "chapter-7.md")
    assert (rendered == text) == in_code, rendered
    if not in_code:
        assert f"bibliography.md#{KEY}" in rendered, rendered
