"""Both builds of the register-blocked kernels, whatever CPU runs the tests.

The matmul micro-kernel, the tiled flash kernels and cross-entropy are compiled with ``-DVW=16``
where PoCL targets AVX-512 and ``-DVW=8`` elsewhere (``core.kernels.vector_lanes``).
A machine runs only its own width in the other test files; here each op is forced to
each width in turn (the kernel cache is keyed by the build options, so the two builds
live side by side) and checked against the float64 references. The tolerances are the
ones the other files justify: ``matmul_atol`` and ``attention_atol``
(netcl_lite.testing), and gradcheck's finite-difference bound (kernel_cases.py); the vector
width changes only the order of the float32 sums, which those bounds already cover.
"""

from __future__ import annotations

import sys

import numpy as np
import pytest
from kernel_cases import built_options, check_matmul_transposes, f32, gradcheck, qkv, rand

from netcl_lite import autograd as ag
from netcl_lite import ops, reference
from netcl_lite.ops.flash_attention import TILING, TILING_NARROW
from netcl_lite.ops.matmul import TILES, packed_pays, tile_for
from netcl_lite.testing import EPS32, assert_close, attention_atol, matmul_atol

WIDTHS = sorted(TILES)


def assert_built(vw: int, file: str, *names: str) -> None:
    """The test ran the build it names: the kernel cache holds each kernel at this width."""
    for name in names:
        assert f"-DVW={vw}" in built_options(file, name), f"{name} was never built with VW={vw}"


@pytest.fixture(params=WIDTHS, ids=lambda w: f"VW={w}")
def width(request, monkeypatch, queue):
    """Build every register-blocked kernel with ``VW`` lanes for the duration of one test."""
    vw = request.param
    for module in ("netcl_lite.ops.matmul", "netcl_lite.ops.flash_attention", "netcl_lite.ops.cross_entropy"):
        monkeypatch.setattr(sys.modules[module], "vector_lanes", lambda device, vw=vw: vw)
    # matmul asks a queue's device facts (the tile among them) once per queue: forget them on the
    # way in and out, so this width is the one planned and the next test plans with its own again
    matmul_module = sys.modules["netcl_lite.ops.matmul"]
    matmul_module._device.cache_clear()
    request.addfinalizer(matmul_module._device.cache_clear)
    assert tile_for(queue.device)[0] == vw
    assert matmul_module._device(queue).tile[0] == vw
    return vw


@pytest.mark.slow
def test_packed_matmul_at_each_width_on_ragged_sizes_transposes_and_batches(width, monkeypatch):
    rng = np.random.default_rng(40 + width)
    cases = [(97, 90, 70), (61, 300, 33), (130, 129, 97), (13, 1030, 70), (89, 131, 64)]   # K % 4 = 2, 0, 1, 2, 3
    assert all(packed_pays(m, n, k) for m, k, n in cases)
    batches = [((), ()), ((2,), (2,)), ((), (3,)), ((), ()), ((2,), ())]
    check_matmul_transposes(rng, cases, batches, what=f"VW={width}")             # a transposed A in place
    monkeypatch.setattr(sys.modules["netcl_lite.ops.matmul"], "A_LINES", 0)
    check_matmul_transposes(rng, cases, batches, what=f"VW={width}, a transposed A packed")
    # Aᵀ B with A far larger than B: the transposed-store path
    a, b = f32(rng.standard_normal((300, 400))), f32(rng.standard_normal((300, 40)))
    assert_close(ops.matmul(a, b, transpose_a=True), reference.matmul(a, b, transpose_a=True), rtol=0,
                 atol=matmul_atol(a.T, b), what=f"VW={width} aᵀ b, transposed store")
    assert_built(width, "matmul.cl", "matmul_packed", "matmul_pack_a")


