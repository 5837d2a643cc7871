import netcl_lite as nl

nl.extras.require("compare")  # stops here with the pip command if it is missing

from netcl_lite import capstone, mixing
from netcl_lite.compression import compress, decompress

NEGLIGIBLE = 1e-4  # a change in bits smaller than this fraction counts as none

run = capstone.run()
rows = mixing.ablation(run, "validation")  # cross-entropies, as the compressor predicts
names = list(rows)
whole = rows[names[7]]                     # every technique but dynamic evaluation
# what each row is measured against: the row above, the whole mix, the model alone
against = {1: 0, 2: 1, 3: 2, 4: 3, 5: 4, 6: 5, 7: 6, 8: 0, 9: 7}
left_out = dict(zip(names[3:8], names[10:15]))  # a technique: the whole mix without it

# The whole mix as a real file on the validation text, decoded back.
data = run.data.validation_text.encode("utf-8")
blob = compress(data, run.model, run.tokenizer)
assert decompress(blob, run.model, run.tokenizer) == data
file_bpb = 8 * len(blob) / len(data)
zpaq = capstone.measures(run)["validation"]["primed"]["zpaq"]
print(f"the whole mix's file: {len(blob):,} bytes, {file_bpb:.4f} bits per byte,"
      f" {file_bpb / whole - 1:+.2%} over its cross-entropy;")
print(f"primed zpaq -m5's file: {zpaq:.4f} bits per byte; ours: {file_bpb / zpaq:.3f}x")
print()
print("| on the validation split | bits per byte | change | the mix without it |")
print("|---|---:|---:|---:|")
for i, name in enumerate(names[:10]):
    change = f"{rows[name] / rows[names[against[i]]] - 1:+.2%}" if i in against else ""
    out = f"{rows[left_out[name]] / whole - 1:+.2%}" if name in left_out else ""
    print(f"| {name} | {rows[name]:.4f} | {change} | {out} |")

assert file_bpb <= 1.002 * whole, "the file is within 0.2% of the mix's cross-entropy"
assert rows[names[2]] < rows[names[1]], "geometric mixing needs fewer bits than linear"
costs = {name: rows[out] / whole - 1 for name, out in left_out.items()}
assert min(costs.values()) > 0, "each technique left out of the whole mix costs bits"
assert max(costs, key=costs.get) == names[6], "the streams' own tokens are worth most"
assert rows[names[3]] > (1 - NEGLIGIBLE) * rows[names[2]], \
    "secondary estimation alone gains nothing"
assert rows[names[9]] < whole, "dynamic evaluation lowers the whole mix's bits"
assert rows[names[8]] < rows[names[0]], "dynamic evaluation lowers the model's bits"
assert rows[names[9]] / whole > rows[names[8]] / rows[names[0]], \
    "dynamic evaluation gains less on the mix than on the model"
assert file_bpb < zpaq, "the mixed file is smaller than primed zpaq's on validation"
