"""DecoderLM: the forward against a float64 Llama written from reference ops, the loss and its
ignore_index, the parameter budget, greedy and sampled generation, and every documented bad input.

Tolerances: float32 against float64, stages whose longest inner sum has n terms
(n = max(hidden_size, intermediate_size)); ``tol_for(n)`` of the largest logit, as
the block tests use (see tests/kernel_cases.py).
"""

from __future__ import annotations

import numpy as np
import pytest
from kernel_cases import tol_for

from netcl_lite import autograd as ag
from netcl_lite import budget
from netcl_lite import reference as ref
from netcl_lite.nn import DecoderLM, LMConfig
from netcl_lite.testing import assert_close

V = 61


def small(groups=2, tie=True, **kw) -> LMConfig:
    args = dict(vocab_size=V, hidden_size=32, intermediate_size=48, num_hidden_layers=2, num_attention_heads=4,
                num_key_value_heads=groups, max_position_embeddings=40, rms_norm_eps=1e-5, rope_theta=300.0,
                tie_word_embeddings=tie, initializer_range=0.2)
    args.update(kw)
    return LMConfig(**args)


def llama64(model: DecoderLM, ids) -> np.ndarray:
    """Llama's forward in float64 from the transformers-layout weights (linear weights (out, in))."""
    c = model.config
    w = {k: v.astype(np.float64) for k, v in model.state_dict().items()}
    b, t = np.shape(ids)
    heads, groups, d = c.num_attention_heads, c.num_key_value_heads, c.head_dim
    split = lambda y, n: y.reshape(b, t, n, d).transpose(0, 2, 1, 3)
    h = w["model.embed_tokens.weight"][np.asarray(ids)]
    for i in range(c.num_hidden_layers):
        p = lambda name: w[f"model.layers.{i}.{name}.weight"]
        a = ref.rms_norm(h, p("input_layernorm"), eps=c.rms_norm_eps)
        q = ref.rope(split(a @ p("self_attn.q_proj").T, heads), base=c.rope_theta, pairing="half")
        k = ref.rope(split(a @ p("self_attn.k_proj").T, groups), base=c.rope_theta, pairing="half")
        v = split(a @ p("self_attn.v_proj").T, groups)
        o = ref.attention(q, k, v, causal=True).transpose(0, 2, 1, 3).reshape(b, t, heads * d)
        h = h + o @ p("self_attn.o_proj").T
        m = ref.rms_norm(h, p("post_attention_layernorm"), eps=c.rms_norm_eps)
        h = h + ref.swiglu(m @ p("mlp.gate_proj").T, m @ p("mlp.up_proj").T) @ p("mlp.down_proj").T
    h = ref.rms_norm(h, w["model.norm.weight"], eps=c.rms_norm_eps)
    return h @ w["lm_head.weight" if not c.tie_word_embeddings else "model.embed_tokens.weight"].T


def tolerance(c: LMConfig, expected) -> float:
    return tol_for(max(c.hidden_size, c.intermediate_size)) * float(np.abs(expected).max())


@pytest.fixture(scope="module")
def model(queue):
    return DecoderLM(small(), queue=queue, seed=5)


@pytest.mark.parametrize("groups, tie", [(4, True), (2, False), (1, True)], ids=["MHA-tied", "GQA-untied", "MQA-tied"])
def test_logits_match_a_float64_llama(groups, tie, queue):
    m = DecoderLM(small(groups, tie), queue=queue, seed=groups)
    ids = np.random.default_rng(0).integers(0, V, size=(3, 17))
    expected = llama64(m, ids)
    assert_close(m(ids).numpy(), expected, rtol=0, atol=tolerance(m.config, expected), what="logits")


def test_loss_is_the_mean_cross_entropy_of_the_next_token(model):
    rng = np.random.default_rng(1)
    ids, targets = rng.integers(0, V, size=(2, 12)), rng.integers(0, V, size=(2, 12))
    z = llama64(model, ids)
    lse = np.log(np.exp(z - z.max(-1, keepdims=True)).sum(-1)) + z.max(-1)
    expected = np.mean(lse - np.take_along_axis(z, targets[..., None], -1)[..., 0])
    got = float(model.loss(ids, targets).numpy())
    assert abs(got - expected) <= 8 * tolerance(model.config, z)


