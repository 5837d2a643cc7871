"""Hostile round 30d: what round 30's testers noticed and left, each fixed.

- ``make_predictor(..., mix=False, techniques=...)`` ignored ``techniques`` without a word: a caller
  measuring one technique alone got the model alone and no sign of it.
- ``TreeSSE`` given no streams (shape (0, vocab)) failed inside a reshape, naming no parameter.
- ``files.write_new`` refused a mode of the wrong type (a float, a NumPy integer) with a ValueError;
  a wrong type is a TypeError, as everywhere else in the library.
- ``masks.causal(2**40)`` (noticed by round 32a) asked NumPy for terabytes and failed with a bare
  MemoryError; every mask builder now refuses more than ``masks.MAX_CELLS`` cells naming its lengths.
"""

from __future__ import annotations

import numpy as np
import pytest

from netcl_lite import files, masks
from netcl_lite.context_mixing import TreeSSE


@pytest.fixture(scope="module")
def tiny(queue):
    from netcl_lite.nn import DecoderLM, LMConfig
    from netcl_lite.text import BPETokenizer

    tok = BPETokenizer()
    tok.train_from_iterator(["the mixer's parts are chosen by name.\n" * 4], 300, progress=False)
    model = DecoderLM(LMConfig(vocab_size=300, hidden_size=16, intermediate_size=32, num_hidden_layers=1,
                               num_attention_heads=2, num_key_value_heads=1, max_position_embeddings=16),
                      queue=queue, seed=1)
    return model, tok


def test_make_predictor_refuses_techniques_when_mix_is_off(tiny):
    from netcl_lite import compression as cz
    from netcl_lite.context_mixing import TECHNIQUES

    model, tok = tiny
    with pytest.raises(ValueError, match=r"^techniques .*mix is off"):
        cz.make_predictor(model, tok, np.array([5]), 3, False, np.arange(5), techniques=TECHNIQUES[:1])
    cz.make_predictor(model, tok, np.array([5]), 3, False, np.arange(5)).close()
    cz.make_predictor(model, tok, np.array([5]), 3, True, np.arange(5), techniques=TECHNIQUES[:1]).close()


def test_tree_sse_with_no_streams_names_p():
    sse = TreeSSE(300)
    with pytest.raises(ValueError, match=r"^p must be .* at least one stream\), got float64 of shape \(0, 300\)"):
        sse(np.zeros((0, 300)))
    assert sse(np.full((1, 300), 1 / 300)).shape == (1, 300)


@pytest.mark.parametrize("mode", [0.5, np.int64(0o600), "0o600", True])
def test_write_new_refuses_a_mode_of_another_type_with_type_error(tmp_path, mode):
    with pytest.raises(TypeError, match="^mode must be permission bits"):
        files.write_new(tmp_path / "f", b"x", mode)
    assert not (tmp_path / "f").exists()


@pytest.mark.parametrize("mode", [-1, 0o10000])
def test_write_new_refuses_a_mode_out_of_range_with_value_error(tmp_path, mode):
    with pytest.raises(ValueError, match="^mode must be permission bits"):
        files.write_new(tmp_path / "f", b"x", mode)
    files.write_new(tmp_path / "f", b"x", 0o640)
    assert (tmp_path / "f").stat().st_mode & 0o777 == 0o640


@pytest.mark.parametrize("build", [lambda: masks.causal(2**40), lambda: masks.causal(2**15, 2**15),
                                   lambda: masks.encoder(2**15), lambda: masks.cross(2**15, 2**14 + 1)])
def test_a_mask_past_max_cells_is_refused_naming_its_lengths(build):
    """masks.causal(2**40) asked NumPy for terabytes: a bare MemoryError naming no parameter (round 32a)."""
    with pytest.raises(ValueError, match=r"(query_len|valid|target_valid).*(at most|cells)"):
        build()


def test_masks_at_max_cells_are_still_built():
    assert masks.causal(2**14).sum() == 2**14 * (2**14 + 1) // 2
    assert masks.cross(2**14, 2**14).shape == (2**14, 2**14)
