import pickle
import random
import statistics
import time

from netcl_lite.text import BPETokenizer

# Words made of random letters of five scripts: nearly every chunk is new to the tokenizer.
SCRIPTS = ["абвгдежзиклмнопрстуфхцчшыюя", "αβγδεζηθικλμνξοπρστυφχψω",
           "कखगचजटडतदनपबमयरलवसह", "あいうえおかきくけこさしすせそたちつてとなにぬねの",
           "ÀÉÎÕÜàéîõüçñßøåæ"]


def text(seed, n_words):
    rng = random.Random(seed)
    words = []
    for _ in range(n_words):
        script = rng.choice(SCRIPTS)
        words.append("".join(rng.choice(script) for _ in range(rng.randint(2, 9))))
    return " ".join(words)


tok = BPETokenizer()
tok.train_from_iterator([text(0, 4000)], vocab_size=256 + 512)
document = text(1, 8000)  # held out: other words of the same scripts


def cold_encode(kernel_min_bytes):
    fresh = pickle.loads(pickle.dumps(tok))  # a fresh copy: an empty chunk cache
    fresh.kernel_min_bytes = kernel_min_bytes  # None: the Python loop only; 0: the kernel
    start = time.process_time()  # CPU time, the kernel's threads included
    ids = fresh.encode_ordinary(document)
    return time.process_time() - start, ids


times = {"python": [], "kernel": []}
for _ in range(3):  # interleaved rounds; medians below
    t_python, ids_python = cold_encode(None)
    t_kernel, ids_kernel = cold_encode(0)
    assert ids_kernel == ids_python  # the kernel is exact: the same ids
    times["python"].append(t_python)
    times["kernel"].append(t_kernel)
python_s = statistics.median(times["python"])
kernel_s = statistics.median(times["kernel"])
n_bytes = len(document.encode("utf-8"))
print(f"{n_bytes:,} bytes of new words -> {len(ids_kernel):,} tokens, identical on both paths")
print(f"Python loop: {python_s * 1e3:5.1f} ms CPU")
print(f"kernel:      {kernel_s * 1e3:5.1f} ms CPU (its table built once, on the first call, inside)")
print(f"speedup:     {python_s / kernel_s:.1f}x")
