from netcl_lite.budget import format_bytes, score_matrix_bytes

# fp32, one head, one sequence
one = score_matrix_bytes(8192, bytes_per_element=4)
print("one 8,192 x 8,192 fp32 score matrix:", format_bytes(one))
many = score_matrix_bytes(8192, bytes_per_element=4, heads=32, batch=8)
print("x 32 heads x batch 8:              ", format_bytes(many))
