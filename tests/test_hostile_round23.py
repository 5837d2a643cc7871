"""Issue 58: defects earlier hostile rounds noticed and left, fixed after round 22.

Each test asserts the correct behaviour; each failed on the code before its fix.
"""

from __future__ import annotations

import pytest

from netcl_lite import fingerprint


@pytest.fixture
def installed(monkeypatch, tmp_path):
    """``cache_root`` as an installed package sees it (no source checkout around the package), with no
    ``NETCL_LITE_CACHE``."""
    monkeypatch.setattr(fingerprint, "PACKAGE", tmp_path / "site-packages" / "netcl_lite")
    monkeypatch.delenv("NETCL_LITE_CACHE", raising=False)
    return tmp_path


def test_a_relative_xdg_cache_home_is_ignored_as_the_xdg_rules_say(installed, monkeypatch):
    """A relative ``XDG_CACHE_HOME`` put the cache in whatever folder each process ran in; the XDG
    base-directory rules say to ignore a relative value, so the home folder's ``.cache`` is used."""
    monkeypatch.setenv("HOME", str(installed / "home"))
    monkeypatch.setenv("XDG_CACHE_HOME", "rel/cache")
    assert fingerprint.cache_root() == installed / "home" / ".cache" / "netcl_lite"
    monkeypatch.setenv("XDG_CACHE_HOME", str(installed / "xdg"))
    assert fingerprint.cache_root() == installed / "xdg" / "netcl_lite"


def test_a_relative_home_is_refused_naming_home(installed, monkeypatch):
    """``HOME=.`` made ``Path.home()`` relative, and the cache followed each process's working folder."""
    monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
    monkeypatch.setenv("HOME", ".")
    with pytest.raises(ValueError, match=r"home folder '\.' \(HOME\) is a relative path"):
        fingerprint.cache_root()


def test_the_command_line_reports_a_relative_home_as_an_error(installed, monkeypatch, tmp_path, capsys):
    from netcl_lite import compression

    monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
    monkeypatch.setenv("HOME", "somewhere")
    monkeypatch.chdir(tmp_path)
    (tmp_path / "in.txt").write_text("hi")
    code = compression.main(["compress", str(tmp_path / "in.txt"), str(tmp_path / "out.nclz")])
    assert code != 0
    assert "(HOME) is a relative path" in capsys.readouterr().err
    assert not (tmp_path / "somewhere").exists()


# -- the Bibliography's source: what round 23c noticed and left ------------------------------------------

def _entry(tmp_path, extra: str):
    from site_build import citations

    source = tmp_path / "references.bib"
    source.write_text("@inproceedings{smith2020x, author = {Smith, Ann}, title = {A B}, booktitle = {Proc.},"
                      f" year = {{2020}}, {extra}}}\n", encoding="utf-8")
    return citations.works(source)["smith2020x"]


def test_an_entry_with_a_crossref_is_refused_since_nothing_follows_it(tmp_path):
    """The BibTeX reader does not resolve ``crossref``: the fields it should bring were dropped silently
    (a crossref to a missing key said nothing)."""
    with pytest.raises(ValueError, match=r"'smith2020x' has a crossref \('proc2020'\), which the site does not follow"):
        _entry(tmp_path, "crossref = {proc2020}")


@pytest.mark.parametrize("pages", ["1--", "--9", "1--5--9", "-"])
def test_pages_that_are_no_page_nor_range_are_refused(tmp_path, pages):
    """``pages = {1--}`` was shown as "pp. 1–", a range with no end."""
    with pytest.raises(ValueError, match=r"'smith2020x' has the pages .* no page nor range of pages"):
        _entry(tmp_path, f"pages = {{{pages}}}")


@pytest.mark.parametrize("pages, shown", [("7", "article 7"), ("7--19", "pp. 7–19"), ("e1--e9", "pp. e1–e9")])
def test_a_page_or_a_range_still_shows(tmp_path, pages, shown):
    assert _entry(tmp_path, f"pages = {{{pages}}}").details == shown


# -- the glossary: what round 24b noticed and left -------------------------------------------------------

def test_two_terms_forms_that_differ_only_in_spacing_are_refused(tmp_path):
    """A page's words match a form however they are spaced, so "key  value" (two spaces) and "key value"
    are one pattern: the second term was never marked, silently."""
    from site_build import glossary

    source = tmp_path / "glossary.yml"
    source.write_text("- term: a\n  forms: [key value]\n  definition: one thing.\n"
                      "- term: b\n  forms: [\"key  value\"]\n  definition: another.\n")
    with pytest.raises(ValueError, match=r"'key  value' belongs to both 'a' and 'b' \(as 'key value'"):
        glossary.terms(source)


# -- model configs: what round 24a noticed and left ------------------------------------------------------

def _small(**over):
    from netcl_lite.nn.config import LMConfig

    return LMConfig(**{**dict(vocab_size=16, hidden_size=8, intermediate_size=16, num_hidden_layers=1,
                              num_attention_heads=2, max_position_embeddings=8), **over})


