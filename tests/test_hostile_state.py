"""Stored results, saved files and first use, as a hostile or careless user meets them: each case
once served a stale or planted result, lost a file, escaped the project or crashed, and now
gives the fresh result or an error that names the variable, the file, the page or the entry."""

from __future__ import annotations

import re
import hashlib
import json
import os
import subprocess
import sys
import textwrap
import threading
import tracemalloc
from pathlib import Path

import numpy as np
import pytest

import netcl_lite as nl
from netcl_lite import capstone, files, fingerprint
from netcl_lite.core import compiler_target
from netcl_lite.nn.lm import DecoderLM, LMConfig
from netcl_lite.text import model_file
from netcl_lite.text import bpe as bpe_module
from netcl_lite.text.bpe import BPETokenizer
from site_build import build_output, capstone_run, generated, includes
from site_build import store as executed

ROOT = Path(__file__).resolve().parent.parent


def _python(code: str, env: dict | None = None, timeout: int = 120) -> subprocess.CompletedProcess:
    """``code`` run by a fresh interpreter from the repository root (its own PoCL, its own device)."""
    full = {k: v for k, v in os.environ.items() if k not in (env or {})}
    full.update({k: v for k, v in (env or {}).items() if v is not None})
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], cwd=ROOT, env=full, capture_output=True,
                          text=True, timeout=timeout)


def _other_compiler_cpu() -> str | None:
    """A CPU this host may compile for other than PoCL's own choice (forces a retarget), or None."""
    device = nl.device().cl_device
    own = compiler_target.pocl_cpu_name(device)
    if own is None or not compiler_target.host_flags():
        return None
    others = [c for c in compiler_target.allowed_cpus(compiler_target.host_flags()) if c != own]
    return others[-1] if others else None


# -- 1. first use from threads ---------------------------------------------------------------------

_THREADS = """
import threading
import netcl_lite as nl
barrier = threading.Barrier(6)
errors, made = [], []
def first_use():
    barrier.wait()                       # all six ask at once, before any device exists
    try:
        made.append(nl.device())
    except Exception as exc:
        errors.append(repr(exc))
threads = [threading.Thread(target=first_use) for _ in range(6)]
for t in threads:
    t.start()
for t in threads:
    t.join()
print(len(errors), len({id(d) for d in made}), errors[:1])
"""


@pytest.mark.parametrize("retarget", [False, True], ids=["pocl-target", "retargeted"])
@pytest.mark.slow
def test_six_threads_making_the_device_together_all_get_the_same_one(retarget):
    env = {"NETCL_LITE_POCL_CPU": None}
    if retarget:
        other = _other_compiler_cpu()
        if other is None:
            pytest.skip("PoCL's x86-64 CPU device with a second CPU to compile for is needed to retarget")
        env["NETCL_LITE_POCL_CPU"] = other
    for _ in range(3):
        proc = _python(_THREADS, env)
        assert proc.returncode == 0, proc.stderr[-2000:]
        assert proc.stdout.split(maxsplit=2)[:2] == ["0", "1"], f"errors, devices made, first error: {proc.stdout}"


# -- 2./3. one key: the device's compute units, local memory, compiler target, lanes; variables -----

class _Device:
    """A real OpenCL device with some of its facts replaced."""

    def __init__(self, real, **facts):
        self._real, self._facts = real, facts

    def __getattr__(self, name):
        return self._facts[name] if name in self._facts else getattr(self._real, name)


class _Queue:
    def __init__(self, device):
        self.device = device


