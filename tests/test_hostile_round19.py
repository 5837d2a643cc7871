"""Issue 58, round 19 (the lead's part): defects noticed in earlier rounds and left, each reproduced here
and failing on the code before its fix.

Each test asserts the correct behaviour.
"""

from __future__ import annotations

import subprocess
import sys

import pytest

from cli_model import TEXT, environment as _env, listing as _listing, write_model_folder
from site_render import failed_figure


@pytest.fixture(scope="module")
def model_dir(queue, tmp_path_factory):
    return write_model_folder(queue, tmp_path_factory.mktemp("round19") / "model")


# -- a worker count the system cannot start ---------------------------------------------------------------

def test_a_worker_count_past_what_the_system_starts_is_named_not_an_abort(model_dir, tmp_path):
    """PoCL starts every worker a worker-count variable asks for as its device starts; at 32,000 the
    system refuses a thread (the maps ``vm.max_map_count`` allows run out) and PoCL aborts the process
    (SIGABRT, exit status 134, "PTHREAD ERROR in pthread_scheduler_init"), past any Python handler. The
    command line must name the variable and exit with status 1, writing nothing."""
    src = tmp_path / "in.txt"
    src.write_bytes(TEXT.encode())
    out = tmp_path / "out.nclz"
    proc = subprocess.run([sys.executable, "-m", "netcl_lite.compression", "compress", str(src), str(out),
                           "--model", str(model_dir)], cwd=tmp_path, stdin=subprocess.DEVNULL, capture_output=True,
                          text=True, timeout=120, env=_env(POCL_MAX_PTHREAD_COUNT="32000", POCL_AFFINITY=None))
    assert proc.returncode == 1, (proc.returncode, proc.stderr[-600:])
    assert "POCL_MAX_PTHREAD_COUNT" in proc.stderr and "Traceback" not in proc.stderr, proc.stderr[-600:]
    assert _listing(tmp_path) == ["in.txt"]


@pytest.mark.parametrize("value, refused", [("4096", False), ("4097", True), (" +40000", True), ("0", False)])
def test_the_worker_count_bound_is_the_stated_one(monkeypatch, value, refused):
    """The library's own check (the device is made only after it): a count up to MAX_POCL_WORKERS
    passes, one past it is named with the bound, as PoCL's ``atoi`` reads it (space and sign)."""
    from netcl_lite.core import device

    monkeypatch.setenv("POCL_CPU_MAX_CU_COUNT", value)
    problem = device.worker_count_problem()
    if refused:
        assert problem is not None and "POCL_CPU_MAX_CU_COUNT" in problem and "4,096" in problem, problem
    else:
        assert problem is None, problem


# -- citations: near misses and entries the check let through ---------------------------------------------

def _bib(tmp_path, *entries):
    body = "".join("@article{%s,\n  author = {%s},\n  title = {%s},\n  journal = {J},\n  year = {%s},\n}\n" % e
                   for e in entries)
    path = tmp_path / "refs.bib"
    path.write_text(body, encoding="utf-8")
    return path


@pytest.mark.parametrize("text", ["As @@vaswani2017attention shows.", "As [@@vaswani2017attention] shows.",
                                  "See -@@@vaswani2017attention."])
def test_a_doubled_at_sign_before_a_key_fails_naming_the_line(text):
    """``@@key`` is a typo for ``@key``: no ``@`` after another starts a citation, so it cited nothing and
    the page showed the two at signs and the key as typed, with no error, where every other near miss
    of a citation fails naming the line."""
    from site_build import citations

    with pytest.raises(ValueError, match=r"docs/p\.md:3: .*at signs before the key"):
        citations.check(f"# P\n\n{text}\n", "p.md")


@pytest.mark.parametrize("text", ["mail a@@b.example", "a `@@vaswani2017attention` span", "python @@decorator",
                                  "x @@ y"])
def test_doubled_at_signs_that_are_no_near_miss_are_left_as_text(text):
    from site_build import citations

    citations.check(text, "p.md")
    assert "@@" in citations.render(text, "p.md")


