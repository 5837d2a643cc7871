
import numpy as np
import pytest

from netcl_lite.budget import (
    attention_parameters,
    format_bytes,
    kv_cache_bytes,
    score_matrix_bytes,
    tied_embedding_savings,
    to_gb,
    to_gib,
)


@pytest.mark.parametrize("seq_len, expected", [(2048, 5_368_709_120), (32_768, 85_899_345_920)])
def test_sheet_kv_cache(seq_len, expected):
    full = kv_cache_bytes(80, 64, 128, seq_len)
    grouped = kv_cache_bytes(80, 8, 128, seq_len)
    assert full == expected and type(full) is int
    assert full == 8 * grouped


def test_kv_cache_matches_an_array_of_that_shape():
    cache = np.zeros((2, 3, 4, 5, 6), dtype=np.float32)  # K/V, layers, heads, sequence, width
    assert kv_cache_bytes(3, 4, 6, 5, bytes_per_element=4) == cache.nbytes
    assert kv_cache_bytes(3, 4, 6, 5, batch=7, bytes_per_element=4) == 7 * cache.nbytes


def test_zero_length_costs_nothing():
    assert kv_cache_bytes(3, 4, 6, 0, bytes_per_element=4) == 0
    assert score_matrix_bytes(0) == 0


def test_huge_counts_stay_exact():
    n = kv_cache_bytes(10**6, 10**6, 10**6, 10**6, batch=10**6)
    assert n == 2 * 10**30 * 2 and type(n) is int


def test_units():
    assert to_gb(5_368_709_120) == 5.36870912 and to_gib(5_368_709_120) == 5.0
    assert format_bytes(5_368_709_120) == "5,368,709,120 B = 5.37 GB = 5.00 GiB"
    assert format_bytes(85_899_345_920) == "85,899,345,920 B = 85.90 GB = 80.00 GiB"
    assert format_bytes(2_147_483_648) == "2,147,483,648 B = 2.15 GB = 2.00 GiB"
    assert format_bytes(1_023) == "1,023 B"
    assert format_bytes(2048) == "2,048 B = 2.05 kB = 2.00 KiB"
    assert format_bytes(0) == "0 B"


@pytest.mark.parametrize("n_kv_heads, expected", [(1, 384), (3, 576), (None, 576)])
def test_sheet_attention_parameters(n_kv_heads, expected):
    assert attention_parameters(12, 3, n_kv_heads) == expected


@pytest.mark.parametrize("heads", [1, 2, 8, 32, 128])
def test_mha_parameters_do_not_depend_on_head_count(heads):
    assert attention_parameters(512, heads) == 4 * 512 * 512


def test_gqa_parameters_by_hand():
    # D = 4096, 32 query heads of width 128, 8 K/V heads: Q, O are 4096^2; K, V are 4096 x 1024.
    assert attention_parameters(4096, 32, 8) == 2 * 4096**2 + 2 * 4096 * 1024


def test_tied_embedding_savings():
    assert tied_embedding_savings(32_000, 512) == 16_384_000


def test_score_matrix_bytes():
    assert score_matrix_bytes(8192) == 268_435_456 == 256 * 2**20
    assert score_matrix_bytes(32_768, bytes_per_element=2) == 2_147_483_648 == 2 * 2**30
    assert score_matrix_bytes(8192, heads=32, batch=4) == 128 * 256 * 2**20
    assert score_matrix_bytes(100, query_len=1) == 400  # one decoding step against 100 cached keys


@pytest.mark.parametrize(
    "call, error, match",
    [
        (lambda: kv_cache_bytes(-1, 64, 128, 2048), ValueError, "layers must be >= 0"),
        (lambda: kv_cache_bytes(80, 64, 128, -5), ValueError, "seq_len must be >= 0"),
        (lambda: kv_cache_bytes(80, 64, 128.0, 2048), TypeError, "head_dim must be an int"),
        (lambda: kv_cache_bytes(80, True, 128, 2048), TypeError, "kv_heads must be an int"),
        (lambda: kv_cache_bytes(80, 64, 128, 2048, batch=0.5), TypeError, "batch must be an int"),
        (lambda: kv_cache_bytes(80, 64, 128, 2048, bytes_per_element=0), ValueError, "bytes_per_element must be >= 1"),
        (lambda: attention_parameters(12, 5), ValueError, "n_heads 5 must divide dim 12"),
        (lambda: attention_parameters(12, 4, 3), ValueError, "n_kv_heads 3 must divide n_heads 4"),
        (lambda: attention_parameters(12, 0), ValueError, "n_heads must be >= 1"),
        (lambda: attention_parameters(12.0, 3), TypeError, "dim must be an int"),
        (lambda: attention_parameters(12, 3, 0), ValueError, "n_kv_heads must be >= 1"),
        (lambda: score_matrix_bytes(-1), ValueError, "seq_len must be >= 0"),
        (lambda: score_matrix_bytes(8192, heads=1.5), TypeError, "heads must be an int"),
        (lambda: score_matrix_bytes(8192, query_len=-1), ValueError, "query_len must be >= 0"),
        (lambda: tied_embedding_savings(32_000.0, 512), TypeError, "vocab must be an int"),
        (lambda: tied_embedding_savings(32_000, -512), ValueError, "dim must be >= 0"),
        (lambda: to_gb(-1), ValueError, "n_bytes must be >= 0"),
        (lambda: to_gib(1.5), TypeError, "n_bytes must be an int"),
        (lambda: format_bytes(False), TypeError, "n_bytes must be an int"),
    ],
)
def test_bad_input_is_rejected(call, error, match):
    with pytest.raises(error, match=match):
        call()
