"""matmul, masked softmax and dense attention against their float64 references.

Tolerances come from float32 arithmetic (see netcl_lite.testing): references
are computed in float64 on the same float32-rounded inputs the kernels get.
"""

from __future__ import annotations

import sys

import numpy as np
import pyopencl as cl
import pytest
from kernel_cases import (
    built_options,
    check_matmul_transposes,
    f32,
    random_attention_case,
    random_dims,
    record_launches,
    runs_on_one_and_two_pocl_threads,
)

from netcl_lite import ops, reference
from netcl_lite.core.tensor import Tensor
from netcl_lite.ops.matmul import packed_pays, tile_for
from netcl_lite.testing import EPS32, assert_close, attention_atol, matmul_atol, softmax_rtol


def test_matmul_matches_reference_on_random_shapes():
    rng = np.random.default_rng(1)
    for i, (m, k, n) in enumerate(random_dims(rng, 60, 3)):
        batch = () if i % 3 == 0 else (int(rng.integers(1, 4)),)
        ta, tb = bool(i & 1), bool(i & 2)
        a = f32(rng.standard_normal(batch + ((k, m) if ta else (m, k))))
        b = f32(rng.standard_normal(((n, k) if tb else (k, n)) if i % 4 == 3 else batch + ((n, k) if tb else (k, n))))
        got = ops.matmul(a, b, transpose_a=ta, transpose_b=tb)
        aa = np.swapaxes(a, -1, -2) if ta else a
        bb = np.swapaxes(b, -1, -2) if tb else b
        expected = reference.matmul(a, b, transpose_a=ta, transpose_b=tb)
        assert_close(got, expected, rtol=0, atol=matmul_atol(aa, bb), what=f"matmul {a.shape}x{b.shape} ta={ta} tb={tb}")


def test_matmul_large_values_and_tensors_in_tensors_out(queue):
    rng = np.random.default_rng(2)
    a = f32(rng.integers(-100, 100, (37, 29)))
    b = f32(rng.integers(-100, 100, (29, 41)))  # integer products: exact in float32
    out = ops.matmul(Tensor.from_host(queue, a), Tensor.from_host(queue, b))
    assert isinstance(out, Tensor)
    np.testing.assert_array_equal(out.numpy(), a.astype(np.float64) @ b)


def test_matmul_bad_shapes_are_named():
    for _ in range(2):     # matmul caches its shape logic per pair of shapes: an error must not be cached away
        with pytest.raises(ValueError, match=r"inner dimensions differ.*K=3.*K=4"):
            ops.matmul(np.ones((2, 3)), np.ones((4, 5)))
    with pytest.raises(ValueError, match="must match the broadcast batch"):
        ops.matmul(np.ones((2, 2, 3)), np.ones((6, 3, 4)).reshape(3, 2, 3, 4))
    with pytest.raises(ValueError, match="at least 2-D"):
        ops.matmul(np.ones(3), np.ones((3, 1)))
    with pytest.raises(ValueError, match="do not broadcast"):
        ops.matmul(np.ones((2, 2, 3)), np.ones((3, 3, 4)))
    with pytest.raises(TypeError, match="real numbers"):
        ops.matmul(np.ones((2, 2), complex), np.ones((2, 2)))
    with pytest.raises(ValueError, match="non-finite"):
        ops.matmul(np.full((2, 2), np.nan), np.ones((2, 2)))


def test_softmax_matches_reference_with_masks_on_random_shapes():
    rng = np.random.default_rng(3)
    for i, (b, tq, tk) in enumerate(random_dims(rng, 60, 3, high=90)):
        x = f32(rng.standard_normal((b, tq, tk)) * rng.choice([0.1, 3.0, 30.0]))
        mask = rng.random((1 if i % 2 else b, tq, tk)) < 0.7
        mask[..., int(rng.integers(tk))] = True  # every row keeps at least one key
        causal = i % 3 == 0 and tq <= tk
        if causal:
            mask[..., : tk - tq + 1] = True      # ... that the causal mask also allows
        got = ops.softmax(x, mask=mask, causal=causal)
        expected = reference.softmax(x, mask=mask, causal=causal)
        assert_close(got, expected, rtol=softmax_rtol(tk), atol=1e-37, what=f"softmax {x.shape} causal={causal}")
        assert np.all(got[~np.broadcast_to(mask, x.shape)] == 0.0)


def test_softmax_survives_scores_of_1e4():
    rng = np.random.default_rng(4)
    x = f32(rng.integers(-10_000, 10_001, (16, 77)))
    x[3] = 10_000.0                      # a flat row at the top of the range
    x[5, -1] = 20_000.0                  # a maximum that arrives last
    got = ops.softmax(x)
    assert np.isfinite(got).all()
    assert_close(got, reference.softmax(x), rtol=softmax_rtol(77), atol=1e-37, what="softmax ±1e4")
    assert got[5, -1] == 1.0


def test_softmax_all_masked_row_is_named():
    mask = np.ones((2, 4, 3), bool)
    mask[1, 2] = False
    with pytest.raises(ValueError, match=r"all-masked query rows.*\(1, 2\)"):
        ops.softmax(np.zeros((2, 4, 3)), mask=mask)


def test_softmax_mask_errors():
    with pytest.raises(TypeError, match="boolean"):
        ops.softmax(np.zeros((2, 3)), mask=np.ones((2, 3)))
    with pytest.raises(ValueError, match="does not broadcast"):
        ops.softmax(np.zeros((2, 3)), mask=np.ones((3, 2), bool))


def test_attention_matches_reference_on_random_shapes_masks_and_groups():
    rng = np.random.default_rng(5)
    for i in range(60):
        q, k, v, mask, causal = random_attention_case(rng, i)
        batch, heads, tq, d = q.shape
        scale = 1 / np.sqrt(d)
        got = ops.attention(q, k, v, mask=mask, causal=causal)
        expected = reference.attention(q, k, v, mask=mask, causal=causal)
        assert got.shape == (batch, heads, tq, v.shape[-1])
        assert_close(got, expected, rtol=0, atol=attention_atol(q, k, v, scale), what=f"attention case {i}: q{q.shape} k{k.shape} causal={causal}")


def test_attention_with_scores_of_1e4_and_late_maxima():
    rng = np.random.default_rng(6)
    q = f32(rng.integers(-10, 11, (1, 2, 9, 4)) * 25)
    k = f32(rng.integers(-10, 11, (1, 2, 70, 4)) * 10)       # integer scores up to ±1e4, exact in float32
    k[..., -1, :] = 10.0 * np.sign(q[..., 0, :]) * 10      # the last key is the best one for query 0
    v = f32(rng.standard_normal((1, 2, 70, 3)))
    got = ops.attention(q, k, v, scale=1.0)
    assert np.isfinite(got).all()
    assert_close(got, reference.attention(q, k, v, scale=1.0), rtol=0, atol=attention_atol(q, k, v, 1.0), what="attention ±1e4")


