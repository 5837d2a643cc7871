"""Every ops family at ragged shapes, forward against its float64 reference and backward through
the tape; run under Oclgrind by tests/test_oclgrind.py, and on the default device for comparison.

usage: python ops_families.py MODE OUT.npz, MODE "native" (the work-group sizes the library picks
for this device) or "wide" (the sizes it picks for a GPU: wider flash-attention and decode groups,
the matmul layout without CPU chunking). Saves every output and gradient to OUT.npz and exits
non-zero when a forward misses its reference.
"""

import opencl12  # first: every kernel is built as OpenCL C 1.2

import importlib
import pickle
import sys

import numpy as np

import netcl_lite as nl
from netcl_lite import autograd as ag
from netcl_lite import reference as ref
from netcl_lite.text import BPETokenizer, device_merge
from netcl_lite.text.device_merge import DeviceMerger

# the modules, not the functions of the same names that netcl_lite.ops exports
decode, flash_attention, matmul = (importlib.import_module(f"netcl_lite.ops.{m}")
                                   for m in ("decode", "flash_attention", "matmul"))

mode, out_file = sys.argv[1], sys.argv[2]
if mode == "wide":
    flash_attention._local = lambda queue, n: min(32, n)
    decode._local_size = lambda queue: 128
    plan = matmul._plan
    matmul._plan = lambda tile, mem, units, cpu, *rest: plan(tile, mem, units, False, *rest)
elif mode != "native":
    raise SystemExit(f"MODE must be 'native' or 'wide', got {mode!r}")

rng = np.random.default_rng(23)
results, misses = {}, []


def arr(*shape):
    return rng.standard_normal(shape).astype(np.float32)


def family(name, forward, inputs, reference, tol=2e-5, **constants):
    """forward(**nodes, **constants) on the tape, then the gradient of sum(out * r) for each input."""
    leaves = {k: ag.tensor(v) for k, v in inputs.items()}
    with nl.Tape():
        out = forward(**leaves, **constants)
        r = ag.constant(arr(*out.shape))
        loss = ag.sum(ag.mul(out, r))
    loss.backward()
    got = out.numpy()
    want = reference(**{k: v.astype(np.float64) for k, v in inputs.items()}, **constants)
    # float32 sums of at most ~100 terms of size ~1: relative error ≪ 2e-5
    err = float(np.max(np.abs(got - want) / (1 + np.abs(want))))
    if not err < tol:
        misses.append(f"{name}: max error {err:.3g} > {tol}")
    results[name] = got
    for k, leaf in leaves.items():
        results[f"{name}.d{k}"] = leaf.grad.numpy()


family("matmul", lambda a, b: ag.matmul(a, b), {"a": arr(2, 13, 37), "b": arr(2, 37, 19)},
       lambda a, b: ref.matmul(a, b))
family("matmul_tb", lambda a, b: ag.matmul(a, b, transpose_b=True), {"a": arr(11, 29), "b": arr(7, 29)},
       lambda a, b: ref.matmul(a, b, transpose_b=True))
# a narrow weight gradient over a long K: matmul_tall, which the library runs on a CPU only (Oclgrind's
# device is a GPU, so that choice is forced for this family): K in three chunks joined in order
real_device = matmul._device
matmul._device = lambda queue: real_device(queue)._replace(cpu=True)
family("matmul_tall", lambda a, b: ag.matmul(a, b, transpose_a=True), {"a": arr(1030, 13), "b": arr(1030, 19)},
       lambda a, b: ref.matmul(a, b, transpose_a=True))
matmul._device = real_device
family("softmax_causal", lambda x: ag.softmax(x, causal=True), {"x": arr(2, 11, 13)},
       lambda x: ref.softmax(x, causal=True))
mask = rng.random((11, 13)) < 0.7
mask[:, 0] = True                                           # every row keeps a key
family("softmax_mask", lambda x: ag.softmax(x, mask=mask), {"x": arr(3, 11, 13)},
       lambda x: ref.softmax(x, mask=mask))
gqa = {"q": arr(1, 4, 11, 16), "k": arr(1, 2, 13, 16), "v": arr(1, 2, 13, 8)}
family("attention_gqa", lambda q, k, v: ag.attention(q, k, v, causal=True), gqa,
       lambda q, k, v: ref.attention(q, k, v, causal=True))
for kernel, block in (("tiled", 32), ("rows", 16)):
    family(f"flash_{kernel}", lambda q, k, v: ag.flash_attention(q, k, v, causal=True, block_size=block, kernel=kernel),
           gqa, lambda q, k, v: ref.attention(q, k, v, causal=True))
family("flash_mask", lambda q, k, v: ag.flash_attention(q, k, v, mask=mask, block_size=32),
       {"q": arr(2, 11, 16), "k": arr(2, 13, 16), "v": arr(2, 13, 16)},
       lambda q, k, v: ref.attention(q, k, v, mask=mask))
