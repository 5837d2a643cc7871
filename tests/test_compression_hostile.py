"""netcl_lite.compression used as a hostile user would: threads sharing one model, blobs whose
header fields lie, inputs past the stated limits, odd argument types, and the command line
fed devices, pipes, ``-`` and missing folders. Each case gives the original bytes back or a
clear ``ValueError``/``TypeError`` (a CLI message and exit status), quickly and with bounded
memory. A small untrained model serves throughout: its predictions are poor, which none of
these cases cares about."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import threading
import tracemalloc
import zlib

import numpy as np
import pytest

from netcl_lite import adaptation
from netcl_lite import compression as cz
from netcl_lite.nn import DecoderLM, LMConfig
from netcl_lite.text import BPETokenizer

from cli_model import compress_patched

TEXT = ("Each stream is coded from the model's predictions; a header says how to read it back.\n"
        "Counts of what followed each context sharpen the guesses as the text goes on.\r\n") * 6


#: a one-layer model over a 16-token window, small enough for thousands of calls
SMALL = dict(hidden_size=16, intermediate_size=32, num_hidden_layers=1, num_attention_heads=2,
             num_key_value_heads=1, max_position_embeddings=16)


def _small(queue, vocab: int, tokens: int, seed: int) -> tuple[DecoderLM, BPETokenizer]:
    """A model of ``vocab`` ids (SMALL) and a BPE of ``tokens`` tokens trained on TEXT."""
    tok = BPETokenizer()
    tok.train_from_iterator([TEXT], tokens, progress=False)
    return DecoderLM(LMConfig(vocab_size=vocab, **SMALL), queue=queue, seed=seed), tok


@pytest.fixture(scope="module")
def tiny(queue):
    """(model, tokenizer, primer ids): a 300-token BPE and a model of as many ids."""
    model, tok = _small(queue, 300, 300, seed=1)
    return model, tok, np.asarray(tok.encode_ordinary(TEXT[:300]), np.int64)


# -- threads -----------------------------------------------------------------------------------------------

def _in_threads(work, jobs) -> dict:
    """{key: work(key) or the exception it raised}, each job (a list of keys) in a thread of its
    own, all started at once."""
    results: dict = {}
    start = threading.Barrier(len(jobs))

    def run(keys):
        start.wait()
        for key in keys:
            try:
                results[key] = work(key)
            except Exception as exc:         # kept, and reported by the caller
                results[key] = exc

    threads = [threading.Thread(target=run, args=(keys,)) for keys in jobs]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return results


def _brief(result) -> str:
    return repr(result) if isinstance(result, Exception) else f"{len(result)} bytes"


@pytest.mark.slow
def test_threads_sharing_one_model_write_the_blobs_one_thread_writes_and_read_them_back(tiny):
    """4 threads x 2 rounds (model alone, then mixed) compress at once with one model; every blob
    is the one a single thread writes, and 4 threads decompressing at once get every input back."""
    model, tok, primer = tiny
    inputs = [(TEXT[i * 7:] + TEXT[:i * 7]).encode() + bytes([200 + i]) * 9 for i in range(4)]
    jobs = [[(i, False), (i, True)] for i in range(4)]
    alone = {key: cz.compress(inputs[key[0]], model, tok, mix=key[1], primer=primer) for keys in jobs for key in keys}
    assert {blob[5] for blob in alone.values()} == {cz.MODEL, cz.MIXED}
    together = _in_threads(lambda key: cz.compress(inputs[key[0]], model, tok, mix=key[1], primer=primer), jobs)
    wrong = sorted(k for k in alone if together[k] != alone[k])
    assert not wrong, f"threads wrote other blobs for (input, mix) {wrong}: {[_brief(together[k]) for k in wrong]}"
    back = _in_threads(lambda key: cz.decompress(alone[key], model, tok, primer=primer), jobs)
    lost = sorted(k for k in alone if back[k] != inputs[k[0]])
    assert not lost, f"threads decoded other bytes for (input, mix) {lost}: {[_brief(back[k]) for k in lost]}"


# -- headers that lie ---------------------------------------------------------------------------------------

def _fields(blob: bytes) -> dict:
    """The header's fields (:func:`netcl_lite.compression.read_header`)."""
    return cz.read_header(blob)


def _forge(blob: bytes, payload: bytes | None = None, **changes) -> bytes:
    """``blob`` with header fields changed and, if given, another payload; the CRC-32 is
    recomputed, so that the decoder meets the fields themselves."""
    fields = cz.read_header(blob)
    body = blob[fields["end"]:] if payload is None else payload
    fields.update(changes)
    head = fields["magic"] + bytes([fields["version"], fields["mode"]]) + cz._varint(fields["length"]) \
        + fields["checksum"]
    if "tokens" in fields:
        head += cz._varint(fields["tokens"]) + fields["fingerprint"] + fields["tags"]
        return head + zlib.crc32(body, zlib.crc32(head)).to_bytes(4, "little") + body
    return head + zlib.crc32(head).to_bytes(4, "little") + body


@pytest.fixture(scope="module")
def blobs(tiny):
    """{name: (original, blob)}: coded with the model alone, mixed, and stored."""
    model, tok, primer = tiny
    out = {"model": TEXT[:200].encode(), "mixed": TEXT[:200].encode(), "stored": b"\xff\xfe stored"}
    out = {name: (data, cz.compress(data, model, tok, mix=name == "mixed", primer=primer))
           for name, data in out.items()}
    assert [blob[5] for _, blob in out.values()] == [cz.MODEL, cz.MIXED, cz.STORED]
    return out


LIES = {   # name: (blob, header changes, payload or None, the words the error must hold)
    "10^8 tokens over an empty payload": ("mixed", dict(tokens=10**8, length=10**8), b"", "original length"),
    "as many tokens as the limit allows, empty payload": (
        "mixed", dict(tokens=cz.MAX_INPUT_BYTES, length=cz.MAX_INPUT_BYTES), b"", "payload length, 0 bytes"),
    "as many tokens as the limit allows, one word": (
        "model", dict(tokens=cz.MAX_INPUT_BYTES, length=cz.MAX_INPUT_BYTES), b"\0" * 4, "payload length, 4 bytes"),
    "2^40 tokens": ("model", dict(tokens=2**40, length=2**40), None, "original length"),
    "2^64 - 1 tokens": ("model", dict(tokens=2**64 - 1), None, "token count"),
    "2^70 tokens": ("model", dict(tokens=2**70), None, "token count runs past 10 bytes"),
    "no tokens": ("model", dict(tokens=0), None, "token count, 0"),
    "more tokens than bytes": ("model", dict(length=5, tokens=6), None, "token count, 6"),
    "a length its tokens cannot spell": ("model", dict(length=cz.MAX_INPUT_BYTES), None, "spell"),
    "a stored length past the limit": ("stored", dict(length=2**64 - 1), None, "original length"),
    "a stored length that lies": ("stored", dict(length=3), None, "stored data holds"),
    "a payload not in words": ("model", {}, b"\0" * 6, "payload length, 6 bytes"),
    "another fingerprint, the same tags": ("mixed", dict(fingerprint=bytes(6)), None, "no part's tag does"),
    "another model's tag": ("mixed", dict(tags=lambda f: bytes([f["tags"][0] ^ 1]) + f["tags"][1:]), None,
                            "another model"),
    "an unknown mode": ("model", dict(mode=7), None, "unknown mode 7"),
    "version 2": ("model", dict(version=2), None, "format version 2"),
}