def test_attention_reproduces_the_chapter_example():
    Q = np.array([[1.0, 0.0], [0.0, 2.0], [1.0, 1.0]])
    K = np.array([[1.0, 0.0], [1.0, 1.0], [0.0, 2.0]])
    V = np.array([[10.0, 1.0], [20.0, 2.0], [30.0, 3.0]])
    out, weights = ops.attention(Q, K, V, causal=True, return_weights=True)
    np.testing.assert_allclose(weights, [[1, 0, 0], [0.196, 0.804, 0], [0.198, 0.401, 0.401]], atol=5e-4)
    np.testing.assert_allclose(out, [[10, 1], [18.04, 1.80], [22.03, 2.20]], atol=5e-3)


def test_attention_tensors_in_tensors_out(queue):
    rng = np.random.default_rng(7)
    q, k, v = (f32(rng.standard_normal(s)) for s in [(3, 4), (5, 4), (5, 2)])
    out = ops.attention(*(Tensor.from_host(queue, x) for x in (q, k, v)))
    assert isinstance(out, Tensor) and out.shape == (3, 2)
    assert_close(out.numpy(), reference.attention(q, k, v), rtol=0, atol=attention_atol(q, k, v, 0.5))


def test_attention_errors_are_clear():
    q, k, v = np.ones((2, 3, 4)), np.ones((2, 5, 4)), np.ones((2, 5, 6))
    with pytest.raises(ValueError, match=r"q \(2, 3, 4\) and k \(2, 5, 3\)"):
        ops.attention(q, np.ones((2, 5, 3)), v)
    with pytest.raises(ValueError, match="k .* and v .* must agree"):
        ops.attention(q, k, np.ones((2, 4, 6)))
    with pytest.raises(ValueError, match="must divide"):
        ops.attention(np.ones((1, 3, 2, 4)), np.ones((1, 2, 5, 4)), np.ones((1, 2, 5, 4)))
    with pytest.raises(ValueError, match=r"all-masked query rows.*\(0, 1\)"):
        ops.attention(q[:1], k[:1], v[:1], mask=np.array([[True] * 5, [False] * 5, [True] * 5]))
    with pytest.raises(ValueError, match="Tq=4 > Tk=2"):
        ops.attention(np.ones((4, 3)), np.ones((2, 3)), np.ones((2, 3)), causal=True)
    with pytest.raises(TypeError, match="causal must be a bool"):
        ops.attention(q, k, v, causal="yes")
    with pytest.raises(ValueError, match="scale must be"):
        ops.attention(q, k, v, scale=float("nan"))
    with pytest.raises(ValueError, match="non-finite"):
        ops.attention(np.full((2, 3, 4), np.inf), k, v)


def test_causal_with_more_keys_than_queries_aligns_queries_to_the_end():
    rng = np.random.default_rng(8)
    q, k, v = f32(rng.standard_normal((2, 4))), f32(rng.standard_normal((5, 4))), f32(rng.standard_normal((5, 3)))
    _, weights = ops.attention(q, k, v, causal=True, return_weights=True)
    assert np.all(weights[0, 4:] == 0) and np.all(weights[0, :4] > 0)   # query 0 is position 3 of 5
    assert np.all(weights[1] > 0)                                      # the last query sees every key


@pytest.mark.slow
def test_packed_matmul_on_ragged_sizes_transposes_and_broadcast_batches(monkeypatch):
    """Sizes above the packing threshold, none a multiple of the 6 x 16 block or the k-block, and
    K of every remainder mod 4 (the micro-kernel's k loop is unrolled by four)."""
    rng = np.random.default_rng(9)
    cases = [(97, 90, 70), (61, 300, 33), (130, 129, 97), (6, 7000, 16), (97, 33, 250), (89, 131, 64)]
    assert all(packed_pays(m, n, k) for m, k, n in cases)
    batches = [((), ()), ((2,), (2,)), ((), (3,)), ((3,), ()), ((2,), (2,)), ((), (2,))]   # a's and b's batch axes
    check_matmul_transposes(rng, cases, batches, what="packed matmul")
    assert {"-DA_PACKED=0", "-DA_PACKED=2"} <= built_options("matmul.cl", "matmul_packed")       # a transposed A read in place
    monkeypatch.setattr(sys.modules["netcl_lite.ops.matmul"], "A_LINES", 0)
    check_matmul_transposes(rng, cases, batches, what="packed matmul, a transposed A packed")
    assert "-DA_PACKED=1" in built_options("matmul.cl", "matmul_packed")


def test_a_transposed_a_is_packed_once_when_many_column_groups_would_reread_it():
    """The rule behind the weight gradients' xᵀ g (:func:`transposed_in_place`): read in place while
    K · (sets lost to the stride) · (column groups) fits A_LINES, else pack A once."""
    from netcl_lite.ops.matmul import transposed_in_place   # noqa: PLC0415
    assert transposed_in_place(256, 1024, col_groups=2)       # 1 KiB stride, two column groups: in place
    assert not transposed_in_place(256, 1024, col_groups=6)   # the same A read by six: pack it
    assert transposed_in_place(704, 1024, col_groups=6)       # a 2816-byte stride spreads over more sets
    assert not transposed_in_place(1024, 1024)                # 4 KiB: 1 set in 64, always packed


