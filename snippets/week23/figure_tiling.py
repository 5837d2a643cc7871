"""Figure: dense attention stores every score; streamed attention holds one key tile at a time (argv[1] = SVG path).

Shapes are the drill's: 7 queries, 9 keys, block_size 4 (tiles of 4, 4 and 1 keys).
"""
import sys

import matplotlib.pyplot as plt

TQ, TK, BLOCK = 7, 9, 4
tiles = [range(start, min(start + BLOCK, TK)) for start in range(0, TK, BLOCK)]
TILE_COLORS = ["#3f51b5", "#009688", "#ef6c00"]
STORED, STATE = "#7986cb", "#fff3e0"

fig, (dense_ax, flash_ax) = plt.subplots(1, 2, figsize=(11, 3.8), facecolor="white")


def grid(ax, color_of, title):
    for i in range(TQ):
        for j in range(TK):
            ax.add_patch(plt.Rectangle((j, i), 1, 1, facecolor=color_of(j), edgecolor="white", linewidth=1.5))
    ax.set_xlim(-0.2, TK + 3.2)
    ax.set_ylim(TQ + 3.0, -0.3)
    ax.set_aspect("equal")
    ax.axis("off")
    ax.set_title(title, fontsize=10)
    ax.text(TK / 2, TQ + 1.0, f"{TK} keys", ha="center", va="top", fontsize=9)
    ax.text(-0.4, TQ / 2, f"{TQ} queries", ha="right", va="center", rotation=90, fontsize=9)


grid(dense_ax, lambda j: STORED, f"Dense: all {TQ} x {TK} scores stored, then softmax")
dense_ax.text(TK + 0.4, TQ / 2, "weights\n(Tq x Tk)\nin memory", ha="left", va="center", fontsize=9)

tile_of = {j: t for t, keys in enumerate(tiles) for j in keys}
grid(flash_ax, lambda j: TILE_COLORS[tile_of[j]], f"Streamed, block_size = {BLOCK}: one key tile at a time")
for t, keys in enumerate(tiles):
    flash_ax.text((keys[0] + keys[-1] + 1) / 2, TQ + 0.15, f"tile {t + 1}", ha="center", va="top",
                  fontsize=9, color=TILE_COLORS[t])
for i in range(TQ):
    flash_ax.add_patch(plt.Rectangle((TK + 0.4, i + 0.1), 2.6, 0.8, facecolor=STATE, edgecolor="#ef6c00", linewidth=0.8))
    flash_ax.text(TK + 1.7, i + 0.5, "m, l, a", ha="center", va="center", fontsize=8)
# under the tile labels, so that "tile 3" and this note never share a line
flash_ax.text(TK + 1.7, TQ + 0.9, "per-row state,\nrescaled by\nexp(m_old - m_new)",
              ha="center", va="top", fontsize=8)
sizes = [len(keys) for keys in tiles]
alt = (f"Left: dense attention stores all {TQ} x {TK} scores. Right: streamed attention with block_size {BLOCK} "
       f"visits {len(tiles)} key tiles of {', '.join(map(str, sizes[:-1]))} and {sizes[-1]} keys, "
       "carrying only the running maximum m, normalizer l and accumulator a per query row.")
plt.savefig(sys.argv[1], format="svg", metadata={"Date": None, "Description": alt}, bbox_inches="tight",
            facecolor="white")
