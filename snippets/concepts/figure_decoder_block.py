"""Figure: the decoder-only model as netcl_lite builds it, with each tensor's shape (argv[1] = SVG path).

The layers are drawn from one list (STEPS), in the symbols of the Concepts page's notation table (G K/V
heads, head width d, SwiGLU's W1, W3 and W2 on a row vector x); the sizes named beside the shapes are
Chapter 9's model (netcl_lite.capstone's MODEL and VOCAB_SIZE).
"""
import sys

import matplotlib.pyplot as plt
from matplotlib.patches import FancyArrowPatch, FancyBboxPatch

from netcl_lite import capstone

m = capstone.MODEL
D, F, L = m["hidden_size"], m["intermediate_size"], m["num_hidden_layers"]
H, G, T = m["num_attention_heads"], m["num_key_value_heads"], m["max_position_embeddings"]
V, d = capstone.VOCAB_SIZE, m["hidden_size"] // m["num_attention_heads"]

# (label, shapes, kind): "io" the model's input and output, "layer" a step with weights, "add" a
# residual addition; the steps between the two "repeat" marks run L times.
STEPS = [
    ("token ids", "(B, T)", "io"),
    ("embedding: a row of E (V × D) per id", "(B, T, D)", "layer"),
    ("repeat", None, None),
    ("RMSNorm", "(B, T, D)", "layer"),
    ("grouped-query attention, RoPE on Q and K\nQ: H heads, K and V: G heads, causal",
     "Q: (B, H, T, d)\nK, V: (B, G, T, d)\nout: (B, T, D)", "layer"),
    ("add: x + attention", "(B, T, D)", "add"),
    ("RMSNorm", "(B, T, D)", "layer"),
    ("SwiGLU: (SiLU(x W₁) ⊙ x W₃) W₂\ninner width F", "u₁, u₃: (B, T, F)\nout: (B, T, D)", "layer"),
    ("add: x + feed-forward", "(B, T, D)", "add"),
    ("repeat", None, None),
    ("RMSNorm (final)", "(B, T, D)", "layer"),
    ("tied head: x Eᵀ (the embedding, transposed)", "(B, T, V)", "layer"),
    ("logits: next-token scores", "(B, T, V)", "io"),
]
COLORS = {"io": "#e8eaf6", "layer": "#c5cae9", "add": "#fff3e0"}
EDGES = {"io": "#3f51b5", "layer": "#3f51b5", "add": "#ef6c00"}

boxes = [s for s in STEPS if s[0] != "repeat"]
ROW, WIDTH, X0 = 1.0, 6.0, 0.6
fig, ax = plt.subplots(figsize=(9.6, 0.62 * len(boxes) + 0.8), facecolor="white")
ax.set_xlim(-0.2, 11.6)
ax.set_ylim(len(boxes) * ROW + 0.2, -0.6)
ax.axis("off")

y_of, repeat_rows, row = {}, [], 0
for label, shape, kind in STEPS:
    if label == "repeat":
        repeat_rows.append(row)
        continue
    y = row * ROW
    y_of[row] = y
    ax.add_patch(FancyBboxPatch((X0, y - 0.32), WIDTH, 0.64, boxstyle="round,pad=0.02,rounding_size=0.12",
                                facecolor=COLORS[kind], edgecolor=EDGES[kind], linewidth=1.2))
    ax.text(X0 + WIDTH / 2, y, label, ha="center", va="center", fontsize=8.5)
    ax.text(X0 + WIDTH + 0.25, y, shape, ha="left", va="center", fontsize=8.5 if "\n" not in shape else 7.5,
            family="monospace", linespacing=1.1)
    if row:
        ax.add_patch(FancyArrowPatch((X0 + WIDTH / 2, y - ROW + 0.33), (X0 + WIDTH / 2, y - 0.33),
                                     arrowstyle="-|>", mutation_scale=10, color="#424242", linewidth=1))
    row += 1

# the residual paths: from the input of each RMSNorm around its branch to the addition
for start in (repeat_rows[0], repeat_rows[0] + 3):
    y0, y1 = y_of[start] - 0.5 * ROW, y_of[start + 2]
    x = X0 - 0.3
    ax.plot([X0 + WIDTH / 2, x, x], [y0, y0, y1], color="#ef6c00", linewidth=1.2)
    ax.add_patch(FancyArrowPatch((x, y1), (X0, y1), arrowstyle="-|>", mutation_scale=10, color="#ef6c00",
                                 linewidth=1.2))

# the repeated block, L times
top, bottom = y_of[repeat_rows[0]] - 0.45, y_of[repeat_rows[1] - 1] + 0.45
ax.add_patch(FancyBboxPatch((X0 - 0.5, top), WIDTH + 3.35, bottom - top, boxstyle="round,pad=0.02,rounding_size=0.15",
                            facecolor="none", edgecolor="#757575", linewidth=1, linestyle="--"))
ax.text(X0 + WIDTH + 3.05, (top + bottom) / 2, f"× L\ndecoder\nblocks\n(L = {L}\nin Chapter 9)",
        ha="left", va="center", fontsize=8.5)

ax.text(X0 + WIDTH + 3.05, y_of[len(boxes) - 1] - 0.9,
        f"Chapter 9's model:\nD = {D}, H = {H}, G = {G},\nd = D / H = {d}, F = {F},\nV = {V}, T ≤ {T}",
        ha="left", va="center", fontsize=8)

alt = (f"The decoder-only model, top to bottom: token ids of shape (B, T) pass through the embedding to (B, T, D); "
       f"then L decoder blocks, each RMSNorm, grouped-query attention with RoPE, a residual addition, RMSNorm, "
       f"the SwiGLU feed-forward network (SiLU(x W1) times x W3, elementwise, then W2; inner width F) and a "
       f"second residual addition, all of shape (B, T, D); then a final RMSNorm and the tied head, the "
       f"embedding transposed, giving logits of shape (B, T, V). In Chapter 9's model L = {L}, D = {D}, "
       f"H = {H} query heads sharing G = {G} key and value heads of width d = {d}, F = {F}, V = {V} and "
       f"T up to {T}.")
fig.savefig(sys.argv[1], format="svg", metadata={"Date": None, "Description": alt}, bbox_inches="tight",
            facecolor="white")
