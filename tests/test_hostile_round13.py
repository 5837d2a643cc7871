"""Issue 58, independent hostile check, round 13: reproducers of defects found in the compressor, its
command line and the build plugin, beyond the cases of earlier rounds.

Each test asserts the correct behaviour; each failed on the code before its fix.
"""

from __future__ import annotations

import pytest

from cli_model import TEXT, write_model_folder


@pytest.fixture(scope="module")
def model_dir(queue, tmp_path_factory):
    """A folder the command line's --model reads: a small untrained model and a 300-token BPE."""
    return write_model_folder(queue, tmp_path_factory.mktemp("model"))


# -- the command line: an environment variable at fault is blamed on IN --------------------------------------

@pytest.mark.parametrize("command", ["compress", pytest.param("decompress", marks=pytest.mark.slow)])
def test_a_relative_cache_variable_is_named_not_in(model_dir, tmp_path, monkeypatch, capsys, command):
    from netcl_lite import compression

    src = tmp_path / "in.txt"
    if command == "compress":
        src.write_bytes(TEXT.encode())
    else:
        from netcl_lite.nn import DecoderLM
        from netcl_lite.text import BPETokenizer

        model = DecoderLM.from_pretrained(model_dir)
        tok = BPETokenizer.load(model_dir / "tokenizer.json")
        src.write_bytes(compression.compress(TEXT.encode(), model, tok))
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("NETCL_LITE_CACHE", "relative-cache")
    assert compression.main([command, "in.txt", "out", "--model", str(model_dir)]) == 1
    err = capsys.readouterr().err
    assert "NETCL_LITE_CACHE" in err, err
    assert "in.txt" not in err, f"the message blames IN for the environment: {err}"
    assert not (tmp_path / "out").exists()


# -- the command line: OpenCL's compiler failing in its first build ---------------------------------------------

def test_a_compiler_that_cannot_build_is_named_without_a_traceback(model_dir, tmp_path):
    import os
    import subprocess
    import sys
    from pathlib import Path

    src, blocker = tmp_path / "in.txt", tmp_path / "not-a-folder"
    src.write_bytes(TEXT.encode())
    blocker.write_bytes(b"")                            # PoCL's kernel cache cannot be made under a file
    env = {**os.environ, "POCL_CACHE_DIR": str(blocker)}
    run = subprocess.run([sys.executable, "-m", "netcl_lite.compression", "compress", str(src), str(tmp_path / "out"),
                          "--model", str(model_dir), "--model-only"], cwd=Path(__file__).resolve().parents[1],
                         env=env, capture_output=True, text=True, timeout=300)
    assert run.returncode == 1, (run.returncode, run.stderr[-2000:])
    assert "Traceback" not in run.stderr, run.stderr[-2000:]
    assert run.stderr.startswith("python -m netcl_lite.compression: OpenCL:"), run.stderr[-2000:]
    assert not (tmp_path / "out").exists()


# -- site_build.glossary: a term's text rendered as Markdown --------------------------------------------------

def _glossary_html(term: str, definition: str, expansion: str = "") -> str:
    """The Glossary page's HTML for one entry, rendered as the site renders a page."""
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from site_render import render_page

    from site_build import glossary

    entry = glossary.Term(term=term, definition=definition, forms=(term,), expansion=expansion)
    return render_page(glossary.glossary(entries=(entry,)))


@pytest.mark.parametrize("term, expansion", [("*nix*", ""), ("KV", "key-`value`"), ("x_1_", "__dunder__")])
def test_a_glossary_term_and_expansion_are_shown_as_written(term, expansion):
    import html

    page = _glossary_html(term, "A plain sentence.", expansion)
    shown = f"{term} ({expansion})" if expansion else term
    assert html.escape(shown, quote=False) in page, page
    assert "<em>" not in page and "<strong>" not in page and "<code>" not in page, page


def test_a_glossary_definition_with_dollars_is_shown_as_written():
    page = _glossary_html("shell variable", "A name such as $HOME$ or $x$ that a shell expands.")
    assert "$HOME$ or $x$" in page, page
    assert "arithmatex" not in page and "<math" not in page, page


def test_a_glossary_term_over_two_lines_is_refused(tmp_path):
    from site_build import glossary

    source = tmp_path / "glossary.yml"
    source.write_text('- term: "key\\nvalue"\n  definition: A pair.\n', encoding="utf-8")
    with pytest.raises(ValueError, match="term"):
        glossary.terms(source)


# -- site_build.offline: a notebook's remote script kept by how its attribute is quoted -------------------------

@pytest.mark.parametrize("tag", ["<script src='https://cdn.example/loader.js'>",
                                 "<script src=https://cdn.example/loader.js>",
                                 '<script src = "https://cdn.example/loader.js">',
                                 "<script src='//cdn.example/loader.js'>"])
def test_a_notebook_s_remote_script_goes_however_its_source_is_quoted(tag):
    from site_build import offline

    page = f"<p>before</p>{tag}</script><p>after</p>"
    assert offline.strip_loaders(page, "drills/hostile.ipynb") == "<p>before</p><p>after</p>"


# -- the command line: an environment variable at fault is blamed on --model or IN ------------------------------

@pytest.mark.parametrize("name, value", [("NETCL_LITE_POCL_CPU", "no-such-cpu"), ("NETCL_LITE_DEVICE", "bogus"),
                                         ("NETCL_LITE_RERUN", "maybe")])
def test_an_environment_variable_at_fault_is_named_not_a_path(model_dir, tmp_path, name, value):
    import os
    import subprocess
    import sys
    from pathlib import Path

    src = tmp_path / "in.txt"
    src.write_bytes(TEXT.encode())
    run = subprocess.run([sys.executable, "-m", "netcl_lite.compression", "compress", "in.txt", "out",
                          "--model", str(model_dir)], cwd=tmp_path,
                         env={**os.environ, name: value, "PYTHONPATH": str(Path(__file__).resolve().parents[1])},
                         capture_output=True, text=True, timeout=300)
    assert run.returncode == 1, (run.returncode, run.stderr[-2000:])
    assert name in run.stderr, run.stderr
    assert "--model" not in run.stderr and "in.txt" not in run.stderr, \
        f"the message blames a path for the environment: {run.stderr}"
    assert not (tmp_path / "out").exists()


def test_a_pocl_setting_that_keeps_the_device_from_starting_is_named(tmp_path):
    """Noticed in round 13: with POCL_CACHE_DIR where no folder can be made, the message only said to
    install PoCL; it names the settings the user gave."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    (tmp_path / "in.txt").write_bytes(TEXT.encode())
    run = subprocess.run([sys.executable, "-m", "netcl_lite.compression", "compress", "in.txt", "out", "--model-only"],
                         cwd=tmp_path, env={**os.environ, "POCL_CACHE_DIR": "/proc/no-such-folder",
                                            "PYTHONPATH": str(Path(__file__).resolve().parents[1])},
                         capture_output=True, text=True, timeout=300)
    assert run.returncode == 1, (run.returncode, run.stderr[-2000:])
    assert "none offers a device" in run.stderr and "POCL_CACHE_DIR='/proc/no-such-folder'" in run.stderr, run.stderr
    assert not (tmp_path / "out").exists()
