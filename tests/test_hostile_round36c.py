"""Round 36c: hostile inputs to the compressor's parts, each test failing on the code it was written against.

1. match.add_in_order / last_wins: a negative int8/int16 index into a table with more rows than the dtype holds
   is an OverflowError (normalizing computes index + rows in the index's dtype), not NumPy's row.
2. capstone._lock_file: a socket at the lock's name is a bare OSError (ENXIO), which the command line blames
   on the cache folder.
3. LMConfig accepts NumPy scalars; model_fingerprint then differs from the same model's with Python numbers,
   and save_pretrained fails (not JSON serializable) leaving an empty folder.
4. Adapter.update with nothing observed since the last: an error about ignore_index.
5. _Predictor.advance failing part way (the adapter's refill) is not marked: the next step goes on silently.
6. A file at <cache>/corpus is blamed on the cache folder, with the wrong advice.
7. A child forked while another thread holds the device lock hangs in compress instead of being refused.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from cli_model import SMALL, TEXT, environment, tiny_model
from netcl_lite.match import add_in_order, last_wins


def test_add_in_order_takes_a_negative_int8_index_into_a_table_of_more_than_127_rows_as_numpy_does():
    # np.add.at takes -1 as the last row whatever the index's integer type; add_in_order's
    # normalization computed index + rows in int8 and raised OverflowError (rows = 200)
    table = np.zeros(200)
    expected = np.zeros(200)
    index = np.array([-1, -1, 3], np.int8)
    values = np.array([1.0, 2.0, 4.0])
    np.add.at(expected, index, values)
    add_in_order(table, index, values)
    assert np.array_equal(table, expected)


def test_last_wins_takes_a_negative_int16_slot_into_a_table_of_more_than_32767_rows_as_numpy_does():
    table = np.zeros(40_000)
    last_wins(np.array([-1, 5, -1], np.int16), np.array([1.0, 2.0, 3.0]), table)
    assert table[-1] == 3.0 and table[5] == 2.0


# --- capstone._lock_file: a socket at the lock's name ------------------------------------------------




_KEY = textwrap.dedent("""
    from netcl_lite import capstone
    from netcl_lite.core.device import manager
    d = capstone.data()
    print(capstone.run_key(manager.default().queue, d.train_text + "\\0" + d.held_out_text))
