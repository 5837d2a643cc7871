"""netcl_lite.adaptation: dynamic evaluation scores first (a token's distribution never depends
on that token, and an update reaches other streams only after its chunk), gives the same
probabilities and weights twice and with one or two PoCL threads, changes only the weights it
is told to, leaves the caller's model as it was, learns (repeated text codes in fewer bits),
and refuses bad input with a message naming the parameter.

Most tests use a small untrained model over a 16-token window; the compute-unit test uses
Chapter 9's model shape (random weights) with 32 streams of 64-token windows, the shapes the
compressor adapts with."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys

import numpy as np
import pytest

from netcl_lite import autograd as ag
from netcl_lite import compression as cz
from netcl_lite.adaptation import IGNORE, AdaptConfig, Adapter, adapted_names, copy_model
from netcl_lite.dynamic_evaluation import coded_bits
from netcl_lite.nn import DecoderLM, KVCache, LMConfig
from netcl_lite.testing import assert_close
from netcl_lite.text import BPETokenizer

TEXT = ("The tokenizer splits text into pieces; the model predicts each piece from the ones before it.\n"
        "A range coder turns those predictions into bits: a likely piece costs few.\n") * 8


@pytest.fixture(scope="module")
def tiny(queue):
    """(model, tokenizer, ids): a 300-token BPE, a two-layer model over a 16-token window, and
    ids of the text repeated, as many as the compressor codes in two streams."""
    tok = BPETokenizer()
    tok.train_from_iterator([TEXT], 300, progress=False)
    config = LMConfig(vocab_size=300, hidden_size=16, intermediate_size=32, num_hidden_layers=2,
                      num_attention_heads=2, num_key_value_heads=1, max_position_embeddings=16)
    ids = np.asarray(tok.encode_ordinary(TEXT * 9), np.int64)[:2 * cz.MIN_SEGMENT + 76]
    assert ids.size // cz.MIN_SEGMENT == 2                  # the compressor codes it as two streams
    return DecoderLM(config, queue=queue, seed=1), tok, ids


def weights(model) -> dict:
    return {n: p.numpy().copy() for n, p in model.parameters().items()}


def digest(arrays) -> str:
    h = hashlib.sha256()
    for a in arrays:
        h.update(np.ascontiguousarray(a).tobytes())
    return h.hexdigest()


def distributions(model, tok, ids, config, train_ids=None):
    """Every step's distributions (one row per active stream) with an Adapter driven the way the
    compressor's predictor drives it, and the adapted model's weights at the end."""
    streams = int(max(1, min(cz.STREAMS, ids.size // cz.MIN_SEGMENT)))
    lengths = cz.segments(ids.size, streams)
    offsets = np.concatenate([[0], np.cumsum(lengths)[:-1]])
    twin = copy_model(model)
    predictor = cz.make_predictor(twin, tok, lengths, cz.kept_positions(model), False, np.zeros(0, np.int64))
    adapter = Adapter(twin, streams, int(predictor.next_input[0]), config, train_ids=train_ids, copy=False)
    rows = []
    for step in range(int(lengths[0])):
        p = predictor.probabilities()
        rows.append(p.copy())
        tokens = ids[offsets[:p.shape[0]] + step]
        predictor.advance(tokens)
        if step < lengths[0] - 1 and adapter.observe(tokens) and config.refill:
            adapter.refill(predictor.cache, predictor.window)
    return rows, weights(twin), adapter


# -- score first -------------------------------------------------------------------------------------

@pytest.mark.parametrize("optimizer", ["sgd", "rms", "adam"])
def test_a_token_never_changes_its_own_distribution_and_reaches_other_streams_only_after_its_chunk(tiny,
                                                                                                  optimizer):
    model, tok, ids = tiny
    config = AdaptConfig(chunk=8, lr=3e-2 if optimizer == "sgd" else 1e-3, optimizer=optimizer, steps=2)
    changed = ids.copy()
    lengths = cz.segments(ids.size, 2)
    step = 19                                       # inside the chunk of steps 16..23
    changed[lengths[0] + step] = (ids[lengths[0] + step] + 1) % 300      # stream 1's token at that step
    a, _, adapter = distributions(model, tok, ids, config, train_ids=ids)
    b, _, _ = distributions(model, tok, changed, config, train_ids=ids)
    assert adapter.updates == (len(a) - 1) // 8
    for s in range(step + 1):                       # up to and including the changed token's own step
        assert np.array_equal(a[s], b[s]), f"step {s}: a later token changed an earlier distribution"
    chunk_end = 24                                  # the update that trains on it runs after step 23
    for s in range(step + 1, chunk_end):
        assert np.array_equal(a[s][0], b[s][0]), f"step {s}: stream 0 saw stream 1's token before the update"
    assert not np.array_equal(a[chunk_end][0], b[chunk_end][0]), "the update did not carry the token to stream 0"


def test_the_same_tokens_give_the_same_distributions_and_weights_twice(tiny):
    model, tok, ids = tiny
    config = AdaptConfig(chunk=6, optimizer="rms", lr=1e-3, decay=0.05, steps=2)
    a, wa, _ = distributions(model, tok, ids, config, train_ids=ids)
    b, wb, _ = distributions(model, tok, ids, config, train_ids=ids)
    assert digest(a) == digest(b)
    assert digest(wa[n] for n in sorted(wa)) == digest(wb[n] for n in sorted(wb))
    assert digest(wa[n] for n in sorted(wa)) != digest(p.numpy() for _, p in sorted(model.parameters().items()))


_CHILD = r"""
import hashlib, json, sys
import numpy as np
from netcl_lite import capstone
from netcl_lite import compression as cz
from netcl_lite.adaptation import AdaptConfig, Adapter
from netcl_lite.nn import DecoderLM, LMConfig

