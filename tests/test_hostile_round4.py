"""A fourth hostile check of the compressor, its command line and the build plugin: cases beyond
those of tests/test_compression_hostile.py and tests/test_site_build_hostile.py. Each test states
what should happen; each failed on the code before its fix (its docstring says how)."""

from __future__ import annotations

import sys
import unicodedata

import numpy as np
import pytest

from netcl_lite import compression as cz
from netcl_lite import fingerprint
from netcl_lite.nn import DecoderLM
from netcl_lite.text import BPETokenizer
from site_build import build_output, generated, runner

from cli_model import TEXT, write_model_folder


@pytest.fixture(scope="module")
def model_dir(queue, tmp_path_factory):
    """A folder the command line's --model reads: a small untrained model and a 300-token BPE."""
    return write_model_folder(queue, tmp_path_factory.mktemp("model"))


# -- the compressor and its command line ------------------------------------------------------------

def test_an_out_name_the_file_system_takes_is_written(model_dir, tmp_path, capsys):
    """OUT named with 240 bytes (under Linux's NAME_MAX, 255: ``touch`` makes it) is refused with
    'File name too long' once the input is coded; it is a valid name and should be written."""
    src = tmp_path / "in.txt"
    src.write_bytes(TEXT.encode())
    name = "o" * 240
    (tmp_path / name).touch()                        # the system takes the name
    (tmp_path / name).unlink()
    rc = cz.main(["compress", str(src), str(tmp_path / name), "--model", str(model_dir), "--model-only"])
    assert rc == 0 and (tmp_path / name).is_file(), capsys.readouterr().err[-300:]


def _tokens_over_bar_threshold() -> bytes:
    """Bytes that the 300-token BPE spells in over 20,000 tokens (the bar's threshold): 16 symbols
    it has no merges for, drawn at random (4 bits a byte: coded, never given up and stored)."""
    symbols = np.frombuffer(b"!#$%&()*+,-/;<=>?", np.uint8)[:16]
    return symbols[np.random.default_rng(0).integers(0, 16, 24_000)].tobytes()


def test_a_closed_standard_error_does_not_stop_a_long_compress(model_dir, tmp_path, monkeypatch, capsys):
    """``python -m netcl_lite.compression compress big.txt out 2>&-``: Python's sys.stderr is None.
    A short input codes; one over the bar's threshold raises AttributeError from tqdm ('NoneType'
    object has no attribute 'write') out of main. It should code it, without a bar."""
    src = tmp_path / "big.txt"
    data = _tokens_over_bar_threshold()
    src.write_bytes(data)
    monkeypatch.setattr(sys, "stderr", None)
    out = tmp_path / "out.nclz"
    assert cz.main(["compress", str(src), str(out), "--model", str(model_dir), "--model-only"]) == 0
    assert out.is_file()
    tok = BPETokenizer.load(model_dir / "tokenizer.json")
    assert cz.decompress(out.read_bytes(), DecoderLM.from_pretrained(model_dir), tok) == data


def test_a_bar_asked_for_with_standard_error_closed_is_not_drawn(model_dir, monkeypatch):
    """``compress(..., progress=True)`` in a process started with ``2>&-``: tqdm would write the bar
    to None (AttributeError); the bar is left out and the data coded."""
    model, tok = DecoderLM.from_pretrained(model_dir), BPETokenizer.load(model_dir / "tokenizer.json")
    monkeypatch.setattr(sys, "stderr", None)
    blob = cz.compress(TEXT.encode(), model, tok, mix=False, progress=True)
    assert cz.decompress(blob, model, tok, progress=True) == TEXT.encode()


def test_a_closed_standard_error_never_puts_the_message_into_standard_output(tmp_path, monkeypatch, capsys):
    """``compress missing.txt - 2>&- | consumer``: the command exits 1, and the consumer reads
    'python -m netcl_lite.compression: missing.txt: no such file' as the compressed data. With
    standard error closed nothing but the result may reach standard output."""
    monkeypatch.setattr(sys, "stderr", None)
    assert cz.main(["compress", str(tmp_path / "missing.txt"), "-"]) == 1
    assert capsys.readouterr().out == ""


def test_segments_refuses_a_stream_count_past_its_tokens_naming_it():
    """``segments(10, 2**40)``, a public function documented beside compress: NumPy's 'Unable to
    allocate 8.00 TiB' MemoryError; ``segments(10, 2**63)``: NumPy's 'Maximum allowed dimension
    exceeded'. It should be a ValueError naming ``streams``, before anything is allocated."""
    for streams in (2**40, 2**63):
        with pytest.raises(ValueError, match="streams"):
            cz.segments(10, streams)


