"""Inputs that once gave a wrong answer, a hang, a lost file or an unclear error: each now gives the
right result or a ``ValueError``/``TypeError`` that names the parameter or the file, within seconds."""

from __future__ import annotations

import json
import os
import struct
import tracemalloc

import numpy as np
import pytest

import netcl_lite as nl
from netcl_lite import ops, reference
from netcl_lite.nn.checkpoint import config_from_json, config_to_json
from netcl_lite.nn.lm import DecoderLM, LMConfig
from netcl_lite.nn.transformer import KVCache
from netcl_lite.optim import AdamW
from netcl_lite.text.bpe import BPETokenizer
from netcl_lite.train import TrainConfig, WindowLoader, evaluate, train

TINY = LMConfig(vocab_size=24, hidden_size=16, intermediate_size=24, num_hidden_layers=2, num_attention_heads=2,
                max_position_embeddings=16)


@pytest.fixture(scope="module")
def model():
    return DecoderLM(TINY)


@pytest.fixture(scope="module")
def checkpoint(model, tmp_path_factory):
    return model.save_pretrained(tmp_path_factory.mktemp("ckpt"))


# -- norms whose squares overflow float32 ---------------------------------------------------------

def test_rms_norm_of_huge_rows_is_scaled_not_zero():
    x = np.full((1, 32), 1e19, np.float32)
    np.testing.assert_allclose(ops.rms_norm(x, np.ones(32)), np.ones((1, 32)), rtol=1e-6)
    rng = np.random.default_rng(0)
    x = (rng.standard_normal((5, 37)) * np.array([[1e19], [3e37], [1.0], [1e-30], [2e25]])).astype(np.float32)
    w = rng.standard_normal(37).astype(np.float32)
    # one scaling by a power of two is exact: float32 rounding of a 37-term sum, ~1e-6 relative
    np.testing.assert_allclose(ops.rms_norm(x, w), reference.rms_norm(x.astype(np.float64), w), rtol=2e-5, atol=1e-6)


def test_layer_norm_of_huge_rows_is_scaled_not_zero():
    got = ops.layer_norm(np.array([[-3e19, 3e19]], np.float32), np.ones(2), np.zeros(2))
    np.testing.assert_allclose(got, [[-1.0, 1.0]], rtol=1e-6)
    rng = np.random.default_rng(1)
    x = (rng.standard_normal((3, 29)) * np.array([[3e19], [1e37], [2.0]]) + 1e18).astype(np.float32)
    w, b = rng.standard_normal(29).astype(np.float32), rng.standard_normal(29).astype(np.float32)
    np.testing.assert_allclose(ops.layer_norm(x, w, b), reference.layer_norm(x.astype(np.float64), w, b),
                               rtol=2e-5, atol=2e-5)


def _rms_norm_grad(x, w, g, eps=1e-6):
    """d(sum(rms_norm(x, w) * g))/dx in float64: r (g w) - x r³ mean(g w x), r = 1/rms(x)."""
    r = 1 / np.sqrt((x * x).mean(-1, keepdims=True) + eps)
    return r * g * w - x * r**3 * (g * w * x).mean(-1, keepdims=True)


def test_norm_gradients_of_huge_rows_are_scaled_not_zero():
    rng = np.random.default_rng(2)
    x = (rng.standard_normal((2, 24)) * 4e19).astype(np.float32)
    w, g = rng.standard_normal(24).astype(np.float32), rng.standard_normal((2, 24)).astype(np.float32)
    xn = nl.tensor(x)
    with nl.Tape():
        loss = nl.autograd.sum(nl.autograd.mul(nl.autograd.rms_norm(xn, nl.constant(w)), nl.constant(g)))
    loss.backward()
    want = _rms_norm_grad(x.astype(np.float64), w, g)
    got = xn.grad.numpy()
    assert np.abs(want).max() > 0
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4 * np.abs(want).max())


# -- checkpoints and config.json ------------------------------------------------------------------

