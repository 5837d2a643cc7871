"""Chapter 8: what sits in fast memory and what streams from slow memory, in FlashAttention-2's loop order.

Outer loop over query blocks (B_r rows): Q_i is read once; its output accumulator O_i, running maximum
m_i and normalizer l_i stay in fast memory while every K/V block (B_c rows) streams past; then O_i / l_i
and the log-sum-exp are written once. Schematic: one head, 4 query blocks and 12 key blocks.
"""
import sys

import matplotlib.pyplot as plt
from matplotlib.patches import FancyArrowPatch, Rectangle

N_Q, N_KV = 4, 12             # query blocks and key/value blocks drawn
I, J = 1, 5                   # the query block being computed, the K/V block streaming in now
STRIP_H, STRIP_W = 3.0, 0.8   # a T x d matrix in slow memory
SLOW, FAST, DONE, EDGE = "#eceff1", "#fff8e1", "#b0bec5", "#ef6c00"
Q_COLOR, K_COLOR, V_COLOR, O_COLOR, STAT = "#3f51b5", "#00897b", "#43a047", "#8e24aa", "#ef6c00"

fig, ax = plt.subplots(figsize=(11, 5.6), facecolor="white")
ax.set_xlim(-0.2, 16.6)
ax.set_ylim(-2.0, 8.2)
ax.set_aspect("equal")
ax.axis("off")


def strip(x, y0, name, blocks, color, live=None, done=(), side="left"):
    """A T x d matrix in slow memory cut into row blocks, first block on top; returns the live
    block's (left, right, middle height)."""
    step = STRIP_H / blocks
    for b in range(blocks):
        face = color if b == live else DONE if b in done else "white"
        ax.add_patch(Rectangle((x, y0 + STRIP_H - (b + 1) * step), STRIP_W, step, facecolor=face,
                               edgecolor="0.45", linewidth=0.6))
    at, ha = (x - 0.15, "right") if side == "left" else (x + STRIP_W + 0.15, "left")
    ax.text(at, y0 + STRIP_H / 2, name, ha=ha, va="center", fontsize=11)
    return x, x + STRIP_W, y0 + STRIP_H - (live + 0.5) * step


def box(x0, x1, title, face, edge):
    ax.add_patch(Rectangle((x0, -0.9), x1 - x0, 8.3, facecolor=face, edgecolor=edge, linewidth=1.2))
    ax.text((x0 + x1) / 2, 7.55, title, ha="center", va="bottom", fontsize=9.5, fontweight="bold")


# Slow memory, drawn twice: the query side (Q, O) left, the key side (K, V) right.
box(0.0, 2.4, "slow memory", SLOW, "0.6")
box(14.2, 16.6, "slow memory", SLOW, "0.6")
q = strip(1.0, 3.7, "Q", N_Q, Q_COLOR, live=I, done=range(I))
o = strip(1.0, 0.0, "O", N_Q, O_COLOR, live=I, done=range(I))
k = strip(14.8, 3.7, "K", N_KV, K_COLOR, live=J, done=range(J), side="right")
v = strip(14.8, 0.0, "V", N_KV, V_COLOR, live=J, done=range(J), side="right")
for x, text in ((1.4, "T rows\nd wide"), (15.2, "T rows\nd wide")):
    ax.text(x, -0.15, text, ha="center", va="top", fontsize=8, color="0.3")

# Fast memory: what one query block keeps while the K/V blocks stream past.
box(5.2, 11.4, "fast memory ($M_{\\mathrm{fast}}$ numbers)", FAST, EDGE)
items = {  # name: (x, y, width, height, color, label under it)
    "Q": (5.7, 4.3, 0.8, 1.8, Q_COLOR, "$Q_i$: $B_r \\times d$"),
    "O": (5.7, 0.9, 0.8, 1.8, O_COLOR, "$O_i$: $B_r \\times d$"),
    "m": (7.1, 0.9, 0.3, 1.8, STAT, "$m_i$"),
    "l": (7.9, 0.9, 0.3, 1.8, STAT, "$\\ell_i$"),
    "S": (7.6, 4.3, 1.9, 1.8, DONE, "$Z_{ij}, A_{ij}$: $B_r \\times B_c$"),
    "K": (10.2, 5.3, 0.8, 0.8, K_COLOR, "$K_j$: $B_c \\times d$"),
    "V": (10.2, 1.9, 0.8, 0.8, V_COLOR, "$V_j$: $B_c \\times d$"),
}
for x, y, w, h, color, label in items.values():
    ax.add_patch(Rectangle((x, y), w, h, facecolor=color, edgecolor="0.3", linewidth=0.6, alpha=0.9))
    ax.text(x + w / 2, y - 0.12, label, ha="center", va="top", fontsize=8.5)
ax.text(8.3, -0.3, "kept through the inner loop: $Q_i$, $O_i$, $m_i$, $\\ell_i$", ha="center",
        va="bottom", fontsize=8.5, color="0.25")


def arrow(start, end, color, text, text_xy):
    ax.add_patch(FancyArrowPatch(start, end, arrowstyle="-|>", mutation_scale=12, color=color, linewidth=1.4))
    ax.text(*text_xy, text, ha="center", va="center", fontsize=8.5, color=color, linespacing=1.3)


arrow((q[1] + 0.05, q[2]), (5.65, 5.2), Q_COLOR, "$Q_i$: read\nonce", (3.8, 6.3))
arrow((5.65, 1.8), (o[1] + 0.05, o[2]), O_COLOR, "$O_i / \\ell_i$ and\nlog-sum-exp:\nwritten once,\nat the end",
      (3.8, 3.0))
arrow((k[0] - 0.05, k[2]), (11.05, 5.7), K_COLOR, "$K_j$: read once\nper query block", (12.8, 6.5))
arrow((v[0] - 0.05, v[2]), (11.05, 2.3), V_COLOR, "$V_j$: read once\nper query block", (12.8, 3.3))
ax.text(8.3, -1.45, f"outer loop: query block $i$ = 1 .. $T / B_r$ (here {I + 1} of {N_Q});   "
        f"inner loop: key block $j$ = 1 .. $T / B_c$ (here {J + 1} of {N_KV})", ha="center", va="center",
        fontsize=9)

alt = ("Schematic of FlashAttention-2's loop order for one head. Slow memory holds Q, K, V and O, "
       f"T rows each; Q and O are cut into {N_Q} query blocks, K and V into {N_KV} key blocks. "
       f"Query block {I + 1} is read once into fast memory, where its output accumulator O_i, running "
       f"maximum m_i and normalizer l_i stay while the key blocks stream in one at a time (block {J + 1} "
       f"now, blocks 1 to {J} done), each K_j and V_j once per query block; the B_r by B_c score tile "
       "exists only in fast memory. After the last key block, O_i divided by l_i and the log-sum-exp "
       "are written to slow memory once.")
fig.savefig(sys.argv[1], format="svg", metadata={"Date": None, "Description": alt},
            bbox_inches="tight", facecolor="white")
