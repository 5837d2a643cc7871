from netcl_lite import capstone

# The docstrings of the standard library of the Python running this code,
# one document per module, split into training and held-out by module.
d = capstone.data()
sizes = {}
for name, docs, text in (
    ("training", d.train_documents, d.train_text),
    ("held-out", d.held_out_documents, d.held_out_text),
):
    sizes[name] = len(text.encode("utf-8"))
    print(f"{name:9s} {len(docs):4d} modules {sizes[name]:>11,} bytes")
assert sum(sizes.values()) >= 1_000_000
assert not set(d.train_documents) & set(d.held_out_documents)

print("held-out modules include:", ", ".join(sorted(d.held_out_documents)[:4]))
print(d.held_out_text[:240])
