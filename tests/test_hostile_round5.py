"""A fifth hostile check of the compressor's command line and the build plugin: cases beyond those of
tests/test_compression_hostile.py, tests/test_site_build_hostile.py, tests/test_hostile_inputs.py and
tests/test_hostile_round4.py. Each test states what should happen and fails on today's code
(``xfail(strict=True)``), so that it flips to a pass, and must then lose its marker, once the defect
is fixed."""

from __future__ import annotations

import dataclasses
import re
import tomllib

import markdown
import numpy as np
import pytest

from netcl_lite import NonFiniteError, adaptation
from netcl_lite import compression as cz
from netcl_lite.nn import DecoderLM, LMConfig
from netcl_lite.text import BPETokenizer
from site_build import capstone_run, generated, includes, shipped_wheel

TEXT = ("Each stream is coded from the model's predictions; a header says how to read it back.\n"
        "Counts of what followed each context sharpen the guesses as the text goes on.\r\n") * 6

#: a one-layer model over a 16-token window (as tests/test_compression_hostile.py's)
SMALL = dict(hidden_size=16, intermediate_size=32, num_hidden_layers=1, num_attention_heads=2,
             num_key_value_heads=1, max_position_embeddings=16)


# -- the command line ----------------------------------------------------------------------------------

def test_a_model_whose_weights_overflow_as_it_runs_is_named_not_the_input(queue, tmp_path, capsys):
    tok = BPETokenizer()
    tok.train_from_iterator([TEXT], 300, progress=False)
    model = DecoderLM(LMConfig(vocab_size=300, **SMALL), queue=queue, seed=1)
    weights = model.state_dict()
    # finite, so the loaders take it; the final norm's output then passes float32's range
    weights["model.norm.weight"] = np.full_like(weights["model.norm.weight"], 3e38)
    model.load_state_dict(weights)
    folder = tmp_path / "model"
    model.save_pretrained(folder)
    tok.save(folder / "tokenizer.json")
    (tmp_path / "in.txt").write_text(TEXT, encoding="utf-8")
    status = cz.main(["compress", str(tmp_path / "in.txt"), str(tmp_path / "out"), "--model", str(folder),
                      "--model-only"])
    err = capsys.readouterr().err
    assert status == 1 and not (tmp_path / "out").exists(), err
    assert f"--model {folder}" in err and "in.txt" not in err, err


def _small_model_folder(queue, tmp_path, weights_change=None):
    """A one-layer model and its tokenizer saved in ``tmp_path/model``; ``weights_change`` edits its weights."""
    tok = BPETokenizer()
    tok.train_from_iterator([TEXT], 300, progress=False)
    model = DecoderLM(LMConfig(vocab_size=300, **SMALL), queue=queue, seed=1)
    if weights_change is not None:
        weights = model.state_dict()
        weights_change(weights)
        model.load_state_dict(weights)
    folder = tmp_path / "model"
    model.save_pretrained(folder)
    tok.save(folder / "tokenizer.json")
    return folder


@pytest.fixture
def diverging(monkeypatch):
    """Dynamic evaluation with a learning rate of 1e10: its first updates leave finite weights that
    overflow float32 once the model runs with them (the default, 5e-4, codes this text)."""
    @dataclasses.dataclass(frozen=True)
    class Diverging(adaptation.AdaptConfig):
        lr: float = 1e10

    monkeypatch.setattr(cz, "AdaptConfig", Diverging)


def test_adaptation_that_diverges_is_named_not_the_model(queue, tmp_path, capsys, diverging):
    """The model is fine (it codes the text without --adapt); the weights dynamic evaluation adapts
    overflow as they code. The command blamed --model ('retrain it or scale its weights down'); it
    names --adapt and says to compress without it."""
    folder = _small_model_folder(queue, tmp_path)
    (tmp_path / "in.txt").write_text(TEXT, encoding="utf-8")
    assert cz.main(["compress", str(tmp_path / "in.txt"), str(tmp_path / "plain"), "--model", str(folder)]) == 0
    status = cz.main(["compress", str(tmp_path / "in.txt"), str(tmp_path / "out"), "--model", str(folder), "--adapt"])
    err = capsys.readouterr().err
    assert status == 1 and not (tmp_path / "out").exists(), err
    assert "--adapt: dynamic evaluation diverged" in err and "without --adapt" in err, err
    assert f"--model {folder}" not in err and "retrain" not in err, err
    model, tok = DecoderLM.from_pretrained(folder, queue=queue), BPETokenizer.load(folder / "tokenizer.json")
    with pytest.raises(NonFiniteError, match=r"^dynamic evaluation diverged: after 1 update its .*\(adapt=False\)"):
        cz.compress(TEXT.encode(), model, tok, adapt=True)