def test_the_key_changes_with_the_devices_compute_units_local_memory_target_and_lanes(monkeypatch):
    real = nl.device().cl_device
    import netcl_lite.core.kernels as kernels

    lanes = {"n": 8}
    monkeypatch.setattr(kernels, "vector_lanes", lambda device: lanes["n"])
    target = {"cpu": "haswell"}
    monkeypatch.setattr(compiler_target, "target_of", lambda device: target["cpu"])
    base = _Device(real)
    shared = fingerprint.context(base)
    run = capstone.run_key(_Queue(base), "text")
    assert fingerprint.context(base) == shared and capstone.run_key(_Queue(base), "text") == run
    changed = {
        "compute units": _Device(real, max_compute_units=real.max_compute_units + 1),
        "local memory": _Device(real, local_mem_size=real.local_mem_size // 2),
    }
    for what, device in changed.items():
        assert fingerprint.context(device) != shared, what
        assert capstone.run_key(_Queue(device), "text") != run, what
    target["cpu"] = "skylake-avx512"
    assert fingerprint.context(base) != shared and capstone.run_key(_Queue(base), "text") != run, "compiler target"
    target["cpu"], lanes["n"] = "haswell", 16
    assert fingerprint.context(base) != shared and capstone.run_key(_Queue(base), "text") != run, "float lanes"


@pytest.mark.parametrize("name, value", [
    ("NETCL_LITE_POCL_CPU", "haswell"), ("NETCL_LITE_DEVICE", "cpu"), ("NETCL_LITE_SOME_NEW_SWITCH", "1"),
    ("POCL_MAX_PTHREAD_COUNT", "1"), ("POCL_CPU_MAX_CU_COUNT", "1"), ("POCL_WORK_GROUP_METHOD", "loopvec"),
    ("POCL_EXTRA_BUILD_FLAGS", "-cl-fast-relaxed-math"), ("POCL_CPU_LOCAL_MEM_SIZE", "65536"),
])
def test_each_variable_that_changes_results_changes_both_keys(monkeypatch, name, value):
    queue = nl.device().queue
    monkeypatch.delenv(name, raising=False)
    shared, run = fingerprint.context(), capstone.run_key(queue, "text")
    monkeypatch.setenv(name, value)
    assert fingerprint.context() != shared, f"{name} is not in the build's key"
    assert capstone.run_key(queue, "text") != run, f"{name} is not in the run key"


@pytest.mark.parametrize("name, value", [("NETCL_LITE_CACHE", "/elsewhere"), ("NETCL_LITE_RERUN", "0"),
                                         ("POCL_AFFINITY", "0"), ("POCL_DEBUG", "1")])
def test_where_outputs_live_and_logging_leave_the_key_alone(monkeypatch, name, value):
    monkeypatch.delenv(name, raising=False)
    shared = fingerprint.context()
    monkeypatch.setenv(name, value)
    assert fingerprint.context() == shared


def test_the_run_key_is_the_builds_key_function(monkeypatch):
    """One key for both: the run key is execution_fingerprint.key of the recipe and text with the context of
    the run's device (so whatever the build's key covers, the run's covers, less the build's plotting
    and Jupyter packages, which no training run imports)."""
    queue = nl.device().queue
    calls = []
    real_key = fingerprint.key

    def recording(source, reads=(), shared=None):
        calls.append(shared)
        return real_key(source, reads, shared)

    monkeypatch.setattr(fingerprint, "key", recording)
    key = capstone.run_key(queue, "text")
    assert calls == [fingerprint.context(queue.device, fingerprint.RUN_PACKAGES)] and len(key) == 24


_FACTS = "from netcl_lite import fingerprint as c, capstone; import netcl_lite as nl; " \
         "print(c.device_facts()); print(capstone.run_key(nl.device().queue, 'text'))"


@pytest.mark.slow
def test_one_compute_unit_and_another_compiler_target_give_other_keys_in_a_fresh_process():
    """What the variables do, not only that they are set: PoCL with one thread reports one compute
    unit, and NETCL_LITE_POCL_CPU makes the kernels compile for that CPU (the facts in the key)."""
    plain = _python(_FACTS, {"POCL_MAX_PTHREAD_COUNT": None, "NETCL_LITE_POCL_CPU": None})
    assert plain.returncode == 0, plain.stderr[-2000:]
    facts, key = plain.stdout.splitlines()
    one = _python(_FACTS, {"POCL_MAX_PTHREAD_COUNT": "1", "NETCL_LITE_POCL_CPU": None})
    assert one.returncode == 0, one.stderr[-2000:]
    assert "compute units 1;" in one.stdout.splitlines()[0] and one.stdout.splitlines()[1] != key
    other = _other_compiler_cpu()
    if other is None:
        pytest.skip("no second CPU to compile for on this host")
    moved = _python(_FACTS, {"POCL_MAX_PTHREAD_COUNT": None, "NETCL_LITE_POCL_CPU": other})
    assert moved.returncode == 0, moved.stderr[-2000:]
    assert f"compiler target {other};" in moved.stdout.splitlines()[0] and moved.stdout.splitlines()[1] != key


# -- 4. cache entries ------------------------------------------------------------------------------

@pytest.fixture
def store(tmp_path, monkeypatch):
    monkeypatch.setenv("NETCL_LITE_CACHE", str(tmp_path))
    monkeypatch.delenv(fingerprint.RERUN, raising=False)
    return tmp_path / "executed"


@pytest.mark.parametrize("damage", ["emptied", "truncated", "edited", "digest line gone"])
def test_a_damaged_cache_entry_is_a_miss_and_is_removed(store, damage):
    executed.store("build_output", "abc123", b"model: 1.234 bits per byte\n")
    path = store / "build_output" / "abc123"
    raw = path.read_bytes()
    damaged = {"emptied": b"", "truncated": raw[:-14], "edited": raw.replace(b"1.234", b"0.420"),
               "digest line gone": b"model: 1.234 bits per byte\n"}[damage]
    path.write_bytes(damaged)
    assert executed.lookup("build_output", "abc123") is None
    assert not path.exists(), "a damaged entry is removed, so the item runs again and is stored afresh"


def test_a_damaged_entry_runs_the_build_output_again(store, tmp_path, monkeypatch):
    runs = tmp_path / "runs.txt"
    snippet = tmp_path / "counted.py"
    snippet.write_text(f"open({str(runs)!r}, 'a').write('x')\nprint('model: 1.234')\n")
    outputs = build_output.BuildOutputs()
    assert outputs.cached_output(str(snippet)) == "model: 1.234\n"
    (entry,) = (store / "build_output").iterdir()
    entry.write_bytes(entry.read_bytes().replace(b"1.234", b"1."))
    assert outputs.cached_output(str(snippet)) == "model: 1.234\n" and runs.read_text() == "xx"


def test_an_entry_is_flushed_to_disk_before_it_is_renamed_into_place(store, monkeypatch):
    events = []
    real_fsync, real_replace = os.fsync, os.replace
    monkeypatch.setattr(os, "fsync", lambda fd: (events.append("fsync"), real_fsync(fd))[1])
    monkeypatch.setattr(os, "replace", lambda a, b: (events.append("replace"), real_replace(a, b))[1])
    executed.store("figure", "k1", b"<svg/>")
    assert events.index("fsync") < events.index("replace")
    assert executed.lookup("figure", "k1") == b"<svg/>"


def test_threads_storing_the_same_entry_never_share_a_temporary_file(store):
    errors = []
    barrier = threading.Barrier(8)

    def write(i):
        barrier.wait()
        try:
            for _ in range(20):
                executed.store("figure", "same", bytes([i]) * 100_000)
        except Exception as exc:           # two writers of one temporary file: one finds it gone
            errors.append(repr(exc))

    threads = [threading.Thread(target=write, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors[:2]
    got = executed.lookup("figure", "same")
    assert got is not None and len(set(got)) == 1 and len(got) == 100_000
    assert [p.name for p in (store / "figure").iterdir()] == ["same"], "no temporary file is left"


def test_a_key_that_is_not_a_key_is_refused(store):
    with pytest.raises(ValueError, match="item_key must be a key"):
        executed.store("figure", "../../x", b"")


# -- 5. the capstone's run folder and measures.json ----------------------------------------------

_TINY = LMConfig(vocab_size=256, hidden_size=16, intermediate_size=24, num_hidden_layers=1, num_attention_heads=2,
                 max_position_embeddings=64)


@pytest.fixture
def tiny_capstone(tmp_path, monkeypatch):
    """capstone.run() with a tiny text, a byte-level tokenizer and a tiny model whose "training" saves
    it: the run folder's bookkeeping, exercised in a second instead of five minutes."""
    monkeypatch.setenv("NETCL_LITE_CACHE", str(tmp_path / "cache"))
    monkeypatch.delenv(fingerprint.RERUN, raising=False)
    text = "def f(x):\n    return x + 1  # adds one\n" * 20
    held = "class A:\n    '''A class.'''\n    value = 2\n" * 6
    d = capstone.Data(train_documents={"a.py": text}, validation_documents={"b.py": held},
                      test_documents={"c.py": held}, train_text=text, validation_text=held,
                      test_text=held, validation_dropped=(), test_dropped=())
    monkeypatch.setattr(capstone, "data", lambda: d)
    monkeypatch.setattr(capstone, "train_tokenizer", lambda text: BPETokenizer())
    monkeypatch.setattr(capstone, "model_config", lambda tok: _TINY)
    trained = []

    def fake_train(model, train_ids, eval_ids, config, folder=None, progress=None, callback=None):
        log = {"train": [{"step": 1, "loss": 5.0, "seconds": 0.1}], "eval": []}
        if folder is None:               # the run's warm-up steps, which save nothing
            return log
        trained.append(folder)
        model.save_pretrained(folder)
        Path(folder, "log.json").write_text(json.dumps(log))
        return log

    monkeypatch.setattr(capstone, "train", fake_train)
    return trained


def test_a_stored_run_is_loaded_and_not_trained_again(tiny_capstone):
    first = capstone.run()
    assert len(tiny_capstone) == 1
    again = capstone.run()
    assert len(tiny_capstone) == 1 and again.directory == first.directory
    recorded = json.loads((first.directory / "done.json").read_text())["files"]
    assert set(recorded) == set(capstone.RUN_FILES)


@pytest.mark.parametrize("damage", ["weights deleted", "weights edited", "tokenizer emptied", "log edited",
                                    "no digests in done.json", "log nested too deep, its digest updated"])
def test_a_damaged_run_folder_trains_again_instead_of_failing_or_loading_it(tiny_capstone, damage):
    folder = capstone.run().directory
    if damage == "log nested too deep, its digest updated":     # the digests pass: only parsing tells
        (folder / "log.json").write_text("[" * 100_000)
        done = json.loads((folder / "done.json").read_text())
        done["files"]["log.json"] = capstone._sha256(folder / "log.json")
        (folder / "done.json").write_text(json.dumps(done))
        assert capstone._check_run_folder(folder) is None
    if damage == "weights deleted":
        (folder / "model.safetensors").unlink()
    elif damage == "weights edited":
        raw = bytearray((folder / "model.safetensors").read_bytes())
        raw[-1] ^= 0x40
        (folder / "model.safetensors").write_bytes(bytes(raw))
    elif damage == "tokenizer emptied":
        (folder / "tokenizer.json").write_text("")
    elif damage == "log edited":
        (folder / "log.json").write_text('{"train": [{"loss": 0.01, "seconds": 1}], "eval": []}')
    elif damage == "no digests in done.json":
        (folder / "done.json").write_text('{"seconds": 1}\n')
    with pytest.warns(UserWarning, match="training the run again"):
        again = capstone.run()
    assert len(tiny_capstone) == 2
    assert again.log["train"][0]["loss"] == 5.0
    assert capstone._check_run_folder(folder) is None


def test_edited_token_ids_are_encoded_again(tiny_capstone):
    run = capstone.run()
    with np.load(run.directory / "ids.npz") as stored:
        arrays = {k: stored[k] for k in stored.files}
    arrays["held_out"] = arrays["held_out"][::-1].copy()
    np.savez(run.directory / "ids.npz", **arrays)
    with pytest.warns(UserWarning, match="ids.npz does not match"):
        again = capstone.run()
    np.testing.assert_array_equal(again.held_out_ids, run.held_out_ids)
    assert len(tiny_capstone) == 1


def test_token_ids_that_are_a_symlink_are_replaced_as_a_name_never_through_the_link(tiny_capstone, tmp_path):
    run = capstone.run()
    victim = tmp_path / "notes.txt"
    victim.write_text("a file of the user's\n")
    (run.directory / "ids.npz").unlink()
    (run.directory / "ids.npz").symlink_to(victim)
    with pytest.warns(UserWarning, match="ids.npz does not match"):
        again = capstone.run()
    np.testing.assert_array_equal(again.held_out_ids, run.held_out_ids)
    assert victim.read_text() == "a file of the user's\n"
    assert not (run.directory / "ids.npz").is_symlink()


def test_a_planted_measures_json_does_not_come_back(tiny_capstone):
    run = capstone.run()
    (run.directory / "measures.json").write_text(json.dumps({"model": 0.42}) + "\n")
    with pytest.warns(UserWarning, match="measures.json was not computed from this run's model"):
        measures = capstone.measures(run)
    assert "model" not in measures and measures["validation"]["model"] > 1
    assert capstone.measures(run) == measures            # stored with its digest, read back


def test_measures_code_the_primer_once_and_each_split_as_compressor_bits_per_byte(tiny_capstone, monkeypatch):
    """measures() compresses the training text once for both splits, and each split's coders are
    still compressor_bits_per_byte's, with PPMd's order chosen on validation and used on test."""
    run = capstone.run()
    primer = run.data.train_text.encode("utf-8")
    coded, compress = [], capstone._compress

    def counted(name, data, *args):
        coded.append((name, data))
        return compress(name, data, *args)

    monkeypatch.setattr(capstone, "_compress", counted)
    got = capstone.measures(run)
    assert sorted(name for name, data in coded if data == primer) == sorted(set(capstone.COMPRESSORS) - {"ppmd"})
    for given, head in (("alone", ""), ("primed", run.data.train_text)):
        valid = capstone.compressor_bits_per_byte(run.data.validation_text, head)
        assert got["validation"][given] == valid
        assert got["test"][given] == capstone.compressor_bits_per_byte(run.data.test_text, head, [valid["ppmd order"]])


def test_measures_are_tied_to_the_trained_weights_and_to_their_own_digest(tiny_capstone):
    run = capstone.run()
    capstone.store_result(run, "measures.json", {"model": 2.5, "unigram": 4.0})
    assert capstone.load_result(run, "measures.json") == {"model": 2.5, "unigram": 4.0}
    path = run.directory / "measures.json"
    record = json.loads(path.read_text())
    record["measures"]["model"] = 0.42                       # an edited number
    path.write_text(json.dumps(record))
    with pytest.warns(UserWarning):
        assert capstone.load_result(run, "measures.json") is None
    capstone.store_result(run, "measures.json", {"model": 2.5})
    done = run.directory / "done.json"                      # another model trained into the folder
    record = json.loads(done.read_text())
    record["files"]["model.safetensors"] = hashlib.sha256(b"other weights").hexdigest()
    done.write_text(json.dumps(record))
    with pytest.warns(UserWarning):
        assert capstone.load_result(run, "measures.json") is None


# -- 10. yes/no variables ---------------------------------------------------------------------------

@pytest.mark.parametrize("value, expected", [("1", True), ("true", True), ("Yes", True), (" ON ", True),
                                             ("0", False), ("false", False), ("No", False), ("OFF", False),
                                             ("False", False), ("", False)])
def test_yes_and_no_are_read_strictly(monkeypatch, value, expected):
    monkeypatch.setenv(fingerprint.RERUN, value)
    assert fingerprint.rerun_forced() is expected


@pytest.mark.parametrize("value", ["2", "nope", "y", "enable", "-1", "tru"])
def test_a_value_that_is_neither_yes_nor_no_is_an_error_naming_the_variable(monkeypatch, value):
    monkeypatch.setenv(fingerprint.RERUN, value)
    with pytest.raises(ValueError, match=f"NETCL_LITE_RERUN={value!r} is not a yes/no value"):
        fingerprint.rerun_forced()
    with pytest.raises(TypeError, match="name must be"):
        files.env_flag("")


@pytest.mark.parametrize("value, wiped", [("false", False), ("no", False), ("off", False), ("False", False),
                                          ("0", False), ("1", True), ("yes", True)])
def test_rerun_false_keeps_the_stored_training_runs(tmp_path, monkeypatch, value, wiped):
    monkeypatch.setenv("NETCL_LITE_CACHE", str(tmp_path))
    monkeypatch.setenv(fingerprint.RERUN, value)
    stored = tmp_path / "capstone" / "somekey"
    stored.mkdir(parents=True)
    (stored / "done.json").write_text("{}")
    monkeypatch.setattr(capstone_run.subprocess, "run", lambda *a, **k: subprocess.CompletedProcess(a, 0))
    capstone_run.train()
    assert stored.exists() is not wiped


def test_a_mistyped_rerun_fails_the_build_before_deleting_anything(tmp_path, monkeypatch):
    monkeypatch.setenv("NETCL_LITE_CACHE", str(tmp_path))
    monkeypatch.setenv(fingerprint.RERUN, "flase")
    (tmp_path / "capstone" / "somekey").mkdir(parents=True)
    with pytest.raises(ValueError, match="NETCL_LITE_RERUN"):
        capstone_run.train()
    assert (tmp_path / "capstone" / "somekey").exists()


# -- 6./7. snippet includes and build-output markers -----------------------------------------------

@pytest.fixture
def docs_tree(tmp_path):
    """A project with snippets/, netcl_lite/ and a secret outside it, linked in from snippets/."""
    root = tmp_path / "project"
    (root / "snippets" / "page").mkdir(parents=True)
    (root / "netcl_lite").mkdir()
    (root / "snippets" / "page" / "ok.py").write_text("print('ok')\n")
    (root / "netcl_lite" / "lib.py").write_text("# --8<-- [start:part]\nx = 1\n# --8<-- [end:part]\n")
    secret = tmp_path / "outside" / "secret.txt"
    secret.parent.mkdir()
    secret.write_text("root:x:0:0:the secret\n")
    (root / "snippets" / "page" / "leak.py").symlink_to(secret)
    (root / "snippets" / "page" / "nested.py").write_text('--8<-- "snippets/page/leak.py"\n')
    (root / "elsewhere").mkdir()
    (root / "elsewhere" / "x.py").write_text("print('outside snippets')\n")
    return root


def _render(root: Path, text: str, page: str = "docs/page.md") -> str:
    import markdown

    extension = includes.contained_snippets(includes.CurrentPage(page), base_path=[str(root)], check_paths=True,
                                            dedent_subsections=True)
    return markdown.markdown(text, extensions=["pymdownx.superfences", extension])


def test_includes_inside_the_project_render(docs_tree):
    html = _render(docs_tree, '```python\n--8<-- "snippets/page/ok.py"\n```\n\n'
                              '```python\n--8<-- "netcl_lite/lib.py:part"\n```\n')
    assert "ok" in html and "x" in html


@pytest.mark.parametrize("include, error, says", [
    ("snippets/page/leak.py", "PathError", "outside snippets/"),                 # a symlink out
    ("snippets/page/nested.py", "PathError", "outside snippets/"),               # an include inside a snippet
    ("snippets/../elsewhere/x.py", "PathError", "must not contain '..'"),
    ("elsewhere/x.py", "PathError", "outside snippets/"),
    ("/etc/passwd", "PathError", "must be relative"),
    ("snippets/page/missing.py", "FileNotFoundError", "no such file"),
])
def test_an_include_that_leaves_the_project_or_is_missing_fails_naming_page_and_include(docs_tree, include, error,
                                                                                        says):
    with pytest.raises(Exception) as caught:
        _render(docs_tree, f'```python\n--8<-- "{include}"\n```\n', page="docs/chapter-x.md")
    assert type(caught.value).__name__ == error
    message = str(caught.value)
    # the page's line of the include, and for a nested include the line of the file holding it
    assert re.match(r'docs/chapter-x\.md:2:( in snippets/page/\w+\.py:\d+:)? --8<-- "', message), message
    assert says in message, message
    assert "the secret" not in message


def test_the_build_uses_the_contained_extension_with_the_sites_options():
    from mkdocs.config import load_config

    config = load_config(str(ROOT / "mkdocs.yml"))
    options = dict(config.mdx_configs["pymdownx.snippets"])
    includes.contain(config, includes.CurrentPage())
    assert "pymdownx.snippets" not in config.markdown_extensions
    (ours,) = [e for e in config.markdown_extensions if type(e).__name__ == "ContainedSnippets"]
    assert {k: ours.getConfig(k) for k in options} == options


@pytest.mark.parametrize("marker, error, says", [
    ("snippets/../elsewhere/x.py", "PathError", "must not contain '..'"),
    ("snippets/page/leak.py", "PathError", "outside snippets/"),
    ("snippets/page/missing.py", "FileNotFoundError", "no such file"),
    ("/tmp/x.py", "PathError", "must be relative"),
    ("snippets/page/ok.txt", "PathError", "runs a snippet"),
])
def test_a_build_output_marker_outside_snippets_or_missing_fails_naming_page_and_marker(docs_tree, marker, error,
                                                                                        says):
    with pytest.raises(Exception) as caught:
        includes.marker_path(marker, "docs/chapter-x.md", root=docs_tree)
    assert type(caught.value).__name__ == error
    assert str(caught.value).startswith(f"docs/chapter-x.md: <!-- build-output: {marker} -->")
    assert says in str(caught.value)
    assert includes.marker_path("snippets/page/ok.py", "docs/p.md", root=docs_tree) == docs_tree / "snippets/page/ok.py"


def test_a_dotdot_marker_on_a_page_runs_nothing(monkeypatch):
    outputs = build_output.BuildOutputs()
    ran = []
    monkeypatch.setattr(outputs, "cached_output", lambda path: ran.append(path) or "")
    with pytest.raises(includes.PathError, match=r"^docs/chapter-x.md:5: <!-- build-output: snippets/\.\./\.\./x\.py -->"):
        outputs.render('text\n```python\n--8<-- "snippets/../../x.py"\n```\n<!-- build-output: snippets/../../x.py -->\n',
                       "docs/chapter-x.md")
    assert ran == []


# -- 8. saves: whole or not at all ---------------------------------------------------------------

def _tokenizer(extra: str = "") -> BPETokenizer:
    tok = BPETokenizer()
    tok.train_from_iterator(["hello hello world " * 20 + extra], 262, progress=False)
    return tok


@pytest.mark.parametrize("save, serialiser", [("save", "dumps"), ("save_tiktoken_file", "tiktoken_file_bytes"),
                                              ("save_tokenizer_json", "tokenizer_json_text")])
def test_a_save_that_fails_while_serialising_leaves_the_previous_file(tmp_path, monkeypatch, save, serialiser):
    path = tmp_path / "tok.file"
    getattr(_tokenizer(), save)(path)
    before = path.read_bytes()
    assert before

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt("Ctrl-C while serialising")

    monkeypatch.setattr(bpe_module, serialiser, interrupted)
    with pytest.raises(KeyboardInterrupt):
        getattr(_tokenizer("again"), save)(path)
    assert path.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["tok.file"]


@pytest.mark.parametrize("save", ["save", "save_tiktoken_file", "save_tokenizer_json"])
def test_a_save_that_fails_on_a_full_disk_leaves_the_previous_file(tmp_path, monkeypatch, save):
    path = tmp_path / "tok.file"
    getattr(_tokenizer(), save)(path)
    before = path.read_bytes()

    def full(fd):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "fsync", full)
    with pytest.raises(OSError, match="No space left"):
        getattr(_tokenizer("again"), save)(path)
    assert path.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["tok.file"], "the temporary file is removed"


def test_generated_figures_and_notebooks_are_written_whole(tmp_path, monkeypatch):
    path = tmp_path / "figures" / "page" / "x.svg"
    generated.write_if_changed(path, b"<svg>first</svg>")
    monkeypatch.setattr(os, "fsync", lambda fd: (_ for _ in ()).throw(OSError(28, "No space left on device")))
    with pytest.raises(OSError):
        generated.write_if_changed(path, b"<svg>second, cut short</svg>")
    assert path.read_bytes() == b"<svg>first</svg>"


def test_a_checkpoint_save_that_fails_leaves_the_previous_checkpoint(tmp_path, monkeypatch):
    model = DecoderLM(_TINY, seed=0)
    model.save_pretrained(tmp_path)
    before = {p.name: p.read_bytes() for p in tmp_path.iterdir()}
    real_fsync = os.fsync

    def full_on_weights(fd):                 # config.json is written; the weights hit a full disk
        if "model.safetensors" in os.readlink(f"/proc/self/fd/{fd}"):
            raise OSError(28, "No space left on device")
        real_fsync(fd)

    monkeypatch.setattr(os, "fsync", full_on_weights)
    with pytest.raises(OSError, match="No space left"):
        DecoderLM(_TINY, seed=1).save_pretrained(tmp_path)
    assert {p.name: p.read_bytes() for p in tmp_path.iterdir()} == before


#: names of NAME_MAX (255) bytes, and one of 254 bytes in two-byte characters
_LONGEST_NAMES = ["n" * 251 + ".bin", "\u00e9" * 127]


@pytest.mark.parametrize("name", _LONGEST_NAMES, ids=["ascii", "two-byte characters"])
def test_every_temporary_name_stays_under_name_max_beside_the_longest_name(tmp_path, name):
    """A temporary file sits beside its target under a name built from the target's: for a target
    whose own name is as long as the system allows, that name stays a valid one (it failed with
    ENAMETOOLONG), and it stays hidden, unique and recognisable by its target's first characters."""
    names = {files.temporary_name(tmp_path / name).name for _ in range(50)}
    assert len(names) == 50
    for tmp in names:
        assert len(os.fsencode(tmp)) <= 255 and tmp.startswith("." + name[:16]) and tmp.endswith(".tmp"), tmp
    files.atomic_write(tmp_path / name, b"whole")
    assert (tmp_path / name).read_bytes() == b"whole"
    assert [p.name for p in tmp_path.iterdir()] == [name], "no temporary file is left"


@pytest.mark.parametrize("name", _LONGEST_NAMES, ids=["ascii", "two-byte characters"])
def test_a_checkpoint_saves_into_a_folder_whose_name_is_the_longest_allowed(tmp_path, name):
    """Training saves its checkpoint into a temporary folder beside ``out_dir`` and moves the previous
    one aside under a second temporary name: both stay valid names when ``out_dir``'s is at NAME_MAX."""
    from netcl_lite.optim import AdamW
    from netcl_lite.train import save_checkpoint

    model = DecoderLM(_TINY, seed=0)
    for step in (1, 2):                      # the second save moves the first aside
        save_checkpoint(tmp_path / name, model, AdamW(model.parameters()), {"step": step, "loader": {}, "log": []})
    assert [p.name for p in tmp_path.iterdir()] == [name], "no temporary folder is left"
    assert json.loads((tmp_path / name / "trainer_state.json").read_text(encoding="utf-8"))["step"] == 2


def test_a_file_written_atomically_refuses_a_folder_and_non_bytes(tmp_path):
    with pytest.raises(ValueError, match="is a directory, not a regular file"):
        files.atomic_write(tmp_path, b"x")
    with pytest.raises(TypeError, match="data must be bytes"):
        files.atomic_write(tmp_path / "a", "text")


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="named pipes are POSIX's")
def test_a_cache_entry_is_replaced_as_a_name_whatever_is_there(tmp_path):
    """replace_entry (a cache's own files) replaces the name: a symlink there, not the file it names; a
    named pipe without waiting on it; an empty folder. A folder holding files is refused, naming it."""
    victim = tmp_path / "notes.txt"
    victim.write_text("a file of the user's\n")
    (tmp_path / "link").symlink_to(victim)
    os.mkfifo(tmp_path / "pipe")
    (tmp_path / "empty").mkdir()
    (tmp_path / "private").write_bytes(b"old")
    os.chmod(tmp_path / "private", 0o600)
    for name in ("link", "pipe", "empty", "private", "new"):
        files.replace_entry(tmp_path / name, b"entry")
        assert not (tmp_path / name).is_symlink() and (tmp_path / name).read_bytes() == b"entry", name
    assert victim.read_text() == "a file of the user's\n"
    assert (tmp_path / "private").stat().st_mode & 0o777 == 0o600
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "kept").write_text("kept")
    with pytest.raises(OSError) as caught:
        files.replace_entry(tmp_path / "full", b"entry")
    assert caught.value.filename == str(tmp_path / "full")
    assert (tmp_path / "full" / "kept").read_text() == "kept"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["empty", "full", "link", "new", "notes.txt", "pipe",
                                                        "private"], "no temporary file is left"


