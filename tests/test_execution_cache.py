"""The build's execution cache cannot serve a stale output: every input that could change an
output changes its key (:func:`netcl_lite.fingerprint.key`, the one key of the build and the
capstone), and a changed key runs the item again."""

from __future__ import annotations

import re
import shutil
import sys
from pathlib import Path

import pytest

from netcl_lite import fingerprint
from site_build import build_output, generated, store

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture
def library_copy(tmp_path, monkeypatch):
    """The key reads a copy of the library (every .py and kernel), which the test may edit."""
    copies = []
    for path in fingerprint.library_sources():
        rel = path.relative_to(ROOT)
        copy = tmp_path / "library" / rel
        copy.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, copy)
        copies.append(copy)
    monkeypatch.setattr(fingerprint, "library_sources", lambda: copies)
    return {c.relative_to(tmp_path / "library").as_posix(): c for c in copies}


def test_the_key_reads_every_library_source_and_kernel():
    listed = {p.relative_to(ROOT).as_posix() for p in fingerprint.library_sources()}
    expected = {p.relative_to(ROOT).as_posix() for p in (ROOT / "netcl_lite").rglob("*.py")}
    expected |= {p.relative_to(ROOT).as_posix() for p in (ROOT / "kernels").iterdir() if p.suffix in (".cl", ".h")}
    assert listed == expected
    assert any(name.endswith(".cl") for name in listed) and "netcl_lite/ops/matmul.py" in listed


@pytest.mark.parametrize("edited", ["kernels/matmul.cl", "kernels/common.h", "netcl_lite/ops/matmul.py",
                                    "netcl_lite/text/bpe.py", "netcl_lite/fingerprint.py"])
def test_editing_a_kernel_or_a_library_file_changes_the_key(library_copy, edited):
    before = fingerprint.key("print(1)\n")
    assert fingerprint.key("print(1)\n") == before, "the key must be deterministic"
    path = library_copy[edited]
    path.write_bytes(path.read_bytes() + b"\n")      # even a blank line
    assert fingerprint.key("print(1)\n") != before


def test_the_source_the_files_it_reads_the_packages_and_the_device_choice_change_the_key(tmp_path, monkeypatch):
    shared = store.context()
    base = fingerprint.key("print(1)\n", shared=shared)
    assert fingerprint.key("print(2)\n", shared=shared) != base
    data = tmp_path / "results.json"
    data.write_text("{}")
    with_data = fingerprint.key("print(1)\n", [data], shared=shared)
    assert with_data != base
    data.write_text('{"T": 1}')
    assert fingerprint.key("print(1)\n", [data], shared=shared) != with_data
    monkeypatch.setenv("NETCL_LITE_POCL_CPU", "haswell")          # a compiler target is a different output
    assert store.context() != shared
    monkeypatch.delenv("NETCL_LITE_POCL_CPU")
    monkeypatch.setattr(store, "PACKAGES", store.PACKAGES + ("pytest",))
    assert store.context() != shared
    monkeypatch.undo()
    for name in ("numpy", "matplotlib", "constriction"):               # another version of one package
        real = fingerprint.metadata.version
        monkeypatch.setattr(fingerprint.metadata, "version",
                            lambda dist, name=name, real=real: real(dist) + ".1" if dist == name else real(dist))
        assert store.context() != shared, f"{name}'s version is not in the build's key"
        monkeypatch.undo()
    monkeypatch.undo()
    from netcl_lite import capstone                                 # the seeds' results Chapter 9 prints

    seeds = tmp_path / "capstone_seeds.json"
    seeds.write_bytes(capstone.seeds_file().read_bytes())
    monkeypatch.setattr(capstone, "seeds_file", lambda: seeds)
    shared = store.context()
    seeds.write_text(seeds.read_text() + " ")                      # any edit is another key
    assert store.context() != shared
    env = fingerprint.environment(packages=store.PACKAGES)
    assert "numpy==" in env and "pyopencl==" in env and "matplotlib==" in env and sys.version in env
    import pyopencl as cl

    for device in (d for p in cl.get_platforms() for d in p.get_devices()):
        assert fingerprint.device_description(device) in env



