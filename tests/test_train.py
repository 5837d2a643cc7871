"""The training loop: seeded windows, a bit-identical resume after Ctrl-C, flat memory over 200 steps,
checkpoints on schedule, the JSON log, and a loss that actually falls."""

from __future__ import annotations

import dataclasses
import gc
import json
import os
import signal

import numpy as np
import pytest

from netcl_lite.core.tensor import Tensor, device_bytes_in_use, track_allocations
from netcl_lite.nn import DecoderLM, LMConfig
from netcl_lite.train import TrainConfig, WindowLoader, eval_windows, learning_rate_at, parameter_groups, train

TINY = LMConfig(vocab_size=32, hidden_size=16, intermediate_size=32, num_hidden_layers=2, num_attention_heads=2,
                num_key_value_heads=1, max_position_embeddings=16, initializer_range=0.1)
IDS = np.random.default_rng(0).integers(0, 32, 3000)
PATTERN = np.tile(np.arange(10), 300)   # deterministic next token: a model that learns drives the loss to ~0


def weights(model):
    return {n: p.numpy() for n, p in model.parameters().items()}


def test_loader_is_seeded_shifted_and_resumable():
    a, b = WindowLoader(IDS, 4, 8, seed=1), WindowLoader(IDS, 4, 8, seed=1)
    x, y = a.next_batch()
    assert x.shape == y.shape == (4, 8) and np.array_equal(x[:, 1:], y[:, :-1])
    assert np.array_equal(x, b.next_batch()[0])
    state = a.state_dict()
    json.dumps(state)   # saved in trainer_state.json
    after = a.next_batch()[0]
    b.load_state_dict(state)
    assert np.array_equal(after, b.next_batch()[0])
    with pytest.raises(ValueError, match="a window needs 9"):
        WindowLoader(IDS[:8], 1, 8)


def test_eval_windows_predict_every_token_after_the_first_once():
    x, y = eval_windows(np.arange(23), 5)
    assert x.shape == (4, 5) and y.ravel().tolist() == list(range(1, 21))


def test_groups_decay_matrices_not_gains_or_the_embedding(queue):
    groups = parameter_groups(DecoderLM(TINY, queue=queue), 0.1)
    decayed, plain = sorted(groups[0]["params"]), sorted(groups[1]["params"])
    assert "layers.0.attn.wq" in decayed and "layers.1.ffn.w2" in decayed
    assert plain == ["embed.table", "layers.0.norm1.weight", "layers.0.norm2.weight", "layers.1.norm1.weight",
                     "layers.1.norm2.weight", "norm.weight"]


def test_ctrl_c_checkpoints_and_resume_is_bit_identical(queue, tmp_path):
    config = TrainConfig(batch_size=4, block_size=12, max_steps=12, warmup_steps=3, eval_interval=4, eval_windows=8,
                         learning_rate=1e-2, min_lr=1e-3)
    straight = DecoderLM(TINY, queue=queue, seed=1)
    log_a = train(straight, IDS[:2500], IDS[2500:], config, tmp_path / "a", progress=False)

    def ctrl_c(step, record):
        if step == 5:
            os.kill(os.getpid(), signal.SIGINT)

    stopped = DecoderLM(TINY, queue=queue, seed=1)
    with pytest.raises(KeyboardInterrupt, match="stopped after step 5"):
        train(stopped, IDS[:2500], IDS[2500:], config, tmp_path / "b", progress=False, callback=ctrl_c)
    state = json.loads((tmp_path / "b" / "trainer_state.json").read_text())
    assert state["step"] == 5 and len(state["log"]["train"]) == 5
    resumed = DecoderLM(TINY, queue=queue, seed=99)   # other weights: all must come from the checkpoint
    log_b = train(resumed, IDS[:2500], IDS[2500:], config, tmp_path / "b", resume=True, progress=False)
    final_a, final_b = weights(straight), weights(resumed)
    for name in final_a:
        assert final_a[name].tobytes() == final_b[name].tobytes(), f"{name} differs after resuming"
    assert [r["loss"] for r in log_a["train"]] == [r["loss"] for r in log_b["train"]]
    assert log_a["eval"] == log_b["eval"] and [e["step"] for e in log_a["eval"]] == [0, 4, 8, 12]
    on_disk = json.loads((tmp_path / "a" / "log.json").read_text())
    assert on_disk["train"][-1]["step"] == 12 and on_disk["eval"] == log_a["eval"]


