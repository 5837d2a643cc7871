"""netcl_lite.compression: any bytes round trip, the header refuses what it cannot decode, the
bits do not depend on the compute-unit count, and the command line. Most tests use a small
untrained model (its predictions are poor, which the round trip does not care about); the
size check against the cross-entropy uses Chapter 9's trained model."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from netcl_lite import compression as cz
from netcl_lite import ngram as ng
from netcl_lite.nn import DecoderLM, LMConfig
from netcl_lite.text import BPETokenizer

TEXT = ("The tokenizer splits text into pieces; the model predicts each piece from the ones before it.\n"
        "A range coder turns those predictions into bits: a likely piece costs few.\r\n") * 8


@pytest.fixture(scope="module")
def tiny(queue):
    """(model, tokenizer, primer ids): a 300-token BPE, a one-layer model over a 16-token window."""
    tok = BPETokenizer()
    tok.train_from_iterator([TEXT], 300, progress=False)
    config = LMConfig(vocab_size=300, hidden_size=16, intermediate_size=32, num_hidden_layers=1,
                      num_attention_heads=2, num_key_value_heads=1, max_position_embeddings=16)
    primer = np.asarray(tok.encode_ordinary(TEXT[:400]), np.int64)
    return DecoderLM(config, queue=queue, seed=1), tok, primer


HARD = {
    "empty": b"",
    "one byte": b"a",
    "not utf-8": b"caf\xe9 \xff\xfe\xc3(\xed\xa0\x80 end",
    "nul": b"\x00" * 40 + b"text\x00between\x00",
    "specials": b"<|endoftext|> <|fim_prefix|><|endoftext|>",
    "crlf": b"line one\r\nline two\r\n\r\n\rlone cr\n",
    "random": bytes(np.random.default_rng(3).integers(0, 256, 2000, dtype=np.uint8)),
    "text": TEXT.encode(),
    "long text": (TEXT * 12).encode(),
}


@pytest.mark.parametrize("mix", [False, True])
@pytest.mark.parametrize("name", list(HARD))
@pytest.mark.slow
def test_hard_inputs_round_trip_and_never_grow_beyond_the_stored_header(tiny, name, mix):
    model, tok, primer = tiny
    data = HARD[name]
    blob = cz.compress(data, model, tok, mix=mix, primer=primer)
    assert cz.decompress(blob, model, tok, primer=primer) == data
    assert len(blob) <= len(data) + cz.STORED_HEADER_BYTES
    mode = blob[5]
    if name in ("text", "long text"):     # the untrained model alone saves little; the counts see the repeats
        assert mode == (cz.MIXED if mix else cz.MODEL) and len(blob) < len(data) * (0.5 if mix else 1)
    if name in ("empty", "random"):
        assert mode == cz.STORED and len(blob) == len(cz._header(cz.STORED, data))


def test_special_token_strings_are_coded_as_ordinary_text(tiny):
    model, _, _ = tiny
    tok = BPETokenizer(special_tokens={"<|endoftext|>": 299})
    ids = cz.tokenize(b"a<|endoftext|>b", tok)
    assert 299 not in ids.tolist() and tok.decode_bytes(ids.tolist()) == b"a<|endoftext|>b"
    ids = cz.tokenize(b"\xff\x00<\xc3", tok)
    assert ids.tolist() == [255, 0, 60, 195]        # bytes that are not UTF-8 become byte tokens


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.binary(max_size=300) | st.text(max_size=200).map(lambda s: s.encode("utf-8")), mix=st.booleans())
def test_any_bytes_round_trip(tiny, data, mix):
    model, tok, primer = tiny
    blob = cz.compress(data, model, tok, mix=mix, primer=primer)
    assert len(blob) <= len(data) + cz.STORED_HEADER_BYTES
    assert cz.decompress(blob, model, tok, primer=primer) == data


@pytest.mark.slow
def test_many_streams_and_window_refills_round_trip(tiny, monkeypatch):
    """Streams of unequal length (the last steps code fewer), each refilling its window many times."""
    model, tok, primer = tiny
    monkeypatch.setattr(cz, "MIN_SEGMENT", 130)
    data = (TEXT * 5).encode()
    n_tokens = cz.tokenize(data, tok).size
    blob = cz.compress(data, model, tok, primer=primer)
    streams = cz.stream_count(cz.read_header(blob)["tokens"])
    assert streams == min(cz.STREAMS, n_tokens // 130) > 1 and n_tokens % streams
    assert cz.decompress(blob, model, tok, primer=primer) == data


def test_the_ngram_adds_every_coded_token_and_its_distributions_are_normalized():
    ids = np.array([1, 2, 3, 1, 2, 3, 1, 2, 4])
    ngram = ng.NGram(ids, vocab=6, streams=2, orders=3)
    p, reached, total = ngram.predict()
    assert np.allclose(p.sum(axis=1), 1) and (p > 0).all() and reached.tolist() == [0, 0]
    ngram.update(np.array([1, 5]), np.array([True, True]))
    ngram.update(np.array([2, 5]), np.array([True, True]))
    p, reached, total = ngram.predict()
    # stream 0 saw "1 2": twice followed by 3 and once by 4 in the primer; stream 1 saw "5 5",
    # whose "5" was followed once by a coded 5 (a coded token counts ADDED_WEIGHT)
    assert reached.tolist() == [2, 1] and total.tolist() == [3, ng.ADDED_WEIGHT]
    assert p[0].argmax() == 3 and p[1].argmax() == 5
    assert np.allclose(p.sum(axis=1), 1) and (p > 0).all()
    d2 = ng.DISCOUNT[2]
    assert p[0, 3] > (2 - d2) / 3 and p[0, 4] > (1 - d2) / 3
    assert len(ngram.snapshots) == len(ng.MIX_ORDERS) + 1
    assert all(np.allclose(s.sum(axis=1), 1) and (s > 0).all() for s in ngram.snapshots)
    cache = ngram.snapshots[-1]        # the coded tokens alone: stream 1's "5" was followed by 5
    assert cache[1, 5] > 0.5 and cache[0, 3] < p[0, 3]


def _flip(blob: bytes, at: int) -> bytes:
    return blob[:at] + bytes([blob[at] ^ 0x10]) + blob[at + 1:]


@pytest.mark.slow
def test_truncated_corrupted_and_foreign_blobs_raise_value_error_saying_which(tiny, queue, monkeypatch):
    model, tok, primer = tiny
    data = (TEXT * 2).encode()
    blob = cz.compress(data, model, tok, primer=primer)
    assert blob[5] == cz.MIXED
    header = cz.read_header(blob)["end"]
    cases = [
        (blob[:-4], "truncated"), (blob[:-3], "truncated"), (blob[:header + 2], "truncated"),
        (blob[:header - 1], "truncated"), (blob[:10], "truncated"), (blob[:3], "truncated"),
        (blob + b"\0\0\0\0", "corrupted"), (_flip(blob, header + 5), "corrupted"),
        (_flip(blob, len(blob) - 1), "corrupted"), (_flip(blob, 8), "corrupted"), (_flip(blob, header - 6), "corrupted"),
        (b"XXXX" + blob[4:], "not netcl_lite.compression output"), (blob[:4] + b"\x09" + blob[5:], "format version 9"),
        (blob[:4] + b"\x02" + blob[5:], "format version 2"),
    ]
    for bad, message in cases:
        with pytest.raises(ValueError, match=message):
            cz.decompress(bad, model, tok, primer=primer)
    other = DecoderLM(model.config, queue=queue, seed=2)
    with pytest.raises(ValueError, match="another model"):
        cz.decompress(blob, other, tok, primer=primer)
    other_tok = BPETokenizer()
    other_tok.train_from_iterator([TEXT[::-1]], 300, progress=False)
    with pytest.raises(ValueError, match="another tokenizer"):
        cz.decompress(blob, model, other_tok, primer=primer)
    with pytest.raises(ValueError, match="primer"):
        cz.decompress(blob, model, tok, primer=primer[:-1])
    with monkeypatch.context() as m:           # another compiler target, vector width, PoCL, ...
        m.setattr(cz, "arithmetic", lambda model: "gpu another-target 8 lanes")
        with pytest.raises(ValueError, match="other arithmetic"):
            cz.decompress(blob, model, tok, primer=primer)
    with monkeypatch.context() as m:           # other streams, another mixer's code
        m.setattr(cz, "STREAMS", 16)
        with pytest.raises(ValueError, match="another coder"):
            cz.decompress(blob, model, tok, primer=primer)
    stored = cz.compress(b"\xff\xfe", model, tok, primer=primer)
    with pytest.raises(ValueError, match="truncated"):
        cz.decompress(stored[:-1], model, tok)
    with pytest.raises(ValueError, match="corrupted"):
        cz.decompress(_flip(stored, len(stored) - 1), model, tok)


def test_the_header_takes_31_bytes_for_a_coded_input_of_up_to_2_mib(tiny):
    """The coded header's fields and their sizes: the stream layout and the refills are not in it."""
    model, tok, primer = tiny
    data = (TEXT * 2).encode()
    blob = cz.compress(data, model, tok, primer=primer)
    fields = cz.read_header(blob)
    assert fields["end"] == len(cz.MAGIC) + 2 + 2 + 4 + 2 + 6 + len(cz.PARTS) + 4      # 2-byte varints here
    assert fields["length"] == len(data) and fields["tokens"] == cz.tokenize(data, tok).size
    big = cz._header(cz.MIXED, bytes(2**21 - 1), 2**21 - 1, cz._parts(cz.MIXED, model, tok, primer, None), b"")
    assert cz.read_header(big)["end"] == 31