def test_reads_of_a_path_like_with_no_order_of_its_own_are_keyed_as_paths(tmp_path):
    """Two entries of one ``os.PathLike`` class that defines no ``<`` were "'<' not supported between
    instances", naming nothing: they are ordered as paths, so the key is that of the same files as str."""
    import os

    class Named(os.PathLike):
        def __init__(self, path):
            self.path = str(path)

        def __fspath__(self):
            return self.path

    a, b = tmp_path / "a.txt", tmp_path / "b.txt"
    a.write_text("a")
    b.write_text("b")
    assert (fingerprint.key("x", [Named(b), Named(a)], shared="s")
            == fingerprint.key("x", [str(a), str(b)], shared="s"))

def _variables_the_library_reads() -> set[str]:
    """Every ``NETCL_LITE_*`` name in the library's sources (a name that ends in ``_`` is a prefix of a
    compiler macro, not a variable)."""
    names = set()
    for path in (ROOT / "netcl_lite").rglob("*.py"):
        names |= set(re.findall(r"\bNETCL_LITE_[A-Z0-9_]*[A-Z0-9]\b", path.read_text(encoding="utf-8")))
    return names


_VALUES = {"NETCL_LITE_DEVICE": "cpu", "NETCL_LITE_POCL_CPU": "haswell"}


def test_every_variable_the_library_reads_changes_the_key_but_where_results_live_and_rerun():
    """Each ``NETCL_LITE_*`` variable the library reads is flipped in turn: those that change results
    give a new key (the build's and the capstone's: one function), the cache location and the
    rerun switch do not."""
    names = _variables_the_library_reads()
    assert {"NETCL_LITE_DEVICE", "NETCL_LITE_POCL_CPU", "NETCL_LITE_CACHE", "NETCL_LITE_RERUN"} <= names, names
    assert fingerprint.NOT_A_CHOICE == {"NETCL_LITE_CACHE", "NETCL_LITE_RERUN"}
    unknown = names - fingerprint.NOT_A_CHOICE - set(_VALUES)
    assert not unknown, f"give the test a value for {sorted(unknown)} (a variable that changes results)"
    with pytest.MonkeyPatch.context() as mp:
        for name in names:
            mp.delenv(name, raising=False)
        base, shared = fingerprint.key("x"), store.context()
        for name in sorted(names):
            value = {"NETCL_LITE_CACHE": "/elsewhere", "NETCL_LITE_RERUN": "0"}.get(name, _VALUES.get(name))
            mp.setenv(name, value)
            if name in fingerprint.NOT_A_CHOICE:
                assert fingerprint.key("x") == base and store.context() == shared, f"{name} changed the key"
            else:
                assert fingerprint.key("x") != base, f"{name} is not in the key"
                assert store.context() != shared, f"{name} is not in the build's key"
            mp.delenv(name)
        assert fingerprint.key("x") == base


def test_a_snippet_a_figure_and_a_drill_change_their_keys(tmp_path):
    snippet = tmp_path / "bits.py"
    snippet.write_text("print(1)\n")
    key = build_output.snippet_key(str(snippet))
    snippet.write_text("print(2)\n")
    assert build_output.snippet_key(str(snippet)) != key

    figure = ROOT / "snippets" / "chapter8" / "figure_gemm.py"
    reads = generated.figure_reads(figure)
    assert ROOT / "benchmarks" / "results" / "kernels.json" in reads, "a Chapter 8 figure is drawn from kernels.json"
    rope = ROOT / "snippets" / "week22" / "figure_rope.py"
    reads = generated.figure_reads(rope)
    assert rope not in reads and ROOT / "snippets" / "week22" / "drill_1_merges.py" in reads, \
        "a figure's key covers the files beside it"
    assert not any(p.is_relative_to(ROOT / "benchmarks") for p in reads), "only scripts naming benchmarks read them"
    week = tmp_path / "week99"
    week.mkdir()
    (week / "drill_1_x.py").write_text("# Step 1\nprint(1)\n")
    first = fingerprint.key(str(generated.drill_notebook(week)))
    (week / "drill_1_x.py").write_text("# Step 1\nprint(3)\n")
    assert fingerprint.key(str(generated.drill_notebook(week))) != first