# -- 9. loads: regular files only, of a sane size, without blocking ------------------------------

_LOADERS = {
    "load": lambda p: BPETokenizer.load(p),
    "from_tiktoken_file": lambda p: BPETokenizer.from_tiktoken_file(p, None),
    "from_tokenizer_json": lambda p: BPETokenizer.from_tokenizer_json(p),
}


@pytest.mark.parametrize("loader", sorted(_LOADERS))
def test_a_tokenizer_loader_refuses_a_device_quickly(loader):
    with pytest.raises(ValueError, match="/dev/zero is a character device, not a regular file"):
        _LOADERS[loader]("/dev/zero")    # refused from its stat, before a read that would never end


@pytest.mark.parametrize("loader", sorted(_LOADERS))
def test_a_tokenizer_loader_refuses_a_named_pipe_without_blocking(tmp_path, loader):
    fifo = tmp_path / "tok.fifo"
    os.mkfifo(fifo)
    call = {"load": "T.load(p)", "from_tiktoken_file": "T.from_tiktoken_file(p, None)",
            "from_tokenizer_json": "T.from_tokenizer_json(p)"}[loader]
    code = (f"from netcl_lite.text.bpe import BPETokenizer as T\np = {str(fifo)!r}\n"
            f"try:\n    {call}\nexcept ValueError as e:\n    print(e)\n")
    try:
        proc = _python(code, timeout=60)                 # a loader that opens the pipe blocks forever
    except subprocess.TimeoutExpired:
        pytest.fail(f"{loader} blocked on a named pipe")
    assert "is a FIFO, not a regular file" in proc.stdout, proc.stderr[-2000:]


