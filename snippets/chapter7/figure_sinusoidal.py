"""Figure: the sinusoidal position table as a heatmap, and three of its coordinates (argv[1] = SVG path)."""
import sys

import matplotlib.pyplot as plt
import numpy as np

from netcl_lite.nn import sinusoidal_positions

T, D = 96, 32
pe = sinusoidal_positions(T, D)
fig, (heat, lines) = plt.subplots(1, 2, figsize=(12, 3.8), facecolor="white",
                                  gridspec_kw={"width_ratios": [1.2, 1], "wspace": 0.35})
im = heat.imshow(pe.T, aspect="auto", cmap="RdBu_r", vmin=-1, vmax=1, interpolation="nearest")
heat.set_xlabel("position i")
heat.set_ylabel("coordinate (sin at even, cos at odd)")
heat.set_title(f"sinusoidal_positions({T}, {D})", fontsize=10)
fig.colorbar(im, ax=heat, fraction=0.04)
shown = [0, 6, 14]  # sin coordinates of pairs 0, 3 and 7
fine = np.linspace(0, T - 1, 40 * T)  # 40 samples per position: a smooth curve
for c in shown:
    period = 2 * np.pi * 10000.0 ** (c / D)
    # the curve is sin(2 pi i / period) between positions; the dots are the library's table,
    # which must lie on it
    assert np.allclose(pe[:, c], np.sin(2 * np.pi * np.arange(T) / period), atol=1e-4)  # float32 table
    (curve,) = lines.plot(fine, np.sin(2 * np.pi * fine / period), lw=1.2,
                          label=f"coordinate {c}: period {period:,.1f}")
    lines.plot(np.arange(T), pe[:, c], "o", ms=2, color=curve.get_color())
lines.set_xlabel("position i")
lines.set_ylim(-1.15, 1.6)
lines.legend(fontsize=8, loc="upper right")
lines.set_title("lower pairs turn fast, higher pairs slowly", fontsize=10)
periods = ", ".join(f"{2 * np.pi * 10000.0 ** (c / D):,.1f}" for c in shown)
last_turn = (T - 1) * 10000.0 ** (-(D - 2) / D)  # the last pair's angle at position T - 1
assert np.allclose(pe[-1, -2:], [np.sin(last_turn), np.cos(last_turn)], atol=1e-5)
alt = (f"Left: the {T} x {D} sinusoidal position table as a heatmap, positions across, coordinates down; "
       f"the first pair turns once every {2 * np.pi:.1f} positions, the last by {last_turn:.3f} radians "
       f"across all {T}. "
       f"Right: coordinates {', '.join(map(str, shown))} (sines of pairs 0, 3 and 7) against position, "
       f"with periods of {periods} positions.")
plt.savefig(sys.argv[1], format="svg", metadata={"Date": None, "Description": alt}, bbox_inches="tight",
            facecolor="white")