def test_arguments_are_checked(tiny):
    model, tok, primer = tiny
    with pytest.raises(TypeError, match="data must be bytes"):
        cz.compress("text", model, tok)
    with pytest.raises(TypeError, match="model must be"):
        cz.compress(b"x", "model", tok)
    with pytest.raises(TypeError, match="tokenizer must be"):
        cz.compress(b"x", model, None)
    with pytest.raises(TypeError, match="mix must be a bool"):
        cz.compress(b"x", model, tok, mix=1)
    with pytest.raises(ValueError, match="primer must be"):
        cz.compress(b"xyz", model, tok, primer=np.array([[1, 2]]))
    with pytest.raises(ValueError, match="beyond the model's vocab_size"):
        cz.compress(b"x", model, _big_tok())
    with pytest.raises(TypeError, match="blob must be bytes"):
        cz.decompress("blob", model, tok)
    assert cz.compress(bytearray(b"ab"), model, tok, primer=primer) == cz.compress(memoryview(b"ab"), model, tok,
                                                                                    primer=primer)


def _big_tok() -> BPETokenizer:
    tok = BPETokenizer()
    tok.train_from_iterator([TEXT * 3], 320, progress=False)
    return tok


# -- the same bits with one compute unit and with two ---------------------------------------------------

_CHILD = """
import hashlib, json, sys
import numpy as np
import netcl_lite as nl
from netcl_lite import capstone, compression as cz
from netcl_lite.nn import DecoderLM, KVCache, LMConfig
from netcl_lite.text import BPETokenizer

folder, jobs = sys.argv[1], sys.argv[2:]
model = DecoderLM.from_pretrained(folder)
tok = BPETokenizer.load(folder + "/tokenizer.json")
primer = np.load(folder + "/primer.npy")
c = model.config
cache = KVCache(model.queue, c.num_hidden_layers, 5, c.num_key_value_heads, c.head_dim, c.max_position_embeddings)
model.hidden(np.arange(60).reshape(5, 12) % c.vocab_size, cache).numpy()
logits = [model.decode_step(np.arange(5) * (i + 7) % c.vocab_size, cache) for i in range(6)]
for mode, inp, out in zip(jobs[::3], jobs[1::3], jobs[2::3]):
    data = open(inp, "rb").read()
    if mode == "decompress":
        result = cz.decompress(data, model, tok, primer=primer)
    else:
        result = cz.compress(data, model, tok, primer=primer, adapt=mode == "adapt")
    open(out, "wb").write(result)
print(json.dumps({"units": model.queue.device.max_compute_units,
                  "logits": hashlib.sha256(np.stack(logits).tobytes()).hexdigest()}))
"""