def test_a_build_output_runs_once_per_key_and_again_after_an_edit_or_a_forced_rerun(tmp_path, monkeypatch,
                                                                                    library_copy):
    monkeypatch.setenv("NETCL_LITE_CACHE", str(tmp_path / "store"))
    runs = tmp_path / "runs.txt"
    snippet = tmp_path / "counted.py"
    source = f"open({str(runs)!r}, 'a').write('x')\nprint('value', {{}})\n"
    snippet.write_text(source.format(1))
    outputs = build_output.BuildOutputs()
    assert outputs.cached_output(str(snippet)) == "value 1\n"
    assert outputs.cached_output(str(snippet)) == "value 1\n" and runs.read_text() == "x", "a hit must not run"
    assert outputs.reused == 1
    snippet.write_text(source.format(2))
    assert outputs.cached_output(str(snippet)) == "value 2\n" and runs.read_text() == "xx"
    library_copy["kernels/softmax.cl"].write_text("// edited\n")
    outputs = build_output.BuildOutputs()             # a new build sees the edited library
    assert outputs.cached_output(str(snippet)) == "value 2\n" and runs.read_text() == "xxx"
    monkeypatch.setenv(fingerprint.RERUN, "1")
    assert outputs.cached_output(str(snippet)) == "value 2\n" and runs.read_text() == "xxxx"


def test_a_page_block_and_the_build_output_of_the_same_snippet_run_once(tmp_path, monkeypatch):
    monkeypatch.setenv("NETCL_LITE_CACHE", str(tmp_path / "store"))
    runs = tmp_path / "runs.txt"
    shared = store.context()
    outputs = build_output.BuildOutputs(lambda: shared)

    def run(code: str, name: str):
        (tmp_path / name).mkdir()
        return build_output.run_stored(code, tmp_path / name, shared)

    snippet = tmp_path / "shown.py"
    snippet.write_text(f"open({str(runs)!r}, 'a').write('x')\nprint('shown')\n")
    assert outputs.cached_output(str(snippet)) == "shown\n" and runs.read_text() == "x"
    page_block = "\n" + snippet.read_text() + "\n"      # the snippet as a page includes it
    proc = run(page_block, "a")
    assert (proc.returncode, proc.stdout) == (0, "shown\n") and runs.read_text() == "x", "the block ran again"
    # the reverse order: what the doc test ran is what the build shows
    first = f"open({str(runs)!r}, 'a').write('y')\nprint('block first')\n"
    assert run(first, "b").stdout == "block first\n" and runs.read_text() == "xy"
    snippet.write_text(first)
    assert outputs.cached_output(str(snippet)) == "block first\n" and runs.read_text() == "xy"
    # another interpreter, device or variable is another context, so the block runs there
    proc = build_output.run_stored(page_block, tmp_path / "a", shared + "\nanother device")
    assert proc.stdout == "shown\n" and runs.read_text() == "xyx"
    # a failing run is not kept: it fails again, running each time
    failing = f"open({str(runs)!r}, 'a').write('z')\nraise SystemExit(3)\n"
    assert run(failing, "c").returncode == 3 and run(failing, "d").returncode == 3
    assert runs.read_text() == "xyxzz"
    with pytest.raises(TypeError, match="code must be str"):
        build_output.code_key(b"print(1)", shared)


def _imported_modules(code: str) -> set[str]:
    import ast

    names = set()
    for node in ast.walk(ast.parse(code)):
        if isinstance(node, ast.Import):
            names.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names.add(node.module.split(".")[0])
    return names