from netcl_lite.ops.rotary_attention import rotary_attention_reference  # noqa: E402
for rope, pairing, causal in ((True, "half", True), (True, "interleaved", False), (False, "half", True)):
    family(f"rotary_attention_{pairing}_{rope}_{causal}",
           lambda q, k, v: ag.rotary_attention(q, k, v, 4, 2, rope=rope, pairing=pairing, causal=causal),
           {"q": arr(2, 19, 4 * 6), "k": arr(2, 19, 2 * 6), "v": arr(2, 19, 2 * 5)},
           lambda q, k, v: rotary_attention_reference(q, k, v, 4, 2, rope=rope, pairing=pairing, causal=causal))
# the node that owns the projections: [dq | dk | dv] in one gradient, x's gradient one product with the
# joined weights (copy_blocks), the weights' read from their blocks (copies where matmul_tall does not
# run; in place by matmul_tall over B·T = 1040 rows, forced as above)
family("rotary_attention_projected",
       lambda x, wq, wk, wv: ag.rotary_attention_projected(x, wq, wk, wv, 4, 2),
       {"x": arr(2, 19, 13), "wq": arr(13, 4 * 6), "wk": arr(13, 2 * 6), "wv": arr(13, 2 * 5)},
       lambda x, wq, wk, wv: rotary_attention_reference(x @ wq, x @ wk, x @ wv, 4, 2))
matmul._device = lambda queue: real_device(queue)._replace(cpu=True)
family("rotary_attention_projected_tall",
       lambda x, wq, wk, wv: ag.rotary_attention_projected(x, wq, wk, wv, 4, 2),
       {"x": arr(16, 65, 13), "wq": arr(13, 4 * 6), "wk": arr(13, 2 * 6), "wv": arr(13, 2 * 5)},
       lambda x, wq, wk, wv: rotary_attention_reference(x @ wq, x @ wk, x @ wv, 4, 2))
matmul._device = real_device
family("rope_half", lambda x: ag.rope(x, offset=5, pairing="half"), {"x": arr(2, 3, 9, 12)},
       lambda x: ref.rope(x, offset=5, pairing="half"))
family("rope_heads", lambda x: ag.rope_heads(x, 3, offset=2), {"x": arr(2, 7, 18)},
       lambda x: ref.rope_heads(x, 3, offset=2))
family("rms_norm", lambda x, w: ag.rms_norm(x, w), {"x": arr(7, 45), "w": arr(45)},
       lambda x, w: ref.rms_norm(x, w))
family("rms_norm_chunks", lambda x, w: ag.rms_norm(x, w), {"x": arr(2, 150, 13), "w": arr(13)},
       lambda x, w: ref.rms_norm(x, w))                   # 300 rows: two chunks, the second ragged
family("layer_norm", lambda x, w, b: ag.layer_norm(x, w, b), {"x": arr(5, 37), "w": arr(37), "b": arr(37)},
       lambda x, w, b: ref.layer_norm(x, w, b))
family("silu", lambda x: ag.silu(x), {"x": arr(3, 41)}, lambda x: ref.silu(x))
family("swiglu", lambda g, u: ag.swiglu(g, u), {"g": arr(3, 41), "u": arr(3, 41)}, lambda g, u: ref.swiglu(g, u))
# gate, up and the unit in one launch (matmul_swiglu): 38 rows (a ragged 6-row tile), 37 columns (a
# ragged last pair of half panels), K = 13 (not a multiple of the unrolled 4)
family("swiglu_linear", lambda x, w1, w3: ag.swiglu_linear(x, w1, w3),
       {"x": arr(2, 19, 13), "w1": arr(13, 37), "w3": arr(13, 37)},
       lambda x, w1, w3: ref.swiglu(x @ w1, x @ w3))
# backward, SwiGLU's gradients and x's gradient dgate W1ᵀ + dup W3ᵀ in one launch (matmul_packed built
# with PAIR and SWIGLU_BWD): 68 x 45 x (61 + 61), above the packing threshold, ragged in every dimension
family("swiglu_linear_paired", lambda x, w1, w3: ag.swiglu_linear(x, w1, w3),
       {"x": arr(2, 34, 45), "w1": arr(45, 61), "w3": arr(45, 61)},
       lambda x, w1, w3: ref.swiglu(x @ w1, x @ w3))
family("add_broadcast", lambda a, b: ag.add(a, b), {"a": arr(4, 9, 7), "b": arr(7)}, lambda a, b: ref.add(a, b))
family("sub", lambda a, b: ag.sub(a, b), {"a": arr(5, 11), "b": arr(5, 11)}, lambda a, b: ref.sub(a, b))
family("div", lambda a, b: ag.div(a, b), {"a": arr(3, 17), "b": 1.5 + np.abs(arr(3, 17))},
       lambda a, b: ref.div(a, b))
