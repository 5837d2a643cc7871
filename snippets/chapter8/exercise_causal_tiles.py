T, tile = 4096, 64
n = T // tile  # 64 query tiles and 64 key tiles
# A query tile needs a key tile unless all its keys come after all the tile's queries.
visited = sum(
    1 for qi in range(n) for kj in range(n) if kj * tile <= qi * tile + tile - 1
)
print(
    f"{visited} of {n * n} tiles = {visited / (n * n):.1%};"
    f" n(n+1)/2 = {n * (n + 1) // 2}"
)
# The visited fraction (n + 1) / (2n) falls toward one half as the tiles per side grow.
fractions = [(k + 1) / (2 * k) for k in (4, 16, 64, 256)]
print(", ".join(f"n = {k}: {f:.1%}" for k, f in zip((4, 16, 64, 256), fractions)))
falling = all(a > b > 0.5 for a, b in zip(fractions, fractions[1:]))
assert falling, "the fraction falls toward one half"