def test_the_build_key_names_the_version_of_every_package_a_block_or_snippet_imports():
    """A stored output is reused only while every package its code imports is the same version."""
    from importlib import metadata

    import doc_blocks

    codes = [b.code for page in doc_blocks.pages() for b in doc_blocks.runnable(page)]
    snippets = sorted((ROOT / "snippets").rglob("*.py"))
    # a snippet folder's own modules, and the benchmark reports Chapter 8's figures load (their files
    # are in those figures' keys: generated.figure_reads)
    local = {p.stem for p in snippets} | {p.stem for p in (ROOT / "benchmarks").glob("*.py")}
    imported = set().union(*(_imported_modules(c) for c in codes + [p.read_text(encoding="utf-8") for p in snippets]))
    third_party = imported - set(sys.stdlib_module_names) - local - {"netcl_lite"}
    assert {"numpy", "matplotlib", "torch"} <= third_party, f"the scan found only {sorted(third_party)}"
    keyed = {name.lower() for name in store.PACKAGES}
    unnamed = {m for m in third_party if m.lower() not in keyed}   # a module named unlike its distribution
    distributions = metadata.packages_distributions() if unnamed else {}
    missing = {m: distributions.get(m) for m in unnamed
               if not {d.lower() for d in distributions.get(m, [m])} & keyed}
    assert not missing, f"packages imported by page blocks or snippets but not in store.PACKAGES: {missing}"


def test_store_and_lookup(tmp_path, monkeypatch):
    monkeypatch.setenv("NETCL_LITE_CACHE", str(tmp_path))
    assert store.lookup("figure", "abc") is None
    store.store("figure", "abc", b"<svg/>")
    assert store.lookup("figure", "abc") == b"<svg/>"
    assert (tmp_path / "executed" / "figure" / "abc").is_file()
    monkeypatch.setenv(fingerprint.RERUN, "1")
    assert store.lookup("figure", "abc") is None
    with pytest.raises(ValueError, match="kind must be a plain name"):
        store.store("../x", "abc", b"")


def test_a_source_checkout_keeps_the_store_in_its_own_cache_folder(monkeypatch):
    monkeypatch.delenv("NETCL_LITE_CACHE", raising=False)
    assert fingerprint.cache_root() == ROOT / ".cache" / "netcl_lite"   # git-ignored: a fresh clone runs everything
    ignored = (ROOT / ".gitignore").read_text(encoding="utf-8").split()
    assert "/.cache/" in ignored


def test_a_relative_cache_folder_is_refused_naming_the_variable(monkeypatch, tmp_path):
    """A relative NETCL_LITE_CACHE names another folder in each process: the build's snippets run in
    scratch folders and would each find an empty cache. The build, and every process it starts, say
    so instead."""
    from site_build import runner

    monkeypatch.setenv("NETCL_LITE_CACHE", "relcache")
    with pytest.raises(ValueError, match="NETCL_LITE_CACHE='relcache' is a relative path"):
        fingerprint.cache_root()
    snippet = tmp_path / "where.py"
    snippet.write_text("from netcl_lite import fingerprint\nprint(fingerprint.cache_root())\n")
    with pytest.raises(runner.SnippetError, match="is a relative path"):
        runner.run_snippet(snippet, timeout=120)
    monkeypatch.setenv("NETCL_LITE_CACHE", str(tmp_path / "abs"))
    assert fingerprint.cache_root() == tmp_path / "abs"


def test_keys_name_files_the_same_in_a_checkout_and_an_installed_wheel():
    """A wheel keeps the kernels inside the package; a key names them ``kernels/<file>`` either
    way, so an install of the same files finds what a checkout stored (and the reverse)."""
    from netcl_lite.core.kernels import kernel_dir

    assert fingerprint.file_name(kernel_dir() / "matmul.cl") == "kernels/matmul.cl"
    assert fingerprint.file_name(fingerprint.PACKAGE / "ops" / "matmul.py") == "netcl_lite/ops/matmul.py"
    names = [fingerprint.file_name(p) for p in fingerprint.library_sources()]
    assert len(names) == len(set(names)) and "kernels/matmul.cl" in names


