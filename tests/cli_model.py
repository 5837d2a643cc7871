"""A small model folder the compressor's command line reads with ``--model``, for the hostile-input
tests of the command line.

Test modules import from here, so no test module imports from another.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

#: the repository's root, put on a subprocess's path
ROOT = Path(__file__).resolve().parents[1]

#: the text the tokenizer is trained on and the command line codes
TEXT = ("Each stream is coded from the model's predictions; a header says how to read it back.\n"
        "Counts of what followed each context sharpen the guesses as the text goes on.\r\n") * 6

#: a one-layer model over a 16-token window (as tests/test_compression_hostile.py's)
SMALL = dict(hidden_size=16, intermediate_size=32, num_hidden_layers=1, num_attention_heads=2,
             num_key_value_heads=1, max_position_embeddings=16)


def tiny_model(queue):
    """(model, tokenizer, primer ids): a small untrained model, a 300-token BPE trained on :data:`TEXT`,
    and TEXT's ids."""
    import numpy as np

    from netcl_lite.nn import DecoderLM, LMConfig
    from netcl_lite.text import BPETokenizer

    tok = BPETokenizer()
    tok.train_from_iterator([TEXT], 300, progress=False)
    model = DecoderLM(LMConfig(vocab_size=300, **SMALL), queue=queue, seed=1)
    return model, tok, np.asarray(tok.encode_ordinary(TEXT), np.int64)


def write_model_folder(queue, folder: Path) -> Path:
    """``folder`` holding a small untrained model (config.json, model.safetensors) and a 300-token
    BPE (tokenizer.json) trained on :data:`TEXT`."""
    from netcl_lite.nn import DecoderLM, LMConfig
    from netcl_lite.text import BPETokenizer

    tok = BPETokenizer()
    tok.train_from_iterator([TEXT], 300, progress=False)
    model = DecoderLM(LMConfig(vocab_size=300, **SMALL), queue=queue, seed=1)
    model.save_pretrained(folder)
    tok.save(folder / "tokenizer.json")
    return folder


def environment(**changes) -> dict:
    """This process's environment with the repository on the path and ``changes`` (None: unset)."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    for name, value in changes.items():
        if value is None:
            env.pop(name, None)
        else:
            env[name] = value
    return env


def listing(folder: Path) -> list[str]:
    """The names in ``folder``, sorted."""
    return sorted(p.name for p in Path(folder).iterdir())


def compress_patched(patch: str, src, out, model_dir) -> subprocess.CompletedProcess:
    """``python -m netcl_lite.compression compress SRC OUT --model DIR`` in a new process, run in OUT's
    folder with its ``os`` functions patched first by the code ``patch`` (os, signal and sys imported
    for it), standard input empty."""
    script = (f"import os, runpy, signal, sys\n{patch}"
              f"sys.argv = ['compression', 'compress', {str(src)!r}, {str(out)!r}, '--model', {str(model_dir)!r}]\n"
              f"runpy.run_module('netcl_lite.compression', run_name='__main__', alter_sys=True)\n")
    return subprocess.run([sys.executable, "-c", script], cwd=Path(out).parent, stdin=subprocess.DEVNULL,
                          capture_output=True, timeout=120, env=environment())


def seed_corpus(cache: Path, corpus_cache: Path) -> Path:
    """Copy the primer's stored corpus from ``corpus_cache`` (the session fixture of that name, which
    parses the standard library once per run) into ``cache``, as the first run of the command line
    with that cache would store it, and return the entry's path. A test that damages the entry then
    costs one parse of the library (when the damaged entry is read around), not two."""
    shutil.copytree(Path(corpus_cache) / "corpus", Path(cache) / "corpus")
    entries = listing(Path(cache) / "corpus")
    assert len(entries) == 1, entries
    return Path(cache) / "corpus" / entries[0]
