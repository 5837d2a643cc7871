"""netcl_lite.compression used as a hostile user would: threads sharing one model, blobs whose
header fields lie, inputs past the stated limits, odd argument types, and the command line
fed devices, pipes, ``-`` and missing folders. Each case gives the original bytes back or a
clear ``ValueError``/``TypeError`` (a CLI message and exit status), quickly and with bounded
memory. A small untrained model serves throughout: its predictions are poor, which none of
these cases cares about."""

from __future__ import annotations

import threading

import numpy as np
import pytest

from netcl_lite import compression as cz
from netcl_lite.nn import DecoderLM, LMConfig
from netcl_lite.text import BPETokenizer

TEXT = ("Each stream is coded from the model's predictions; a header says how to read it back.\n"
        "Counts of what followed each context sharpen the guesses as the text goes on.\r\n") * 6


@pytest.fixture(scope="module")
def tiny(queue):
    """(model, tokenizer, primer ids): a 300-token BPE, a one-layer model over a 16-token window."""
    tok = BPETokenizer()
    tok.train_from_iterator([TEXT], 300, progress=False)
    config = LMConfig(vocab_size=300, hidden_size=16, intermediate_size=32, num_hidden_layers=1,
                      num_attention_heads=2, num_key_value_heads=1, max_position_embeddings=16)
    primer = np.asarray(tok.encode_ordinary(TEXT[:300]), np.int64)
    return DecoderLM(config, queue=queue, seed=1), tok, primer


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
