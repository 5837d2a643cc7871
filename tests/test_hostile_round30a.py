"""Hostile round 30a: the compressor's helpers and blob, used as a hostile caller would.

``files.atomic_write`` refused a path ending in '/' (a folder) but took one ending in '/.' or
'/..': ``pathlib.Path`` drops a trailing '/.', so ``atomic_write("new/.", data)`` created a regular
file named ``new`` and ``atomic_write("notes.txt/.", data)`` replaced ``notes.txt``, where the
system itself would refuse the path (it names a folder). ``BPETokenizer.save`` and the capstone's
records write through it. The command line's OUT already refused such names.
"""

from __future__ import annotations

import os

import pytest

from netcl_lite import files


@pytest.mark.parametrize("tail", ["/.", "/..", "/./.", "/./"])
def test_atomic_write_refuses_a_path_naming_a_folder_by_a_trailing_dot(tmp_path, tail):
    """atomic_write("x/.") wrote a regular file at x (Path drops the '/.'), or replaced the file x."""
    new = str(tmp_path / "new") + tail
    with pytest.raises(ValueError, match="names a folder"):
        files.atomic_write(new, b"data")
    assert not os.path.lexists(tmp_path / "new")
    kept = tmp_path / "kept.txt"
    kept.write_bytes(b"old")
    with pytest.raises(ValueError, match="names a folder"):
        files.atomic_write(str(kept) + tail, b"new")
    assert kept.read_bytes() == b"old"


def test_atomic_write_refuses_a_bytes_path_ending_in_a_dot(tmp_path):
    with pytest.raises(ValueError, match="names a folder"):
        files.atomic_write(os.fsencode(tmp_path / "new") + b"/.", b"data")
    assert not os.path.lexists(tmp_path / "new")


def test_atomic_write_still_writes_a_name_with_dots_inside(tmp_path):
    for name in ("a.", ".a", "..a", "a..b"):
        files.atomic_write(tmp_path / name, b"x")
        assert (tmp_path / name).read_bytes() == b"x"
    (tmp_path / "sub").mkdir()
    files.atomic_write(str(tmp_path / "sub" / ".." / "up.txt"), b"y")   # '..' inside a path, not at its end
    assert (tmp_path / "up.txt").read_bytes() == b"y"


# -- dynamic_evaluation.coded_bits: a token the model gives probability 0 -------------------------------

def test_coded_bits_is_finite_where_the_model_gives_a_token_probability_zero(queue):
    """coded_bits took -log2 of the model's probability as is: a token whose probability underflows to 0
    (a sharp model) gave inf bits and a divide-by-zero RuntimeWarning (an exception under -W error),
    where compress codes it in about 24 bits (the range coder gives every token some probability)."""
    import warnings

    import numpy as np

    from netcl_lite import adaptation
    from netcl_lite.dynamic_evaluation import coded_bits
    from netcl_lite.nn import DecoderLM, LMConfig
    from netcl_lite.text import BPETokenizer

    text = "Each stream is coded from the model's predictions; a header says how to read it back.\n" * 4
    tok = BPETokenizer()
    tok.train_from_iterator([text], 300, progress=False)
    model = DecoderLM(LMConfig(vocab_size=300, hidden_size=16, intermediate_size=32, num_hidden_layers=1,
                               num_attention_heads=2, num_key_value_heads=1, max_position_embeddings=16),
                      queue=queue, seed=2)
    params = model.parameters()
    for name in params:                                 # sharpen it until some probabilities are 0 in float64
        adaptation.write(params[name], params[name].numpy() * 1e4)
    ids = np.asarray(tok.encode_ordinary(text), np.int64)
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        bits, _ = coded_bits(model, tok, ids)
    assert np.isfinite(bits).all()
    assert bits.max() <= 25                             # the coder's least probability, 2**-24, and no less


# -- make_predictor: its primer_ids refused under another parameter's name --------------------------------

@pytest.fixture(scope="module")
def tiny(queue):
    from netcl_lite.nn import DecoderLM, LMConfig
    from netcl_lite.text import BPETokenizer

    tok = BPETokenizer()
    tok.train_from_iterator(["a header says how to read it back.\n" * 4], 300, progress=False)
    model = DecoderLM(LMConfig(vocab_size=300, hidden_size=16, intermediate_size=32, num_hidden_layers=1,
                               num_attention_heads=2, num_key_value_heads=1, max_position_embeddings=16),
                      queue=queue, seed=1)
    return model, tok


@pytest.mark.parametrize("mix, adapt", [(True, False), (False, True), (True, True)])
def test_make_predictor_names_primer_ids_with_ids_past_the_vocabulary(tiny, mix, adapt):
    """make_predictor said 'primer must hold token ids' (mix) or 'train_ids must lie in' (adapt): names of
    the mixer's and the Adapter's parameters, not of make_predictor's own, primer_ids."""
    import numpy as np

    from netcl_lite import compression as cz
    from netcl_lite.adaptation import AdaptConfig

    model, tok = tiny
    with pytest.raises(ValueError, match=r"^primer_ids\b"):
        cz.make_predictor(model, tok, np.array([5]), 3, mix, np.full(40, 999), adapt=AdaptConfig() if adapt else None)


def test_make_predictor_names_primer_ids_too_short_to_adapt(tiny):
    """An adapting predictor with a few primer ids said 'train_ids holds 5 tokens', the Adapter's name."""
    import numpy as np

    from netcl_lite import compression as cz
    from netcl_lite.adaptation import AdaptConfig

    model, tok = tiny
    with pytest.raises(ValueError, match=r"^primer_ids\b"):
        cz.make_predictor(model, tok, np.array([5]), 3, False, np.arange(5), adapt=AdaptConfig())
    cz.make_predictor(model, tok, np.array([5]), 3, True, np.arange(5)).close()   # enough for the mixer alone


# -- compress with a model whose weights are not finite -----------------------------------------------------

@pytest.mark.parametrize("weight", ["embed.table", "layers.0.attn.wk", "norm.weight"])
@pytest.mark.parametrize("mix", [False, True])
def test_compress_with_a_non_finite_model_names_the_model(tiny, weight, mix):
    """compress with a NaN in the model's weights said 'decode_step: x has non-finite values ...; pass
    finite numbers (use a boolean mask, not -inf, to exclude entries)': an op's operand and advice for
    an op's caller, naming neither the model nor compress's arguments."""
    import numpy as np

    from netcl_lite import adaptation
    from netcl_lite import compression as cz
    from netcl_lite.core.stream import NonFiniteError

    model, tok = tiny
    param = model.parameters()[weight]
    kept = param.numpy().copy()
    broken = kept.copy()
    broken.flat[0] = np.nan
    adaptation.write(param, broken)
    try:
        with pytest.raises(NonFiniteError, match=r"^model: .*weights") as info:
            cz.compress(b"a header says how to read it back.\n" * 3, model, tok, mix=mix,
                        primer=np.arange(40) if mix else None)
        assert "boolean mask" not in str(info.value)
    finally:
        adaptation.write(param, kept)