def test_a_model_that_overflows_before_adapting_is_still_named_with_adapt(queue, tmp_path, capsys):
    folder = _small_model_folder(queue, tmp_path, lambda w: w["model.norm.weight"].fill(3e38))
    (tmp_path / "in.txt").write_text(TEXT, encoding="utf-8")
    status = cz.main(["compress", str(tmp_path / "in.txt"), str(tmp_path / "out"), "--model", str(folder), "--adapt"])
    err = capsys.readouterr().err
    assert status == 1 and f"--model {folder}: its weights are finite" in err and "diverged" not in err, err


# -- figures -------------------------------------------------------------------------------------------

#: ways Markdown shows a generated figure, each with no caption under it
UNCAPTIONED = {
    "a reference-style image": "![Loss][loss]\n\nText.\n\n[loss]: figures/chapter9/loss_curve.svg\n",
    "an image in angle brackets": "![Loss](<figures/chapter9/loss_curve.svg>)\n\nText.\n",
    "an image with a single-quoted title": "![Loss](figures/chapter9/loss_curve.svg 'the loss')\n\nText.\n",
    "an HTML img element": '<img src="figures/chapter9/loss_curve.svg" alt="">\n\nText.\n',
}


@pytest.mark.parametrize("page", UNCAPTIONED.values(), ids=UNCAPTIONED.keys())
def test_a_figure_shown_any_way_markdown_allows_needs_its_caption(page):
    rendered = markdown.markdown(page)
    assert '<img' in rendered and 'src="figures/chapter9/loss_curve.svg"' in rendered, rendered  # it is shown
    with pytest.raises(ValueError, match="caption"):
        generated.check_captions(page, "hostile.md")


@pytest.mark.parametrize("page", UNCAPTIONED.values(), ids=UNCAPTIONED.keys())
def test_each_way_of_showing_a_figure_is_named_at_its_line_and_passes_with_its_caption(page):
    page = "# Hostile\n\n" + page
    with pytest.raises(ValueError, match=r"^docs/hostile\.md:3: .*loss.*: a figure has a caption under it"):
        generated.check_captions(page, "hostile.md")
    shown, rest = page.split("\n\nText.\n", 1)
    generated.check_captions(f"{shown}\n\n/// caption\nWhat to see.\n///\n\nText.\n{rest}", "hostile.md")


#: a generated figure's path or image written as inline code: shown as code, not as a figure
IN_INLINE_CODE = {
    "the path": "The loss curve is `figures/chapter9/loss_curve.svg`.\n",
    "an image": "Write `![Loss](figures/chapter9/loss_curve.svg)` to show it.\n",
    "double backticks": "Write ``![Loss](figures/chapter9/loss_curve.svg)`` to show it.\n",
    "a span over two lines": "Write `![Loss](figures/chapter9/loss_curve.svg)\n/// caption` to show it.\n",
    "an HTML img element": 'Or `<img src="figures/chapter9/loss_curve.svg">` in HTML.\n',
    "a reference image": "Write `![Loss][loss]` to show it.\n\n[loss]: figures/chapter9/loss_curve.svg\n",
}


@pytest.mark.parametrize("page", IN_INLINE_CODE.values(), ids=IN_INLINE_CODE.keys())
def test_a_figure_written_as_inline_code_is_not_shown_and_needs_no_caption(page):
    """A page that tells how to show a figure writes its path or image as inline code: no image is
    shown, so no caption is asked for (the check took the code for a figure and failed the build)."""
    page = "# Hostile\n\n" + page + "\nText.\n"
    rendered = markdown.markdown(page)
    assert "<img" not in rendered and "<code>" in rendered, rendered         # shown as code only
    generated.check_captions(page, "hostile.md")