def test_two_works_a_citation_names_alike_get_the_year_s_letters(tmp_path):
    """Two works by the same author in the same year were both cited as "Smith (2020)" and listed as
    "Ann Smith (2020)": a reader could not tell which a citation meant. They are "2020a" and "2020b",
    lettered in the Bibliography's order (surname, then title); a work alone keeps its year."""
    from site_build import citations

    known = citations.works(_bib(tmp_path, ("smith2020zeta", "Smith, Ann", "Zeta", "2020"),
                                 ("smith2020alpha", "Smith, Ann", "Alpha", "2020"),
                                 ("smith2021alone", "Smith, Ann", "Alone", "2021"),
                                 ("smith2020team", "Smith, Ann and Jones, Bob", "Team", "2020")))
    assert {k: w.year for k, w in known.items()} == {"smith2020zeta": "2020b", "smith2020alpha": "2020a",
                                                     "smith2021alone": "2021", "smith2020team": "2020"}
    shown = citations.render("As @smith2020zeta and [@smith2020alpha].", "p.md", known)
    assert "Smith (2020b)" in shown and "Smith, 2020a" in shown, shown


@pytest.mark.parametrize("authors", ["Smith, Ann and", "and Smith, Ann", "Smith, Ann and and Jones, Bob"])
def test_an_author_list_with_a_stray_and_is_refused_naming_the_entry(tmp_path, authors):
    """BibTeX's reader took a trailing, leading or doubled 'and' as part of a name: ``Smith, Ann and`` was
    listed as "Ann and Smith", with no error."""
    from site_build import citations

    with pytest.raises(ValueError, match=r"refs\.bib: the entry 'smith2020x' reads 'and' as part of a name"):
        citations.works(_bib(tmp_path, ("smith2020x", authors, "T", "2020")))


def test_others_before_the_last_author_is_refused_naming_the_entry(tmp_path):
    """'others' stands for the names left out, last: ``Smith, Ann and others and Jones, Bob`` was listed
    as "Ann Smith, others and Bob Jones"."""
    from site_build import citations

    with pytest.raises(ValueError, match=r"refs\.bib: the entry 'smith2020x' has 'others' before the last name"):
        citations.works(_bib(tmp_path, ("smith2020x", "Smith, Ann and others and Jones, Bob", "T", "2020")))


# -- the build's runs: a file's size is bounded while the run writes it ---------------------------------

def test_a_run_cannot_write_a_file_past_the_stated_limit(tmp_path):
    """The limits on what the build shows (a figure's 2 MiB, a notebook cell's, a snippet's printed output)
    were checked once a run ended: a figure script, a snippet or a notebook step could fill the disk
    first (a write of a few GB a second, for up to the figure timeout's 900 s). Every run now has a
    file-size limit, FILE_LIMIT, inherited by whatever it starts: a write past it fails at once."""
    from site_build import runner

    past = (f"f = open('big', 'wb')\nf.seek({runner.FILE_LIMIT})\nf.write(b'x')\nf.flush()\n")
    run = runner.run_code(past, tmp_path, timeout=60)
    assert run.returncode == 1 and "File too large" in run.stderr, (run.returncode, run.stderr[-400:])
    (tmp_path / "child").mkdir()
    (tmp_path / "within").mkdir()
    child = runner.run_code("import subprocess\nsubprocess.run(['sh', '-c', 'ulimit -f'], check=True)\n",
                            tmp_path / "child", timeout=60)
    assert int(child.stdout) * 512 == runner.FILE_LIMIT, child.stdout       # sh counts 512-byte blocks
    within = runner.run_code(f"f = open('ok', 'wb')\nf.seek({runner.FILE_LIMIT - 1})\nf.write(b'x')\nf.close()\n",
                             tmp_path / "within", timeout=60)
    assert within.returncode == 0, within.stderr[-400:]


