from netcl_lite import capstone, corpus

# The docstrings of the standard library of the Python running this code,
# one document per module, split by module into training, validation and test.
d = capstone.data()
splits = {"training": d.train_documents, "validation": d.validation_documents,
          "test": d.test_documents}
sizes = {}
for name, docs in splits.items():
    sizes[name] = len(corpus.join(docs).encode("utf-8"))
    print(f"{name:10s} {len(docs):4d} modules {sizes[name]:>11,} bytes")
assert sum(sizes.values()) >= 1_000_000
assert not set(d.train_documents) & set(d.validation_documents)
assert not set(d.test_documents) & set(d.train_documents)
assert not set(d.test_documents) & set(d.validation_documents)

# Lines of a held-out split that also occur in the training text are dropped
# before anything is measured on it.
for name, kept, dropped in (("validation", d.validation_text, d.validation_dropped),
                            ("test", d.test_text, d.test_dropped)):
    gone = sum(len(line.encode("utf-8")) for line in dropped)
    left = len(kept.encode("utf-8"))
    print(f"{name}: dropped {len(dropped)} lines, {gone:,} bytes"
          f" ({gone / sizes[name]:.1%}); {left:,} bytes are measured")
    assert left + gone == sizes[name] and left >= 100_000
print("an example:", d.test_dropped[0].strip()[:70])
print("test modules include:", ", ".join(sorted(d.test_documents)[:4]))
print(d.test_text[:240])