model = DecoderLM(LMConfig(vocab_size=512, **capstone.MODEL), seed=3)
rng = np.random.default_rng(5)
ids = rng.integers(0, 512, 32 * 40)
config = AdaptConfig(chunk=16, steps=2, optimizer=sys.argv[1], lr=1e-3, decay=0.01, ms_batches=2)
adapter = Adapter(model, 32, 7, config, train_ids=rng.integers(0, 512, 5000))
c = model.config
cache = cz.KVCache(model.queue, c.num_hidden_layers, 32, c.num_key_value_heads, c.head_dim, 64)
window = np.full((32, 64), 7)
next_input = np.full(32, 7)
logits = []
for step in range(40):
    at = cache.length(0)
    window[:, at] = next_input
    logits.append(adapter.model.decode_step(next_input, cache))
    next_input = ids[step * 32:(step + 1) * 32]
    if adapter.observe(next_input):
        adapter.refill(cache, window)
def weights(m):
    h = hashlib.sha256()
    for name, p in sorted(m.parameters().items()):
        h.update(p.numpy().tobytes())
    return h.hexdigest()

print(json.dumps({"units": model.queue.device.max_compute_units, "updates": adapter.updates,
                  "moved": weights(adapter.model) != weights(model), "weights": weights(adapter.model),
                  "logits": hashlib.sha256(np.stack(logits).tobytes()).hexdigest()}))