def test_matmul_layout_keeps_every_worker_busy_when_the_last_column_group_is_short():
    """:func:`_layout` against the hand-out model (:func:`handout_efficiency`): a free worker takes
    the next ⌈remaining / units⌉ work-groups, so heavy groups first leave the other worker idle."""
    from netcl_lite.ops.matmul import LAYOUT_EFFICIENCY, _layout, handout_efficiency   # noqa: PLC0415
    assert handout_efficiency([1] * 10, 2) == 1.0                # 5, 3, 1, 1: both end at 5
    assert handout_efficiency([4, 1], 2) == 0.625                # GP = 4 over 5 panels, unsplit rows
    assert handout_efficiency([3, 3, 3, 1, 1, 1], 2) == 12 / 18  # the heavy half goes to one worker
    assert handout_efficiency([], 2) == 1.0

    def layout_efficiency(units, pm, pn, batch, gp, tiles):
        panels = [min(gp, pn - g * gp) for g in range(-(-pn // gp))]
        rows = [min(tiles, pm - r * tiles) for r in range(-(-pm // tiles))]
        return handout_efficiency([t * p for p in panels for t in rows] * batch, units)

    # 2048 rows (342 tiles) x 320 columns (5 panels): GP = 4 unsplit would give one worker 4/5
    # of the work; the layout chosen instead reaches the target
    assert layout_efficiency(2, 342, 5, 1, 4, 342) < LAYOUT_EFFICIENCY
    gp, tiles = _layout(2, 342, 5, 4, 1, LAYOUT_EFFICIENCY)
    assert layout_efficiency(2, 342, 5, 1, gp, tiles) >= LAYOUT_EFFICIENCY
    # panels that divide into full groups, as many as a multiple of the workers: the largest
    # GP that divides them, rows unsplit
    for pm, pn, cap in ((171, 16, 2), (11, 6, 4)):      # 1024³: 8 groups; 6 panels: 2 groups
        largest = max(g for g in range(1, cap + 1) if pn % g == 0)
        assert _layout(2, pm, pn, cap, 1, LAYOUT_EFFICIENCY) == (largest, pm), (pm, pn, cap)
    # 256³: one column group for two workers, so its rows split in two
    assert _layout(2, 43, 4, 4, 1, LAYOUT_EFFICIENCY) == (4, -(-43 // 2))
    # a GPU hands work-groups out one by one: all the panels that fit, rows split until the last
    # round of the units is 85 % full (or 8 work-groups per unit), and not one split further
    units, groups = 132, -(-5 // 4)
    gp, tiles = _layout(units, 342, 5, 4, 1, LAYOUT_EFFICIENCY, chunked=False)
    splits = -(-342 // tiles)

    def full_enough(s):
        total = s * groups
        return total >= 8 * units or total / (-(-total // units) * units) >= 0.85

    assert gp == 4 and full_enough(splits) and not any(full_enough(s) for s in range(1, splits))
    rng = np.random.default_rng(14)
    for _ in range(300):
        units, pm, pn = int(rng.integers(1, 9)), int(rng.integers(1, 400)), int(rng.integers(1, 40))
        cap, batch = int(rng.integers(1, min(pn, 4) + 1)), int(rng.integers(1, 4))

        def efficiency(gp, tiles, pm=pm, pn=pn, batch=batch, units=units):
            panels = [min(gp, pn - g * gp) for g in range(-(-pn // gp))]
            rows = [min(tiles, pm - r * tiles) for r in range(-(-pm // tiles))]
            return handout_efficiency([t * p for p in panels for t in rows] * batch, units)

        gp, tiles = _layout(units, pm, pn, cap, batch, LAYOUT_EFFICIENCY)
        assert 1 <= gp <= cap and 1 <= tiles <= pm
        got = efficiency(gp, tiles)
        # either the target is met, or no layout with fewer than 8 work-groups per unit meets it
        assert got >= LAYOUT_EFFICIENCY or all(
            efficiency(g, -(-pm // s)) < LAYOUT_EFFICIENCY for g in range(1, cap + 1) for s in range(1, pm + 1)
            if -(-pn // g) * -(-pm // -(-pm // s)) * batch <= 8 * units), (units, pm, pn, cap, batch, gp, tiles)


@pytest.mark.slow
def test_packed_matmul_with_short_last_column_groups_matches_the_reference(queue):
    """Shapes whose column panels do not divide into groups of four, so the launch takes 1-3
    panels per work-group and splits rows to balance them; all four transposes, batches."""
    rng = np.random.default_rng(15)
    # unbatched, GP = 3, 1, 2, 3, 1; batched, the two copies' groups alternate heavy and light
    # (rows, then column groups, then batch, in launch order), which balances GP = 4 again.
    # The widths are given for 64-column panels (AVX-512) and scaled to this device's panel.
    vw, _, nv = tile_for(queue.device)
    cases = [(m, k, n * vw * nv // 64) for m, k, n in
             [(64, 128, 384), (100, 77, 300), (70, 64, 640), (64, 40, 1344), (90, 64, 448), (100, 77, 300),
              (200, 64, 320)]]
    assert all(packed_pays(m, n, k) for m, k, n in cases)
    batches = [((), ()), ((), ()), ((), ()), ((), ()), ((), ()), ((2,), (2,)), ((2,), ())]
    check_matmul_transposes(rng, cases, batches, what="short last group")
    # Balancing short groups is for several workers: on one compute unit (Oclgrind's simulated
    # device) every layout keeps the one worker busy, and GP is simply the cap.
    if queue.device.max_compute_units > 1:
        assert {"-DGP=1", "-DGP=2", "-DGP=3"} <= built_options("matmul.cl", "matmul_packed")


@pytest.mark.slow
def test_matmul_add_is_bitwise_the_product_then_the_add():
    """``matmul_add`` adds D as the product is stored (the packed kernel's epilogue, or one pass
    after a small product): one rounding of the same two float32 values as a separate add, so
    bitwise equal, on packed, swapped (C = (Bᵀ A)ᵀ), sliced-free small and K = 0 products."""
    rng = np.random.default_rng(16)
    cases = [(100, 77, 300, False, False, ()), (97, 90, 70, True, True, (2,)), (700, 64, 40, True, False, ()),
             (61, 300, 33, False, True, (3,)), (5, 3, 4, False, False, ()), (10, 0, 7, False, False, (2,))]
    for m, k, n, ta, tb, batch in cases:
        a = f32(rng.standard_normal(batch + ((k, m) if ta else (m, k))))
        b = f32(rng.standard_normal(batch + ((n, k) if tb else (k, n))))
        d = f32(rng.standard_normal(batch + (m, n)))
        got = ops.matmul_add(a, b, d, transpose_a=ta, transpose_b=tb)
        np.testing.assert_array_equal(got, ops.add(ops.matmul(a, b, transpose_a=ta, transpose_b=tb), d),
                                      err_msg=f"{a.shape} x {b.shape} ta={ta} tb={tb}")
        aa, bt = (np.swapaxes(a, -1, -2) if ta else a), (np.swapaxes(b, -1, -2) if tb else b)
        assert_close(got, reference.matmul(a, b, transpose_a=ta, transpose_b=tb) + d, rtol=0,
                     atol=matmul_atol(aa, bt) + EPS32 * (np.abs(d) + np.abs(aa.astype(np.float64) @ bt)),
                     what=f"matmul_add {a.shape} x {b.shape}")
    assert "-DADD_D=1" in built_options("matmul.cl", "matmul_packed")
    with pytest.raises(ValueError, match=r"d must have the product's shape \(3, 5\)"):
        ops.matmul_add(np.ones((3, 4)), np.ones((4, 5)), np.ones((5, 3)))


@pytest.mark.slow
def test_wide_transposed_products_run_swapped_and_match_the_reference(monkeypatch):
    """``Aᵀ B`` with A wider than B and a long K (a weight gradient ``xᵀ g``) runs as ``(Bᵀ A)ᵀ``,
    each tile stored transposed: ragged M and N (a 7-column B leaves one row of a 6-row tile),
    one or several panels per work-group, with and without D (bitwise the product, then the add).
    Short K, a swap that would pad C into an extra panel, and B the wider stay unswapped. (A CPU
    runs the narrowest of these as matmul_tall: that path is left off here.)"""
    mm = sys.modules["netcl_lite.ops.matmul"]
    monkeypatch.setattr(mm, "TALL_MAX_C", 0)
    rng = np.random.default_rng(18)
    for (m, n, k), swapped in [((133, 70, 1030), True), ((320, 128, 1024), True), ((200, 7, 1100), True),
                               ((1000, 250, 1024), True), ((130, 128, 4096), False), ((384, 128, 256), False),
                               ((128, 320, 1024), False)]:
        kind = mm._how((k, m), (k, n), True, False, mm.PACKED_MIN_WORK).kind
        assert (kind == mm._SWAPPED) == swapped, (m, n, k)
        a, b, d = f32(rng.standard_normal((k, m))), f32(rng.standard_normal((k, n))), f32(rng.standard_normal((m, n)))
        got = ops.matmul(a, b, transpose_a=True)
        assert_close(got, reference.matmul(a, b, transpose_a=True), rtol=0, atol=matmul_atol(a.T, b),
                     what=f"aᵀ b, a {a.shape}, b {b.shape}")
        np.testing.assert_array_equal(ops.matmul_add(a, b, d, transpose_a=True), ops.add(got, d))
    assert "-DC_TRANS=1" in built_options("matmul.cl", "matmul_packed")


@pytest.mark.slow
def test_products_with_k_split_into_slices_match_the_reference(monkeypatch, queue):
    """A small C over a long K (a weight gradient) is split into K slices on a CPU, each
    work-group summing one slice into its own partial C, joined in slice order with alpha and
    D: ragged last slices (K = 1537 in 3, 2049 in 4), one to four panels per group, plain,
    transposed and swapped (stored transposed) products. Checked against float64, with D
    bitwise the product then the add, and the same bits on a second call. (A CPU runs the
    narrowest transposed ones as matmul_tall: that path is left off here.)"""
    monkeypatch.setattr(sys.modules["netcl_lite.ops.matmul"], "TALL_MAX_C", 0)
    launched = record_launches(monkeypatch)
    cpu = bool(queue.device.type & cl.device_type.CPU)
    rng = np.random.default_rng(19)
    # (M, N, K, transpose_a) per panel width (16 columns on AVX2, 64 on AVX-512): whether the
    # layout splits rows, and so K, depends on how many panels C has. Each list splits K in every
    # case at its width, with one to four panels per group and swapped products among them.
    vw, _, nv = tile_for(queue.device)
    cases = {16: [(64, 16, 4096, False), (61, 33, 1537, False), (130, 16, 2049, True), (37, 75, 1024, False),
                  (160, 64, 2048, True), (200, 48, 2048, True)]}.get(
        vw * nv, [(64, 64, 4096, False), (61, 130, 1537, False), (130, 61, 2049, True), (37, 300, 1024, False),
                  (128, 320, 2048, True), (320, 128, 2048, True)])
    for m, n, k, ta in cases:
        a = f32(rng.standard_normal((k, m) if ta else (m, k)))
        b, d = f32(rng.standard_normal((k, n))), f32(rng.standard_normal((m, n)))
        launched.clear()
        got = ops.matmul(a, b, transpose_a=ta)
        # the split is measured and made on PoCL's CPU driver only; its slices are joined by sum_columns
        split = any(name == "matmul_packed" and "-DKSPLIT=1" in options for name, options in launched)
        assert split == cpu and (launched[-1][0] == "sum_columns") == cpu, (m, n, k, ta, launched)
        aa = a.T if ta else a
        assert_close(got, reference.matmul(a, b, transpose_a=ta), rtol=0, atol=matmul_atol(aa, b),
                     what=f"split K: a {a.shape} ta={ta}, b {b.shape}")
        np.testing.assert_array_equal(ops.matmul(a, b, transpose_a=ta), got)
        np.testing.assert_array_equal(ops.matmul_add(a, b, d, transpose_a=ta), ops.add(got, d))
    assert not cpu or "-DKSPLIT=1" in built_options("matmul.cl", "matmul_packed", having="-DC_TRANS=1")


@pytest.mark.slow
def test_narrow_weight_gradients_read_in_place_match_the_reference(monkeypatch, queue):
    """``Aᵀ B`` with a small C over a long K (a narrow layer's weight gradient) runs as matmul_tall on
    a CPU: both operands read in place, K in chunks joined in order. Ragged M and N (a last panel
    narrower than the tile, rows past M), K of every remainder mod 4, one chunk (C written
    directly, D in the epilogue) and several (D added by the join); against float64, D bitwise the
    product then the add, the same bits on a second call."""
    mm = sys.modules["netcl_lite.ops.matmul"]
    launched = record_launches(monkeypatch)
    cpu = bool(queue.device.type & cl.device_type.CPU)
    rng = np.random.default_rng(29)
    vw, mr, nv = tile_for(queue.device)
    for m, n, k in [(128, 64, 2048), (64, 128, 2048), (128, 128, 2049), (100, 70, 1500), (7, 130, 1031),
                    (1, 1, 1024), (61, 33, 1537), (6, 3 * vw * nv + 5, 1026), (20, 8 * vw * nv - 3, 1024)]:
        assert mm.tall_pays(m, n, k), (m, n, k)
        chunks = mm._tall_plan(tile_for(queue.device), m, n, k, False,
                               (mm.TALL_ROW_TILES, mm.TALL_TASKS, mm.TALL_MIN_CHUNK)).chunks
        a, b, d = f32(rng.standard_normal((k, m))), f32(rng.standard_normal((k, n))), f32(rng.standard_normal((m, n)))
        launched.clear()
        got = ops.matmul(a, b, transpose_a=True)
        names = [name for name, _ in launched]
        assert names == (["matmul_tall"] + ["sum_columns"] * (chunks > 1) if cpu else ["matmul_packed"]) or not cpu, \
            (m, n, k, names)
        assert_close(got, reference.matmul(a, b, transpose_a=True), rtol=0, atol=matmul_atol(a.T, b),
                     what=f"aᵀ b (narrow), a {a.shape}, b {b.shape}")
        np.testing.assert_array_equal(ops.matmul(a, b, transpose_a=True), got)
        np.testing.assert_array_equal(ops.matmul_add(a, b, d, transpose_a=True), ops.add(got, d))
    if cpu:
        assert {"-DADD_D=0", "-DADD_D=1"} <= built_options("matmul.cl", "matmul_tall")
        assert not mm.tall_pays(128, 320, 2048) and not mm.tall_pays(128, 64, 1023)


_THREADS_CHILD = """
import hashlib, json, numpy as np
import netcl_lite as nl
rng = np.random.default_rng(5)
out = {"units": nl.device().queue.device.max_compute_units}
for m, n, k, ta in [(128, 320, 2048, True), (320, 128, 2048, True), (61, 130, 1537, False), (200, 48, 2048, True),
                    (96, 200, 3000, False), (256, 256, 4096, False), (33, 1000, 100, False), (128, 64, 2048, True),
                    (100, 70, 1500, True)]:
    a = rng.standard_normal((k, m) if ta else (m, k), dtype=np.float32)
    b = rng.standard_normal((k, n), dtype=np.float32)
    out[f"{m}x{n}x{k}"] = hashlib.sha256(nl.ops.matmul(a, b, transpose_a=ta).tobytes()).hexdigest()
print(json.dumps(out))
"""


@pytest.mark.slow
def test_products_have_the_same_bits_on_one_and_two_compute_units(queue):
    """Where K is split (and so the order of each sum) is decided for a fixed worker count, not the
    device's: a product computed with one PoCL thread equals, bit for bit, the one computed with two.
    The shapes include products that split K with two workers and would not with one, and narrow
    weight gradients (matmul_tall, K in chunks from the shape alone)."""
    runs = runs_on_one_and_two_pocl_threads(queue, _THREADS_CHILD, timeout=600)
    assert runs[0] == runs[1]


def test_transposed_b_copied_a_cache_line_at_a_time_matches_the_reference(monkeypatch, queue):
    """A @ Bᵀ copies B's panels 16 k at a time, one line from each column: a column stride of
    256 floats (where the old k-row walk thrashed four L1 sets), ragged last chunks (K = 37,
    1537), a ragged last panel (N = 70, 129) and groups whose last panel lies past N, a
    broadcast Bᵀ under a batch of A, and K split into slices (k0 > 0) on a CPU."""
    launched = record_launches(monkeypatch)
    rng = np.random.default_rng(23)
    for batch, m, n, k in [((), 100, 70, 256), ((), 61, 200, 37), ((), 130, 129, 1537), ((3,), 50, 90, 40),
                           ((), 64, 64, 4096), ((), 1024, 704, 256)]:
        a, b = f32(rng.standard_normal(batch + (m, k))), f32(rng.standard_normal((n, k)))
        got = ops.matmul(a, b, transpose_b=True)
        assert_close(got, reference.matmul(a, b, transpose_b=True), rtol=0, atol=matmul_atol(a, b.T),
                     what=f"a {a.shape} @ bᵀ, b {b.shape}")
    cpu = bool(queue.device.type & cl.device_type.CPU)
    assert any(name == "matmul_packed" for name, _ in launched)
    assert not cpu or any(name == "matmul_packed" and "-DKSPLIT=1" in options for name, options in launched)


@pytest.mark.slow
def test_packed_matmul_in_k_slices_is_bitwise_the_one_slice_product(monkeypatch, queue):
    """When B's panel outgrows the work-group's local memory, the kernel copies it one k-slice at a
    time. Each tile still sums k in order, so the result must be bitwise the one-slice result:
    slices of 7 over K = 131 (a ragged last slice), transposes, broadcast batches, row splits."""
    rng = np.random.default_rng(12)
    nr = tile_for(queue.device)[0] * tile_for(queue.device)[2]
    cases = [(97, 131, 70), (61, 131, 33), (130, 40, 129)]
    batches = [((), ()), ((2,), (2,)), ((3,), ())]
    for (m, k, n), (ba, bb) in zip(cases, batches, strict=True):
        for ta, tb in [(False, False), (True, False), (False, True), (True, True)]:
            a = f32(rng.standard_normal(ba + ((k, m) if ta else (m, k))))
            b = f32(rng.standard_normal(bb + ((n, k) if tb else (k, n))))
            whole = ops.matmul(a, b, transpose_a=ta, transpose_b=tb)
            monkeypatch.setattr(sys.modules["netcl_lite.ops.matmul"], "PANEL_BYTES", 4 * nr * 7)
            sliced = ops.matmul(a, b, transpose_a=ta, transpose_b=tb)
            monkeypatch.undo()
            np.testing.assert_array_equal(sliced, whole, err_msg=f"{a.shape} x {b.shape} ta={ta} tb={tb}")
            assert_close(sliced, reference.matmul(a, b, transpose_a=ta, transpose_b=tb), rtol=0,
                         atol=matmul_atol(np.swapaxes(a, -1, -2) if ta else a, np.swapaxes(b, -1, -2) if tb else b),
                         what=f"sliced {a.shape} x {b.shape} ta={ta} tb={tb}")
    assert "-DSLICED=1" in built_options("matmul.cl", "matmul_packed")


def test_packed_matmul_launches_one_local_size_for_every_shape(monkeypatch):
    """PoCL compiles a kernel anew for each local size it meets (most of a second), so a reader
    who varies a length (generation without a cache grows T by one per token) must not meet a
    new local size per shape."""
    from netcl_lite.core.stream import Stream
    seen = set()
    launch = Stream.launch

    def record(self, filename, name, global_size, local_size, *args, **kw):
        if name == "matmul_packed":
            seen.add(tuple(local_size))
        return launch(self, filename, name, global_size, local_size, *args, **kw)

    monkeypatch.setattr(Stream, "launch", record)
    rng = np.random.default_rng(13)
    for t in (65, 100, 101, 257, 700):
        for k, n in ((128, 384), (96, 2000)):
            x, w = f32(rng.standard_normal((t, k))), f32(rng.standard_normal((k, n)))
            assert_close(ops.matmul(x, w), reference.matmul(x, w), rtol=0, atol=matmul_atol(x, w), what=f"{t}x{k}x{n}")
    assert len(seen) == 1, f"matmul_packed ran with local sizes {sorted(seen)}"


def test_packed_and_unpacked_kernels_agree_and_k0_gives_zeros():
    rng = np.random.default_rng(10)
    a, b = f32(rng.integers(-8, 9, (96, 70))), f32(rng.integers(-8, 9, (70, 97)))
    assert packed_pays(96, 97, 70)
    np.testing.assert_array_equal(ops.matmul(a, b), a.astype(np.float64) @ b)   # exact integers, packed
    np.testing.assert_array_equal(ops.matmul(b, a, transpose_a=True, transpose_b=True),
                                  (a.astype(np.float64) @ b).T)                  # A packed too
    np.testing.assert_array_equal(ops.matmul(a[:5, :3], b[:3, :5]), a[:5, :3].astype(np.float64) @ b[:3, :5])
    np.testing.assert_array_equal(ops.matmul(np.ones((60, 0)), np.ones((0, 70))), np.zeros((60, 70)))


def test_dense_attention_on_the_gemm_path_with_groups_and_masks():
    rng = np.random.default_rng(11)
    cases = [(100, 140, 48, 40, 4, 2), (128, 128, 64, 64, 2, 1), (120, 150, 33, 29, 3, 3)]
    assert all(packed_pays(tq, tk, d) and packed_pays(tq, dv, tk) for tq, tk, d, dv, _, _ in cases)
    for i, (tq, tk, d, dv, heads, groups) in enumerate(cases):
        q = f32(rng.standard_normal((2, heads, tq, d)))
        k = f32(rng.standard_normal((2, groups, tk, d)))
        v = f32(rng.standard_normal((2, groups, tk, dv)))
        mask = rng.random((2, 1, 1, tk)) < 0.8 if i == 0 else None
        if mask is not None:
            mask[..., 0] = True
        for causal in (False, True):
            got = ops.attention(q, k, v, mask=mask, causal=causal)
            expected = reference.attention(q, k, v, mask=mask, causal=causal)
            assert_close(got, expected, rtol=0, atol=attention_atol(q, k, v, 1 / np.sqrt(d)), what=f"dense gemm case {i} causal={causal}")


@pytest.mark.parametrize("m,n,k", [(400, 40, 300), (257, 13, 200), (1030, 64, 70)])
def test_matmul_with_a_large_transposed_a_stores_the_transposed_product(m, n, k):
    """Aᵀ B with A far larger than B is computed as (Bᵀ A)ᵀ, packing the small operand and
    storing the tile transposed; the result must not change."""
    rng = np.random.default_rng(m + n)
    a, b = f32(rng.standard_normal((k, m))), f32(rng.standard_normal((k, n)))
    got = ops.matmul(a, b, transpose_a=True)
    assert_close(got, reference.matmul(a, b, transpose_a=True), rtol=0, atol=matmul_atol(a.T, b),
                 what=f"aᵀ b, a {a.shape}, b {b.shape}")


def test_swap_axes_matches_numpy_and_is_a_view_only_when_the_order_is_kept(queue):
    """A pure copy, so exact. Swapping across unit axes (a decode step's (B, 1, H, d)) keeps
    the elements' order: device tensors get a view; NumPy callers always get their own array."""
    rng = np.random.default_rng(31)
    views = copies = 0
    for _ in range(60):
        nd = int(rng.integers(2, 6))
        shape = tuple(int(rng.choice([1, 1, 2, 3, 5, 17])) for _ in range(nd))
        i, j = (int(a) for a in rng.choice(nd, 2, replace=False))
        x = rng.standard_normal(shape).astype(np.float32)
        expected = np.swapaxes(x, i, j)
        got = ops.swap_axes(x, i, j)
        assert got.shape == expected.shape and np.array_equal(got, expected), (shape, i, j)
        assert not np.shares_memory(got, x)
        tx = Tensor.from_host(queue, x)
        out = ops.swap_axes(tx, i, j)
        assert np.array_equal(out.numpy(), expected), (shape, i, j)
        lo, hi = sorted((i, j))
        order_kept = sum(n > 1 for n in shape[lo:hi + 1]) <= 1
        assert (out.memory is tx.memory) == order_kept, (shape, i, j)
        views, copies = views + order_kept, copies + (not order_kept)
    assert views and copies   # both paths ran


def test_concat_and_split_columns_match_numpy_on_random_shapes(queue):
    """Pure copies, so exact: side by side on the last axis as np.concatenate, and cut back as
    np.split, for NumPy and device operands, widths ragged against the kernel's 8-float runs, and
    more pieces than one launch copies (``BLOCKS_PER_LAUNCH``), empty ones among them."""
    from netcl_lite.ops.layout import BLOCKS_PER_LAUNCH

    rng = np.random.default_rng(32)
    for i in range(40):
        lead = tuple(int(n) for n in rng.integers(1, 20, int(rng.integers(0, 3))))
        count = int(rng.integers(1, 4)) if i % 2 else int(rng.integers(BLOCKS_PER_LAUNCH, 3 * BLOCKS_PER_LAUNCH))
        widths = [int(w) for w in rng.integers(0, 30, count)]
        pieces = [rng.standard_normal(lead + (w,)).astype(np.float32) for w in widths]
        expected = np.concatenate(pieces, axis=-1)
        got = ops.concat_columns(pieces)
        assert got.shape == expected.shape and np.array_equal(got, expected), (lead, widths)
        joined = ops.concat_columns([Tensor.from_host(queue, p) for p in pieces])
        assert np.array_equal(joined.numpy(), expected), (lead, widths)
        back = ops.split_columns(joined, widths)
        assert len(back) == len(widths)
        for piece, part in zip(pieces, back):
            assert isinstance(part, Tensor) and np.array_equal(part.numpy(), piece), (lead, widths)
        for piece, part in zip(pieces, ops.split_columns(expected, widths)):
            assert np.array_equal(part, piece), (lead, widths)


def test_concat_and_split_columns_refuse_bad_arguments():
    with pytest.raises(ValueError, match="agree on every axis but the last"):
        ops.concat_columns([np.ones((2, 3)), np.ones((3, 3))])
    with pytest.raises(TypeError, match="non-empty list"):
        ops.concat_columns([])
    with pytest.raises(ValueError, match="must add up to x's last axis"):
        ops.split_columns(np.ones((2, 5)), (2, 2))
    with pytest.raises(TypeError, match="non-negative ints"):
        ops.split_columns(np.ones((2, 5)), (2.5, 2.5))


def test_matmul_columns_reads_a_block_of_b_in_place_or_from_a_copy(monkeypatch, queue):
    """aᵀ b[:, start:start + width] (+ acc): in place by matmul_tall from b's row stride and the
    block's first column where a CPU runs the shape so (K >= 1024, a small C), else from a copy of the
    block; ragged widths and offsets, against float64 within matmul_atol, acc bitwise the product then
    the add."""
    launched = record_launches(monkeypatch)
    cpu = bool(queue.device.type & cl.device_type.CPU)
    rng = np.random.default_rng(43)
    for k, m, total, start, width in [(1024, 128, 256, 128, 128), (1031, 13, 45, 7, 19), (1500, 61, 70, 0, 33),
                                      (1025, 5, 9, 8, 1), (40, 11, 23, 5, 17), (300, 7, 7, 0, 7)]:
        a, b = f32(rng.standard_normal((k, m))), f32(rng.standard_normal((k, total)))
        acc = f32(rng.standard_normal((m, width)))
        ta, tb, tacc = (Tensor.from_host(queue, x) for x in (a, b, acc))
        launched.clear()
        got = ops.matmul_columns(ta, tb, start, width).numpy()
        names = [name for name, _ in launched]
        in_place = cpu and k >= 1024
        assert ("copy_blocks" not in names) == (in_place or width == total), (k, m, total, start, width, names)
        block = b[:, start:start + width]
        assert_close(got, reference.matmul(a, block, transpose_a=True), rtol=0, atol=matmul_atol(a.T, block),
                     what=f"aᵀ b[:, {start}:{start + width}], a {a.shape}, b {b.shape}")
        np.testing.assert_array_equal(ops.matmul_columns(ta, tb, start, width, tacc).numpy(), ops.add(got, acc))


def test_matmul_columns_refuses_bad_arguments(queue):
    ta, tb = Tensor.from_host(queue, f32(np.ones((8, 3)))), Tensor.from_host(queue, f32(np.ones((8, 5))))
    with pytest.raises(TypeError, match="b must be a Tensor"):
        ops.matmul_columns(ta, np.ones((8, 5)), 0, 2)
    with pytest.raises(ValueError, match="same K"):
        ops.matmul_columns(ta, Tensor.from_host(queue, f32(np.ones((7, 5)))), 0, 2)
    with pytest.raises(ValueError, match="must lie within b's 5"):
        ops.matmul_columns(ta, tb, 4, 2)
    with pytest.raises(ValueError, match="must lie within"):
        ops.matmul_columns(ta, tb, 0, 0)
    with pytest.raises(ValueError, match="acc must have the product's shape"):
        ops.matmul_columns(ta, tb, 0, 2, Tensor.from_host(queue, f32(np.ones((3, 3)))))


def _swiglu_linear_reference(x, w1, w3):
    """(h, gate, up) in float64 and a per-entry bound for each float32 output: gate and up within
    matmul_atol (δ₁, δ₃); h = silu(gate)·up moves by at most 1.1·|up|·δ₁ (|silu'| ≤ 1.0998) plus
    |silu(gate)|·δ₃ from its inputs' errors, and by SWIGLU_RTOL of itself in its own arithmetic."""
    from netcl_lite.testing import SWIGLU_RTOL, TINY

    gate, up = reference.matmul(x, w1), reference.matmul(x, w3)
    h = reference.swiglu(gate, up)
    d1, d3 = matmul_atol(x, w1), matmul_atol(x, w3)
    silu = np.abs(gate / (1 + np.exp(-np.clip(gate, -700, 700))))
    dh = 1.1 * (np.abs(up) + d3) * d1 + (silu + 1.1 * d1) * d3
    return (h, gate, up), (dh + SWIGLU_RTOL * (np.abs(h) + dh) + TINY, d1, d3)


def test_swiglu_linear_matches_reference_on_random_shapes(queue):
    """Gate, up and the unit from one launch, at ragged sizes around the 6-row tile and the pairs of
    half panels (32 columns of each weight on 16 lanes), K of every remainder mod 4 and K = 0."""
    rng = np.random.default_rng(31)
    dims = list(random_dims(rng, 24, 3)) + [(2048, 128, 320), (97, 300, 65), (13, 0, 7), (1, 1, 1)]
    for m, k, n in dims:
        x, w1, w3 = (f32(rng.standard_normal(s)) for s in ((m, k), (k, n), (k, n)))
        got = ops.swiglu_linear(x, w1, w3)
        want, atol = _swiglu_linear_reference(x, w1, w3)
        for name, g, w, a in zip(("h", "gate", "up"), got, want, atol):
            assert g.shape == (m, n), f"{name} of {(m, k, n)}: shape {g.shape}"
            assert_close(g, w, rtol=0, atol=a, what=f"swiglu_linear {name} {(m, k, n)}")
    tx = Tensor.from_host(queue, f32(rng.standard_normal((70, 33))))
    tw1, tw3 = (Tensor.from_host(queue, f32(rng.standard_normal((33, 45)))) for _ in range(2))
    outs = ops.swiglu_linear(tx, tw1, tw3)                       # Tensors in, Tensors out
    assert all(isinstance(o, Tensor) for o in outs), "Tensors in must give Tensors out"
    want, atol = _swiglu_linear_reference(tx.numpy(), tw1.numpy(), tw3.numpy())
    for o, w, a in zip(outs, want, atol):
        assert_close(o.numpy(), w, rtol=0, atol=a, what="swiglu_linear on Tensors")


def test_swiglu_linear_is_bitwise_the_two_products_and_the_unit_apart(queue, monkeypatch):
    """The same sums in the same order and the same expression as ``matmul`` (unsplit) and
    ``swiglu``: the fused launch changes no bit, so a model trained with it is the same model. Where
    a pair of panels would outgrow the local memory allowed, the op runs the three apart."""
    rng = np.random.default_rng(32)
    launched = record_launches(monkeypatch)
    for m, k, n in [(2048, 128, 320), (61, 131, 97), (7, 5, 3), (130, 64, 33)]:
        x, w1, w3 = (Tensor.from_host(queue, f32(rng.standard_normal(s))) for s in ((m, k), (k, n), (k, n)))
        gate, up = ops.matmul(x, w1), ops.matmul(x, w3)
        apart = (ops.swiglu(gate, up), gate, up)
        for name, f, a in zip(("h", "gate", "up"), ops.swiglu_linear(x, w1, w3), apart):
            assert np.array_equal(f.numpy(), a.numpy()), f"swiglu_linear {name} at {(m, k, n)} differs from apart"
    assert any(name == "matmul_swiglu" for name, _ in launched), "the fused kernel did not run"
    monkeypatch.setattr(sys.modules["netcl_lite.ops.matmul"], "PANEL_BYTES", 1024)
    launched.clear()
    x, w1, w3 = (f32(rng.standard_normal(s)) for s in ((40, 50), (50, 20), (50, 20)))
    got = ops.swiglu_linear(x, w1, w3)
    assert not any(name == "matmul_swiglu" for name, _ in launched), "a panel past PANEL_BYTES must run apart"
    want, atol = _swiglu_linear_reference(x, w1, w3)
    for g, w, a in zip(got, want, atol):
        assert_close(g, w, rtol=0, atol=a, what="swiglu_linear apart")


def test_swiglu_linear_refuses_bad_arguments():
    x, w = np.ones((4, 3)), np.ones((3, 5))
    with pytest.raises(ValueError, match="x must be 2-D"):
        ops.swiglu_linear(np.ones((2, 4, 3)), w, w)
    with pytest.raises(ValueError, match="w1 must have x's K=3 rows"):
        ops.swiglu_linear(x, np.ones((4, 5)), np.ones((4, 5)))
    with pytest.raises(ValueError, match=r"w3 must have w1's shape \(3, 5\)"):
        ops.swiglu_linear(x, w, np.ones((3, 6)))
    with pytest.raises(TypeError, match="queue must be a pyopencl.CommandQueue"):
        ops.swiglu_linear(x, w, w, queue="cpu")
    with pytest.raises(TypeError, match="real numbers"):
        ops.swiglu_linear(np.array([["a"] * 3] * 4), w, w)


def test_matmul_pair_matches_reference_and_the_joined_product(queue, monkeypatch):
    """``a @ op(b) + a2 @ op(b2)`` (+ d) at ragged sizes above the packing threshold, both B layouts:
    within matmul_atol of the joined float64 product (one sum over K1 + K2 terms, plus one add for d),
    and bitwise the joined product where that runs unsplit (the same sum in the same order). Unequal
    widths, small products and a K the panels cannot hold run as two products."""
    rng = np.random.default_rng(33)
    launched = record_launches(monkeypatch)
    cases = [(2048, 320, 128, True), (97, 90, 70, False), (61, 131, 33, True), (130, 65, 97, False), (89, 47, 64, True)]
    for i, (m, k, n, tb) in enumerate(cases):
        a, a2 = (f32(rng.standard_normal((m, k))) for _ in range(2))
        b, b2 = (f32(rng.standard_normal((n, k) if tb else (k, n))) for _ in range(2))
        d = f32(rng.standard_normal((m, n))) if i % 2 else None
        aj, bj = np.hstack([a, a2]), (np.hstack([b, b2]) if tb else np.vstack([b, b2]))
        bjt = bj.T if tb else bj
        want = reference.matmul(aj, bjt) + (0 if d is None else d.astype(np.float64))
        atol = matmul_atol(aj, bjt) + (0 if d is None else 2 * EPS32 * (np.abs(want) + np.abs(d)))
        launched.clear()
        got = ops.matmul_pair(a, b, a2, b2, transpose_b=tb, d=d)
        assert_close(got, want, rtol=0, atol=atol, what=f"matmul_pair {(m, k, n)} tb={tb} d={d is not None}")
        assert [name for name, _ in launched] == ["matmul_packed"], f"one launch expected, got {launched}"
        if d is None:
            assert np.array_equal(got, ops.matmul(aj, bj, transpose_b=tb)), f"{(m, k, n)}: not the joined product's bits"
    assert "-DPAIR=1" in built_options("matmul.cl", "matmul_packed")
    ta, tb_, ta2, tb2 = (Tensor.from_host(queue, f32(rng.standard_normal(s))) for s in ((70, 50), (50, 80), (70, 50), (50, 80)))
    got = ops.matmul_pair(ta, tb_, ta2, tb2)                  # Tensors in, Tensors out
    assert isinstance(got, Tensor)
    assert_close(got.numpy(), reference.matmul(np.hstack([ta.numpy(), ta2.numpy()]), np.vstack([tb_.numpy(), tb2.numpy()])),
                 rtol=0, atol=matmul_atol(np.hstack([ta.numpy(), ta2.numpy()]), np.vstack([tb_.numpy(), tb2.numpy()])),
                 what="matmul_pair on Tensors")
    for (m, k1, k2, n), limit in (((40, 30, 50, 20), None), ((5, 3, 3, 4), None), ((70, 300, 300, 65), 4096)):
        if limit:
            monkeypatch.setattr(sys.modules["netcl_lite.ops.matmul"], "PANEL_BYTES", limit)
        a, a2, b, b2 = (f32(rng.standard_normal(s)) for s in ((m, k1), (m, k2), (k1, n), (k2, n)))
        d = f32(rng.standard_normal((m, n)))
        launched.clear()
        got = ops.matmul_pair(a, b, a2, b2, d=d)
        assert all("-DPAIR=1" not in options for _, options in launched), "this case must run as two products"
        aj, bj = np.hstack([a, a2]), np.vstack([b, b2])
        assert_close(got, reference.matmul(aj, bj) + d, rtol=0,
                     atol=matmul_atol(aj, bj) + 2 * EPS32 * (np.abs(reference.matmul(aj, bj)) + 2 * np.abs(d)),
                     what=f"matmul_pair as two products {(m, k1, k2, n)}")


def test_matmul_pair_refuses_bad_arguments():
    a, b = np.ones((4, 3)), np.ones((3, 5))
    with pytest.raises(ValueError, match="must be 2-D"):
        ops.matmul_pair(np.ones((2, 4, 3)), b, a, b)
    with pytest.raises(ValueError, match="a2 must have a's M=4 rows"):
        ops.matmul_pair(a, b, np.ones((5, 3)), b)
    with pytest.raises(ValueError, match=r"op\(b\) must be \(K1=3, N\)"):
        ops.matmul_pair(a, np.ones((2, 5)), a, b)
    with pytest.raises(ValueError, match="same N"):
        ops.matmul_pair(a, b, a, np.ones((3, 6)))
    with pytest.raises(ValueError, match=r"d must have the result's shape \(4, 5\)"):
        ops.matmul_pair(a, b, a, b, d=np.ones((5, 4)))
    with pytest.raises(TypeError, match="transpose_b"):
        ops.matmul_pair(a, b, a, b, transpose_b="yes")
    with pytest.raises(TypeError, match="queue must be a pyopencl.CommandQueue"):
        ops.matmul_pair(a, b, a, b, queue=1)


def test_swiglu_input_grad_is_the_pass_and_the_paired_product_in_one_launch(queue, monkeypatch):
    """SwiGLU's gradients and x's gradient from one launch where one work-group holds all of dx's
    columns: bitwise ``swiglu_backward`` then ``matmul_pair`` (the same expressions, the same sum), and
    within float32 bounds of float64 (the gradients elementwise, dx as matmul_atol of the joined
    product over the device's gradients plus d's add), at ragged sizes; elsewhere the two run apart."""
    rng = np.random.default_rng(34)
    launched = record_launches(monkeypatch)
    t = lambda *s: Tensor.from_host(queue, f32(rng.standard_normal(s)))
    wide = tile_for(queue.device)[0] == 16            # 64-column panels: dx's 128 columns are two
    # (m, h, n, d given, one launch expected: True, False, or None where the layout decides)
    for m, h, n, with_d, one in [(2048, 320, 128, False, True if wide else None), (97, 90, 70, True, None),
                                 (61, 131, 33, False, None), (130, 65, 97, True, None),
                                 (13, 7, 5, True, False),          # below the packing threshold
                                 (130, 100, 300, False, False)]:   # more panels than one group takes
        gate, up, g, w1, w3 = t(m, h), t(m, h), t(m, h), t(n, h), t(n, h)
        d = t(m, n) if with_d else None
        launched.clear()
        dx, dgate, dup = ops.swiglu_input_grad(gate, up, g, w1, w3, d=d)
        fused = any("-DSWIGLU_BWD=1" in options for _, options in launched)
        assert one is None or fused == one, f"{(m, h, n)}: one launch {fused}, expected {one}"
        apart = ops.swiglu_backward(gate, up, g)
        want = (ops.matmul_pair(apart[0], w1, apart[1], w3, transpose_b=True, d=d), *apart)
        for name, f, a in zip(("dx", "dgate", "dup"), (dx, dgate, dup), want):
            assert np.array_equal(f.numpy(), a.numpy()), f"swiglu_input_grad {name} at {(m, h, n)} differs from apart"
        a64, u64, g64 = (v.numpy().astype(np.float64) for v in (gate, up, g))
        s = 1 / (1 + np.exp(-a64))
        for name, got, ref in (("dgate", dgate, g64 * u64 * s * (1 + a64 * (1 - s))), ("dup", dup, g64 * a64 * s)):
            # exp within 4 ulp, then a divide, an add, a subtract and up to four products: 12u of the
            # largest magnitude the expression forms (|g u s (1 + a)|, |g a s|)
            scale = np.abs(g64) * (np.abs(u64) * (1 + np.abs(a64)) if name == "dgate" else np.abs(a64))
            assert_close(got.numpy(), ref, rtol=0, atol=12 * EPS32 * scale + 1e-37, what=f"{name} {(m, h, n)}")
        joined, weights = np.hstack([dgate.numpy(), dup.numpy()]), np.hstack([w1.numpy(), w3.numpy()]).T
        want_dx = reference.matmul(joined, weights) + (0 if d is None else d.numpy().astype(np.float64))
        atol = matmul_atol(joined, weights) + (0 if d is None else 2 * EPS32 * (np.abs(want_dx) + np.abs(d.numpy())))
        assert_close(dx.numpy(), want_dx, rtol=0, atol=atol, what=f"swiglu_input_grad dx {(m, h, n)}")


def test_swiglu_input_grad_refuses_bad_arguments(queue):
    t = lambda *s: Tensor.from_host(queue, f32(np.ones(s)))
    gate, w = t(8, 6), t(4, 6)
    with pytest.raises(TypeError, match="g must be a Tensor"):
        ops.swiglu_input_grad(gate, gate, np.ones((8, 6)), w, w)
    with pytest.raises(ValueError, match="one shape"):
        ops.swiglu_input_grad(gate, t(8, 5), gate, w, w)
    with pytest.raises(ValueError, match=r"w1 and w3 must be \(D, 6\)"):
        ops.swiglu_input_grad(gate, gate, gate, t(4, 5), t(4, 5))
    with pytest.raises(ValueError, match=r"d must have dx's shape \(8, 4\)"):
        ops.swiglu_input_grad(gate, gate, gate, w, w, d=t(4, 8))