def test_a_figure_script_writing_past_the_limit_fails_at_once_naming_its_page(generated_tree, monkeypatch):
    from site_build import runner

    monkeypatch.setattr(runner, "FILE_LIMIT", 64 << 20)     # the prelude reads it as each run starts
    message = failed_figure(generated_tree, monkeypatch, "huge",
                            "import sys\nf = open(sys.argv[1], 'w')\nwhile True:\n    f.write('<svg>' * 100_000)\n")
    assert message.startswith("docs/chapter-99.md: the figure script ") and "File too large" in message, message


# -- docstrings: a role inside a code span ------------------------------------------------------------------

@pytest.mark.parametrize("text", ["Write `` :func:`netcl_lite.ops.matmul` `` to link it.",
                                  "The form ``:class:`Name` `` and a run ```:meth:`x` ``` both stay."])
def test_a_role_inside_a_code_span_stays_as_typed(text):
    """A docstring that shows the role syntax in a code span had it rewritten into the cross-reference's
    HTML inside the span, so the reference page showed ``<autoref identifier=... optional>`` as text."""
    from site_build.docstrings import markup

    assert markup(text) == text


def test_roles_outside_code_spans_still_link():
    from site_build.docstrings import markup

    shown = markup("See :func:`~netcl_lite.ops.matmul` beside `code`, then :class:`Tensor`.")
    assert shown == ('See <autoref identifier="netcl_lite.ops.matmul" optional>`matmul`</autoref> beside `code`, '
                     'then <autoref identifier="Tensor" optional>`Tensor`</autoref>.')


# -- a blob whose fingerprint differs where no one-byte tag does ----------------------------------------------

def test_a_part_that_differs_behind_a_matching_tag_is_still_named_among_the_candidates(queue, monkeypatch):
    """Each part of a blob's fingerprint has a one-byte tag, so a part that differs matches the blob's tag
    once in 256: then the refusal said only "something else ... though no part's tag does", naming no
    part and none of the PoCL settings the arithmetic holds (a change of the library's sources gave
    round 15a's arithmetic test exactly this collision). It now names the parts that may differ, the
    arithmetic and coder as they are here, and the environment's PoCL settings, escaped."""
    import hashlib

    from cli_model import tiny_model
    from netcl_lite import compression as cz

    model, tok, _ = tiny_model(queue)
    blob = cz.compress((TEXT * 2).encode(), model, tok, mix=False)
    here = cz.arithmetic(model)
    tag = hashlib.sha256(here.encode()).digest()[0]
    other = next(f"{here}; other {i}" for i in range(100_000)
                 if hashlib.sha256(f"{here}; other {i}".encode()).digest()[0] == tag)
    monkeypatch.setattr(cz, "arithmetic", lambda m: other)
    monkeypatch.setenv("POCL_NOTHING", "x\n\x1b[31m")
    with pytest.raises(ValueError) as caught:
        cz.decompress(blob, model, tok)
    message = str(caught.value)
    assert "match by chance" in message and "the arithmetic (here: " in message, message
    assert "POCL_NOTHING" in message and "\n" not in message and "\x1b" not in message, message


# -- glossary: terms without ASCII letters ------------------------------------------------------------------

def test_terms_without_ascii_letters_get_anchors_of_their_own():
    """A term's anchor kept only its ASCII letters and digits, so every term written in another script
    (``注意力``, ``α``) was ``#term-``: one such term linked to a bare prefix, and a second was refused as
    "the same term twice?". Such a term keeps its own letters; ASCII terms keep their anchors."""
    from site_build import glossary

    entries = glossary._load("- {term: 注意力, definition: Attention in Chinese.}\n"
                             "- {term: α, definition: A learning rate.}\n"
                             "- {term: Key-value cache, definition: What decoding keeps.}\n")
    assert [t.anchor for t in entries] == ["term-注意力", "term-α", "term-key-value-cache"]
    page = glossary.glossary(entries=entries)
    assert "{ #term-注意力 }" in page and "{ #term-α }" in page, page