def _child(threads: int, folder, *jobs) -> dict:
    """Run ``(mode, in, out)`` jobs in order in one process with ``threads`` PoCL compute units."""
    args = [folder, *(str(x) for job in jobs for x in job)]
    env = dict(os.environ, POCL_MAX_PTHREAD_COUNT=str(threads))
    proc = subprocess.run([sys.executable, "-c", _CHILD, *map(str, args)], env=env, capture_output=True, text=True,
                          timeout=900)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


@pytest.mark.slow
def test_a_file_compressed_with_one_compute_unit_decompresses_with_two_and_the_reverse(queue, tmp_path):
    """Chapter 9's model shape (random weights): decode logits after a refill, and the whole
    compressed file, mixed and mixed with dynamic evaluation, are the same bits with one PoCL
    thread as with two, and each side decodes the other's file."""
    import pyopencl as cl

    from netcl_lite import capstone

    if queue.device.platform.name != "Portable Computing Language" or not queue.device.type & cl.device_type.CPU:
        pytest.skip("POCL_MAX_PTHREAD_COUNT sets the compute units of PoCL's CPU driver only")
    tok = BPETokenizer()
    tok.train_from_iterator([TEXT], 400, progress=False)
    model = DecoderLM(LMConfig(vocab_size=512, **capstone.MODEL), queue=queue, seed=3)
    folder = tmp_path / "model"
    model.save_pretrained(folder)
    tok.save(folder / "tokenizer.json")
    np.save(folder / "primer.npy", np.asarray(tok.encode_ordinary(TEXT), np.int64))
    data = tmp_path / "data"
    # ~10 kB: 3,000 tokens, ~90 steps of each of the 32 streams, dynamic evaluation's chunks among them
    data.write_bytes((TEXT * 7).encode() + bytes(range(256)))
    modes = {"compress": cz.MIXED, "adapt": cz.MIXED | cz.ADAPTING}
    # three processes: one thread codes both modes; two threads code both and decode one thread's
    # files; one thread decodes two threads' files
    one = _child(1, folder, *((mode, data, tmp_path / f"{mode}1") for mode in modes))
    two = _child(2, folder, *((mode, data, tmp_path / f"{mode}2") for mode in modes),
                 *(("decompress", tmp_path / f"{mode}1", tmp_path / f"{mode}-d2") for mode in modes))
    _child(1, folder, *(("decompress", tmp_path / f"{mode}2", tmp_path / f"{mode}-d1") for mode in modes))
    assert (one["units"], two["units"]) == (1, 2) and one["logits"] == two["logits"]
    for mode, coded in modes.items():
        assert (tmp_path / f"{mode}1").read_bytes() == (tmp_path / f"{mode}2").read_bytes(), mode
        assert (tmp_path / f"{mode}1").read_bytes()[5] == coded
        assert (tmp_path / f"{mode}-d1").read_bytes() == (tmp_path / f"{mode}-d2").read_bytes() == data.read_bytes()


