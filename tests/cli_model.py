"""A small model folder the compressor's command line reads with ``--model``, for the hostile-input
tests of the command line.

Test modules import from here, so no test module imports from another.
"""

from __future__ import annotations

from pathlib import Path

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