@pytest.mark.slow
def test_tiled_flash_forward_at_each_width(width):
    rng = np.random.default_rng(50 + width)
    for tq, tk, d, dv, heads, groups in [(37, 53, 64, 64, 4, 2), (70, 70, 24, 20, 2, 1), (5, 130, 33, 31, 3, 3)]:
        q, k, v = qkv(rng, 2, heads, groups, tq, tk, d, dv)
        padding = rng.random((2, 1, 1, tk)) < 0.8
        padding[..., 0] = True
        for block in (32, 64, 128):                  # multiples of 32 take the width-VW build
            for mask, causal in [(None, False), (None, True), (padding, True)]:
                got = ops.flash_attention(q, k, v, mask=mask, causal=causal, block_size=block, kernel="tiled")
                expected = reference.attention(q, k, v, mask=mask, causal=causal)
                assert_close(got, expected, rtol=0, atol=attention_atol(q, k, v, 1 / np.sqrt(d)),
                             what=f"VW={width} q{q.shape} k{k.shape} block={block} causal={causal} "
                                  f"padded={mask is not None}")
    assert_built(width, "flash_attention.cl", "flash_attention_tiled", "flash_pack")
    # block 32 and dv = 20, 31 take the narrow passes, block 64 and 128 with dv = 64 the wide ones
    passes = {option for option in built_options("flash_attention.cl", "flash_attention_tiled", having=f"-DVW={width}")
              if option.startswith("-DNP=")}
    assert passes == {f"-DNP={TILING[width][2]}", f"-DNP={TILING_NARROW[width][2]}"}, passes


@pytest.mark.parametrize("d", [64, 24])
def test_tiled_flash_backward_at_each_width(width, d):
    rng = np.random.default_rng(60 + width + d)
    q, k, v = rand(rng, 1, 2, 9, d), rand(rng, 1, 1, 11, d), rand(rng, 1, 1, 11, d)
    f = lambda q, k, v: ag.flash_attention(q, k, v, causal=True, kernel="tiled", block_size=32)
    gradcheck(f, lambda q, k, v: reference.attention(q, k, v, causal=True), q, k, v, n=11 * d,
              what=f"VW={width} flash tiled backward d={d}")
    assert_built(width, "flash_attention.cl", "flash_attention_backward_dq_tiled", "flash_attention_backward_dkv_tiled")



@pytest.mark.slow
def test_matmul_add_at_each_width_adds_d_in_the_epilogue(width):
    """The ADD_D epilogue, on a row-major store and on the transposed store (C = (Bᵀ A)ᵀ)."""
    rng = np.random.default_rng(60 + width)
    for (m, k, n, ta) in [(97, 90, 70, False), (300, 64, 40, True)]:
        a = f32(rng.standard_normal((k, m) if ta else (m, k)))
        b, d = f32(rng.standard_normal((k, n))), f32(rng.standard_normal((m, n)))
        np.testing.assert_array_equal(ops.matmul_add(a, b, d, transpose_a=ta),
                                      ops.add(ops.matmul(a, b, transpose_a=ta), d))
    assert "-DADD_D=1" in built_options("matmul.cl", "matmul_packed", f"-DVW={width}")


def test_cross_entropy_at_each_width_on_ragged_vocabularies(width):
    """Rows walked in vectors of VW lanes with a ragged tail: the loss against the float64
    reference (the bound of test_ops_pointwise's cross-entropy test) and the gradient by gradcheck."""
    rng = np.random.default_rng(70 + width)
    for vocab in (1, 7, 16, 37, 257):
        z = f32(rng.standard_normal((9, vocab)) * 3)
        t = rng.integers(0, vocab, 9)
        got, expected = float(ops.cross_entropy(z, t)), reference.cross_entropy(z, t)
        bound = (vocab + 8) * EPS32 + 4 * EPS32 * (np.abs(z).max() + np.log(vocab))
        assert abs(got - expected) <= bound, (vocab, got, expected)
    z = rand(rng, 3, 37) * 3
    t = rng.integers(0, 37, 3)
    gradcheck(lambda z: ag.cross_entropy(z, t), lambda z: reference.cross_entropy(z, t), z, n=37,
              what=f"cross_entropy VW={width}")
    assert_built(width, "cross_entropy.cl", "cross_entropy_rows", "cross_entropy_backward")