def test_the_training_run_keys_on_the_packages_the_library_computes_with_only():
    """The build's plotting and Jupyter packages change figures and notebooks, not a training run:
    the library's key leaves them out (a reader's install without them finds the run), the
    build's keeps them."""
    run = fingerprint.environment()
    build = fingerprint.environment(packages=store.PACKAGES)
    assert "matplotlib" not in run and "ipykernel" not in run
    assert "matplotlib" in build and "numpy==" in run and "pyopencl==" in run


def test_the_library_imports_nothing_of_the_docs_build():
    """``netcl_lite`` is a library: no module of it imports the site's build or its tools."""
    offenders = []
    for path in (ROOT / "netcl_lite").rglob("*.py"):
        text = path.read_text(encoding="utf-8")
        if re.search(r"^\s*(?:from|import)\s+(?:site_build|mkdocs|griffe|execution_cache)\b", text, re.M) \
                or "execution_cache" in text:
            offenders.append(path.relative_to(ROOT).as_posix())
    assert not offenders, offenders


def test_the_corpus_is_stored_under_the_one_key_of_its_content(tmp_path, monkeypatch):
    """The standard-library corpus is kept by fingerprint.key of the files it parses (their content,
    not their modification times): a touched file reuses it, an edited one parses again."""
    from netcl_lite import corpus

    lib = tmp_path / "lib"
    lib.mkdir()
    module = lib / "mod.py"
    module.write_text("'''First text of a module.'''\n")
    monkeypatch.setenv("NETCL_LITE_CACHE", str(tmp_path / "cache"))
    monkeypatch.delenv(fingerprint.RERUN, raising=False)
    corpus._documents.cache_clear()
    assert corpus.stdlib_documents(lib) == {"mod.py": "First text of a module."}
    (stored,) = (tmp_path / "cache" / "corpus").iterdir()
    module.touch()
    corpus._documents.cache_clear()
    corpus.stdlib_documents(lib)
    assert [p.name for p in (tmp_path / "cache" / "corpus").iterdir()] == [stored.name]
    module.write_text("'''Second text.'''\n")
    corpus._documents.cache_clear()
    assert corpus.stdlib_documents(lib) == {"mod.py": "Second text."}
    assert len(list((tmp_path / "cache" / "corpus").iterdir())) == 2
    corpus._documents.cache_clear()


def test_under_serve_a_save_reruns_only_the_stages_whose_inputs_changed(library_copy, monkeypatch, tmp_path):
    """The plugin lives across the builds of one ``mkdocs serve``: a build after a prose edit runs
    neither the training stage nor the figures; a library edit runs both again, and a figure
    snippet's edit the figures alone."""
    import os

    from site_build import capstone_run
    from site_build.plugin import SiteBuild

    ran = []
    monkeypatch.setattr(capstone_run, "train", lambda: ran.append("capstone"))
    monkeypatch.setattr(generated, "build", lambda shared: ran.append("figures"))
    snippet = tmp_path / "figure_x.py"
    snippet.write_text("print(1)\n")
    monkeypatch.setattr(generated, "inputs", lambda: [snippet])
    plugin = SiteBuild()
    plugin.on_pre_build(config=None)
    assert ran == ["capstone", "figures"]
    plugin.on_pre_build(config=None)                       # a prose edit: no input of theirs changed
    assert ran == ["capstone", "figures"]
    snippet.write_text("print(2)\n")
    os.utime(snippet, ns=(0, 10**18))
    plugin.on_pre_build(config=None)
    assert ran == ["capstone", "figures", "figures"]
    matmul = library_copy["kernels/matmul.cl"]
    matmul.write_bytes(matmul.read_bytes() + b"\n")
    plugin.on_pre_build(config=None)
    assert ran == ["capstone", "figures", "figures", "capstone", "figures"]
    monkeypatch.setenv(fingerprint.RERUN, "1")             # a forced rerun runs everything, every build
    plugin.on_pre_build(config=None)
    assert ran[-2:] == ["capstone", "figures"]
