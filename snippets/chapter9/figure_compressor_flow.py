"""Figure: what netcl_lite.compression does to a file, stage by stage (argv[1] = SVG path).

The stages are a list of columns (STAGES), each a list of boxes, drawn left to right; ARROWS says
which box feeds which. A new stage (a match model beside the n-gram, an APM/SSE step after the
mixer) is one more box or column and its arrows. The numbers come from the library's constants.
"""
import sys

import matplotlib.pyplot as plt
from matplotlib.patches import FancyArrowPatch, FancyBboxPatch

from netcl_lite import compression, ngram

parts = 1 + len(ngram.MIX_ORDERS) + 2          # what Mixer mixes: the model, the snapshots, the cache, the n-gram
STAGES = [                                     # columns, left to right: (key, title, detail)
    [("bytes", "the file", "any bytes")],
    [("tokens", "token ids", "byte-level BPE;\nnon-UTF-8 bytes\nas byte tokens")],
    [("model", "the language model", f"a cached decode step per\ntoken, {compression.STREAMS} streams at most;\nsoftmax of the logits"),
     ("ngram", "n-gram counts", f"contexts of up to {ngram.ORDERS} tokens,\nprimed with the training\ntext, then what is coded")],
    [("mixer", "the mixer", f"{parts} distributions mixed,\nweights learned online\nper context bucket")],
    [("coder", "range coder", "codes each token id\nwith its probability\n(constriction)")],
    [("blob", "the blob", "header: magic, version,\nmode, length, SHA-256,\nfingerprints of the model,\ntokenizer, primer and\narithmetic, CRC-32s;\nthen the payload")],
]
ARROWS = [("bytes", "tokens"), ("tokens", "model"), ("tokens", "ngram"), ("model", "mixer"), ("ngram", "mixer"),
          ("mixer", "coder"), ("coder", "blob"), ("coder", "ngram")]
FEEDBACK = {("coder", "ngram")}                # the coded token updates the counts (and the mixer's weights)

COLUMN, BOX_W, BOX_H, GAP = 2.85, 2.5, 1.5, 0.45
height = max(len(col) for col in STAGES) * (BOX_H + GAP)
fig, ax = plt.subplots(figsize=(13, 4.3), facecolor="white")
ax.set_xlim(-0.15, COLUMN * len(STAGES))
ax.set_ylim(height + 0.75, -0.55)
ax.axis("off")

centre = {}
for c, column in enumerate(STAGES):
    top = (height - len(column) * (BOX_H + GAP) + GAP) / 2
    for r, (key, title, detail) in enumerate(column):
        x, y = c * COLUMN, top + r * (BOX_H + GAP)
        tall = BOX_H + (0.75 if key == "blob" else 0)
        ax.add_patch(FancyBboxPatch((x, y), BOX_W, tall, boxstyle="round,pad=0.02,rounding_size=0.12",
                                    facecolor="#e8eaf6" if key not in ("blob", "bytes") else "#fff3e0",
                                    edgecolor="#3f51b5", linewidth=1.2))
        ax.text(x + BOX_W / 2, y + 0.22, title, ha="center", va="center", fontsize=9, fontweight="bold")
        ax.text(x + BOX_W / 2, y + 0.42, detail, ha="center", va="top", fontsize=7, linespacing=1.15)
        centre[key] = (x, y, tall)

for a, b in ARROWS:
    xa, ya, ha = centre[a]
    xb, yb, hb = centre[b]
    if (a, b) in FEEDBACK:                     # back along the bottom, under the boxes
        start, end = (xa + BOX_W / 2, ya + ha), (xb + BOX_W * 0.75, yb + hb)
        arrow = FancyArrowPatch(start, end, arrowstyle="-|>", mutation_scale=10, color="#ef6c00", linewidth=1.1,
                                linestyle="--", connectionstyle="arc3,rad=-0.35")
    else:
        arrow = FancyArrowPatch((xa + BOX_W, ya + ha / 2), (xb, yb + hb / 2), arrowstyle="-|>", mutation_scale=10,
                                color="#424242", linewidth=1.1)
    ax.add_patch(arrow)
ax.text(centre["mixer"][0] + BOX_W / 2, height + 0.55, "each coded token updates the counts and the weights",
        ha="center", va="center", fontsize=7.5, color="#bf360c")

alt = (f"The compressor's data flow, left to right: the file's bytes become token ids (byte-level BPE); the "
       f"language model, in at most {compression.STREAMS} streams coded side by side, and an adaptive n-gram "
       f"over contexts of up to {ngram.ORDERS} tokens each predict the next token; a mixer combines {parts} "
       f"distributions with weights learned online; a range coder codes each token with the mixed probability; "
       f"the blob is a header (magic, version, mode, length, checksums and fingerprints) followed by the payload. "
       f"Each coded token updates the n-gram's counts and the mixer's weights. A blob that would not be smaller "
       f"is stored as is, {compression.STORED_HEADER_BYTES} bytes over its input.")
fig.savefig(sys.argv[1], format="svg", metadata={"Date": None, "Description": alt}, bbox_inches="tight",
            facecolor="white")
