"""Llama's decoder in NumPy: forward, cross-entropy and a backward pass by hand.

Weights are a dict in transformers' names and layout (linear weights (out, in)),
as DecoderLM.state_dict() gives them. Shapes: B batch, T positions, D model
width, H query heads, G K/V heads, d = D / H head width, F SwiGLU width, V vocab.
"""
import numpy as np


def rms_norm(x, gamma, eps):                   # x (B, T, D), gamma (D,): the gain
    r = 1 / np.sqrt((x * x).mean(-1, keepdims=True) + eps)
    return x * r * gamma, (x, r, gamma)


def rms_norm_back(dy, cache):                  # -> dx, d gamma
    x, r, gamma = cache
    xh, dyg = x * r, dy * gamma
    dx = r * (dyg - xh * (dyg * xh).mean(-1, keepdims=True))
    return dx, (dy * xh).sum((0, 1))


def rotate_half(x):                            # pair c is (x[c], x[c + d/2])
    h = x.shape[-1] // 2
    return np.concatenate([-x[..., h:], x[..., :h]], -1)


def rope_tables(T, d, base):                   # cos, sin (T, d), angle t * theta_c
    theta = base ** (-2 * np.arange(d // 2) / d)
    angle = np.arange(T)[:, None] * theta
    angle = np.concatenate([angle, angle], -1)  # both halves of a pair turn alike
    return np.cos(angle), np.sin(angle)


def rope(x, cos, sin):                         # rotate each pair by its angle
    return x * cos + rotate_half(x) * sin


def rope_back(dy, cos, sin):                   # the transpose: turn back
    return dy * cos - rotate_half(dy) * sin


def softmax(z):
    e = np.exp(z - z.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def heads(x, n):                               # (B, T, n d) -> (B, n, T, d)
    B, T, _ = x.shape
    return x.reshape(B, T, n, -1).transpose(0, 2, 1, 3)


def merge(x):                                  # (B, n, T, d) -> (B, T, n d)
    B, n, T, d = x.shape
    return x.transpose(0, 2, 1, 3).reshape(B, T, n * d)


def attention(x, w, H, G, cos, sin):           # causal, grouped K/V heads
    q = rope(heads(x @ w["q"].T, H), cos, sin)     # (B, H, T, d)
    k = rope(heads(x @ w["k"].T, G), cos, sin)     # (B, G, T, d)
    v = heads(x @ w["v"].T, G)
    k, v = np.repeat(k, H // G, 1), np.repeat(v, H // G, 1)  # head h reads h // (H/G)
    T, d = q.shape[2], q.shape[3]
    z = q @ k.swapaxes(-1, -2) / np.sqrt(d)        # scaled scores (B, H, T, T)
    p = softmax(np.where(np.tri(T, dtype=bool), z, -np.inf))
    o = merge(p @ v)
    return o @ w["o"].T, (x, q, k, v, p, o)


def attention_back(dy, w, H, G, cos, sin, cache):
    x, q, k, v, p, o = cache
    d, flat = q.shape[-1], lambda t: t.reshape(-1, t.shape[-1])  # noqa: E731
    g = {"o": flat(dy).T @ flat(o)}                 # dW = dy^T x, over every position
    do = heads(dy @ w["o"], H)
    dv, dp = p.swapaxes(-1, -2) @ do, do @ v.swapaxes(-1, -2)
    dz = p * (dp - (dp * p).sum(-1, keepdims=True)) / np.sqrt(d)
    dq, dk = dz @ k, dz.swapaxes(-1, -2) @ q
    B, _, T, _ = dk.shape
    dk, dv = (t.reshape(B, G, H // G, T, d).sum(2) for t in (dk, dv))  # add the group
    dx = 0
    for name, t in (("q", rope_back(dq, cos, sin)), ("k", rope_back(dk, cos, sin)),
                    ("v", dv)):
        t = merge(t)
        g[name] = flat(t).T @ flat(x)
        dx = dx + t @ w[name]
    return dx, g


def swiglu(x, w):                              # (silu(x W1) * x W3) W2
    u1, u3 = x @ w["gate"].T, x @ w["up"].T
    s = 1 / (1 + np.exp(-u1))                  # sigmoid(u1)
    h = u1 * s * u3
    return h @ w["down"].T, (x, u1, u3, s, h)


def swiglu_back(dy, w, cache):
    x, u1, u3, s, h = cache
    flat = lambda t: t.reshape(-1, t.shape[-1])  # noqa: E731
    dh = dy @ w["down"]
    du1, du3 = dh * u3 * s * (1 + u1 * (1 - s)), dh * u1 * s
    g = {"down": flat(dy).T @ flat(h), "gate": flat(du1).T @ flat(x),
         "up": flat(du3).T @ flat(x)}
    return du1 @ w["gate"] + du3 @ w["up"], g


NAMES = {"q": "self_attn.q_proj", "k": "self_attn.k_proj", "v": "self_attn.v_proj",
         "o": "self_attn.o_proj", "gate": "mlp.gate_proj", "up": "mlp.up_proj",
         "down": "mlp.down_proj", "norm1": "input_layernorm",
         "norm2": "post_attention_layernorm"}


def layer(state, i):                           # layer i's weights by short name
    return {k: state[f"model.layers.{i}.{v}.weight"] for k, v in NAMES.items()}


def loss_and_grads(state, ids, targets, cfg):
    """Mean cross-entropy of targets (B, T) and its gradient for every weight."""
    H, G, eps = cfg.num_attention_heads, cfg.num_key_value_heads, cfg.rms_norm_eps
    E = state["model.embed_tokens.weight"]               # (V, D), tied head
    cos, sin = rope_tables(ids.shape[1], cfg.head_dim, cfg.rope_theta)
    x, caches = E[ids], []
    for i in range(cfg.num_hidden_layers):               # pre-norm blocks
        w = layer(state, i)
        n1, c1 = rms_norm(x, w["norm1"], eps)
        a, ca = attention(n1, w, H, G, cos, sin)
        x = x + a
        n2, c2 = rms_norm(x, w["norm2"], eps)
        f, cf = swiglu(n2, w)
        x = x + f
        caches.append((c1, ca, c2, cf))
    hf, cn = rms_norm(x, state["model.norm.weight"], eps)
    logits = hf @ E.T                                     # (B, T, V)
    p = softmax(logits)
    rows = np.arange(ids.size)
    flat_p = p.reshape(ids.size, -1)
    loss = -np.log(flat_p[rows, targets.ravel()]).mean()
    dlogits = flat_p.copy()
    dlogits[rows, targets.ravel()] -= 1                   # softmax minus one-hot
    dlogits = dlogits.reshape(p.shape) / ids.size
    grads = {"model.embed_tokens.weight": dlogits.reshape(-1, E.shape[0]).T
             @ hf.reshape(-1, E.shape[1])}
    dx, grads["model.norm.weight"] = rms_norm_back(dlogits @ E, cn)
    for i in reversed(range(cfg.num_hidden_layers)):
        w, (c1, ca, c2, cf), g = layer(state, i), caches[i], {}
        dn2, g2 = swiglu_back(dx, w, cf)
        d2, g["norm2"] = rms_norm_back(dn2, c2)
        dx = dx + d2                                      # residual: both paths add
        dn1, ga = attention_back(dx, w, H, G, cos, sin, ca)
        d1, g["norm1"] = rms_norm_back(dn1, c1)
        dx = dx + d1
        for k, v in {**g2, **ga, **g}.items():
            grads[f"model.layers.{i}.{NAMES[k]}.weight"] = v
    np.add.at(grads["model.embed_tokens.weight"], ids, dx)  # the lookup's rows
    return loss, logits, grads


# The same weights in netcl_lite's DecoderLM: logits, loss and every gradient.
if __name__ == "__main__":
    import netcl_lite as nl
    from netcl_lite import autograd as ag
    from netcl_lite.nn import DecoderLM, LMConfig
    from netcl_lite.nn.checkpoint import llama_names

    cfg = LMConfig(vocab_size=61, hidden_size=48, intermediate_size=96,
                   num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
                   initializer_range=0.3)
    model = DecoderLM(cfg, seed=1)
    rng = np.random.default_rng(0)
    ids = rng.integers(0, cfg.vocab_size, (2, 13))
    targets = rng.integers(0, cfg.vocab_size, (2, 13))
    with nl.Tape() as tape:
        logits = model(ids)
        flat_logits = ag.reshape(logits, (-1, cfg.vocab_size))
        loss = ag.cross_entropy(flat_logits, targets.ravel())
    tape.backward(loss)
    params = model.parameters()
    theirs = {}
    for name, (ours, transposed) in llama_names(cfg).items():
        g = params[ours].grad.numpy()
        theirs[name] = g.T if transposed else g

    state = {k: v.astype(np.float64) for k, v in model.state_dict().items()}
    ref_loss, ref_logits, grads = loss_and_grads(state, ids, targets, cfg)

    def gap(a, b):                             # largest |a - b|, relative to max |b|
        return np.abs(a - b).max() / np.abs(b).max()

    print(f"loss: NumPy {ref_loss:.6f}, netcl_lite {float(loss.numpy()):.6f}")
    worst = {"logits": gap(logits.numpy(), ref_logits),
             "loss": abs(float(loss.numpy()) - ref_loss) / ref_loss}
    worst["gradients"] = max(gap(theirs[n], grads[n]) for n in grads)
    name = max(grads, key=lambda n: gap(theirs[n], grads[n]))
    for what, value in worst.items():
        print(f"largest relative difference, {what:9}: {value:.1e}")
    print(f"  (the worst gradient: {name})")
    assert sorted(grads) == sorted(theirs)
    assert max(worst.values()) < 1e-4, "every gap stays under 1e-4"  # float32 rounding