def test_the_module_s_remaining_public_functions_name_what_they_refuse():
    """model_fingerprint, tokenizer_fingerprint, arithmetic, kept_positions, device_lock (a model or
    tokenizer expected) and coder (a mode expected), all on the API page: ``None`` or a string gives
    "'NoneType' object has no attribute 'config'" or "unsupported operand type(s) for &". Each
    should be a TypeError or ValueError naming its parameter."""
    calls = {"model": (cz.model_fingerprint, cz.arithmetic, cz.kept_positions, cz.device_lock),
             "tokenizer": (cz.tokenizer_fingerprint,), "mode": (cz.coder,)}
    for name, functions in calls.items():
        for function in functions:
            with pytest.raises((TypeError, ValueError), match=name):
                function(None if name != "mode" else "mixed")


def test_make_predictor_and_main_name_what_they_refuse(model_dir):
    """make_predictor and main, also on the API page, given arguments of the wrong kind."""
    model, tok = DecoderLM.from_pretrained(model_dir), BPETokenizer.load(model_dir / "tokenizer.json")
    lengths, keep = cz.segments(100, 1), cz.kept_positions(model)
    for args, name in (((None, tok, lengths, keep, False, None), "model"),
                       ((model, "tok", lengths, keep, False, None), "tokenizer"),
                       ((model, tok, [100], keep, False, None), "lengths"),
                       ((model, tok, np.array([1, 5]), keep, False, None), "lengths"),
                       ((model, tok, lengths, 16, False, None), "keep"),
                       ((model, tok, lengths, keep, "yes", None), "mix"),
                       ((model, tok, lengths, keep, True, None), "primer_ids")):
        with pytest.raises((TypeError, ValueError), match=name):
            cz.make_predictor(*args)
    with pytest.raises(TypeError, match="adapt"):
        cz.make_predictor(model, tok, lengths, keep, False, None, adapt=True)
    with pytest.raises(TypeError, match="argv"):
        cz.main("compress in out")


# -- the build plugin ---------------------------------------------------------------------------------

@pytest.fixture
def figure_folder(generated_tree):
    """snippets/chapter99/ of the scratch tree, figures a.svg and b.svg shown on two pages."""
    docs = generated_tree / "docs"
    (docs / "chapter-98.md").write_text("![a](figures/chapter99/a.svg)\n")
    (docs / "chapter-99.md").write_text("![b](figures/chapter99/b.svg)\n")
    folder = generated_tree / "snippets" / "chapter99"
    folder.mkdir(parents=True)
    return folder


def test_a_figure_script_that_exits_0_after_saving_does_not_stop_the_others(figure_folder, monkeypatch):
    """figure_a.py saves its SVG and ends with ``raise SystemExit(0)`` (the ``raise
    SystemExit(main())`` idiom). The build fails with 'docs/chapter-99.md: the figure script
    figure_b.py ... exited without writing its figure': the wrong page and the wrong script, and
    figure_b.py never ran. Both figures should be drawn."""
    a, b = figure_folder / "figure_a.py", figure_folder / "figure_b.py"
    a.write_text("import sys\nopen(sys.argv[1], 'w').write('<svg/>')\nraise SystemExit(0)\n")
    b.write_text("import sys\nopen(sys.argv[1], 'w').write('<svg/>')\n")
    monkeypatch.setattr(generated, "figure_scripts", lambda: [a, b])
    generated.build_figures("shared")
    assert (generated.FIGURES / "chapter99" / "b.svg").read_text() == "<svg/>"


