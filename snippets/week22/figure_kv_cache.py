"""KV-cache size against sequence length: 64 KV heads (MHA) vs 8 groups (GQA) vs 1 (MQA)."""
import sys

import matplotlib.pyplot as plt

from netcl_lite import budget

lengths = [2**p for p in range(9, 18)]  # 512 ... 131,072
layouts = [("MHA: 64 KV heads", 64), ("GQA: 8 KV groups", 8), ("MQA: 1 KV head", 1)]

fig, ax = plt.subplots(figsize=(7, 4.2), facecolor="white")
ax.set_facecolor("white")
for label, kv_heads in layouts:
    gib = [budget.to_gib(budget.kv_cache_bytes(80, kv_heads, 128, n)) for n in lengths]
    ax.plot(lengths, gib, marker="o", label=label)
for n in (2048, 32768):  # the drill's two lengths, labelled with the MHA size
    gib = budget.to_gib(budget.kv_cache_bytes(80, 64, 128, n))
    ax.axvline(n, color="0.8", linewidth=0.8, zorder=0)
    ax.annotate(f"{gib:g} GiB", (n, gib), textcoords="offset points", xytext=(-8, 8), ha="right")
ax.set_xscale("log", base=2)
ax.set_yscale("log", base=2)
ticks = [4.0**p for p in range(-3, 5)]  # 1/64 ... 256 GiB
ax.set_yticks(ticks, [f"{t:g}" if t >= 1 else f"1/{round(1 / t)}" for t in ticks])
ax.set_xticks(lengths, [f"{n:,}" for n in lengths], rotation=30)
ax.set_xlabel("sequence length (tokens, batch 1)")
ax.set_ylabel("KV cache (GiB)")
ax.set_title("KV cache, 80 layers, head width 128, fp16")
ax.grid(True, which="major", alpha=0.3)
ax.legend()
gib = {kv: [budget.to_gib(budget.kv_cache_bytes(80, kv, 128, n)) for n in (2048, 32768)] for _, kv in layouts}
alt = ("KV-cache size in GiB against sequence length on log axes (80 layers, head width 128, fp16): "
       + "; ".join(f"{label} needs {gib[kv][0]:.3g} GiB at 2,048 tokens and {gib[kv][1]:.3g} at 32,768"
                   for label, kv in layouts) + ".")
plt.savefig(sys.argv[1], format="svg", metadata={"Date": None, "Description": alt}, bbox_inches="tight")