family("exp", lambda x: ag.exp(x), {"x": arr(6, 13)}, lambda x: ref.exp(x))
family("sum_rows", lambda x: ag.sum(x, axis=-1), {"x": arr(9, 23)}, lambda x: ref.sum(x, axis=-1))
family("mean_all", lambda x: ag.mean(x), {"x": arr(5, 19)}, lambda x: ref.mean(x))
family("swap_axes", lambda x: ag.swap_axes(x, 0, 2), {"x": arr(3, 5, 7)}, lambda x: ref.swap_axes(x, 0, 2))
ids = rng.integers(0, 17, (3, 5))
family("embedding", lambda t: ag.embedding(t, ids), {"t": arr(17, 12)}, lambda t: ref.embedding(t, ids))
targets = rng.integers(0, 23, 9)
targets[4] = -100
family("cross_entropy", lambda z: ag.cross_entropy(z, targets), {"z": arr(9, 23)},
       lambda z: ref.cross_entropy(z, targets))

# the fused decoding step (kernels/decode.cl): 9 streams (tiles of rows and a row left over; in
# "wide" mode three work-groups of 4 rows), head width 6 and hidden size 20 (ragged against the
# lanes), two layers with a tied head over three positions (cache lengths 0, 1 and the last),
# five layers with an untied head (two launches), and a prompt of 3 positions for 5 streams filled
# at once after one cached position; against reference.decode_step and reference.decode_prefill
if mode == "wide":
    decode._rows_per_group = lambda queue, batch: min(4, batch)


def decode_family(name, batch, layers, heads, groups, d, hidden, max_len, vocab, tied, tol=1e-4):
    """A StepLaunch over max_len positions; logits and caches checked and saved. Float32 chains of
    layers of sums of at most max(D, F, S) = 24 terms: relative errors ~1e-6, far inside tol."""
    dim, kv = heads * d, groups * d
    shapes = dict(norm1=(dim,), wq=(dim, dim), wk=(dim, kv), wv=(dim, kv), wo=(dim, dim), norm2=(dim,),
                  w1=(dim, hidden), w3=(dim, hidden), w2=(hidden, dim))
    weights = [{k: (1 + 0.2 * arr(*s)) if k.startswith("norm") else arr(*s) / np.sqrt(s[0]) for k, s in shapes.items()}
               for _ in range(layers)]
    table, norm, output = arr(vocab, dim), 1 + 0.2 * arr(dim), None if tied else arr(dim, vocab) / np.sqrt(dim)
    ks = [np.zeros((batch, groups, max_len, d), np.float32) for _ in range(layers)]
    vs = [np.zeros_like(k) for k in ks]
    q = nl.device().queue
    t = lambda a: nl.Tensor.from_host(q, a)
    tk, tv = [t(k) for k in ks], [t(v) for v in vs]
    step = decode.StepLaunch(nl.Tensor.zeros(q, (batch, dim)), [{k: t(v) for k, v in w.items()} for w in weights],
                             tk, tv, n_heads=heads, table=t(table), norm=t(norm),
                             output=None if tied else t(output))
    for position in range(max_len):
        ids = rng.integers(0, vocab, batch)
        got = step(position, ids=ids).numpy()
        want, ks, vs = ref.decode_step(None, weights, ks, vs, position, n_heads=heads, ids=ids, table=table,
                                       norm=norm, output=output)
        err = float(np.max(np.abs(got - want) / (1 + np.abs(want))))
        if not err < tol:
            misses.append(f"{name} at position {position}: max error {err:.3g} > {tol}")
        results[f"{name}.logits{position}"] = got
    for i in range(layers):
        results[f"{name}.k{i}"], results[f"{name}.v{i}"] = tk[i].numpy(), tv[i].numpy()


decode_family("decode_tied", 9, 2, 4, 2, 6, 20, 3, 13, True)
decode_family("decode_untied", 3, 5, 2, 1, 4, 7, 2, 11, False)


