from netcl_lite import budget

T, heads, batch, d, bf16 = 16_384, 16, 4, 128, 2
scores = budget.score_matrix_bytes(T, bytes_per_element=bf16, heads=heads, batch=batch)
qkvo = 4 * T * d * bf16 * heads * batch
print("scores of one layer: ", budget.format_bytes(scores))
print("Q, K, V and O:       ", budget.format_bytes(qkvo))
print(f"ratio {scores / qkvo:.0f} = T / (4 d)")