@pytest.mark.parametrize("loader", sorted(_LOADERS))
def test_a_tokenizer_loader_refuses_an_oversized_file_before_reading_it(tmp_path, loader):
    huge = tmp_path / "huge.tok"
    with open(huge, "wb") as f:
        f.truncate(model_file.MAX_FILE_BYTES + 1)         # sparse: no disk used
    with pytest.raises(ValueError, match=f"is {model_file.MAX_FILE_BYTES + 1:,} bytes"):
        _LOADERS[loader](huge)


def test_a_symlink_to_a_device_as_weights_is_named_for_what_it_is(tmp_path):
    DecoderLM(_TINY).save_pretrained(tmp_path)
    (tmp_path / "model.safetensors").unlink()
    (tmp_path / "model.safetensors").symlink_to("/dev/zero")
    with pytest.raises(ValueError, match=r"is a symlink to a character device \(/dev/zero\), not a regular file"):
        DecoderLM.from_pretrained(tmp_path)
    (tmp_path / "model.safetensors").unlink()
    (tmp_path / "model.safetensors").symlink_to(tmp_path / "gone.safetensors")
    with pytest.raises(FileNotFoundError, match="no such file .a symlink to the missing"):
        DecoderLM.from_pretrained(tmp_path)


# -- minor ----------------------------------------------------------------------------------------

