"""The worked example's causal attention weights as a heatmap (drawn at build time)."""

import sys

import matplotlib.pyplot as plt
import numpy as np

from netcl_lite import ops

Q = np.array([[1.0, 0.0], [0.0, 2.0], [1.0, 1.0]])
K = np.array([[1.0, 0.0], [1.0, 1.0], [0.0, 2.0]])
V = np.array([[10.0, 1.0], [20.0, 2.0], [30.0, 3.0]])
_, A = ops.attention(Q, K, V, causal=True, return_weights=True)

fig, ax = plt.subplots(figsize=(3.6, 3.0), facecolor="white")
im = ax.imshow(A, cmap="Blues", vmin=0, vmax=1)
for i in range(3):
    for j in range(3):
        text = "masked" if j > i else f"{A[i, j]:.3f}"
        ax.text(
            j,
            i,
            text,
            ha="center",
            va="center",
            fontsize=9,
            color="white" if A[i, j] > 0.6 else "black",
        )
ax.set_xticks(range(3), [f"key {j}" for j in range(3)])
ax.set_yticks(range(3), [f"query {i}" for i in range(3)])
ax.set_title("causal attention weights A")
fig.colorbar(im, ax=ax, fraction=0.046)
rows = "; ".join(
    f"query {i}: "
    + ", ".join("masked" if j > i else f"{A[i, j]:.3f}" for j in range(3))
    for i in range(3)
)
alt = f"Heatmap of the worked example's causal attention weights from ops.attention, keys 0 to 2 per query: {rows}."
fig.savefig(
    sys.argv[1],
    format="svg",
    metadata={"Date": None, "Description": alt},
    bbox_inches="tight",
)
