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