def test_ignored_targets_leave_the_loss_and_gradients_of_the_rest(model):
    """Causal: positions before k never see the later ones, so ignoring targets from k on must give
    exactly the loss and gradients of the sequence cut at k."""
    rng = np.random.default_rng(2)
    ids, targets = rng.integers(0, V, size=(2, 14)), rng.integers(0, V, size=(2, 14))
    k = 9
    masked = targets.copy()
    masked[:, k:] = -100

    def run(x, y):
        model.zero_grad()
        with ag.Tape() as tape:
            loss = model.loss(x, y)
        tape.backward(loss)
        return float(loss.numpy()), {n: p.grad.numpy() for n, p in model.parameters().items()}

    loss_masked, grads_masked = run(ids, masked)
    loss_cut, grads_cut = run(ids[:, :k], targets[:, :k])
    assert abs(loss_masked - loss_cut) <= 1e-5 * abs(loss_cut)
    for name, g in grads_cut.items():
        assert_close(grads_masked[name], g, rtol=0, atol=tol_for(48) * (np.abs(g).max() + 1e-12), what=name)
    model.zero_grad()


@pytest.mark.parametrize("groups, tie", [(4, True), (2, False), (1, False)])
def test_parameter_count_is_the_budget_formula(groups, tie, queue):
    c = small(groups, tie)
    per_layer = (budget.attention_parameters(c.hidden_size, c.num_attention_heads, c.num_key_value_heads)
                 + 3 * c.hidden_size * c.intermediate_size + 2 * c.hidden_size)
    embedding = c.vocab_size * c.hidden_size
    head = 0 if tie else budget.tied_embedding_savings(c.vocab_size, c.hidden_size)
    expected = c.num_hidden_layers * per_layer + embedding + c.hidden_size + head
    m = DecoderLM(c, queue=queue)
    assert m.num_parameters() == expected == sum(a.size for a in m.state_dict().values())


def test_greedy_generation_is_the_full_forward_argmax_at_every_step(model):
    prompt = [3, 14, 15, 9, 2]
    streamed = []
    out = model.generate(prompt, max_new_tokens=20, temperature=0, on_token=streamed.append)
    assert out.shape == (25,) and out[:5].tolist() == prompt and streamed == out[5:].tolist()
    for t in range(5, 25):
        logits = model(out[None, :t]).numpy()[0, -1]
        assert out[t] == int(np.argmax(logits)), f"step {t - 5}: cached greedy {out[t]} != full-forward argmax"
    assert np.array_equal(model.generate(prompt, 20, temperature=0, use_cache=False), out)
    assert model.generate(np.array([prompt]), 3, temperature=0).shape == (1, 8)


def test_cached_logits_equal_the_full_forward(model):
    from netcl_lite.nn import KVCache

    c = model.config
    ids = np.random.default_rng(4).integers(0, V, size=(1, 16))
    cache = KVCache(model.queue, c.num_hidden_layers, 1, c.num_key_value_heads, c.head_dim, 16)
    steps = [model.next_logits(ids[:, :8], cache)] + [model.next_logits(ids[:, t:t + 1], cache) for t in range(8, 16)]
    full = model(ids).numpy()[0]
    expected = full[7:]
    assert_close(np.stack(steps), expected, rtol=0, atol=tolerance(c, expected), what="cached logits")


def test_sampling_is_seeded_filtered_and_stops(model):
    prompt = [1, 2, 3]
    a = model.generate(prompt, 15, temperature=1.2, top_p=0.9, seed=7)
    assert np.array_equal(a, model.generate(prompt, 15, temperature=1.2, top_p=0.9, seed=7))
    greedy_first = model.generate(prompt, 1, temperature=0)[-1]
    assert all(model.generate(prompt, 1, top_k=1, seed=s)[-1] == greedy_first for s in range(3))
    stop = int(a[4])
    assert model.generate(prompt, 15, temperature=1.2, top_p=0.9, seed=7, stop={stop}).tolist() == a[:5].tolist()
    assert model.generate(prompt, 0).tolist() == prompt


def test_no_repeat_ngram_size_never_repeats_an_ngram(model):
    from netcl_lite.sampling import repeated_ngram_bans

    prompt = [5, 6, 7, 5, 6]      # repeats 5, 6 itself: only what generate adds must be new

    def repeats(out, n):          # generated positions whose n-gram occurred earlier
        grams = [tuple(out[i - n + 1:i + 1]) for i in range(n - 1, len(out))]
        return [i + n - 1 for i, g in enumerate(grams) if i + n - 1 >= len(prompt) and g in grams[:i]]

    assert repeats(model.generate(prompt, 30, temperature=0).tolist(), 3), "the test needs a model that loops"
    for n in (1, 2, 3):
        out = model.generate(prompt, 12 if n == 1 else 30, temperature=0, no_repeat_ngram_size=n).tolist()
        assert not repeats(out, n), (n, out)
    assert not repeats(model.generate(prompt, 30, temperature=1.0, seed=3, no_repeat_ngram_size=2).tolist(), 2)
    assert model.generate(prompt, 6, temperature=0, no_repeat_ngram_size=0).tolist() == \
        model.generate(prompt, 6, temperature=0).tolist()
    assert repeated_ngram_bans([5, 6, 7, 5, 6], 3) == {7} and repeated_ngram_bans([1, 2], 4) == set()
    assert repeated_ngram_bans([4, 4, 9], 1) == {4, 9}
    with pytest.raises(ValueError, match="n must be a positive int"):
        repeated_ngram_bans([1, 2], 0)
    with pytest.raises(ValueError, match="no_repeat_ngram_size must be >= 0"):
        model.generate(prompt, 2, no_repeat_ngram_size=-1)
    with pytest.raises(TypeError, match="no_repeat_ngram_size must be an int"):
        model.generate(prompt, 2, no_repeat_ngram_size=2.5)