def test_checkpoints_every_n_steps_open_as_models(queue, tmp_path):
    seen = []

    def look(step, record):   # runs before that step's own checkpoint: it sees the previous one
        if step in (4, 7):
            seen.append(json.loads((tmp_path / "trainer_state.json").read_text())["step"])

    model = DecoderLM(TINY, queue=queue)
    train(model, IDS, IDS, TrainConfig(batch_size=2, block_size=8, max_steps=7, warmup_steps=1, eval_interval=0,
                                       checkpoint_interval=3), tmp_path, progress=False, callback=look)
    assert seen == [3, 6]
    assert json.loads((tmp_path / "trainer_state.json").read_text())["step"] == 7   # and one at the end
    back = DecoderLM.from_pretrained(tmp_path, queue=queue)
    assert all(w.tobytes() == back.parameters()[n].numpy().tobytes() for n, w in weights(model).items())


def test_the_loss_falls_on_a_learnable_sequence(queue):
    model = DecoderLM(TINY, queue=queue, seed=2)
    log = train(model, PATTERN, PATTERN, TrainConfig(batch_size=8, block_size=12, max_steps=60, warmup_steps=5,
                                                     learning_rate=1e-2, min_lr=1e-3, eval_interval=30),
                progress=False)
    assert log["eval"][0]["loss"] > 3.0 and log["eval"][-1]["loss"] < 0.2, log["eval"]


def _live_tensors() -> int:
    gc.collect()
    return sum(1 for o in gc.get_objects() if type(o) is Tensor)


def _resident_bytes() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def _run_steps(queue, steps, keep=None):
    """Run a training loop; at step 20 and at the end record live Tensors, live device bytes and buffers,
    resident memory, and the allocations of one identical forward."""
    marks = {}
    model = DecoderLM(TINY, queue=queue, seed=3)
    allocations = []

    def probe(step, record):
        if keep is not None:
            keep.append(model.loss(IDS[None, :8], IDS[None, 1:9]))   # a leak: results held across steps
        if step in (20, steps):
            marks[step] = (_live_tensors(), _resident_bytes(), device_bytes_in_use(queue.context))
            with track_allocations() as seen:
                model.loss(IDS[None, :8], IDS[None, 1:9])
            allocations.append(seen.bytes)

    train(model, IDS, IDS, TrainConfig(batch_size=4, block_size=8, max_steps=steps, warmup_steps=2,
                                       eval_interval=50, eval_windows=4), progress=False, callback=probe)
    return marks, allocations


@pytest.mark.slow
def test_device_memory_is_flat_over_200_steps(queue):
    marks, allocations = _run_steps(queue, 200)
    (t20, rss20, dev20), (t200, rss200, dev200) = marks[20], marks[200]
    assert t200 == t20, f"live device tensors grew from {t20} at step 20 to {t200} at step 200"
    assert dev200 == dev20, f"live device (bytes, buffers) went from {dev20} at step 20 to {dev200} at step 200"
    assert allocations[0] == allocations[1], "an identical forward allocated a different number of bytes"
    assert rss200 - rss20 < 16 * 2**20, f"resident memory grew by {(rss200 - rss20) / 2**20:.1f} MiB over 180 steps"


@pytest.mark.slow
def test_the_memory_check_catches_a_leak(queue):
    """The check above can fail: holding one small result per step shows up as growing live tensors."""
    marks, _ = _run_steps(queue, 40, keep=[])
    assert marks[40][0] == marks[20][0] + 20   # one held loss value per step