@pytest.mark.parametrize("lie", list(LIES))
def test_a_header_that_claims_too_much_is_refused_naming_the_field_before_any_step(tiny, blobs, lie, monkeypatch):
    """Each header field is checked before anything is sized by it or looped over: no decoding
    step runs, and the call allocates little (NumPy's and Python's allocations, traced)."""
    model, tok, primer = tiny
    name, changes, payload, words = LIES[lie]
    blob = blobs[name][1]
    bad = _forge(blob, payload, **{k: v(_fields(blob)) if callable(v) else v for k, v in changes.items()})
    steps = []
    probabilities = cz._Predictor.probabilities
    monkeypatch.setattr(cz._Predictor, "probabilities", lambda self: steps.append(1) or probabilities(self))
    tracemalloc.start()
    try:
        with pytest.raises(ValueError, match=re.escape(words)):
            cz.decompress(bad, model, tok, primer=primer)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert not steps and peak < 4 << 20, (len(steps), peak)


def _mutate(blob: bytes, rng: np.random.Generator, others: list[bytes]) -> tuple[str, bytes]:
    """(kind, a mutation of ``blob``): flipped bits, a cut, bytes added, a header field set to an
    extreme or a neighbouring value, or another payload, with the CRCs recomputed where the
    kind says so."""
    kind = rng.choice(["flip", "cut", "extend", "field", "payload bits", "payload words", "splice"],
                      p=[0.2, 0.1, 0.05, 0.35, 0.15, 0.1, 0.05])
    if kind == "flip":
        out = bytearray(blob)
        for at in rng.integers(0, 8 * len(blob), int(rng.integers(1, 4))):
            out[at // 8] ^= 1 << (at % 8)
        return kind, bytes(out)
    if kind == "cut":
        return kind, blob[:int(rng.integers(0, len(blob)))]
    if kind == "extend":
        return kind, blob + rng.bytes(int(rng.integers(1, 9)))
    fields = _fields(blob)
    if kind == "field":
        name = str(rng.choice([n for n in ("version", "mode", "length", "checksum", "tokens", "fingerprint", "tags")
                               if n in fields]))
        value = fields[name]
        if isinstance(value, bytes):
            return kind, _forge(blob, **{name: rng.bytes(len(value))})
        bits = {"version": 8, "mode": 8}.get(name, 64)
        choices = [0, 1, 2, value - 1, value + 1, 2 * value, value // 2, 2**bits - 1, 2**(bits - 1),
                   int(rng.integers(0, 2**min(bits, 63))), cz.MAX_INPUT_BYTES, cz.MAX_INPUT_BYTES + 1,
                   cz.STREAMS, cz.STREAMS + 1, 64 * value]
        new = int(choices[int(rng.integers(len(choices)))]) % 2**bits
        changes = {name: new}
        if rng.random() < 0.3 and "tokens" in fields:     # two fields at once, consistent with each other
            changes.update(tokens=new % 2**64, length=new % 2**64) if name in ("tokens", "length") else None
        return kind, _forge(blob, **changes)
    payload = blob[fields["end"]:]
    if kind == "payload bits" and payload:
        out = bytearray(payload)
        for at in rng.integers(0, 8 * len(payload), int(rng.integers(1, 4))):
            out[at // 8] ^= 1 << (at % 8)
        return kind, _forge(blob, bytes(out))
    if kind == "payload words":
        return kind, _forge(blob, rng.bytes(4 * int(rng.integers(0, 2 * len(payload) // 4 + 2))))
    other = others[int(rng.integers(len(others)))]
    return "splice", blob[:fields["end"]] + other[_fields(other)["end"]:]


@pytest.mark.slow
def test_2400_mutated_blobs_decode_to_the_original_or_raise_value_error(tiny, monkeypatch):
    """A seeded loop of mutations of valid blobs (several streams each, MIN_SEGMENT lowered on
    both sides): every one decodes to its original or raises ValueError, nothing else."""
    model, tok, primer = tiny
    monkeypatch.setattr(cz, "MIN_SEGMENT", 24)
    originals = [TEXT[:260].encode(), TEXT[40:130].encode() + b"\xff\x00", b"a" * 300, b"\xfe\xff" * 9]
    valid = [(data, cz.compress(data, model, tok, mix=mix, primer=primer)) for data in originals
             for mix in (False, True)]
    assert {blob[5] for _, blob in valid} == {cz.STORED, cz.MODEL, cz.MIXED}
    assert max(cz.stream_count(_fields(blob).get("tokens", 0)) for _, blob in valid) > 1
    rng = np.random.default_rng(58)
    kinds, outcomes = {}, {"original": 0, "ValueError": 0}
    for i in range(2400):
        data, blob = valid[i % len(valid)]
        kind, bad = _mutate(blob, rng, [b for _, b in valid])
        kinds[kind] = kinds.get(kind, 0) + 1
        try:
            back = cz.decompress(bad, model, tok, primer=primer)
        except ValueError:
            outcomes["ValueError"] += 1
            continue
        assert back == data, (kind, i)
        outcomes["original"] += 1
    assert len(kinds) == 7 and min(kinds.values()) > 50, kinds
    assert outcomes["ValueError"] > 1000 and outcomes["original"] > 0, outcomes


@pytest.mark.slow
def test_near_constant_input_pads_its_payload_to_a_word_per_64_tokens_and_round_trips(tiny):
    """The payload's floor (TOKENS_PER_WORD) is what bounds a header's claimed work; the
    padding words change nothing the range decoder reads."""
    model, tok, primer = tiny
    data = b"a" * 8_000
    blob = cz.compress(data, model, tok, primer=primer)
    fields = _fields(blob)
    payload = len(blob) - fields["end"]
    assert blob[5] == cz.MIXED and fields["tokens"] > 64 * 40
    assert payload == 4 * -(-fields["tokens"] // cz.TOKENS_PER_WORD)
    assert cz.decompress(blob, model, tok, primer=primer) == data
    with pytest.raises(ValueError, match="payload length"):       # one word short of the floor
        cz.decompress(_forge(blob, blob[-(payload - 4):]), model, tok, primer=primer)


# -- limits and arguments ---------------------------------------------------------------------------------------

def test_input_past_the_limit_is_refused_before_it_is_tokenized(tiny, monkeypatch):
    model, tok, primer = tiny
    seen = []
    monkeypatch.setattr(cz, "tokenize", lambda data, tokenizer: seen.append(len(data)))
    for data in (bytes(cz.MAX_INPUT_BYTES + 1), memoryview(np.zeros(cz.MAX_INPUT_BYTES // 4 + 1, np.int32))):
        with pytest.raises(ValueError, match="MAX_INPUT_BYTES"):
            cz.compress(data, model, tok, primer=primer)
    with pytest.raises(ValueError, match="MAX_BLOB_BYTES"):
        cz.decompress(bytes(cz.MAX_BLOB_BYTES + 1), model, tok, primer=primer)
    assert not seen


def test_arguments_of_the_wrong_kind_are_refused_naming_them(tiny, monkeypatch):
    model, tok, primer = tiny
    for progress in ("yes", 1, 0.5):
        with pytest.raises(TypeError, match="progress must be"):
            cz.compress(b"some text", model, tok, primer=primer, progress=progress)
        with pytest.raises(TypeError, match="progress must be"):
            cz.decompress(cz.compress(b"xy", model, tok, primer=primer), model, tok, progress=progress)
    counted = []
    monkeypatch.setattr(cz.ContextMixer, "__init__", lambda *a, **k: counted.append(1))
    bad_primers = {"floats": np.ones(5), "bools": np.ones(5, bool), "ragged": [[1, 2], [3]], "text": "1 2 3",
                   "an id past the vocabulary": np.array([1, 300]), "negative": np.array([-1, 2]),
                   "2-D": np.ones((2, 2), np.int64), "too long": np.zeros(cz.MAX_PRIMER_TOKENS + 1, np.int32)}
    for name, bad in bad_primers.items():
        for mix in (True, False):                      # checked even where the n-gram is not used
            with pytest.raises(ValueError, match="primer"):
                cz.compress(TEXT.encode(), model, tok, mix=mix, primer=bad)
        with pytest.raises(ValueError, match="primer"):
            cz.decompress(cz.STORED_HEADER_BYTES * b"\0", model, tok, primer=bad)
    assert not counted
    for blob in ("NCLZ...", None, 7, [1, 2]):
        with pytest.raises(TypeError, match="blob must be bytes"):
            cz.decompress(blob, model, tok)


def test_primers_shorter_than_the_ngram_s_orders_round_trip(tiny):
    """0 to 9 primer ids (the n-gram counts contexts of up to 8): each codes and decodes."""
    model, tok, _ = tiny
    data = TEXT[:120].encode()       # ~70 tokens: every order's context is reached many times over
    for n in range(10):
        primer = np.arange(n, dtype=np.int64) + 40
        blob = cz.compress(data, model, tok, primer=primer)
        assert blob[5] == cz.MIXED and cz.decompress(blob, model, tok, primer=primer) == data, n


@pytest.mark.parametrize("mix", [False, True])
def test_a_primer_too_short_to_adapt_with_is_refused_naming_the_primer(tiny, mix):
    """With adapt=True the primer's gradients scale the model's steps over windows of the primer: one
    too short for a window and its target is refused naming ``primer`` (the message named ``ids``,
    a parameter of an inner function), and one just long enough codes and decodes."""
    model, tok, _ = tiny
    data = TEXT[:400].encode()
    need = adaptation.window_of(adaptation.AdaptConfig(), model) + 1
    for n in (0, 3, need - 1):
        with pytest.raises(ValueError, match=rf"^primer holds {n} ids; adapt=True .* at least {need} ids"):
            cz.compress(data, model, tok, mix=mix, adapt=True, primer=np.arange(n) % 200)
    primer = np.arange(need) % 200
    blob = cz.compress(data, model, tok, mix=mix, adapt=True, primer=primer)
    assert blob[5] & cz.ADAPTING and cz.decompress(blob, model, tok, primer=primer) == data


def test_a_model_with_the_same_weights_and_another_window_is_named_by_its_config(tiny, queue):
    """The weights' part of the fingerprint covers the config too: a model with the very same weights and
    another window (max_position_embeddings) was refused as one whose weights differ."""
    model, tok, primer = tiny
    other = DecoderLM(LMConfig(vocab_size=300, **dict(SMALL, max_position_embeddings=8)), queue=queue, seed=1)
    other.load_state_dict(model.state_dict())
    blob = cz.compress(TEXT[:400].encode(), model, tok, primer=primer)
    with pytest.raises(ValueError, match=r"another model \(its config or its weights differ\)"):
        cz.decompress(blob, other, tok, primer=primer)


def test_every_kind_of_buffer_codes_its_bytes(tiny):
    """bytes, bytearray, a strided memoryview and one of 4-byte items code the bytes they hold."""
    model, tok, primer = tiny
    raw = np.frombuffer(TEXT[:120].encode(), np.uint8)
    cases = {"bytearray": bytearray(raw.tobytes()), "strided": memoryview(raw)[::2],
             "int32 items": memoryview(raw[:120].view(np.int32)), "empty": memoryview(b""), "one byte": b"\x00"}
    for name, data in cases.items():
        blob = cz.compress(data, model, tok, primer=primer)
        assert cz.decompress(memoryview(bytearray(blob)), model, tok, primer=primer) == bytes(data), name


@pytest.mark.parametrize("other", ["model", "tokenizer", "primer"])
def test_a_blob_from_another_model_is_refused_before_the_default_primer_is_tokenized(tiny, queue, monkeypatch, other):
    """A mixed blob decoded without a primer needs Chapter 9's training text tokenized (the default
    primer) only once every cheaper part of the fingerprint matches: a blob of another model or
    tokenizer, or one compressed with a primer given when the decoding call has none (the primer's
    tag says so), is refused first, and neither the default primer, the training text nor the
    tokenizer is called."""
    from netcl_lite import capstone

    model, tok, primer = tiny
    other_model, other_tok = _small(queue, 300, 300 if other == "model" else 280, seed=2 if other == "model" else 1)
    data = TEXT[:200].encode()
    coder_tok = other_tok if other == "tokenizer" else tok
    blob = cz.compress(data, other_model if other == "model" else model, coder_tok,
                       primer=np.asarray(coder_tok.encode_ordinary(TEXT[:300]), np.int64))
    assert blob[5] == cz.MIXED

    def tokenized(*args, **kwargs):
        raise AssertionError("the default primer was computed (the training text tokenized) before the check")

    monkeypatch.setattr(cz, "default_primer", tokenized)
    monkeypatch.setattr(cz, "_training_ids", tokenized)
    monkeypatch.setattr(capstone, "data", tokenized)
    monkeypatch.setattr(BPETokenizer, "encode_ordinary", tokenized)
    says = {"model": "another model", "tokenizer": "another tokenizer",
            "primer": "primer ids given to compress, which this call lacks .* pass the primer the compressing side used"}
    with pytest.raises(ValueError, match=says[other]):
        cz.decompress(blob, model, tok)


def test_a_primer_s_tag_says_whether_it_was_the_default():
    """The default primer's tag is DEFAULT_PRIMER_TAG, a given primer's never is (1 in 256 would be,
    by its SHA-256): a decoder without a primer tells the two apart from the tag."""
    zero_first = 0
    for n in range(2_000):                        # SHA-256s that start with every byte value, 0 among them
        ids = np.arange(n, dtype=np.int64) % 300
        raw = cz.hashlib.sha256(ids.astype(np.int32).tobytes()).digest()
        zero_first += raw[0] == 0
        digest = cz._primer_digest(ids)
        assert digest[0] != cz.DEFAULT_PRIMER_TAG and digest[1:] == raw[1:], n
        assert cz._primer_digest(ids, default=True)[0] == cz.DEFAULT_PRIMER_TAG
    assert zero_first, "no primer's SHA-256 started with 0: the case the tag must not take"


# -- the command line -------------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def model_dir(tiny, tmp_path_factory):
    model, tok, _ = tiny
    folder = tmp_path_factory.mktemp("model")
    model.save_pretrained(folder)
    tok.save(folder / "tokenizer.json")
    return folder


def _cli(*args, cwd, stdin=None, timeout=300) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "netcl_lite.compression", *map(str, args)], cwd=cwd, input=stdin,
                          stdin=None if stdin is not None else subprocess.DEVNULL, capture_output=True,
                          timeout=timeout)


def _listing(folder) -> list[str]:
    return sorted(p.name for p in folder.iterdir())


@pytest.mark.slow
def test_the_command_line_refuses_devices_pipes_folders_and_oversized_input_naming_them(tmp_path):
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    big = tmp_path / "big.bin"
    with open(big, "wb") as f:
        f.truncate(cz.MAX_BLOB_BYTES + 1)           # sparse: no disk used
    (tmp_path / "folder").mkdir()
    cases = {"/dev/zero": "character device", fifo: "FIFO", tmp_path / "folder": "directory",
             big: f"{cz.MAX_BLOB_BYTES + 1:,} bytes"}
    before = _listing(tmp_path)
    for command in ("compress", "decompress"):
        for path, kind in cases.items():
            done = _cli(command, path, tmp_path / "out", cwd=tmp_path, timeout=120)
            assert done.returncode == 1 and str(path) in done.stderr.decode() and kind in done.stderr.decode(), \
                (command, path, done.stderr[-400:])
        with open("/dev/zero", "rb") as zero:         # standard input that never ends is read up to the limit
            done = subprocess.run([sys.executable, "-m", "netcl_lite.compression", command, "-", tmp_path / "out"],
                                  stdin=zero, capture_output=True, cwd=tmp_path, timeout=120)
        assert done.returncode == 1 and b"standard input holds more than" in done.stderr, done.stderr[-400:]
    assert _listing(tmp_path) == before


@pytest.mark.slow
def test_dash_is_standard_input_and_output_and_never_a_file_name(model_dir, tmp_path):
    data = TEXT.encode() + b"\xff\x00 tail"
    done = _cli("compress", "-", "-", "--model", model_dir, cwd=tmp_path, stdin=data)
    assert done.returncode == 0, done.stderr[-600:]
    blob = done.stdout
    assert blob[:4] == cz.MAGIC and blob[5] == cz.MIXED and len(blob) < len(data)
    back = _cli("decompress", "-", "-", "--model", model_dir, cwd=tmp_path, stdin=blob)
    assert back.returncode == 0 and back.stdout == data, back.stderr[-600:]
    src = tmp_path / "in.txt"
    src.write_bytes(data)
    done = _cli("compress", src, "-", "--model", model_dir, "--model-only", cwd=tmp_path)
    assert done.returncode == 0 and done.stdout[5] == cz.MODEL, done.stderr[-600:]
    assert _listing(tmp_path) == ["in.txt"]


@pytest.mark.slow
def test_the_command_line_writes_no_progress_bar_into_a_file_and_one_onto_a_terminal(model_dir, tiny, tmp_path):
    """An input over 20,000 tokens shows a bar on a terminal; with standard error a file (a log),
    its carriage-return updates (27 KB of them) are not written: the file holds nothing."""
    _, tok, _ = tiny
    data = (TEXT * (20_000 // len(tok.encode_ordinary(TEXT)) + 2)).encode()
    assert cz.tokenize(data, tok).size > 20_000
    src = tmp_path / "in.txt"
    src.write_bytes(data)
    log = tmp_path / "log"
    with open(log, "wb") as err:
        done = subprocess.run([sys.executable, "-m", "netcl_lite.compression", "compress", src, tmp_path / "out",
                               "--model", model_dir, "--model-only"], stdin=subprocess.DEVNULL, stderr=err,
                              cwd=tmp_path, timeout=600)
    assert done.returncode == 0 and log.read_bytes() == b"", log.read_bytes()[-400:]
    master, terminal = _terminal()
    shown = bytearray()
    reader = threading.Thread(target=lambda: _drain(master, shown))
    reader.start()
    try:
        again = subprocess.run([sys.executable, "-m", "netcl_lite.compression", "compress", src, tmp_path / "again",
                                "--model", model_dir, "--model-only"], stdin=subprocess.DEVNULL, stderr=terminal,
                               cwd=tmp_path, timeout=600)
    finally:
        os.close(terminal)
        reader.join(timeout=30)
        os.close(master)
    assert again.returncode == 0 and (tmp_path / "again").read_bytes() == (tmp_path / "out").read_bytes()
    assert b"compress" in shown and b"\r" in shown, bytes(shown[-400:])


def _terminal() -> tuple[int, int]:
    """(master, the terminal) of a new pseudo-terminal 80 columns wide (tqdm draws nothing on one 0 wide)."""
    import fcntl
    import pty
    import struct
    import termios

    master, terminal = pty.openpty()
    fcntl.ioctl(terminal, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 80, 0, 0))
    return master, terminal


def _read_terminal(master: int) -> bytes:
    """What the terminal's side wrote next, or b"" once every process holding it has closed it."""
    try:
        return os.read(master, 1 << 16)
    except OSError:                          # EIO: the terminal's other side is closed
        return b""


def _drain(fd: int, into: bytearray) -> None:
    """Read ``fd`` (a terminal's master side) into ``into`` until its other side is closed."""
    while chunk := _read_terminal(fd):
        into += chunk


@pytest.mark.slow
def test_errors_name_the_path_at_fault(model_dir, tmp_path):
    src = tmp_path / "in.txt"
    src.write_bytes(TEXT.encode())
    (tmp_path / "afile").write_bytes(b"")
    cases = [
        (("compress", src, tmp_path / "missing" / "out.nclz"), f"{tmp_path / 'missing' / 'out.nclz'}: cannot write "
         f"there: its folder {tmp_path / 'missing'} is missing"),
        (("compress", src, tmp_path / "afile" / "out.nclz"), "is a regular file, not a folder"),
        (("compress", tmp_path / "nothere.txt", tmp_path / "out.nclz"), f"{tmp_path / 'nothere.txt'}: no such file"),
        (("decompress", src, tmp_path / "out.txt"), f"{src}: blob is not netcl_lite.compression output"),
        (("compress", src, tmp_path / "out.nclz", "--model", tmp_path / "nomodel"), f"--model {tmp_path / 'nomodel'}"),
    ]
    for args, message in cases:
        model = () if "--model" in args else ("--model", model_dir)
        done = _cli(*args, *model, cwd=tmp_path)
        stderr = done.stderr.decode()
        assert done.returncode == 1 and message in stderr and ".tmp" not in stderr, (args, stderr[-600:])
        if "missing" in message:
            assert str(src) not in stderr            # the input is not at fault
    assert _listing(tmp_path) == ["afile", "in.txt"]


@pytest.mark.slow
def test_ctrl_c_leaves_no_partial_or_temporary_file(model_dir, tmp_path):
    src = tmp_path / "in.txt"
    src.write_bytes((TEXT * 120).encode())           # enough tokens for a progress bar: coding has begun
    master, terminal = _terminal()                   # the bar shows on a terminal only
    proc = subprocess.Popen([sys.executable, "-m", "netcl_lite.compression", "compress", src, tmp_path / "out.nclz",
                             "--model", model_dir], cwd=tmp_path, stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=terminal)
    os.close(terminal)
    try:
        seen = b""
        while b"compress: " not in seen:              # the bar's first line (its label)
            chunk = _read_terminal(master)
            assert chunk, f"the command ended before coding: {seen[-600:]!r}"
            seen += chunk
        proc.send_signal(signal.SIGINT)
        proc.communicate(timeout=120)
        while chunk := _read_terminal(master):
            seen += chunk
    finally:
        os.close(master)
    assert proc.returncode == 130 and b"interrupted" in seen, (proc.returncode, seen[-600:])
    assert _listing(tmp_path) == ["in.txt"]


@pytest.mark.slow
def test_ctrl_c_while_the_command_line_still_imports_exits_130_without_a_traceback(model_dir, tmp_path):
    """SIGINT once the package has begun importing (``-X importtime`` reports its first module) and
    before it has finished (no line for ``netcl_lite`` itself yet): one line, status 130, no file."""
    src = tmp_path / "in.txt"
    src.write_bytes(TEXT.encode())
    during_import = 0
    for _ in range(4):
        proc = subprocess.Popen([sys.executable, "-X", "importtime", "-m", "netcl_lite.compression", "compress", src,
                                 tmp_path / "out.nclz", "--model", model_dir], cwd=tmp_path, stdin=subprocess.DEVNULL,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        seen = b""
        while not re.search(rb"\| +netcl_lite\.", seen):   # a module of the package has been imported
            chunk = proc.stderr.read1(4096)
            assert chunk, f"the command ended before importing netcl_lite: {seen[-600:]!r}"
            seen += chunk
        proc.send_signal(signal.SIGINT)
        stderr = (seen + proc.communicate(timeout=120)[1]).decode()
        assert proc.returncode == 130 and "Traceback" not in stderr and "interrupted" in stderr, \
            (proc.returncode, stderr[-800:])
        assert _listing(tmp_path) == ["in.txt"]
        during_import += not re.search(r"\| +netcl_lite$", stderr, re.M)   # the package's own line: it finished
        if during_import:
            break
    assert during_import, "every SIGINT came after the package had imported"


@pytest.mark.parametrize("name", cz.TERMINATION_SIGNALS)
def test_a_termination_signal_during_the_write_leaves_no_temporary_file(model_dir, tmp_path, name):
    """``kill`` (SIGTERM), a closed terminal (SIGHUP), Ctrl-\\ (SIGQUIT), a CPU-time limit (SIGXCPU)
    and the other signals that end a process by default, while OUT is being written: the command,
    run as ``python -m``, exits 128 + the signal's number at once and leaves neither OUT nor its
    temporary file (the signal arrives inside the flush to disk of OUT's data, after the coding, when
    OpenCL's compiler has started: LLVM puts its own handlers on SIGQUIT, SIGXCPU and SIGUSR1, which
    the command line takes back)."""
    src = tmp_path / "in.txt"
    src.write_bytes(TEXT.encode())
    patch = (f"import time\n"
             f"real_fsync = os.fsync\n"
             f"def fsync(fd):\n"
             f"    if os.fstat(fd).st_size:      # OUT's data, after the coding (not the folder probe's empty file)\n"
             f"        os.kill(os.getpid(), signal.{name})\n"
             f"        time.sleep(30)\n"
             f"    return real_fsync(fd)\n"
             f"os.fsync = fsync\n")
    done = compress_patched(patch, src, tmp_path / "out.nclz", model_dir)
    assert done.returncode == 128 + getattr(signal, name), (done.returncode, done.stderr[-600:])
    assert _listing(tmp_path) == ["in.txt"]


def test_an_interrupted_write_leaves_neither_the_file_nor_a_temporary_one(tmp_path, monkeypatch):
    def interrupted(fd):
        raise KeyboardInterrupt

    monkeypatch.setattr(os, "fsync", interrupted)
    with pytest.raises(KeyboardInterrupt):
        cz._write_new(tmp_path / "out.nclz", b"x" * 1000)
    assert _listing(tmp_path) == []


@pytest.mark.parametrize("refusal", [PermissionError(1, "Operation not permitted"),
                                     OSError(95, "Operation not supported"), NotImplementedError("no links")])
def test_a_file_system_without_hard_links_gets_the_file_written_once_and_never_over_another(tmp_path, monkeypatch,
                                                                                              refusal):
    """Where ``os.link`` is refused, OUT is created exclusively instead: written whole, an existing
    file left as it is, and an interrupted write leaves neither OUT nor a temporary file."""
    def no_links(src, dst, **kwargs):
        raise refusal

    monkeypatch.setattr(os, "link", no_links)
    out = tmp_path / "out.nclz"
    cz._write_new(out, b"x" * 1000)
    assert out.read_bytes() == b"x" * 1000 and _listing(tmp_path) == ["out.nclz"]
    with pytest.raises(FileExistsError):
        cz._write_new(out, b"y")
    assert out.read_bytes() == b"x" * 1000 and _listing(tmp_path) == ["out.nclz"]
    out.unlink()
    fsyncs = []

    def interrupted_second_time(fd):                  # the temporary file's fsync passes, OUT's is interrupted
        fsyncs.append(fd)
        if len(fsyncs) == 2:
            raise KeyboardInterrupt

    monkeypatch.setattr(os, "fsync", interrupted_second_time)
    with pytest.raises(KeyboardInterrupt):
        cz._write_new(out, b"x" * 1000)
    assert len(fsyncs) == 2 and _listing(tmp_path) == []


def test_help_documents_the_exit_status(capsys):
    with pytest.raises(SystemExit) as done:
        cz.main(["--help"])
    text = capsys.readouterr().out
    assert done.value.code == 0
    for words in ("exit status", "0 ", "1 ", "2 ", "130", "143", "- for standard input", f"{cz.MAX_INPUT_BYTES:,}"):
        assert words in text, words


def test_a_payload_that_decodes_to_ids_the_tokenizer_lacks_is_refused(queue):
    """A model whose vocabulary is wider than the tokenizer's: forged payloads (their CRC made
    right) that decode to an id past the tokenizer's are corrupted blobs, not a KeyError."""
    model, tok = _small(queue, 300, 270, seed=4)
    blob = cz.compress(TEXT.encode(), model, tok, mix=False)
    assert blob[5] == cz.MODEL and max(tok.vocab) < 299
    rng = np.random.default_rng(7)
    messages = []
    for _ in range(40):
        payload = rng.integers(0, 2**32, (len(blob) - _fields(blob)["end"]) // 4, dtype=np.uint64)
        with pytest.raises(ValueError) as refused:
            cz.decompress(_forge(blob, payload.astype("<u4").tobytes()), model, tok)
        messages.append(str(refused.value))
    assert any("token id the tokenizer does not have" in m for m in messages), messages[:5]


def test_a_forged_payload_stops_decoding_once_it_spells_more_than_the_header_says(tiny, blobs, monkeypatch):
    """A payload whose CRC was made right passes the header's checks; it decodes only until its
    ids spell more bytes than the original's length, not to the header's token count."""
    model, tok, primer = tiny
    steps = []
    probabilities = cz._Predictor.probabilities
    monkeypatch.setattr(cz._Predictor, "probabilities", lambda self: steps.append(1) or probabilities(self))
    payload = np.random.default_rng(9).integers(0, 2**32, 40, dtype=np.uint64).astype("<u4").tobytes()
    bad = _forge(blobs["mixed"][1], payload, tokens=900, length=900)
    with pytest.raises(ValueError, match="decodes to more than the 900 bytes"):
        cz.decompress(bad, model, tok, primer=primer)
    assert 0 < len(steps) < 900


@pytest.mark.parametrize("command", ["compress", "decompress"])
def test_a_closed_standard_input_or_output_is_refused_naming_it(tmp_path, monkeypatch, capsys, command):
    """A command started with its standard input or output closed (``<&-``, ``>&-``): Python's
    ``sys.stdin``/``sys.stdout`` is None, and ``-`` is refused with a message, not a traceback."""
    src = tmp_path / "in.txt"
    src.write_bytes(TEXT.encode())
    monkeypatch.setattr(sys, "stdin", None)
    assert cz.main([command, "-", str(tmp_path / "out")]) == 1
    assert "standard input is closed" in capsys.readouterr().err
    monkeypatch.setattr(sys, "stdout", None)
    assert cz.main([command, str(src), "-"]) == 1
    assert "standard output is closed" in capsys.readouterr().err
    assert _listing(tmp_path) == ["in.txt"]


def test_an_out_that_names_a_folder_by_its_trailing_slash_is_refused(tmp_path, capsys):
    """``OUT`` written ``sub/`` asks for a folder: no file named ``sub`` is made in its place (a
    missing --model makes the call fail fast if the name were taken)."""
    src = tmp_path / "in.txt"
    src.write_bytes(TEXT.encode())
    for out in (f"{tmp_path / 'sub'}/", f"{tmp_path / 'in.txt'}/", ""):
        assert cz.main(["compress", str(src), out, "--model", str(tmp_path / "nomodel")]) == 1
        err = capsys.readouterr().err
        assert "give the name of a file to write" in err and "--model" not in err, (out, err)
    assert _listing(tmp_path) == ["in.txt"]


def test_an_out_that_is_a_device_a_pipe_or_a_dangling_link_is_refused_saying_what_it_is(tmp_path, capsys):
    """OUT that exists but is not a regular file (``/dev/null``, a FIFO, a symlink to nothing) is
    refused for what it is, not as "file exists"; --help says so and how to discard a result."""
    src = tmp_path / "in.txt"
    src.write_bytes(TEXT.encode())
    os.mkfifo(tmp_path / "pipe")
    (tmp_path / "dangling").symlink_to(tmp_path / "nowhere")
    cases = {os.devnull: "is a character device, not a regular file", tmp_path / "pipe": "is a FIFO, not a regular file",
             tmp_path / "dangling": "is a symlink to a missing file, not a regular file"}
    for out, says in cases.items():
        for command in ("compress", "decompress"):
            assert cz.main([command, str(src), str(out), "--model", str(tmp_path / "nomodel")]) == 1
            err = capsys.readouterr().err
            assert f"{out}: {says}" in err and "file exists" not in err and "- >/dev/null" in err, (out, err)
    assert _listing(tmp_path) == ["dangling", "in.txt", "pipe"]
    with pytest.raises(SystemExit):
        cz.main(["--help"])
    assert "/dev/null" in capsys.readouterr().out


def test_a_missing_input_is_named_once(tmp_path, capsys):
    missing = tmp_path / "nothere.txt"
    assert cz.main(["compress", str(missing), str(tmp_path / "out")]) == 1
    err = capsys.readouterr().err
    assert err.count(str(missing)) == 1 and "no such file" in err, err


def test_a_path_too_long_for_the_system_is_refused_naming_it(tmp_path, capsys):
    """OUT or ``--model`` whose name the system refuses to look up (ENAMETOOLONG): a message naming
    the argument and exit status 1, not a traceback; nothing is written."""
    src = tmp_path / "in.txt"
    src.write_bytes(TEXT.encode())
    long = "n" * 300                                   # past NAME_MAX (255) on every Linux file system
    cases = [(["compress", str(src), str(tmp_path / long), "--model", str(tmp_path / "nomodel")], long),
             (["decompress", str(src), str(tmp_path / long / "out")], long),
             (["compress", str(src), str(tmp_path / "out"), "--model", str(tmp_path / long)], f"--model {tmp_path}")]
    for argv, named in cases:
        assert cz.main(argv) == 1, argv
        err = capsys.readouterr().err
        assert named in err and "name too long" in err and "Traceback" not in err, (argv, err[-400:])
    assert _listing(tmp_path) == ["in.txt"]


def test_the_module_s_other_public_functions_refuse_arguments_of_the_wrong_kind_naming_them(tiny):
    """read_header, tokenize, segments, stream_count and default_primer, documented beside compress,
    refuse what they cannot read with a TypeError or ValueError naming the parameter, not an
    AttributeError, a ZeroDivisionError or NumPy's 'truth value ... is ambiguous'."""
    model, tok, primer = tiny
    blob = cz.compress(TEXT.encode(), model, tok, primer=primer)
    for bad in (None, blob.decode("latin-1"), np.frombuffer(blob, np.uint8), list(blob)):
        with pytest.raises(TypeError, match="blob must be bytes"):
            cz.read_header(bad)
    assert cz.read_header(memoryview(bytearray(blob))) == cz.read_header(blob)
    with pytest.raises(TypeError, match="data must be bytes"):
        cz.tokenize("text", tok)
    for call in (lambda: cz.tokenize(b"text", None), lambda: cz.default_primer(None)):
        with pytest.raises(TypeError, match="tokenizer must be"):
            call()
    for call, name in ((lambda: cz.segments(10, 0), "streams"), (lambda: cz.segments(-1, 2), "n_tokens"),
                       (lambda: cz.segments(10, 2.0), "streams"), (lambda: cz.stream_count(-5), "n_tokens"),
                       (lambda: cz.stream_count(None), "n_tokens")):
        with pytest.raises(ValueError, match=name):
            call()
    assert cz.segments(10, 3).tolist() == [4, 3, 3] and cz.stream_count(np.int64(5000)) == 5000 // cz.MIN_SEGMENT


def test_an_empty_list_or_tuple_of_primer_ids_is_no_ids(tiny):
    """``primer=[]`` holds no ids, as ``np.zeros(0, np.int64)`` does (NumPy reads an empty list as
    float64): both code, and decode with either spelling."""
    model, tok, _ = tiny
    data = TEXT[:300].encode()
    blob = cz.compress(data, model, tok, primer=np.zeros(0, np.int64))
    for empty in ([], (), np.zeros(0, np.int32)):
        assert cz.compress(data, model, tok, primer=empty) == blob
        assert cz.decompress(blob, model, tok, primer=empty) == data


def test_a_masked_array_is_refused_naming_the_parameter(tiny):
    """A masked primer (or data, blob as a memoryview of one) would have its mask ignored and the
    ids under it counted: refused with a TypeError naming the parameter, before any coding."""
    model, tok, primer = tiny
    data = TEXT[:300].encode()
    ids = np.asarray(primer[:50], np.int64)
    masked = np.ma.masked_array(ids, mask=np.arange(ids.size) % 2 == 0)
    for call in (lambda: cz.compress(data, model, tok, primer=masked),
                 lambda: cz.decompress(cz.compress(data, model, tok, primer=ids), model, tok, primer=masked)):
        with pytest.raises(TypeError, match=r"^primer must not be a masked array: its mask would be ignored"):
            call()
    raw = np.ma.masked_array(np.frombuffer(data, np.uint8), mask=np.zeros(len(data), bool))
    with pytest.raises(TypeError, match=r"^data must not be a masked array"):
        cz.compress(memoryview(raw), model, tok, primer=ids)
    with pytest.raises(TypeError, match=r"^blob must not be a masked array"):
        cz.decompress(memoryview(np.ma.masked_array(np.frombuffer(cz.compress(data, model, tok, primer=ids),
                                                                  np.uint8))), model, tok, primer=ids)
    unmasked = np.ma.masked_array(ids, mask=False)
    assert cz.decompress(cz.compress(data, model, tok, primer=unmasked.compressed()), model, tok,
                         primer=ids) == data


def test_a_numpy_bool_flag_is_refused_with_a_message_that_says_what_it_is(tiny):
    """NumPy 2 names its bool type ``bool``: the refusal names ``numpy.bool`` and says to pass
    ``bool(...)``, not 'mix must be a bool, got bool'."""
    model, tok, primer = tiny
    with pytest.raises(TypeError, match=r"mix must be a bool, got numpy\.bool.*bool\(") as refused:
        cz.compress(b"text", model, tok, mix=np.True_, primer=primer)
    assert not str(refused.value).endswith("got bool")


def test_a_numpy_bool_progress_is_refused_with_a_message_that_says_what_it_is(tiny):
    """``progress=np.False_``: the refusal names ``numpy.bool``, not 'got bool' (NumPy 2's name for
    its type), as the flags' does."""
    model, tok, primer = tiny
    blob = cz.compress(b"xy", model, tok, primer=primer)
    for call in (lambda: cz.compress(b"text", model, tok, primer=primer, progress=np.False_),
                 lambda: cz.decompress(blob, model, tok, primer=primer, progress=np.True_)):
        with pytest.raises(TypeError, match=r"progress must be .*got numpy\.bool; pass bool\(") as refused:
            call()
        assert "got bool" not in str(refused.value)


def test_a_model_path_that_is_a_file_is_not_called_missing(model_dir, tmp_path, capsys):
    """``--model`` naming a file (its config.json, say) or a dangling link: the message says what it
    is, not 'no such folder'; a missing one is still 'no such folder'."""
    src = tmp_path / "in.txt"
    src.write_bytes(TEXT.encode())
    (tmp_path / "dangling").symlink_to(tmp_path / "nowhere")
    cases = {model_dir / "config.json": "is a regular file, not a folder", tmp_path / "dangling": "a symlink to a missing",
             tmp_path / "nowhere": "no such folder"}
    for path, says in cases.items():
        assert cz.main(["compress", str(src), str(tmp_path / "out"), "--model", str(path)]) == 1
        err = capsys.readouterr().err
        assert f"--model {path}: " in err and says in err, err
    assert _listing(tmp_path) == ["dangling", "in.txt"]


def test_a_model_whose_window_the_device_cannot_cache_is_refused_naming_it(tiny, blobs, model_dir, tmp_path, capsys):
    """A config.json claiming a window of 2^40 positions loads (no weight depends on it), but the
    coder's key-value cache over it cannot be allocated: compress refuses it naming
    max_position_embeddings, and the command line names --model DIR, not an OSError traceback
    (decompress of a coded blob, the one kind it loads the model for)."""
    import json
    import shutil

    folder = tmp_path / "model"
    shutil.copytree(model_dir, folder)
    config = json.loads((folder / "config.json").read_text())
    (folder / "config.json").write_text(json.dumps({**config, "max_position_embeddings": 2**40}))
    src, coded = tmp_path / "in.txt", tmp_path / "in.nclz"
    src.write_bytes(TEXT.encode())
    coded.write_bytes(blobs["model"][1])
    for command, source in (("compress", src), ("decompress", coded)):
        assert cz.main([command, str(source), str(tmp_path / "out"), "--model", str(folder)]) == 1
        err = capsys.readouterr().err
        assert f"--model {folder}: model's max_position_embeddings=1,099,511,627,776" in err, err
        assert str(source) not in err and "Traceback" not in err, err
    assert _listing(tmp_path) == ["in.nclz", "in.txt", "model"]
    big = DecoderLM.from_pretrained(folder)
    with pytest.raises(ValueError, match="max_position_embeddings=1,099,511,627,776: the coder's key-value cache"):
        cz.compress(TEXT.encode(), big, tiny[1], primer=tiny[2])


def test_an_empty_model_path_is_refused_not_read_as_the_working_folder(model_dir, tmp_path, monkeypatch, capsys):
    """``--model "$DIR"`` with DIR unset: Path('') is the working folder, which happens to hold a model
    here; the command refuses the empty name instead of using whatever folder it runs in."""
    src = tmp_path / "in.txt"
    src.write_bytes(TEXT.encode())
    monkeypatch.chdir(model_dir)
    assert cz.main(["compress", str(src), str(tmp_path / "out"), "--model", ""]) == 1
    assert "--model '': names no folder" in capsys.readouterr().err
    assert _listing(tmp_path) == ["in.txt"]


def test_a_model_folder_the_coder_cannot_use_is_named_not_the_input(blobs, model_dir, tmp_path, capsys):
    """A --model folder that loads but cannot code (a window of one position): the message names
    --model DIR, which is at fault, not IN (for decompress, a coded blob: the one kind it loads the
    model for)."""
    import json
    import shutil

    folder = tmp_path / "model"
    shutil.copytree(model_dir, folder)
    config = json.loads((folder / "config.json").read_text())
    (folder / "config.json").write_text(json.dumps({**config, "max_position_embeddings": 1}))
    src, coded = tmp_path / "in.txt", tmp_path / "in.nclz"
    src.write_bytes(TEXT.encode())
    coded.write_bytes(blobs["model"][1])
    for command, source in (("compress", src), ("decompress", coded)):
        assert cz.main([command, str(source), str(tmp_path / "out"), "--model", str(folder)]) == 1
        err = capsys.readouterr().err
        assert f"--model {folder}: " in err and "max_position_embeddings" in err and str(source) not in err, err
    assert _listing(tmp_path) == ["in.nclz", "in.txt", "model"]


def test_a_vocabulary_too_large_to_mix_is_refused_and_codes_with_the_model_alone(queue, tmp_path):
    """The mixer's bias per previous token is a (vocab, vocab) table: a model of more than
    context_mixing.MAX_VOCAB ids asked NumPy for vocab² × 8 bytes (32 GiB at 65,536) and ended in a
    MemoryError. It is refused naming vocab_size and pointing to the model alone, which codes it;
    the command line names --model."""
    from netcl_lite import context_mixing

    big, tok = _small(queue, context_mixing.MAX_VOCAB + 1, 300, seed=2)
    data = TEXT[:300].encode()
    with pytest.raises(ValueError, match=r"vocab_size=4,097 is more than the mixed mode takes .*mix=False"):
        cz.compress(data, big, tok)
    assert cz.decompress(cz.compress(data, big, tok, mix=False), big, tok) == data
    at_limit, _ = _small(queue, context_mixing.MAX_VOCAB, 300, seed=2)
    assert cz.decompress(cz.compress(data, at_limit, tok), at_limit, tok) == data
    folder = tmp_path / "big"
    big.save_pretrained(folder)
    tok.save(folder / "tokenizer.json")
    src = tmp_path / "in.txt"
    src.write_bytes(data)
    done = _cli("compress", src, tmp_path / "out.nclz", "--model", folder, cwd=tmp_path)
    stderr = done.stderr.decode()
    assert done.returncode == 1 and f"--model {folder}: " in stderr and "--model-only" in stderr, stderr[-600:]
    assert "Traceback" not in stderr and _listing(tmp_path) == ["big", "in.txt"]
    done = _cli("compress", src, tmp_path / "out.nclz", "--model", folder, "--model-only", cwd=tmp_path)
    assert done.returncode == 0, done.stderr.decode()[-600:]


@pytest.mark.skipif(not hasattr(os, "fork"), reason="file-size limits (ulimit -f) are POSIX's")
@pytest.mark.parametrize("limit", [1024, cz.MIN_FILE_SIZE_LIMIT - 1])
def test_a_small_file_size_limit_is_refused_before_the_compiler_can_abort(tmp_path, limit):
    """Under a file-size limit, a kernel build whose cache write is cut short aborts the process in
    OpenCL's compiler (exit 134, no message): the command line refuses the limit first, with exit 1."""
    import resource

    (tmp_path / "in.txt").write_bytes(b"some text\n")
    hard = resource.getrlimit(resource.RLIMIT_FSIZE)[1]
    done = subprocess.run([sys.executable, "-m", "netcl_lite.compression", "compress", "in.txt", "out.nclz"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=120,
                          preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_FSIZE, (limit, hard)))
    assert done.returncode == 1, (done.returncode, done.stderr[-1000:])
    assert "ulimit -f" in done.stderr and f"{limit:,} bytes" in done.stderr, done.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.txt"]


@pytest.mark.parametrize("name", ["SIGINT", "SIGTERM"])
def test_a_signal_right_after_the_exclusive_create_leaves_no_empty_file(model_dir, tmp_path, name):
    """Without hard links OUT is created with ``O_EXCL`` and written: a Ctrl-C or a kill that arrives
    just as the create returns (before the code could record that the file is its own) still
    leaves no OUT, run as ``python -m`` with the command line's handlers."""
    src = tmp_path / "in.txt"
    src.write_bytes(TEXT.encode())
    out = tmp_path / "out.nclz"
    patch = (f"def no_links(*a, **k):\n"
              f"    raise PermissionError(1, 'Operation not permitted')\n"
              f"os.link = no_links\n"
              f"real_open = os.open\n"
              f"def signalled_open(path, *a, **k):\n"
              f"    fd = real_open(path, *a, **k)\n"
              f"    if os.fspath(path) == {str(out)!r}:\n"
              f"        os.kill(os.getpid(), signal.{name})\n"
              f"        signal.pthread_sigmask(signal.SIG_SETMASK, [])   # delivered now, acted on at once\n"
              f"    return fd\n"
              f"os.open = signalled_open\n")
    done = compress_patched(patch, src, out, model_dir)
    assert done.returncode == 128 + getattr(signal, name), (done.returncode, done.stderr[-600:])
    assert _listing(tmp_path) == ["in.txt"]


def test_signals_held_defers_a_deferrable_handler_to_the_end_of_the_block():
    from netcl_lite import files

    seen = []

    @files.deferrable
    def handler(signum, frame):
        seen.append(signum)
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        with files.signals_held():
            assert handler(2, None) is None and seen == []     # held: recorded, not acted on
            seen.append("inside")
    assert seen == ["inside", 2]
    with pytest.raises(KeyboardInterrupt):
        handler(15, None)                                      # outside a block: at once
    assert seen == ["inside", 2, 15] and files._pending == [] and files._held == 0
