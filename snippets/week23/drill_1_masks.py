# Step 1 — the mask is one family difference
import numpy as np

from netcl_lite import budget, masks

# 4 real source tokens, then 2 padding slots
source_valid = np.array([True, True, True, True, False, False])
maps = {
    "encoder (6 x 6)": masks.encoder(6),
    "decoder causal (4 x 4)": masks.causal(4),
    "cross, 4 target x 6 source, 2 padded": masks.cross(4, source_valid),
}
for name, mask in maps.items():
    print(f"{name}: {int(mask.sum())} allowed pairs")
    print(masks.render(mask))

counts = [int(mask.sum()) for mask in maps.values()]
assert counts == [36, 10, 16]
causal = maps["decoder causal (4 x 4)"]
assert all(causal[i, j] == (j <= i) for i in range(4) for j in range(4))

# Teacher forcing: shift by one. Position i reads inputs[:i+1] and is
# scored on targets[i].
tokens = ["BOS", "a", "b", "c", "EOS"]
inputs, targets = masks.teacher_forcing(tokens)
for i, target in enumerate(targets):
    print(f"sees {inputs[: i + 1]} -> predicts {target!r}")
    # the visible prefix ends at position i; the target is at i + 1
    assert inputs[: i + 1] == tokens[: i + 1] and target == tokens[i + 1]

saved = budget.tied_embedding_savings(vocab=32_000, dim=512)
print(f"tying a 32,000 x 512 embedding saves {saved:,} weights")
assert saved == 32_000 * 512 == 16_384_000
