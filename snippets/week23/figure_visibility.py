"""Figure: the three visibility maps of drill step 1, drawn from netcl_lite.masks (argv[1] = SVG path)."""
import sys

import matplotlib.pyplot as plt
import numpy as np

from netcl_lite import masks

source_valid = np.array([True, True, True, True, False, False])
panels = [
    ("Encoder self-attention", masks.encoder(6), "key (source position)", "query (source position)"),
    ("Decoder causal self-attention", masks.causal(4), "key (target position)", "query (target position)"),
    ("Cross-attention, 2 padded source slots", masks.cross(4, source_valid), "key (source position)", "query (target position)"),
]
ALLOWED, BLOCKED = "#3f51b5", "#eceff1"  # Material indigo on pale grey: readable on white

fig, axes = plt.subplots(1, 3, figsize=(11, 3.6), facecolor="white",
                         gridspec_kw={"width_ratios": [6, 4, 6]})
for ax, (title, mask, xlabel, ylabel) in zip(axes, panels):
    rows, cols = mask.shape
    for i in range(rows):
        for j in range(cols):
            ax.add_patch(plt.Rectangle((j, i), 1, 1, facecolor=ALLOWED if mask[i, j] else BLOCKED,
                                       edgecolor="white", linewidth=2))
    ax.set_xlim(0, cols)
    ax.set_ylim(rows, 0)  # query 0 at the top, as in masks.render
    ax.set_aspect("equal")
    ax.set_xticks(np.arange(cols) + 0.5, [str(j) for j in range(cols)])
    ax.set_yticks(np.arange(rows) + 0.5, [str(i) for i in range(rows)])
    ax.tick_params(length=0)
    for spine in ax.spines.values():
        spine.set_visible(False)
    ax.set_title(f"{title}\n{int(mask.sum())} allowed pairs", fontsize=10)
    ax.set_xlabel(xlabel, fontsize=9)
    ax.set_ylabel(ylabel, fontsize=9)
axes[2].set_xticks(np.arange(6) + 0.5, [str(j) if ok else f"{j}\npad" for j, ok in enumerate(source_valid)])
fig.legend(handles=[plt.Rectangle((0, 0), 1, 1, facecolor=ALLOWED), plt.Rectangle((0, 0), 1, 1, facecolor=BLOCKED, edgecolor="#b0bec5")],
           labels=["query may attend to key", "blocked"], loc="lower center", ncol=2, frameon=False, fontsize=9,
           bbox_to_anchor=(0.5, -0.06))
alt = "Three visibility grids from netcl_lite.masks: " + "; ".join(
    f"{title.lower()}, {mask.shape[0]} queries by {mask.shape[1]} keys, {int(mask.sum())} allowed pairs"
    for title, mask, _, _ in panels) + (f"; the cross-attention map blocks the {int((~source_valid).sum())} "
                                        "padding columns for every query.")
plt.savefig(sys.argv[1], format="svg", metadata={"Date": None, "Description": alt}, bbox_inches="tight",
            facecolor="white")