# -- the command line -------------------------------------------------------------------------------------

def _cli(*args, cwd) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "netcl_lite.compression", *map(str, args)], cwd=cwd,
                          capture_output=True, text=True, timeout=600)


@pytest.mark.slow
def test_the_command_line_round_trips_a_file_and_refuses_to_overwrite(tiny, tmp_path):
    model, tok, _ = tiny
    folder = tmp_path / "model"
    model.save_pretrained(folder)
    tok.save(folder / "tokenizer.json")
    src = tmp_path / "in.txt"
    src.write_bytes(HARD["text"] + HARD["not utf-8"])
    done = _cli("compress", src, tmp_path / "out.nclz", "--model", folder, "--model-only", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    blob = (tmp_path / "out.nclz").read_bytes()
    assert blob[5] == cz.MODEL and len(blob) < src.stat().st_size
    done = _cli("decompress", tmp_path / "out.nclz", tmp_path / "back.txt", "--model", folder, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "back.txt").read_bytes() == src.read_bytes()
    refused = _cli("compress", src, tmp_path / "back.txt", "--model", folder, cwd=tmp_path)
    assert refused.returncode != 0 and "file exists" in refused.stderr
    assert (tmp_path / "back.txt").read_bytes() == src.read_bytes()
    corrupt = tmp_path / "bad.nclz"
    corrupt.write_bytes(blob[:-3])
    failed = _cli("decompress", corrupt, tmp_path / "never.txt", "--model", folder, cwd=tmp_path)
    assert failed.returncode != 0 and "truncated" in failed.stderr and not (tmp_path / "never.txt").exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["back.txt", "bad.nclz", "in.txt", "model", "out.nclz"]


# -- the trained model ---------------------------------------------------------------------------------------

@pytest.mark.slow
def test_the_model_only_coding_costs_within_1_percent_of_the_models_cross_entropy(queue):
    """On 40 kB of the validation split: the payload's bits per byte against
    :func:`capstone.bits_per_byte` with the coder's window (64 positions, refilled to keep 32)."""
    from netcl_lite import capstone

    run = capstone.run(queue)
    data = run.data.validation_text.encode()[:40_000]
    blob = cz.compress(data, run.model, run.tokenizer, mix=False)
    assert blob[5] == cz.MODEL and cz.decompress(blob, run.model, run.tokenizer) == data
    payload = len(blob) - cz.read_header(blob)["end"]
    ids = cz.tokenize(data, run.tokenizer)
    ce = capstone.bits_per_byte(run.model, ids, run.tokenizer, run.model.config.max_position_embeddings,
                                stride=run.model.config.max_position_embeddings - cz.KEEP)
    assert abs(8 * payload / len(data) / ce - 1) < 0.01
    assert 8 * len(blob) / len(data) < 1.02 * ce      # with the header


@pytest.mark.slow
def test_random_bytes_stop_coding_early_and_are_stored(tiny, monkeypatch):
    """Once coding has cost more than GIVE_UP_FRACTION of storing (by GIVE_UP_BITS), compress stores the input
    instead of running the model over all of it."""
    model, tok, primer = tiny
    data = bytes(np.random.default_rng(4).integers(0, 256, 200_000, dtype=np.uint8))
    steps = []
    probabilities = cz._Predictor.probabilities
    monkeypatch.setattr(cz._Predictor, "probabilities", lambda self: steps.append(1) or probabilities(self))
    blob = cz.compress(data, model, tok, primer=primer)
    assert blob[5] == cz.STORED and len(blob) == len(data) + cz.STORED_HEADER_BYTES
    # the mix codes them at about 8 bits a byte, 0.4 over 95% of 8: the excess passes GIVE_UP_BITS
    # after about 20 kB, ~650 steps
    assert len(steps) < cz.tokenize(data, tok).size // cz.STREAMS // 4
    assert cz.decompress(blob, model, tok) == data


def test_the_mixer_weights_stay_finite_when_a_part_keeps_missing():
    """A part that gives the coded tokens almost nothing, step after step, in one bucket: its
    weight falls to MIN_WEIGHT and no further, the others stay finite, the mixture a distribution."""
    mixer = ng.Mixer(ng.ORDERS)
    rng = np.random.default_rng(0)
    b, v, parts = 64, 50, len(ng.MIX_ORDERS) + 3
    for step in range(300):
        good = rng.dirichlet(np.ones(v), size=b)
        bad = np.full((b, v), 1e-300)
        bad[:, 0] = 1.0                                      # all its mass on a token never coded
        tokens = rng.integers(1, v, b)
        mixed = mixer.mix([bad] + [good] * (parts - 1), np.zeros(b, np.int64), np.full(b, 2.0 ** 40))
        with np.errstate(all="raise"):
            mixer.update(tokens, mixed, np.ones(b, bool))
    assert np.isfinite(mixer.w).all() and (mixer.w >= ng.MIN_WEIGHT * 0.99).all()
    assert np.allclose(mixer.w.sum(axis=2), 1) and mixer.w[0, -1, 0] < 2 * ng.MIN_WEIGHT
    assert np.allclose(mixed.sum(axis=1), 1)
