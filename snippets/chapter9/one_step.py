import math

import numpy as np

from netcl_lite import autograd as ag
from netcl_lite import capstone
from netcl_lite.nn import DecoderLM
from netcl_lite.optim import AdamW, adamw_reference, clip_grad_norm
from netcl_lite.train import WindowLoader, parameter_groups

NEAR = 0.5  # nats: how near ln V the initial loss must be
FULL = 0.99  # a move of more than FULL * lr counts as the full rate
d, cfg = capstone.data(), capstone.TRAINING
tok = capstone.train_tokenizer(d.train_text)
model = DecoderLM(capstone.model_config(tok), seed=0)
V = model.config.vocab_size
ids = np.asarray(tok.encode_ordinary(d.train_text))
x, y = WindowLoader(ids, cfg.batch_size, cfg.block_size, seed=cfg.seed).next_batch()

# Forward: logits for every position; the loss is the mean cross-entropy of the
# targets y, each window's tokens after its first, each predicted from those before.
with ag.Tape() as tape:
    logits = model(x)
    loss = ag.cross_entropy(ag.reshape(logits, (-1, V)), y.ravel())
print(f"logits {logits.shape}; loss {float(loss.numpy()):.4f} nats,"
      f" ln V = {math.log(V):.4f}")
assert abs(float(loss.numpy()) - math.log(V)) < NEAR, "the initial loss is near ln V"

# Backward fills .grad of every parameter; the largest gradients first.
tape.backward(loss)
params = model.parameters()
norms = {n: float(np.linalg.norm(p.grad.numpy())) for n, p in params.items()}
for name in sorted(norms, key=norms.get, reverse=True)[:4]:
    print(f"  |grad| {norms[name]:.4f}  {name}")

# Clip the global norm, then one AdamW step; check one tensor by hand.
groups = parameter_groups(model, cfg.weight_decay)
lr = cfg.learning_rate / cfg.warmup_steps  # the schedule's first step
opt = AdamW(groups, lr=lr, betas=(cfg.beta1, cfg.beta2), eps=cfg.eps)
norm = clip_grad_norm(params, cfg.grad_clip)
decay = {n: 1 - lr * grp["weight_decay"] for grp in groups for n in grp["params"]}
start = {n: p.numpy() for n, p in params.items()}
w = params["layers.0.attn.wq"]
before, g = w.numpy(), w.grad.numpy()
opt.step()
after = w.numpy()
expected, _, _ = adamw_reference(
    before, g, 0.0, 0.0, step=1, lr=lr, betas=(cfg.beta1, cfg.beta2),
    eps=cfg.eps, weight_decay=cfg.weight_decay,
)
print(f"global gradient norm {norm:.4f} (clipped to {cfg.grad_clip})")
print(f"max |device - float64 formula| = {np.abs(after - expected).max():.1e}")
assert np.abs(after - expected).max() < 1e-6

# Step 1 moves each weight by lr * |g| / (|g| + eps), besides the decay: a full
# lr where |g| >> eps, less where the gradient is as small as eps.
move = np.abs(after - before * (1 - lr * cfg.weight_decay)) / lr
predicted = np.abs(g) / (np.abs(g) + cfg.eps)
print(f"lr {lr:.1e}: {np.mean(move > FULL):.1%} of this tensor's weights move by more"
      f" than {FULL} lr")
moves = np.concatenate([np.abs(p.numpy() - start[n] * decay[n]).ravel() / lr
                        for n, p in params.items()])
print(f"  and {np.mean(moves > FULL):.1%} of all {moves.size:,} weights of the model")
assert np.mean(moves > FULL) > FULL, "nearly every weight moves by the full rate"
i = int(move.argmin())
print(f"the smallest move is {move.flat[i]:.2f} lr, where |g| = {abs(g.flat[i]):.1e}"
      f" and |g| / (|g| + eps) = {predicted.flat[i]:.2f} (eps = {cfg.eps:.0e})")
assert np.abs(move - predicted).max() < 1e-3
