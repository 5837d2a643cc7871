import time

from netcl_lite import capstone

d = capstone.data()
began = time.perf_counter()
tok = capstone.train_tokenizer(d.train_text)  # on the training split only
print(f"trained {len(tok.merges)} merges in {time.perf_counter() - began:.1f} s;"
      f" vocabulary {tok.n_vocab} tokens")
for name, text in (("training", d.train_text), ("held-out", d.held_out_text)):
    ids = tok.encode_ordinary(text)
    assert tok.decode(ids) == text  # byte-level BPE round-trips exactly
    print(f"{name:9s} {len(ids):>8,} tokens, {len(text.encode()) / len(ids):.2f} bytes per token")

sentence = "Return a new list containing all items from the iterable."
print([tok.decode([i]) for i in tok.encode_ordinary(sentence)])
