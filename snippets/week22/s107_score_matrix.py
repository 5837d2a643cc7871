from netcl_lite import budget

# One materialized fp32 score matrix at length 8,192, then one per head and batch
# element.
one = budget.score_matrix_bytes(8192)
many = budget.score_matrix_bytes(8192, heads=32, batch=8)
print("1 head, 1 sequence:   ", budget.format_bytes(one))
print("32 heads, batch of 8: ", budget.format_bytes(many))
