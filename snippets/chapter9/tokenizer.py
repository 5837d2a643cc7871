import time

from netcl_lite import capstone

d = capstone.data()
began = time.perf_counter()
tok = capstone.train_tokenizer(d.train_text)  # on the training split only
print(f"trained {len(tok.merges)} merges in {time.perf_counter() - began:.1f} s;"
      f" vocabulary {tok.n_vocab} tokens")
print(f"  on {capstone.machine()}")
splits = (("training", d.train_text), ("validation", d.validation_text),
          ("test", d.test_text))
for name, text in splits:
    ids = tok.encode_ordinary(text)
    assert tok.decode(ids) == text  # byte-level BPE round-trips exactly
    print(f"{name:10s} {len(ids):>8,} tokens,"
          f" {len(text.encode()) / len(ids):.2f} bytes per token")

sentence = "Return a new list containing all items from the iterable."
print([tok.decode([i]) for i in tok.encode_ordinary(sentence)])