def test_legacy_rope_type_key_is_applied_or_refused():
    values = config_to_json(TINY)
    values["rope_parameters"] = {"type": "linear", "factor": 2.0}
    with pytest.raises(ValueError, match="rope_type='linear' is not supported"):
        config_from_json(values)
    values["rope_parameters"] = {"rope_type": "default", "rope_theta": 10000.0, "factor": 2.0}
    with pytest.raises(ValueError, match=r"rope_parameters holds \['factor'\]"):
        config_from_json(values)


def _rewrite_config(checkpoint, tmp_path, **changes):
    out = tmp_path / "ckpt"
    out.mkdir()
    values = json.loads((checkpoint / "config.json").read_text())
    values.update(changes)
    (out / "config.json").write_text(json.dumps(values))
    (out / "model.safetensors").write_bytes((checkpoint / "model.safetensors").read_bytes())
    return out


@pytest.mark.parametrize("changes, message", [
    ({"num_hidden_layers": 10**6}, "holds 20 tensors; config.json"),
    ({"hidden_size": 10**9, "head_dim": None}, r"expected \(.*1000000000.*\) \(from config.json\)"),
    ({"vocab_size": 10**9}, r"expected \(1000000000, 16\) \(from config.json\)"),
])
def test_a_config_that_does_not_fit_the_weights_is_refused_before_allocating(checkpoint, tmp_path, changes, message):
    directory = _rewrite_config(checkpoint, tmp_path, **changes)
    tracemalloc.start()
    try:
        with pytest.raises(ValueError, match=message):
            DecoderLM.from_pretrained(directory)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 64 << 20, f"{peak >> 20} MiB allocated before the refusal"