#: a generated figure's image in an indented code block: shown as code, not as a figure
IN_INDENTED_CODE = {
    "after a paragraph": "Write it so:\n\n    ![Loss](figures/chapter9/loss_curve.svg)\n",
    "in a list item": "- Write it so:\n\n        ![Loss](figures/chapter9/loss_curve.svg)\n",
    "an HTML img element": 'Or in HTML:\n\n    <img src="figures/chapter9/loss_curve.svg">\n',
}


@pytest.mark.parametrize("page", IN_INDENTED_CODE.values(), ids=IN_INDENTED_CODE.keys())
def test_a_figure_in_an_indented_code_block_is_not_shown_and_needs_no_caption(page):
    page = "# Hostile\n\n" + page + "\nText.\n"
    rendered = markdown.markdown(page)
    assert "<img" not in rendered and "<pre><code>" in rendered, rendered
    generated.check_captions(page, "hostile.md")


def test_a_figure_in_a_list_items_indented_continuation_still_needs_its_caption():
    page = "# Hostile\n\n- Item.\n\n    ![Loss](figures/chapter9/loss_curve.svg)\n\nText.\n"
    assert '<img alt="Loss"' in markdown.markdown(page)                   # the item's, shown
    with pytest.raises(ValueError, match=r"^docs/hostile\.md:5: .*a figure has a caption under it"):
        generated.check_captions(page, "hostile.md")


def test_a_figure_beside_inline_code_on_its_line_still_needs_its_caption():
    page = "# Hostile\n\n`code` ![Loss](figures/chapter9/loss_curve.svg) `more code`\n\nText.\n"
    assert '<img alt="Loss" src="figures/chapter9/loss_curve.svg"' in markdown.markdown(page)
    with pytest.raises(ValueError, match=r"^docs/hostile\.md:3: .*a figure has a caption under it"):
        generated.check_captions(page, "hostile.md")


# -- drill notebooks -----------------------------------------------------------------------------------

def test_a_drill_steps_rich_output_stays_inside_its_output(generated_tree, monkeypatch):
    from mkdocs_jupyter import convert

    week = generated_tree / "snippets" / "week99"
    week.mkdir(parents=True)
    (week / "drill_1_show.py").write_text(
        "# Step 1 shows a result\n"
        "from IPython.display import HTML, Markdown, display\n"
        "display(HTML(\"<script>window.injected = 1</script>\"))\n"
        "display(Markdown(\"# Injected heading\"))\n", encoding="utf-8")
    monkeypatch.setattr(generated, "drill_weeks", lambda: [week])
    try:
        generated.build_drills("hostile round 5")
    except RuntimeError as err:                   # refused, naming the page: also right
        assert "drill" in str(err)
        return
    page = convert.nb2html(str(generated.DOCS / "drills" / "week-99-drill.ipynb"))
    assert "<script>window.injected" not in page
    assert not re.search(r"<h[1-6][^>]*>Injected heading", page)


# -- the run-ahead stage -------------------------------------------------------------------------------

def _pages(monkeypatch, root, page: str, snippets: dict[str, str]) -> None:
    """A scratch docs/ holding ``page`` and snippets/p/ holding ``snippets``, read by capstone_run."""
    (root / "docs").mkdir()
    (root / "snippets" / "p").mkdir(parents=True)
    for name, code in snippets.items():
        (root / "snippets" / "p" / name).write_text(code, encoding="utf-8")
    (root / "docs" / "p.md").write_text(page, encoding="utf-8")
    monkeypatch.setattr(capstone_run, "DOCS", root / "docs")
    monkeypatch.setattr(capstone_run, "marker_path", lambda path, page: includes.marker_path(path, page, root=root))


def _shown(name: str) -> str:
    return f'```python\n--8<-- "snippets/p/{name}"\n```\n\n<!-- build-output: snippets/p/{name} -->\n\n'


CLOCKS = {
    "time imported beside another module": "import os, time\nt0 = time.time()\nprint(f'{time.time() - t0:.3f} s')\n",
    "datetime": "import datetime\nt0 = datetime.datetime.now()\nprint(datetime.datetime.now() - t0)\n",
}