@pytest.mark.parametrize("kwargs, error, match", [
    ({"ids": [[1, V]]}, ValueError, r"ids must lie in \[0, 61\)"),
    ({"ids": [[-1, 2]]}, ValueError, r"ids must lie in"),
    ({"ids": [[1.0, 2.0]]}, TypeError, "ids must hold integer"),
    ({"ids": [[1, 2, 3]] * 2 + [[4, 5, 6]], "targets": [[1, 2]]}, ValueError, "targets must have the shape"),
    ({"ids": np.zeros((1, 41), int)}, ValueError, "exceed max_position_embeddings=40"),
    ({"ids": np.zeros((1, 0), int)}, ValueError, "ids is empty"),
    ({"ids": [1, 2]}, ValueError, r"shape \(batch, sequence\)"),
    ({"ids": [[1, 2]], "targets": [[1, V]]}, ValueError, "targets must lie in"),
    ({"ids": [[1, 2]], "targets": [[-100, -100]]}, ValueError, "every entry equals ignore_index"),
])
def test_bad_model_inputs_are_named(model, kwargs, error, match):
    with pytest.raises(error, match=match):
        if "targets" in kwargs:
            model.loss(kwargs["ids"], kwargs["targets"])
        else:
            model(kwargs["ids"])


@pytest.mark.parametrize("kwargs, error, match", [
    ({"ids": []}, ValueError, "prompt is empty"),
    ({"ids": [1, 99]}, ValueError, r"ids must lie in \[0, 61\)"),
    ({"ids": [1.5]}, TypeError, "integer token ids"),
    ({"ids": [[1, 2], [3, 4]]}, ValueError, "one prompt"),
    ({"max_new_tokens": 40}, ValueError, "exceeds max_position_embeddings=40"),
    ({"max_new_tokens": -1}, ValueError, "max_new_tokens must be >= 0"),
    ({"temperature": -0.5}, ValueError, "temperature must be a non-negative finite number"),
    ({"temperature": float("nan")}, ValueError, "temperature"),
    ({"top_p": 0.0}, ValueError, r"top_p must be in \(0, 1\]"),
    ({"top_p": 1.5}, ValueError, r"top_p must be in \(0, 1\]"),
    ({"top_k": 0}, ValueError, "top_k must be >= 1"),
    ({"top_k": 2.5}, TypeError, "top_k must be an int"),
    ({"seed": -1}, ValueError, "seed"),
    ({"stop": V}, ValueError, "stop ids"),
    ({"on_token": 3}, TypeError, "on_token must be callable"),
])
def test_bad_generation_arguments_are_named(model, kwargs, error, match):
    args = {"ids": [1, 2, 3], "max_new_tokens": 2, **kwargs}
    with pytest.raises(error, match=match):
        model.generate(args.pop("ids"), args.pop("max_new_tokens"), **args)


def test_generation_under_a_tape_is_refused(model):
    with ag.Tape(), pytest.raises(ValueError, match="outside `with Tape"):
        model.generate([1, 2], 2)


@pytest.mark.parametrize("kwargs, match", [
    ({"num_attention_heads": 4, "num_key_value_heads": 3}, "divisible by num_key_value_heads=3"),
    ({"hidden_size": 30, "num_attention_heads": 4}, "hidden_size=30 must be divisible by num_attention_heads=4"),
    ({"hidden_size": 12, "num_attention_heads": 4}, "must be even"),
    ({"vocab_size": 0}, "vocab_size must be >= 1"),
    ({"rms_norm_eps": 0.0}, "rms_norm_eps"),
    ({"rope_theta": float("inf")}, "rope_theta"),
])
def test_bad_configs_are_named(kwargs, match):
    with pytest.raises(ValueError, match=match):
        small(**kwargs)
    with pytest.raises(TypeError, match="num_hidden_layers must be an int"):
        small(num_hidden_layers=2.0)