@pytest.mark.parametrize("name", ["rms_norm_eps", "initializer_range"])
@pytest.mark.parametrize("value", [1e39, 1e300])
def test_a_config_value_past_float32_is_refused_naming_it(name, value):
    """``initializer_range=1e300`` built a model of infinite weights (a RuntimeWarning only), and
    ``rms_norm_eps=1e300`` became inf in the float32 norms: every prediction uniform, silently."""
    with pytest.raises(ValueError, match=rf"{name}=1e\+(39|300) is past float32's largest value"):
        _small(**{name: value})
    assert getattr(_small(**{name: 1e30}), name) == 1e30


def test_a_checkpoint_s_two_rope_thetas_that_disagree_are_refused():
    """A ``config.json`` with ``rope_theta`` and ``rope_parameters.rope_theta`` that differ loaded with the
    nested one, saying nothing about the other."""
    from netcl_lite.nn.checkpoint import config_from_json, config_to_json

    values = config_to_json(_small())
    values["rope_parameters"] = {"rope_type": "default", "rope_theta": 500000.0}
    values["rope_theta"] = 10000.0
    with pytest.raises(ValueError, match=r"rope_theta=10000\.0 and rope_parameters\.rope_theta=500000\.0 disagree"):
        config_from_json(values)
    values["rope_theta"] = 500000
    assert config_from_json(values).rope_theta == 500000
    del values["rope_theta"]
    assert config_from_json(values).rope_theta == 500000


# -- math: what round 23c noticed and left ---------------------------------------------------------------

@pytest.mark.parametrize("latex", ["x \\\\ y", "\\\\", "a = b \\\\[2pt] c"])
def test_a_line_break_outside_any_environment_is_refused(latex):
    """The converter drops a line break outside an environment: "x \\\\ y" drew "xy", silently."""
    from site_build import mathml

    page = f'<div class="arithmatex">\\[{latex}\\]</div>'
    with pytest.raises(ValueError, match=r"docs/x\.md.*outside any environment"):
        mathml.render(page, "x.md")


@pytest.mark.parametrize("latex", ["\\begin{aligned} x &= 1 \\\\ y &= 2 \\end{aligned}",
                                   "\\begin{bmatrix} 1 & 0 \\\\ 0 & 1 \\end{bmatrix}",
                                   "f = \\left\\{ \\begin{gathered} a \\\\ b \\end{gathered} \\right."])
def test_line_breaks_inside_an_environment_or_group_still_render(latex):
    from site_build import mathml

    out = mathml.render(f'<div class="arithmatex">\\[{latex}\\]</div>', "x.md")
    assert "<math" in out and out.count("<mtr") >= 2, out


@pytest.mark.parametrize("doubled", ['"rms_norm_eps": 1e-6, "rms_norm_eps": 0.5',
                                     '"rope_parameters": {"rope_theta": 1.0, "rope_theta": 10000.0}'])
def test_a_config_json_that_gives_a_key_twice_is_refused_naming_it(tmp_path, doubled):
    """Round 25a noticed: Python's json keeps the last of two equal keys, so a doubled ``rms_norm_eps``
    loaded one of the two silently (another reader may keep the first)."""
    import json

    from netcl_lite.nn.checkpoint import config_to_json, read_config

    text = json.dumps(config_to_json(_small()))
    (tmp_path / "config.json").write_text(text[:-1] + ", " + doubled + "}", encoding="utf-8")
    key = doubled.split('"')[-4] if "rope_parameters" in doubled else "rms_norm_eps"
    with pytest.raises(ValueError, match=rf"config\.json: the key '{key}' is given twice"):
        read_config(tmp_path)
    (tmp_path / "config.json").write_text(text, encoding="utf-8")
    assert read_config(tmp_path) == _small()


# -- the printable book: what round 25c found and left ---------------------------------------------------

@pytest.mark.parametrize("decoy", ['<p>write id="term-token" in the tag</p>',
                                   '<span data-id="term-token">x</span>',
                                   '<span title="id=\'term-token\'">x</span>',
                                   '<code>&lt;dt id="term-token"&gt;</code>'])
def test_the_printable_book_counts_only_elements_ids(tmp_path, decoy):
    """``repair_print_page`` took any ``id="..."`` in the page's text for an anchor: prose that shows one,
    a ``data-id``, one inside another attribute's value. A Glossary term then seemed to stand twice, and
    the link to it was unwrapped as broken instead of led to it."""
    from site_build import apparatus

    page = ('<section class="print-page" id="glossary"><dl><dt id="term-token">token</dt></dl></section>'
            f'<section class="print-page" id="chapter-7">{decoy}<p><a href="#glossary-term-token">a token</a></p>'
            '<p><a href="#nowhere">gone</a></p></section>')
    path = tmp_path / apparatus.PRINT_PAGE
    path.parent.mkdir(parents=True)
    path.write_text(page, encoding="utf-8")
    assert apparatus.repair_print_page(tmp_path) == 1            # only #nowhere is broken
    out = path.read_text(encoding="utf-8")
    assert '<a href="#term-token">a token</a>' in out and ">gone<" in out and 'href="#nowhere"' not in out
