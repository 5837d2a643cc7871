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

# Lines of the held-out text that also occur in the training text are dropped
# before anything is measured on it.
dropped = sum(len(line.encode("utf-8")) for line in d.dropped_lines)
kept = len(d.evaluation_text.encode("utf-8"))
print(f"dropped {len(d.dropped_lines)} held-out lines, {dropped:,} bytes"
      f" ({dropped / sizes['held-out']:.1%}); {kept:,} bytes are evaluated")
print(f"training text: {sizes['training'] / kept:.1f} times the evaluated text")
print("an example:", d.dropped_lines[0].strip()[:70])
assert kept + dropped == sizes["held-out"]

print("held-out modules include:", ", ".join(sorted(d.held_out_documents)[:4]))
print(d.evaluation_text[:240])