def prefill_family(name, batch, span, start, layers, heads, groups, d, hidden, max_len, vocab, tol=1e-4):
    """decode_prefill of span positions from start (earlier positions random in the caches)."""
    dim, kv = heads * d, groups * d
    shapes = dict(norm1=(dim,), wq=(dim, dim), wk=(dim, kv), wv=(dim, kv), wo=(dim, dim), norm2=(dim,),
                  w1=(dim, hidden), w3=(dim, hidden), w2=(hidden, dim))
    weights = [{k: (1 + 0.2 * arr(*s)) if k.startswith("norm") else arr(*s) / np.sqrt(s[0]) for k, s in shapes.items()}
               for _ in range(layers)]
    table, norm = arr(vocab, dim), 1 + 0.2 * arr(dim)
    ks = [arr(batch, groups, max_len, d) for _ in range(layers)]
    vs = [arr(batch, groups, max_len, d) for _ in range(layers)]
    ids = rng.integers(0, vocab, (batch, span))
    q = nl.device().queue
    t = lambda a: nl.Tensor.from_host(q, a)
    tk, tv = [t(k) for k in ks], [t(v) for v in vs]
    got = decode.decode_prefill(ids, [{k: t(v) for k, v in w.items()} for w in weights], tk, tv, start, n_heads=heads,
                                table=t(table), norm=t(norm)).numpy()
    want, _, _ = ref.decode_prefill(ids, weights, ks, vs, start, n_heads=heads, table=table, norm=norm)
    err = float(np.max(np.abs(got - want) / (1 + np.abs(want))))
    if not err < tol:
        misses.append(f"{name}: max error {err:.3g} > {tol}")
    results[f"{name}.hidden"] = got
    for i in range(layers):
        results[f"{name}.k{i}"], results[f"{name}.v{i}"] = tk[i].numpy(), tv[i].numpy()


prefill_family("decode_prefill", 5, 3, 1, 2, 4, 2, 6, 20, 5, 13)

# the BPE merge kernel (kernels/bpe.cl): a tiny tokenizer's tables built on the device (tiktoken's
# rule, from its tokens; and a merge list), then one call's new chunks merged; the Python loop is
# the reference
bpe_tok = BPETokenizer()
bpe_tok.train_from_iterator(["the river and the road, the quick brown fox; naïve café 日本"] * 4, 256 + 40)
bpe_tok.kernel_min_bytes = bpe_tok.kernel_text_min_bytes = None   # the Python loop, the reference
bpe_text = "the rivers and roads of a naïve fox, 日本の café " * 3
python_ids = bpe_tok.encode_ordinary(bpe_text)
kernel_tok = pickle.loads(pickle.dumps(bpe_tok))             # a copy with an empty cache
kernel_tok.kernel_min_bytes, kernel_tok.kernel_text_min_bytes = 0, None
kernel_ids = kernel_tok.encode_ordinary(bpe_text)
if kernel_ids != python_ids:
    misses.append(f"bpe: kernel ids {kernel_ids} differ from the Python loop's {python_ids}")
# the whole call on the device (split, merges, gather), with chunks too long for the kernel
text_tok = pickle.loads(pickle.dumps(bpe_tok))
text_tok.kernel_text_min_bytes = 0
whole_text = bpe_text + "x" * 300 + " it's THEY'LL\r\n  \t12345 ..!\n\n 𝐀𝟎 " + "é" * 129 + " end  "
text_ids = text_tok.encode_ordinary(whole_text)                    # one launch, one work-group
if text_ids != bpe_tok.encode_ordinary(whole_text):
    misses.append(f"bpe (whole call): ids {text_ids} differ from the Python loop's")
device_merge.ONE_GROUP_BYTES = 0                                     # four launches, many work-groups
if text_tok.encode_ordinary(whole_text) != text_ids:
    misses.append("bpe (whole call): four launches and one disagree")
# a batch in one call: the split restarts at each document's start (four launches, then one)
batch_docs = ["hel", "lo", "", whole_text[:200], "12", "34", "é" * 129 + "x", " end  "]
batch_expected = [bpe_tok.encode_ordinary(doc) for doc in batch_docs]
batch_ids = text_tok.encode_ordinary_batch(batch_docs)
device_merge.ONE_GROUP_BYTES = 1 << 16
if batch_ids != batch_expected or text_tok.encode_ordinary_batch(batch_docs) != batch_expected:
    misses.append(f"bpe (batch): ids {batch_ids} differ from the Python loop's {batch_expected}")
listed = DeviceMerger(range(256), merges=[(97, 98, 256), (256, 99, 257), (98, 98, 258)])
listed_ids = listed.merge([b"abc", b"xab", b"abbb", b"a"])
if listed_ids != [(257,), (120, 256), (256, 258), (97,)]:
    misses.append(f"bpe (merge list): got {listed_ids}")
results["bpe_ids"] = np.array(kernel_ids)
results["bpe_text_ids"] = np.array(text_ids)
results["bpe_batch_ids"] = np.array([i for ids in batch_ids for i in ids])
results["bpe_listed_ids"] = np.array([i for ids in listed_ids for i in ids])

np.savez(out_file, **results)
if misses:
    raise SystemExit("forward results miss their float64 references:\n" + "\n".join(misses))
print(opencl12.report())
print(f"{nl.device().platform}: {len(results)} arrays, every forward within its reference's tolerance")