def test_the_loop_sets_the_rate_its_config_names(queue):
    config = TrainConfig(batch_size=2, block_size=8, max_steps=6, warmup_steps=2, eval_interval=0, eval_windows=2,
                         learning_rate=1e-2, min_lr=0.0, decay="linear")
    log = train(DecoderLM(TINY, queue=queue), IDS, IDS, config, progress=False)
    assert [r["lr"] for r in log["train"]] == [learning_rate_at(s, config) for s in range(6)]
    assert [round(r["lr"] / 1e-2, 6) for r in log["train"]] == [0.5, 1.0, 1.0, 0.75, 0.5, 0.25]
    held = dataclasses.replace(config, decay_steps=2)      # warmup, stable, decay
    assert [round(learning_rate_at(s, held) / 1e-2, 6) for s in range(7)] == [0.5, 1.0, 1.0, 1.0, 1.0, 0.5, 0.0]


def test_bad_training_configs_are_named(queue):
    with pytest.raises(ValueError, match="max_steps must be a positive int"):
        TrainConfig(max_steps=0)
    with pytest.raises(ValueError, match="min_lr"):
        TrainConfig(learning_rate=1e-3, min_lr=1e-2)
    with pytest.raises(ValueError, match="beta2 must be < 1"):
        TrainConfig(beta2=1.0)
    with pytest.raises(ValueError, match=r"decay must be one of \['cosine', 'linear'\], got 'step'"):
        TrainConfig(decay="step")
    with pytest.raises(ValueError, match="decay must be one of"):
        TrainConfig(decay=["linear"])
    with pytest.raises(ValueError, match="decay_steps=991 must not exceed max_steps - warmup_steps = 950"):
        TrainConfig(max_steps=1000, warmup_steps=50, decay_steps=991)
    with pytest.raises(ValueError, match="block_size=32 exceeds the model's max_position_embeddings=16"):
        train(DecoderLM(TINY, queue=queue), IDS, IDS, TrainConfig(block_size=32))
    with pytest.raises(ValueError, match="resume=True needs out_dir"):
        train(DecoderLM(TINY, queue=queue), IDS, IDS, TrainConfig(block_size=8), resume=True)


_THREADS_CHILD = """
import hashlib, json, numpy as np
import netcl_lite as nl
from netcl_lite.nn import DecoderLM, LMConfig
from netcl_lite.train import TrainConfig, train
config = LMConfig(vocab_size=96, hidden_size=64, intermediate_size=160, num_hidden_layers=2, num_attention_heads=4,
                  num_key_value_heads=2, max_position_embeddings=64, initializer_range=0.05)
model = DecoderLM(config, seed=0)
ids = np.random.default_rng(0).integers(0, 96, 20000)
log = train(model, ids, ids[:2000], TrainConfig(batch_size=8, block_size=64, max_steps=3, warmup_steps=1,
                                                eval_interval=0, eval_windows=2), progress=False)
digest = hashlib.sha256(b"".join(p.numpy().tobytes() for _, p in sorted(model.parameters().items())))
print(json.dumps({"units": nl.device().queue.device.max_compute_units, "weights": digest.hexdigest(),
                  "losses": [r["loss"] for r in log["train"]], "norms": [r["grad_norm"] for r in log["train"]]}))
"""


@pytest.mark.slow
def test_training_steps_have_the_same_bits_on_one_and_two_compute_units(queue):
    """Three training steps of a small model (the fused attention, the products, the multi-tensor AdamW
    and clipping, all of a step's kernels) give the same weights, losses and norms, bit for bit,
    with one PoCL thread and with two: no kernel's result depends on how its work is handed out."""
    from kernel_cases import runs_on_one_and_two_pocl_threads

    runs = runs_on_one_and_two_pocl_threads(queue, _THREADS_CHILD)
    assert runs[0] == runs[1], "one and two threads train the same weights, bit for bit"