@pytest.mark.parametrize("code", CLOCKS.values(), ids=CLOCKS.keys())
def test_a_snippet_that_reads_a_clock_does_not_run_ahead(tmp_path, monkeypatch, code):
    _pages(monkeypatch, tmp_path, _shown("timed.py"), {"timed.py": code})
    assert capstone_run.untimed_snippets() == []


def test_a_marker_shown_as_code_runs_nothing_ahead(tmp_path, monkeypatch):
    page = "How a page shows a snippet's output:\n\n```markdown\n<!-- build-output: snippets/p/shown.py -->\n```\n"
    _pages(monkeypatch, tmp_path, page, {"shown.py": "print('an example')\n"})
    assert capstone_run.untimed_snippets() == []


def test_the_scratch_pages_are_read_as_the_build_reads_them(tmp_path, monkeypatch):
    """The run-ahead cases above fail for the reason they state: a plain snippet of the scratch
    pages is found."""
    _pages(monkeypatch, tmp_path, _shown("plain.py"), {"plain.py": "print(1)\n"})
    assert capstone_run.untimed_snippets() == ["snippets/p/plain.py"]


# -- the shipped wheel ---------------------------------------------------------------------------------

PYPROJECT_HEAD = '[build-system]\nrequires = ["hatchling"]\nbuild-backend = "hatchling.build"\n\n'


def test_the_drill_notebook_installs_the_wheel_the_site_ships(tmp_path, monkeypatch):
    text = PYPROJECT_HEAD + '[tool.other]\nversion = "9.9.9"\n\n[project]\nname = "netcl_lite"\nversion = "0.1.0"\n'
    (tmp_path / "pyproject.toml").write_text(text, encoding="utf-8")
    (tmp_path / "mkdocs.yml").write_text("site_name: x\nsite_url: http://127.0.0.1:8000/\n", encoding="utf-8")
    monkeypatch.setattr(generated, "ROOT", tmp_path)
    shipped = f"netcl_lite-{shipped_wheel._pyproject_version(text)}-py3-none-any.whl"
    assert shipped == "netcl_lite-0.1.0-py3-none-any.whl"
    assert shipped in generated.install_cell()


def test_the_wheels_version_is_read_wherever_project_s_table_puts_it():
    text = PYPROJECT_HEAD + '[project]\nname = "netcl_lite"\ndependencies = ["numpy"]\nversion = "0.1.0"\n'
    assert tomllib.loads(text)["project"]["version"] == "0.1.0"
    assert shipped_wheel._pyproject_version(text) == "0.1.0"


@pytest.mark.parametrize("text", [PYPROJECT_HEAD + '[project]\nname = "netcl_lite"\n',
                                  PYPROJECT_HEAD + '[tool.other]\nversion = "9.9.9"\n',
                                  PYPROJECT_HEAD + '[project]\nversion = 1\n',
                                  '[project\nversion = "0.1.0"\n'],
                         ids=["no version", "no [project]", "not a string", "not TOML"])
def test_a_pyproject_without_a_project_version_is_refused_by_name(text):
    with pytest.raises(ValueError, match=r"pyproject\.toml"):
        shipped_wheel._pyproject_version(text)


def test_a_display_with_no_plain_text_shows_its_source_as_text():
    """What a drill notebook keeps of each display: text and raster images; markup of any kind becomes
    text/plain (escaped by the page) or goes."""
    outputs = [
        {"output_type": "display_data", "metadata": {"image/svg+xml": {"isolated": True}},
         "data": {"image/svg+xml": "<svg onload='x()'/>", "text/plain": "<Figure>"}},
        {"output_type": "display_data", "metadata": {}, "data": {"application/javascript": ["window.x = 1", ";"]}},
        {"output_type": "execute_result", "metadata": {}, "execution_count": 1,
         "data": {"text/html": "<b>t</b>", "image/png": "iVBORw0KGgo=", "text/plain": "T"}},
        {"output_type": "stream", "name": "stdout", "text": "<i>kept as text</i>\n"},
    ]
    kept = generated._plain_outputs(outputs)
    assert [o.get("data") for o in kept] == [{"text/plain": "<Figure>"}, {"text/plain": "window.x = 1;"},
                                             {"image/png": "iVBORw0KGgo=", "text/plain": "T"}, None]
    assert kept[0]["metadata"] == {} and kept[3]["text"] == "<i>kept as text</i>\n"