"""


@pytest.mark.slow
@pytest.mark.parametrize("optimizer", ["rms", "adam"])
def test_adapted_weights_and_logits_have_the_same_bits_on_one_and_two_compute_units(queue, optimizer):
    """Chapter 9's model shape, 32 streams, two updates of two gradient steps on 64-token windows:
    the weights after them and every decoding step's logits are the same bits with one PoCL
    thread as with two, each in a fresh process."""
    import pyopencl as cl

    if queue.device.platform.name != "Portable Computing Language" or not queue.device.type & cl.device_type.CPU:
        pytest.skip("POCL_MAX_PTHREAD_COUNT sets the compute units of PoCL's CPU driver only")
    runs = []
    for threads in ("1", "2"):
        env = dict(os.environ, POCL_MAX_PTHREAD_COUNT=threads)
        proc = subprocess.run([sys.executable, "-c", _CHILD, optimizer], env=env, capture_output=True, text=True,
                              timeout=900)
        assert proc.returncode == 0, proc.stderr[-3000:]
        runs.append(json.loads(proc.stdout.strip().splitlines()[-1]))
    assert (runs[0].pop("units"), runs[1].pop("units")) == (1, 2)
    assert runs[0]["updates"] == 2 and runs[0]["moved"]
    assert runs[0] == runs[1]


# -- what changes and what does not ------------------------------------------------------------------

def test_the_callers_model_is_never_changed(tiny):
    model, tok, ids = tiny
    before = weights(model)
    fingerprint = cz.model_fingerprint(model)
    bits, info = coded_bits(model, tok, ids[:700], AdaptConfig(chunk=4, optimizer="sgd", lr=0.1))
    assert info["updates"] > 0
    assert cz.model_fingerprint(model) == fingerprint
    assert all(np.array_equal(before[n], a) for n, a in weights(model).items())
    plain, _ = coded_bits(model, tok, ids[:700])
    assert not np.array_equal(bits, plain)


def test_an_adapter_on_the_model_itself_restores_the_trained_weights(tiny):
    model, tok, ids = tiny
    before = weights(model)
    with pytest.raises(RuntimeError, match="stop"):
        with Adapter(model, 2, 0, AdaptConfig(chunk=2, optimizer="sgd", lr=0.1), copy=False) as adapter:
            for i in range(4):
                adapter.observe(ids[2 * i:2 * i + 2])
            assert adapter.model is model and adapter.updates == 2
            assert not np.array_equal(model.parameters()["norm.weight"].numpy(), before["norm.weight"])
            raise RuntimeError("stop")
    assert all(np.array_equal(before[n], a) for n, a in weights(model).items())
    with pytest.raises(ValueError, match="restored"):
        adapter.observe(ids[:2])


@pytest.mark.parametrize("adapted", ["norms", "no-embedding", "last-1", "last-2", "all"])
def test_only_the_chosen_weights_change(tiny, adapted):
    model, _, ids = tiny
    adapter = Adapter(model, 2, 0, AdaptConfig(chunk=3, optimizer="sgd", lr=0.1, adapted=adapted))
    for i in range(3):
        adapter.observe(ids[2 * i:2 * i + 2])
    names = set(adapted_names(model, adapted))
    assert names and adapter.updates == 1
    before, after = weights(model), weights(adapter.model)
    moved = {n for n in before if not np.array_equal(before[n], after[n])}
    assert moved == names
    expected = {"norms": 2 * 2 + 1, "no-embedding": 9 * 2 + 1, "last-1": 9 + 1, "last-2": 9 * 2 + 1, "all": 9 * 2 + 2}
    assert len(names) == expected[adapted]


def test_the_training_windows_hold_each_streams_last_tokens_and_count_only_new_targets(queue):
    config = LMConfig(vocab_size=50, hidden_size=8, intermediate_size=16, num_hidden_layers=1,
                      num_attention_heads=2, num_key_value_heads=1, max_position_embeddings=4)
    model = DecoderLM(config, queue=queue)
    adapter = Adapter(model, 2, 9, AdaptConfig(chunk=3, optimizer="sgd"))
    steps = [[10, 20], [11, 21], [12]]                       # stream 1 is done after two tokens
    for tokens in steps[:2]:
        assert not adapter.observe(np.array(tokens))
    assert adapter.observe(np.array(steps[2]))
    # first update: stream 0 holds [9, 10, 11, 12], stream 1 [9, 20, 21]; w = 3 positions
    # (chunk 3, window 4 but only 3 tokens coded), k = 1 window per stream
    adapter.trained_upto[:] = 1                               # as before that update
    x, y = adapter.batch()
    assert x.tolist() == [[9, 10, 11], [9, 9, 20]]
    assert y.tolist() == [[10, 11, 12], [IGNORE, 20, 21]]
    adapter.trained_upto = adapter.seen.copy()
    for tokens in ([13, 22], [14, 23], [15, 24]):
        adapter.observe(np.array(tokens))
    assert adapter.updates == 2
    adapter.trained_upto = np.array([4, 3])                 # as the first update left it
    x, y = adapter.batch()                                   # w = 4, k = 1: the last 4 inputs
    assert x.tolist() == [[11, 12, 13, 14], [20, 21, 22, 23]]
    assert y.tolist() == [[IGNORE, 13, 14, 15], [IGNORE, 22, 23, 24]]
    wide = Adapter(model, 2, 9, AdaptConfig(chunk=6, optimizer="sgd", window=2, targets="window"))
    for i in range(6):
        wide.observe(np.array([10 + i, 20 + i]))
    wide.trained_upto[:] = 7                                 # "window" counts every target anyway
    x, y = wide.batch()                                      # k = 3 windows of 2 per stream
    assert x.tolist() == [[9, 10], [11, 12], [13, 14], [9, 20], [21, 22], [23, 24]]
    assert y.tolist() == [[10, 11], [12, 13], [14, 15], [20, 21], [22, 23], [24, 25]]


def test_refilled_cache_gives_the_adapted_models_full_forward(tiny):
    """After an update the refilled cache's next decoding step equals the adapted model's full
    forward over the same inputs (float32 both ways; the tolerance is the LM tests')."""
    from kernel_cases import tol_for

    model, _, ids = tiny
    c = model.config
    adapter = Adapter(model, 2, 0, AdaptConfig(chunk=5, optimizer="sgd", lr=0.3))
    inputs = np.stack([ids[:10], ids[20:30]])
    cache = KVCache(model.queue, c.num_hidden_layers, 2, c.num_key_value_heads, c.head_dim, c.max_position_embeddings)
    adapter.model.hidden(inputs[:, :9], cache).numpy()
    for t in range(5):
        adapter.observe(inputs[:, t + 1])
    assert adapter.updates == 1
    adapter.refill(cache, inputs)
    assert cache.length(0) == 9
    step = adapter.model.decode_step(inputs[:, 9], cache)
    full = adapter.model(inputs).numpy()[:, -1]
    stale = model(inputs).numpy()[:, -1]
    assert_close(step, full, rtol=0, atol=tol_for(c.intermediate_size) * float(np.abs(full).max()),
                 what="logits after a refill")
    assert np.abs(full - stale).max() > 100 * tol_for(c.intermediate_size) * float(np.abs(full).max())


def test_adapting_codes_repeated_text_in_fewer_bits(tiny):
    model, tok, ids = tiny
    plain, _ = coded_bits(model, tok, ids)
    for config in (AdaptConfig(chunk=8, optimizer="rms", lr=3e-3), AdaptConfig(chunk=8, optimizer="adam", lr=3e-3),
                   AdaptConfig(chunk=8, optimizer="sgd", lr=0.3, decay=0.01, refill=False)):
        adapted, info = coded_bits(model, tok, ids, config, train_ids=ids)
        assert info["updates"] == (-(-ids.size // 2) - 1) // 8    # every 8 steps of 2 streams, but the last
        assert adapted.sum() < 0.9 * plain.sum(), f"{config.optimizer}: {adapted.sum():.0f} bits, unadapted {plain.sum():.0f}"


def test_a_step_that_overflows_puts_the_trained_weights_back_and_coding_goes_on(tiny):
    model, tok, ids = tiny
    adapter = Adapter(model, 2, 0, AdaptConfig(chunk=4, optimizer="sgd", lr=1e300))
    for i in range(4):
        assert adapter.observe(ids[2 * i:2 * i + 2]) == (i == 3)
    assert adapter.resets == 1 and adapter.gradient_steps == 1
    assert all(np.array_equal(a, b) for a, b in zip(weights(model).values(), weights(adapter.model).values()))
    bits, info = coded_bits(model, tok, ids[:300], AdaptConfig(chunk=4, optimizer="sgd", lr=1e300))
    assert info["resets"] == info["gradient_steps"] > 0 and np.isfinite(bits).all()


def _trained_state(model, ids, steps=3):
    """A copy of ``model`` after a few AdamW steps on ``ids``, and the optimizer's state."""
    from netcl_lite.optim import AdamW

    twin = copy_model(model)
    opt = AdamW(twin.parameters(), lr=1e-2)
    x, y = ids[:64].reshape(4, 16), ids[1:65].reshape(4, 16)
    for _ in range(steps):
        with ag.Tape() as tape:
            loss = twin.loss(x, y)
        tape.backward(loss)
        opt.step()
        opt.zero_grad()
    return twin, opt.state_dict()


@pytest.mark.parametrize("optimizer", ["sgd", "rms", "adam"])
def test_an_update_is_its_formula_in_float64(tiny, optimizer):
    """One update from the trained weights θ₀ with gradient g of the update's windows, in float64:
    sgd θ₀ − η·g (the pull toward θ₀ is 0 at θ₀); rms with the run's second moment as MS,
    θ₀ − η·g / max(√MS, f·mean √MS); adam from the run's moments at step t + 1. Equal to the
    float32 weights written within one float32 rounding."""
    model, _, ids = tiny
    trained, state = _trained_state(model, ids)
    config = AdaptConfig(chunk=5, optimizer=optimizer, lr=1e-2, decay=0.3, rms_floor=0.5)
    adapter = Adapter(trained, 2, 0, config, state=None if optimizer == "sgd" else state)
    for t in range(4):                                  # one step short of the chunk: no update yet
        assert not adapter.observe(ids[100 + 2 * t:102 + 2 * t])
    x, y = adapter.batch()
    params = trained.parameters()
    with ag.Tape() as tape:
        loss = trained.loss(x, y, ignore_index=IGNORE)
    tape.backward(loss)
    g = {n: p.grad.numpy().astype(np.float64) for n, p in params.items()}
    ag.zero_grad(params)
    theta = {n: p.numpy().astype(np.float64) for n, p in params.items()}
    if optimizer == "rms":
        rms = {n: np.sqrt(state["exp_avg_sq"][n].astype(np.float64)) for n in params}
        mean = sum(r.sum() for r in rms.values()) / sum(r.size for r in rms.values())
        expected = {n: theta[n] - 1e-2 * g[n] / np.maximum(rms[n], 0.5 * mean) for n in params}
    elif optimizer == "adam":
        t = state["step"] + 1
        expected = {}
        for n in params:
            m = 0.9 * state["exp_avg"][n].astype(np.float64) + 0.1 * g[n]
            v = 0.999 * state["exp_avg_sq"][n].astype(np.float64) + 0.001 * g[n] ** 2
            expected[n] = theta[n] - 1e-2 * (m / (1 - 0.9 ** t)) / (np.sqrt(v / (1 - 0.999 ** t)) + 1e-8)
    else:
        expected = {n: theta[n] - 1e-2 * g[n] for n in params}
    adapter.update()
    got = weights(adapter.model)
    for n in params:
        assert_close(got[n], expected[n], rtol=2 ** -23, atol=1e-30, what=f"{optimizer} {n}")
    assert any(not np.array_equal(got[n], theta[n].astype(np.float32)) for n in params)


def test_the_runs_optimizer_state_is_read_back_from_its_checkpoint(tiny, tmp_path):
    from netcl_lite.optim import AdamW
    from netcl_lite.train import read_optimizer_state, save_checkpoint

    model, _, ids = tiny
    trained, state = _trained_state(model, ids)
    opt = AdamW(trained.parameters())
    opt.load_state_dict(state)
    save_checkpoint(tmp_path / "run", trained, opt, {"step": 3, "loader": {}, "log": []})
    back = read_optimizer_state(tmp_path / "run")
    assert back["step"] == state["step"] == 3
    for key in ("exp_avg", "exp_avg_sq"):
        assert set(back[key]) == set(state[key])
        assert all(np.array_equal(back[key][n], state[key][n]) for n in state[key])
    (tmp_path / "run" / "optimizer.safetensors").write_bytes(b"not safetensors")
    with pytest.raises(ValueError, match="safetensors"):
        read_optimizer_state(tmp_path / "run")


def test_a_bad_optimizer_state_is_refused(tiny):
    model, _, ids = tiny
    _, state = _trained_state(model, ids, steps=1)
    name = "norm.weight"
    bad = [("step", 0, "step"), ("exp_avg", {}, "exp_avg"), ("exp_avg_sq", {**state["exp_avg_sq"], "extra": 1.0}, "extra")]
    for key, value, match in bad:
        with pytest.raises(ValueError, match=match):
            Adapter(model, 2, 0, AdaptConfig(optimizer="adam"), state={**state, key: value})
    for key, value, match in [("exp_avg_sq", -1.0, "negative"), ("exp_avg", np.nan, "finite")]:
        broken = {**state[key], name: np.full_like(state[key][name], value)}
        with pytest.raises(ValueError, match=match):
            Adapter(model, 2, 0, AdaptConfig(optimizer="rms"), state={**state, key: broken})
    with pytest.raises(ValueError, match="state"):
        Adapter(model, 2, 0, AdaptConfig(optimizer="sgd"), state=state)
    with pytest.raises(ValueError, match="state"):
        Adapter(model, 2, 0, AdaptConfig(optimizer="adam"), state=[1, 2])


# -- the recorded choice -----------------------------------------------------------------------------

def _benchmark():
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parents[1] / "benchmarks" / "dynamic_evaluation.py"
    spec = importlib.util.spec_from_file_location("dynamic_evaluation_benchmark", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_defaults_are_the_setting_chosen_on_validation_and_the_tables_are_the_json():
    """The chosen row has, within the stated tie, the fewest validation bits, and no tied row
    costs fewer estimated seconds; AdaptConfig's defaults are its settings; the Markdown is the
    JSON rendered; the test split holds the baseline and the chosen row only."""
    bench = _benchmark()
    out = json.loads(bench.OUT.read_text(encoding="utf-8"))
    rows = out["validation"]["rows"]
    assert set(rows) == {"none", *bench.GRID}, "the grid's rows are all measured"
    assert all(rows[name]["config"] == fields for name, fields in bench.GRID.items())
    adapted = {name: row for name, row in rows.items() if name != "none"}
    best = min(row["bits per byte"] for row in adapted.values())
    chosen = rows[out["chosen"]]
    assert chosen["bits per byte"] <= best * (1 + bench.TIE) < rows["none"]["bits per byte"]
    steps = -(-rows["none"]["tokens"] // cz.STREAMS)
    cost = bench.estimated_seconds(chosen, out["costs"], steps)
    assert all(bench.estimated_seconds(row, out["costs"], steps) >= cost
               for row in adapted.values() if row["bits per byte"] <= best * (1 + bench.TIE))
    assert chosen["settings"] == AdaptConfig().to_dict() and not chosen["run moments"], \
        "AdaptConfig's defaults are the setting chosen on validation"
    assert bench.OUT.with_suffix(".md").read_text(encoding="utf-8") == bench.report(out)
    if "test" in out:
        assert out["test"]["read"] == "once" and set(out["test"]["rows"]) == {"none", out["chosen"]}


# -- bad input ----------------------------------------------------------------------------------------

@pytest.mark.parametrize("field, value, error", [
    ("chunk", 0, ValueError), ("chunk", 2.0, ValueError), ("steps", 0, ValueError), ("lr", 0.0, ValueError),
    ("lr", float("nan"), ValueError), ("optimizer", "lbfgs", ValueError), ("decay", -0.1, ValueError),
    ("adapted", "some", ValueError), ("window", 0, ValueError), ("targets", "all", ValueError),
    ("refill", 1, TypeError), ("beta1", 1.0, ValueError), ("beta2", -0.5, ValueError), ("eps", 0.0, ValueError),
    ("ms_batches", 0, ValueError), ("rms_floor", 0.0, ValueError),
])
def test_a_bad_setting_is_refused_by_name(field, value, error):
    with pytest.raises(error, match=field):
        AdaptConfig(**{field: value})


def test_bad_arguments_are_refused_by_name(tiny):
    model, tok, ids = tiny
    sgd = AdaptConfig(optimizer="sgd")
    with pytest.raises(TypeError, match="model"):
        Adapter("model", 2, 0, sgd)
    with pytest.raises(ValueError, match="streams"):
        Adapter(model, 0, 0, sgd)
    with pytest.raises(ValueError, match="start"):
        Adapter(model, 2, 300, sgd)
    with pytest.raises(TypeError, match="config"):
        Adapter(model, 2, 0, {"lr": 1e-3})
    assert Adapter(model, 2, 0, AdaptConfig(optimizer="sgd", window=17)).window == 16   # the model's window
    assert Adapter(model, 2, 0, AdaptConfig(optimizer="sgd", window=None)).window == 16
    assert Adapter(model, 2, 0, AdaptConfig(optimizer="sgd", window=5)).window == 5
    with pytest.raises(ValueError, match="train_ids"):
        Adapter(model, 2, 0, AdaptConfig(optimizer="rms"))
    with pytest.raises(ValueError, match="ids"):
        Adapter(model, 2, 0, AdaptConfig(optimizer="rms"), train_ids=np.array([1, 2, 300] * 10))
    with pytest.raises(ValueError, match="ids"):
        Adapter(model, 2, 0, AdaptConfig(optimizer="rms"), train_ids=np.arange(5))
    with pytest.raises(TypeError, match="copy"):
        Adapter(model, 2, 0, sgd, copy=None)
    adapter = Adapter(model, 2, 0, sgd)
    for bad in (np.array([[1, 2]]), np.array([1.0, 2.0]), np.array([1, 2, 3]), np.zeros(0, np.int64),
                np.array([1, 300]), np.array([-1, 2])):
        with pytest.raises(ValueError, match="tokens"):
            adapter.observe(bad)
    c = model.config
    cache = KVCache(model.queue, c.num_hidden_layers, 2, c.num_key_value_heads, c.head_dim, 16)
    adapter.model.hidden(ids[:6].reshape(2, 3), cache).numpy()
    with pytest.raises(TypeError, match="cache"):
        adapter.refill("cache", ids[:6].reshape(2, 3))
    for bad in (ids[:4].reshape(2, 2), ids[:6].reshape(3, 2), np.ones((2, 3))):
        with pytest.raises(ValueError, match="inputs"):
            adapter.refill(cache, bad)
    with ag.Tape(), pytest.raises(ValueError, match="Tape"):
        Adapter(model, 2, 0, sgd)
    with pytest.raises(TypeError, match="config"):
        coded_bits(model, tok, ids, {"lr": 1e-3})
    with pytest.raises(ValueError, match="ids"):
        coded_bits(model, tok, ids.astype(np.float64))


def test_coded_bits_from_two_threads_match_one_thread_and_free_the_predictor_on_an_error(tiny, monkeypatch):
    """coded_bits runs the adaptation's device work under the device's lock, as compress does: two
    threads at once on one model give each the bits one thread gives. A loop that fails still frees
    its predictor's cache (the buffers go back to the pool)."""
    import threading

    model, tok, ids = tiny
    config = AdaptConfig(chunk=4, optimizer="sgd", lr=0.1)
    alone, _ = coded_bits(model, tok, ids[:700], config)
    got: list = [None, None]

    def run(i):
        got[i] = coded_bits(model, tok, ids[:700], config)[0]

    threads = [threading.Thread(target=run, args=(i,)) for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert all(g is not None and np.array_equal(g, alone) for g in got)

    closed = []
    real = cz.make_predictor

    def failing(*args, **kwargs):
        predictor = real(*args, **kwargs)
        predictor.advance = lambda tokens: (_ for _ in ()).throw(RuntimeError("the loop fails"))
        close = predictor.close
        predictor.close = lambda: (closed.append(True), close())[1]
        return predictor

    monkeypatch.setattr(cz, "make_predictor", failing)
    with pytest.raises(RuntimeError, match="the loop fails"):
        coded_bits(model, tok, ids[:700], config)
    assert closed == [True]