""")


def _bind_socket(path: Path) -> socket.socket:
    """A Unix socket bound at ``path`` (bound by its short relative name: a socket's path is limited)."""
    sock = socket.socket(socket.AF_UNIX)
    here = os.getcwd()
    os.chdir(path.parent)
    try:
        sock.bind(path.name)
    finally:
        os.chdir(here)
    return sock


@pytest.mark.skipif(not hasattr(socket, "AF_UNIX"), reason="Unix sockets")
def test_a_socket_at_the_lock_name_is_refused_with_a_value_error_naming_it(tmp_path):
    """``capstone._lock_file`` promises that anything but a regular file at the lock's name is a
    ValueError (CacheEntryError) naming it; a socket gives a bare ``OSError: [Errno 6] No such device
    or address`` (ENXIO from open), which is not a ValueError."""
    from netcl_lite import capstone

    lock = tmp_path / "k.lock"
    sock = _bind_socket(lock)
    try:
        with pytest.raises(ValueError, match="k.lock"):
            capstone._lock_file(lock)
    finally:
        sock.close()


@pytest.mark.skipif(not hasattr(socket, "AF_UNIX"), reason="Unix sockets")
def test_the_command_line_names_a_socket_at_the_lock_name_not_the_cache_folder(tmp_path):
    """Without ``--model``, a socket where the default model's lock file goes is reported as
    "its cache folder ... cannot be made or written (No such device or address); set NETCL_LITE_CACHE
    to a folder you can write": the wrong thing blamed, with the wrong advice; the lock's path is not
    named (a folder there is named since round 35d)."""
    cache = tmp_path / "cache"
    env = environment(NETCL_LITE_CACHE=str(cache))
    key = subprocess.run([sys.executable, "-c", _KEY], capture_output=True, text=True, timeout=300, env=env)
    assert key.returncode == 0, key.stderr
    (cache / "capstone").mkdir(parents=True, exist_ok=True)
    lock = cache / "capstone" / f"{key.stdout.strip()}.lock"
    sock = _bind_socket(lock)
    src = tmp_path / "in.txt"
    src.write_text(TEXT, encoding="utf-8")
    try:
        run = subprocess.run([sys.executable, "-m", "netcl_lite.compression", "compress", str(src),
                              str(tmp_path / "out")], cwd=tmp_path, stdin=subprocess.DEVNULL,
                             capture_output=True, text=True, timeout=120, env=env)
    except subprocess.TimeoutExpired:
        pytest.fail("compress ran on past 120 s (training?) with a socket at its lock's name")
    finally:
        sock.close()
    assert run.returncode == 1 and "Traceback" not in run.stderr, run.stderr[-2000:]
    last = run.stderr.strip().splitlines()[-1]
    assert lock.name in last, f"the message does not name the lock ({lock}): {last}"


# --- model_fingerprint / LMConfig: config values of NumPy's scalar types ------------------------------



def test_a_model_whose_config_holds_numpy_integers_fingerprints_as_the_same_model_with_python_ints(queue):
    """LMConfig accepts ``hidden_size=np.int64(16)`` (or ``max_position_embeddings=np.int32(16)``,
    ``rope_theta=np.float32(10000)``), and the model computes exactly what the one with Python numbers
    computes (same weights, same probabilities); but ``model_fingerprint`` hashes ``json.dumps(config,
    default=str)``, where NumPy scalars become strings ("16"), so ``decompress`` refuses a blob that
    model coded: "blob was compressed with another model (its config or its weights differ)"."""
    import numpy as np

    from netcl_lite import compression
    from netcl_lite.nn import DecoderLM, LMConfig

    plain, tok, primer = tiny_model(queue)
    data = b"Each stream is coded from the model's predictions; a header says how to read it back.\n" * 3
    blob = compression.compress(data, plain, tok, primer=primer)
    for field, value in [("hidden_size", np.int64(16)), ("max_position_embeddings", np.int32(16)),
                         ("rope_theta", np.float32(10000.0))]:
        config = dict(vocab_size=300, **SMALL)
        config[field] = value
        model = DecoderLM(LMConfig(**config), queue=queue, seed=1)
        assert compression.model_fingerprint(model) == compression.model_fingerprint(plain), field
        assert compression.decompress(blob, model, tok, primer=primer) == data, field


def test_save_pretrained_of_a_config_with_numpy_integers_writes_the_folder_or_refuses_naming_the_field(queue, tmp_path):
    """``LMConfig(hidden_size=np.int64(16))`` is accepted, but ``save_pretrained`` then fails with
    ``TypeError: Object of type int64 is not JSON serializable`` (naming no field) and leaves the empty
    model folder behind. It should write config.json with the number (or LMConfig should refuse the
    value, naming the field, before any model is made)."""
    import numpy as np

    from netcl_lite.nn import DecoderLM, LMConfig

    config = dict(vocab_size=300, **SMALL)
    config["hidden_size"] = np.int64(16)
    try:
        model = DecoderLM(LMConfig(**config), queue=queue, seed=1)
    except (TypeError, ValueError) as exc:
        assert "hidden_size" in str(exc)
        return
    folder = tmp_path / "model"
    model.save_pretrained(folder)
    loaded = DecoderLM.from_pretrained(folder, queue=queue)
    assert loaded.config.hidden_size == 16


# --- Adapter.update again with nothing new observed --------------------------------------------------

def test_an_adapter_update_with_no_token_observed_since_the_last_says_so_not_ignore_index(queue):
    """With ``targets="chunk"`` (the default), ``Adapter.update()`` (public) called again before any new
    token was observed builds a batch whose every target is IGNORE and fails inside the loss with
    "ValueError: targets: every entry equals ignore_index=-100; the mean over no tokens is undefined":
    a parameter the caller never gave, an internal constant. It should say that no token was observed
    since the last update (observe first), as a first update before any token does, or do nothing."""
    import numpy as np

    from netcl_lite.adaptation import AdaptConfig, Adapter

    model, _, primer = tiny_model(queue)
    adapter = Adapter(model, 2, 5, AdaptConfig(chunk=4, optimizer="sgd"), train_ids=primer)
    for t in range(4):
        adapter.observe(np.array([t + 7, t + 9]))
    assert adapter.updates == 1
    try:
        adapter.update()
    except ValueError as exc:
        assert "ignore_index" not in str(exc) and "observe" in str(exc), str(exc)


# --- _Predictor.advance failing part way ---------------------------------------------------------------

def test_a_predictor_whose_advance_failed_part_way_refuses_the_next_step(queue):
    """``probabilities`` marks a step that failed part way, and every later call is refused (the model was
    fed the step's input). ``advance`` has no such mark: when the adapter's refill fails part way (here the
    forward pass that refills the emptied cache raises, as an interrupt or a non-finite model would), the
    step is already counted, the mixer updated and the cache emptied; the next ``probabilities()`` then
    answers from an empty cache, silently unlike the other side's. It should be refused as after a failed
    ``probabilities``."""
    import numpy as np

    from netcl_lite import compression
    from netcl_lite.adaptation import AdaptConfig

    model, tok, primer = tiny_model(queue)
    lengths = np.array([12, 12])
    pred = compression.make_predictor(model, tok, lengths, compression.kept_positions(model), False, primer,
                                      adapt=AdaptConfig(chunk=2, optimizer="sgd", refill=True))
    inner = pred.adapter.model

    def broken(*args, **kwargs):
        raise RuntimeError("interrupted while refilling")

    p = pred.probabilities()
    pred.advance(np.argmax(p, axis=1))
    p = pred.probabilities()
    inner.hidden = broken                      # the refill after this step's update fails part way
    with pytest.raises(RuntimeError, match="interrupted"):
        pred.advance(np.argmax(p, axis=1))
    del inner.hidden
    with pytest.raises(ValueError):
        pred.probabilities()


# --- a file where the cache keeps its corpus folder ----------------------------------------------------

def test_a_file_where_the_cache_keeps_its_corpus_folder_is_named_not_the_cache_folder(tmp_path, queue):
    """With ``--model``, a regular file at ``<cache>/corpus`` (where the stored corpus's folder goes) is
    reported as "the primer's corpus: cache folder <cache> cannot be made or written (File exists); set
    NETCL_LITE_CACHE to a folder you can write": the cache folder, which is writable, is blamed and the
    advice is wrong; the entry at fault (``<cache>/corpus``, a file) is not named. Round 35d named a
    folder where a file belongs; this is the converse."""
    from cli_model import write_model_folder

    folder = write_model_folder(queue, tmp_path / "model")
    cache = tmp_path / "cache"
    cache.mkdir()
    (cache / "corpus").write_text("x")
    src = tmp_path / "in.txt"
    src.write_text(TEXT, encoding="utf-8")
    run = subprocess.run([sys.executable, "-m", "netcl_lite.compression", "compress", str(src),
                          str(tmp_path / "out"), "--model", str(folder)], cwd=tmp_path, stdin=subprocess.DEVNULL,
                         capture_output=True, text=True, timeout=300, env=environment(NETCL_LITE_CACHE=str(cache)))
    if run.returncode == 0:                    # a cache that works around it is fine too
        return
    assert run.returncode == 1 and "Traceback" not in run.stderr, run.stderr[-2000:]
    last = run.stderr.strip().splitlines()[-1]
    assert str(cache / "corpus") in last, f"the message does not name {cache / 'corpus'}: {last}"
    assert "set NETCL_LITE_CACHE to a folder you can write" not in last, last


# --- fork while another thread holds the device lock ---------------------------------------------------

@pytest.mark.skipif(not hasattr(os, "fork"), reason="os.fork is POSIX's")
def test_a_child_forked_while_another_thread_codes_is_refused_not_hung(queue):
    """A child forked after the device was made is refused with forking's RuntimeError at its first device
    use. But when another thread of the parent holds ``compression.device_lock(model)`` at the fork (it is
    coding: the lock is held for every step), the child's copy of that lock is held for ever, and
    ``compress`` in the child blocks on it (``model_fingerprint`` takes it before any device use runs the
    fork check): a hang, not the refusal. The child should get the RuntimeError at once."""
    import signal
    import threading
    import warnings

    from netcl_lite import compression

    model, tok, primer = tiny_model(queue)
    lock = compression.device_lock(model)
    held, release = threading.Event(), threading.Event()

    def hold():
        with lock:                              # another thread's coding step
            held.set()
            release.wait()

    thread = threading.Thread(target=hold)
    thread.start()
    held.wait()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)     # fork with threads running
            pid = os.fork()
        if pid == 0:                                # the child: exit 0 on the refusal, 3 otherwise
            code = 3
            try:
                signal.alarm(30)
                compression.compress(TEXT.encode()[:300], model, tok, primer=primer)
            except RuntimeError as exc:
                code = 0 if "fork" in str(exc) else 3
            except BaseException:
                code = 3
            finally:
                os._exit(code)
    finally:
        release.set()
        thread.join()
    _, status = os.waitpid(pid, 0)
    assert not os.WIFSIGNALED(status), (f"the forked child hung on the device lock another thread held at the "
                                        f"fork (killed by signal {os.WTERMSIG(status)} after 30 s)")
    assert os.WEXITSTATUS(status) == 0, "the forked child did not get forking's RuntimeError"