def test_a_figure_is_the_same_whether_or_not_another_ran_before_it(figure_folder, monkeypatch, tmp_path):
    """figure_a.py sets ``rcParams['lines.linewidth'] = 9``. figure_b.py, drawn in the same build
    (both keys missed), sees 9.0; drawn alone (only its key missed) it sees 1.5. Both SVGs are
    stored under the same key of figure_b.py, so which one a page shows depends on the cache."""
    a, b = figure_folder / "figure_a.py", figure_folder / "figure_b.py"
    a.write_text("import sys, matplotlib\nmatplotlib.rcParams['lines.linewidth'] = 9\n"
                 "open(sys.argv[1], 'w').write('<svg/>')\n")
    b.write_text("import sys, matplotlib\n"
                 "open(sys.argv[1], 'w').write(f\"<svg>{matplotlib.rcParams['lines.linewidth']}</svg>\")\n")
    monkeypatch.setattr(generated, "figure_scripts", lambda: [a, b])
    generated.build_figures("shared")
    after_a = (generated.FIGURES / "chapter99" / "b.svg").read_text()
    monkeypatch.setenv("NETCL_LITE_CACHE", str(tmp_path / "another-cache"))
    monkeypatch.setattr(generated, "figure_scripts", lambda: [b])
    generated.build_figures("shared")
    assert after_a == (generated.FIGURES / "chapter99" / "b.svg").read_text()


def test_a_figure_larger_than_any_figure_should_be_fails_naming_the_script(figure_folder, monkeypatch):
    """A script that writes a 32 MiB SVG (the site's largest figure is about 110 KB) is stored in
    the cache and copied into the page's figures, with no stated limit and no error."""
    b = figure_folder / "figure_b.py"
    b.write_text("import sys\nopen(sys.argv[1], 'w').write('<svg>' + 'x' * (32 << 20) + '</svg>')\n")
    monkeypatch.setattr(generated, "figure_scripts", lambda: [b])
    with pytest.raises((ValueError, RuntimeError), match="figure_b.py"):
        generated.build_figures("shared")


def test_a_figure_s_line_separators_stay_inside_their_lines(figure_folder, monkeypatch):
    """Removing the build date split the SVG with str.splitlines, which also breaks at U+2028, U+0085
    and a form feed: a label holding one came out with a newline in its place."""
    b = figure_folder / "figure_b.py"
    b.write_text("import sys\nopen(sys.argv[1], 'w', encoding='utf-8', newline='')"
                 ".write('<svg>a\\u2028b\\x85c\\x0cd\\n<dc:date>2026</dc:date>\\n</svg>\\n')\n")
    monkeypatch.setattr(generated, "figure_scripts", lambda: [b])
    generated.build_figures("shared")
    assert (generated.FIGURES / "chapter99" / "b.svg").read_bytes().decode() == "<svg>a\u2028b\x85c\x0cd\n</svg>\n"


@pytest.mark.parametrize("code", ["import argparse\nargparse.ArgumentParser().print_usage()\n",
                                  "print('epoch 1\\repoch 2')\n"], ids=["its own name", "a carriage return"])
def test_a_build_output_shows_what_the_build_prints_whoever_ran_it_first(tmp_path, monkeypatch, code):
    """``code_key`` covers the code, not how it runs, yet the two runs differ: argparse prints
    'usage: usage.py [-h]' when the build runs the snippet and 'usage: block.py [-h]' when the doc
    test ran it first; ``print('epoch 1\\repoch 2')`` is one line with its CR (shown as \\x0d) or two
    lines. The page shows whichever ran first."""
    root = tmp_path / "project"
    (root / "snippets" / "x").mkdir(parents=True)
    (root / "snippets" / "x" / "usage.py").write_text(code)
    monkeypatch.setattr(build_output, "ROOT", root)
    monkeypatch.delenv(fingerprint.RERUN, raising=False)
    fresh = runner.run_snippet(root / "snippets" / "x" / "usage.py", limit=build_output.OUTPUT_LIMIT)
    monkeypatch.setenv("NETCL_LITE_CACHE", str(tmp_path / "cache"))
    work = tmp_path / "work"
    work.mkdir()
    assert build_output.run_stored(code, work, "shared").returncode == 0     # the doc test, first
    assert build_output.BuildOutputs(lambda: "shared").cached_output("snippets/x/usage.py") == fresh


def test_invisible_format_characters_in_a_build_output_are_written_out():
    """Sampled text is model output: U+200B (zero-width space), U+2060 (word joiner), U+00AD (soft
    hyphen), U+FFF9 (interlinear annotation) and the tag characters U+E0020..E007F (invisible
    ASCII) reach the page as themselves, so a reader cannot see what was printed. 150 of Unicode's
    163 format characters (category Cf) pass unchanged."""
    for char in ("\u200b", "\u200d", "\u2060", "\u00ad", "\ufff9", "\U000e0041", "\u206a"):
        assert unicodedata.category(char) == "Cf"
        assert char not in build_output.visible(f"a{char}b"), f"U+{ord(char):04X} shown as itself"