def test_a_model_with_a_million_layers_is_refused_before_anything_is_allocated():
    config = LMConfig(vocab_size=24, hidden_size=16, intermediate_size=24, num_hidden_layers=10**6,
                      num_attention_heads=2, max_position_embeddings=16)
    tracemalloc.start()
    try:
        with pytest.raises(ValueError, match="num_hidden_layers=1000000 makes 9000002 weight tensors"):
            DecoderLM(config)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 16 << 20, f"{peak >> 20} MiB allocated before the refusal"
    wide = LMConfig(vocab_size=10**7, hidden_size=4096, num_hidden_layers=1, num_attention_heads=2)
    with pytest.raises(ValueError, match="GiB"):
        DecoderLM(wide)


def test_the_pending_limit_takes_numpy_integers_but_not_bools():
    from netcl_lite.core.stream import set_pending_limit

    previous = set_pending_limit(np.int64(5))
    try:
        assert set_pending_limit(np.uint32(7)) == 5
        for bad in (True, np.bool_(True), 2.0, -1, np.int64(-1)):
            with pytest.raises(ValueError, match="nbytes must be a non-negative int"):
                set_pending_limit(bad)
    finally:
        set_pending_limit(previous)


def test_every_page_of_the_site_renders_with_the_contained_extension():
    """The site's own includes all lie under snippets/, netcl_lite/ and kernels/: the pages render with
    the extension the build puts in place (the strict build runs them all again)."""
    import markdown
    from mkdocs.config import load_config

    config = load_config(str(ROOT / "mkdocs.yml"))
    page_name = includes.CurrentPage()
    includes.contain(config, page_name)
    pages = sorted((ROOT / "docs").rglob("*.md"))
    assert len(pages) >= 8
    cwd = os.getcwd()
    os.chdir(ROOT)                                  # the site's base path "." is the repository root
    try:
        for page in pages:
            page_name.name = str(page.relative_to(ROOT))
            md = markdown.Markdown(extensions=config.markdown_extensions, extension_configs=config.mdx_configs)
            text = page.read_text(encoding="utf-8")
            html = md.convert(text)
            assert text.count('--8<-- "') == 0 or "&quot;snippets/" not in html, page
    finally:
        os.chdir(cwd)


def test_a_save_through_a_symlink_replaces_the_file_and_keeps_the_link(tmp_path):
    real = tmp_path / "real.json"
    real.write_text("old")
    link = tmp_path / "link.json"
    link.symlink_to(real)
    _tokenizer().save(link)
    assert link.is_symlink() and BPETokenizer.load(real).n_vocab == 262


def test_resuming_from_a_trainer_state_that_is_a_named_pipe_fails_without_blocking(tmp_path):
    from netcl_lite.optim import AdamW
    from netcl_lite.train import TRAINER_STATE, load_checkpoint, parameter_groups

    model = DecoderLM(_TINY)
    model.save_pretrained(tmp_path)
    os.mkfifo(tmp_path / TRAINER_STATE)
    with pytest.raises(ValueError, match="is a FIFO"):
        load_checkpoint(tmp_path, model, AdamW(parameter_groups(model, 0.1), lr=1e-3))
