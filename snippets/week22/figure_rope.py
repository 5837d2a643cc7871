"""RoPE on one 2-D pair: q and k rotated by position; their score depends on j - i only."""
import sys

import matplotlib.pyplot as plt
import numpy as np

from netcl_lite import ops

positions = np.arange(8)
q, k = np.array([1.0, 0.0]), np.array([0.8, 0.3])
# A width-4 head with base 16 has two pairs; draw the slower one (the second).
pad = np.zeros(2)
qs = ops.rope(np.tile(np.r_[pad, q], (8, 1)), base=16.0)[:, 2:].astype(float)  # row m: q at position m
ks = ops.rope(np.tile(np.r_[pad, k], (8, 1)), base=16.0)[:, 2:].astype(float)  # row n: k at position n
scores = qs @ ks.T
step = np.arctan2(qs[1, 1], qs[1, 0])  # q = (1, 0) at position 1: the angle turned per position

fig, (left, right) = plt.subplots(1, 2, figsize=(10, 4.4), facecolor="white")
for ax in (left, right):
    ax.set_facecolor("white")

for m in positions:
    left.annotate("", xy=qs[m], xytext=(0, 0), arrowprops=dict(arrowstyle="->", color="0.75", lw=1.2))
    left.text(*(qs[m] * 1.1), f"q@{m}", color="0.45", ha="center", va="center", fontsize=8)
pairs = [(1, 4), (4, 7)]  # the same offset n - m
for (m, n), color in zip(pairs, ["tab:blue", "tab:orange"]):
    left.annotate("", xy=qs[m], xytext=(0, 0), arrowprops=dict(arrowstyle="-|>", color=color, lw=2.2))
    left.annotate("", xy=ks[n], xytext=(0, 0), arrowprops=dict(arrowstyle="-|>", color=color, lw=2.2, ls="--"))
    # k's labels sit further out than q's (radius 1.1): k at j and q at j + 1 point almost the
    # same way, and at one radius their labels would touch
    left.text(*(ks[n] / np.linalg.norm(ks[n]) * 1.34), f"k@{n}", color=color, ha="center",
              va="center", fontsize=9)
    left.plot([], [], color=color, lw=2.2, label=f"q at i={m}, k at j={n} (dashed): score {scores[m, n]:.3f}")
left.set_aspect("equal")
left.set_xlim(-1.45, 1.45)
left.set_ylim(-0.45, 1.45)
left.axhline(0, color="0.9", lw=0.8, zorder=0)
left.axvline(0, color="0.9", lw=0.8, zorder=0)
left.set_title(f"one pair, rotated {step:.2f} rad per position")
left.legend(loc="lower left", fontsize=8)

image = right.imshow(scores, cmap="coolwarm")
right.set_xticks(positions)
right.set_yticks(positions)
right.set_xlabel("key position j")
right.set_ylabel("query position i")
right.set_title("score of q at i with k at j:\nconstant along each diagonal j - i")
fig.colorbar(image, ax=right, shrink=0.8)
last = positions[-1]
alt = (f"Left: one coordinate pair of a query, rotated by ops.rope {step:.2f} radian per position, "
       f"drawn at positions 0 to {last}; "
       + " and ".join(f"q at {m} with k at {n} scores {scores[m, n]:.3f}" for m, n in pairs)
       + f": the same offset, the same angle. Right: the {last + 1} by {last + 1} matrix of scores of "
       f"q at i with k at j, constant along each diagonal.")
plt.savefig(sys.argv[1], format="svg", metadata={"Date": None, "Description": alt}, bbox_inches="tight")