def _header_with(checkpoint, dtype: str) -> bytes:
    data = (checkpoint / "model.safetensors").read_bytes()
    n = struct.unpack("<Q", data[:8])[0]
    header = json.loads(data[8:8 + n])
    name = "model.norm.weight"
    header[name]["dtype"] = dtype
    lo, hi = header[name]["data_offsets"]
    header[name]["data_offsets"] = [lo, lo + (hi - lo) // 4]
    raw = json.dumps(header).encode()
    return struct.pack("<Q", len(raw)) + raw + data[8 + n:]


def test_float8_weights_are_refused_by_name(checkpoint, tmp_path):
    directory = _rewrite_config(checkpoint, tmp_path)
    (directory / "model.safetensors").write_bytes(_header_with(checkpoint, "F8_E4M3"))
    with pytest.raises(ValueError, match="model.norm.weight has dtype F8_E4M3, which NumPy cannot hold; DecoderLM reads F16"):
        DecoderLM.from_pretrained(directory)


@pytest.mark.parametrize("text, message", [
    ("[" * 100_000 + "]" * 100_000, "nested too deeply"),
    ('{"vocab_size": ' + "9" * 5000 + "}", "not valid JSON"),
])
def test_config_json_that_python_cannot_read_names_the_file(checkpoint, tmp_path, text, message):
    directory = _rewrite_config(checkpoint, tmp_path)
    (directory / "config.json").write_text(text)
    with pytest.raises(ValueError, match=rf"config.json.*{message}"):
        DecoderLM.from_pretrained(directory)


@pytest.mark.parametrize("kind", ["directory", "fifo"])
def test_config_json_that_is_not_a_file_says_so(checkpoint, tmp_path, kind):
    directory = _rewrite_config(checkpoint, tmp_path)
    (directory / "config.json").unlink()
    if kind == "directory":
        (directory / "config.json").mkdir()
    else:
        os.mkfifo(directory / "config.json")
    with pytest.raises(ValueError, match=f"config.json is not a regular file \\(a {kind.replace('fifo', 'FIFO')}\\)"):
        DecoderLM.from_pretrained(directory)


# -- the model's calls ----------------------------------------------------------------------------

def test_loss_refuses_what_it_cannot_represent(model):
    ids = np.ones((1, 4), np.int64)
    with pytest.raises(ValueError, match="targets must lie in"):
        model.loss(ids, np.full((1, 4), 2**64 - 100, np.uint64))
    with pytest.raises(ValueError, match="ignore_index must lie in"):
        model.loss(ids, ids, ignore_index=2**32)
    with pytest.raises(ValueError, match="empty"):
        model.loss(np.zeros((1, 0), np.int64), np.zeros((1, 0), np.int64))


def test_forward_checks_its_cache_and_ids(model):
    with pytest.raises(TypeError, match="cache must be a KVCache"):
        model([[1, 2]], cache="x")
    wrong = KVCache(model.queue, layers=1, batch=1, n_kv_heads=2, head_dim=8, max_seq_len=16)
    with pytest.raises(ValueError, match="cache holds 1 layers"):
        model([[1, 2]], cache=wrong)
    with pytest.raises(ValueError, match="beyond int64"):
        model([[2**70]])


# -- optimizer and training -----------------------------------------------------------------------

def test_adamw_eps_that_float32_cannot_hold_is_refused(model):
    with pytest.raises(ValueError, match="eps=1e-50 is below float32's smallest normal"):
        AdamW(model.parameters(), eps=1e-50)


@pytest.mark.parametrize("bad, message", [(np.nan, "finite"), (-1.0, "negative")])
def test_optimizer_state_with_impossible_moments_is_refused(model, bad, message):
    opt = AdamW(model.parameters())
    state = opt.state_dict()
    name = next(iter(state["exp_avg_sq"]))
    state["exp_avg_sq"][name] = np.full_like(state["exp_avg_sq"][name], bad)
    with pytest.raises(ValueError, match=message):
        opt.load_state_dict(state)


@pytest.mark.parametrize("batch_size", [2.7, "3", True])
def test_window_loader_refuses_a_batch_size_that_is_not_an_int(batch_size):
    with pytest.raises(TypeError, match="batch_size must be an int"):
        WindowLoader(np.arange(100), batch_size=batch_size, block_size=4)


def test_evaluate_refuses_a_negative_window_count(model):
    with pytest.raises(ValueError, match="max_windows must be >= 1"):
        evaluate(model, np.arange(40) % 24, block_size=4, batch_size=2, max_windows=-1)


def test_train_never_replaces_a_users_file_or_folder(model, tmp_path):
    config = TrainConfig(max_steps=1, batch_size=1, block_size=4, warmup_steps=1, eval_windows=1)
    ids = np.arange(200) % 24
    notes = tmp_path / "notes.txt"
    notes.write_text("mine")
    with pytest.raises(ValueError, match="exists and is not a directory"):
        train(model, ids, ids, config, out_dir=notes, progress=False)
    assert notes.read_text() == "mine" and sorted(p.name for p in tmp_path.iterdir()) == ["notes.txt"]
    folder = tmp_path / "work"
    folder.mkdir()
    (folder / "draft.md").write_text("mine")
    with pytest.raises(ValueError, match=r"holds \['draft.md'\], which are not checkpoint files"):
        train(model, ids, ids, config, out_dir=folder, progress=False)
    assert (folder / "draft.md").read_text() == "mine"


# -- tokenizer files ------------------------------------------------------------------------------

def test_a_tiktoken_file_with_one_huge_token_is_refused_in_linear_time(tmp_path, monkeypatch):
    """Work counted, not timed: each split point tried slices (and hashes) the whole token, so trying
    every point of a huge token would cost the square of its length. Only points where both parts have
    a length some token has are tried: here none, for the huge token."""
    import base64

    from netcl_lite.text import byte_pair, ranks

    tried: dict[int, int] = {}
    points = byte_pair.split_points

    def counted(n, lengths):
        tried[n] = 0
        for k in points(n, lengths):
            tried[n] += 1
            yield k

    for module in (byte_pair, ranks):
        monkeypatch.setattr(module, "split_points", counted)
    for size in (160_000, 640_000):
        path = tmp_path / f"{size}.tiktoken"
        lines = [base64.b64encode(bytes([b])) + b" %d" % b for b in range(256)]
        path.write_bytes(b"\n".join([*lines, base64.b64encode(b"ab" * (size // 2)) + b" 256"]) + b"\n")
        with pytest.raises(ValueError, match=r"line 257: token b'abab.*\(%d bytes\)" % size):
            BPETokenizer.from_tiktoken_file(path, None)
        assert tried.get(size, 0) == 0, tried
    lengths = byte_pair.token_lengths([b"a", b"ab", b"x" * 640_000])
    assert list(points(640_000, lengths)) == [] and list(points(3, lengths)) == [1, 2]


def test_a_model_file_with_a_huge_pattern_is_refused_at_once(tmp_path):
    path = tmp_path / "tok.json"
    BPETokenizer().save(path)
    doc = json.loads(path.read_text())
    doc["pattern"] = "a|" * 5_000_000
    path.write_text(json.dumps(doc))
    with pytest.raises(ValueError, match="pre-split pattern is 10000000 characters long"):
        BPETokenizer.load(path)          # refused before the regex compiles (which would take minutes)


def test_tokenizer_json_added_token_flags_must_be_booleans(tmp_path):
    path = tmp_path / "tokenizer.json"
    BPETokenizer(special_tokens={"<|end|>": 256}).save_tokenizer_json(path)
    doc = json.loads(path.read_text())
    doc["added_tokens"][0]["normalized"] = [False]
    path.write_text(json.dumps(doc))
    with pytest.raises(ValueError, match=r"added_tokens\[0\].normalized: \[False\] is not supported"):
        BPETokenizer.from_tokenizer_json(path)



@pytest.mark.parametrize("shape", [(2**40, 2**40), (2**62,), (3, 2**31), (1, 2**40, 0, 2**40)])
def test_a_tensor_beyond_the_devices_largest_buffer_is_refused_naming_shape_bytes_and_limit(shape):
    """A buffer larger than ``CL_DEVICE_MAX_MEM_ALLOC_SIZE`` is a ValueError before any allocation
    (PoCL's CPU driver would fail in mmap with a bare OSError); a shape whose element count passes
    2**64 is refused the same way (Python ints never wrap); an empty shape with huge sides is fine."""
    queue = nl.device().queue
    largest = queue.device.max_mem_alloc_size
    nbytes = int(np.prod(np.array(shape, dtype=object))) * 4
    if nbytes == 0:
        assert nl.Tensor.empty(queue, shape).shape == shape
        return
    for make in (nl.Tensor.empty, nl.Tensor.zeros):
        with pytest.raises(ValueError, match=rf"float32 tensor of shape \({shape[0]},.*needs {nbytes:,} bytes, "
                                             rf"more than the device's largest buffer \({largest:,} bytes"):
            make(queue, shape)


def test_a_kv_cache_beyond_the_devices_memory_is_refused_before_allocating():
    """A layer's buffer over the largest one is refused as a tensor is; each layer's buffer may fit
    while all of them together do not: refused up front, naming the cache and the device's memory."""
    queue = nl.device().queue
    largest, total = queue.device.max_mem_alloc_size, queue.device.global_mem_size
    head_dim = 64
    max_seq_len = largest // (4 * head_dim)                              # one buffer: exactly the largest
    with pytest.raises(ValueError, match=r"more than the device's largest buffer"):
        KVCache(queue, layers=1, batch=1, n_kv_heads=1, head_dim=head_dim, max_seq_len=max_seq_len + 1)
    layers = total // largest // 2 + 1                                   # 2·layers buffers: more than memory
    with pytest.raises(ValueError, match=rf"a KV cache of {layers} layers .*more than the device's memory "
                                         rf"\({total:,} bytes"):
        KVCache(queue, layers=layers, batch=1, n_kv_heads=1, head_dim=head_dim, max_seq_len=max_seq_len)
