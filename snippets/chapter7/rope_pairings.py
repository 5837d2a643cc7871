import numpy as np

from netcl_lite import ops

rng = np.random.default_rng(3)
d = 8
q, k = rng.standard_normal((2, 5, d)).astype(np.float32)  # 5 positions each

# Interleaved rotates (x[2i], x[2i+1]); rotate-half rotates (x[i], x[i + d/2]).
# Listing the even coordinates first, then the odd ones, turns one into the other.
evens_then_odds = np.r_[0:d:2, 1:d:2]  # [0 2 4 6 1 3 5 7]
inter = ops.rope(q, pairing="interleaved")
half = ops.rope(q[:, evens_then_odds], pairing="half")
print(
    "rotate-half of the reordered q = reordered interleaved:",
    np.allclose(half, inter[:, evens_then_odds], atol=1e-6),
)

# The same reorder of q and k leaves every score q.k unchanged ...
s_inter = inter @ ops.rope(k, pairing="interleaved").T
s_half = half @ ops.rope(k[:, evens_then_odds], pairing="half").T
print("scores agree:", np.allclose(s_inter, s_half, atol=1e-5))
# ... but the same weights under the other convention give other scores.
s_mixed = ops.rope(q, pairing="half") @ ops.rope(k, pairing="half").T
print(
    "same q, k under the other convention agree:",
    np.allclose(s_inter, s_mixed, atol=1e-5),
)
assert np.allclose(s_inter, s_half, atol=1e-5), "the same reorder of q and k leaves every score unchanged"
assert not np.allclose(s_inter, s_mixed, atol=1e-5), "without the reorder the scores differ"
