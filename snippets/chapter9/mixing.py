import netcl_lite as nl

nl.extras.require("compare")  # stops here with the pip command if it is missing

from netcl_lite import capstone, mixing

run = capstone.run()
mixes = mixing.mixing_measures(run, "test")  # cross-entropies, bits per byte
primed = capstone.measures(run)["test"]["primed"]
rows = [*mixes.items(), (f"primed PPMd (order {primed['ppmd order']})", primed["ppmd"]),
        ("primed zpaq -m5", primed["zpaq"])]
best = "adaptive, mixed, K = 8"
print(f"On the test split; the mix at K = 8 is {mixes[best] / primed['ppmd']:.2f}x"
      f" primed PPMd's bits and {mixes[best] / primed['zpaq']:.2f}x primed zpaq's.")
print()
print("| coder | bits per byte |")
print("|---|---:|")
for name, bpb in rows:
    print(f"| {name} | {bpb:.3f} |")

adaptive = "adaptive n-gram alone (K = 4)"
counted = mixes["n-gram from the training counts only (K = 4)"]
assert mixes[adaptive] < counted, \
    "the adaptive n-gram needs fewer bits than the static one"
alone = min(mixes[adaptive], mixes["the model alone"])
assert mixes["adaptive, mixed, K = 4"] < alone, \
    "the mix needs fewer bits than either part alone"
