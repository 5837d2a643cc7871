import pickle
import random
import statistics
import time

from netcl_lite.text import BPETokenizer

# Words of random letters of five scripts: nearly every chunk is new to the tokenizer.
SCRIPTS = [
    "абвгдежзиклмнопрстуфхцчшыюя",
    "αβγδεζηθικλμνξοπρστυφχψω",
    "कखगचजटडतदनपबमयरलवसह",
    "あいうえおかきくけこさしすせそたちつてとなにぬねの",
    "ÀÉÎÕÜàéîõüçñßøåæ",
]


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


PATHS = (
    {  # (kernel_min_bytes, kernel_text_min_bytes); None: never that kernel, 0: always
        "Python loop": (None, None),
        "merge kernel": (0, None),  # the call's new chunks, merged on the device
        "whole call": (None, 0),  # split, merges and ids, all on the device
    }
)


def cold_encode(path):
    fresh = pickle.loads(pickle.dumps(tok))  # a fresh copy: an empty chunk cache
    fresh.kernel_min_bytes, fresh.kernel_text_min_bytes = PATHS[path]
    start = time.process_time()  # CPU time, the kernel's threads included
    ids = fresh.encode_ordinary(document)
    return time.process_time() - start, ids


for path in PATHS:  # one untimed call each: no timed round compiles a kernel
    cold_encode(path)
times = {path: [] for path in PATHS}
for _ in range(3):  # interleaved rounds: medians below, and each round's ratio
    ids = {}
    for path in PATHS:
        seconds, ids[path] = cold_encode(path)
        times[path].append(seconds)
    assert (
        ids["merge kernel"] == ids["whole call"] == ids["Python loop"]
    )  # exact: the same ids
loop_s = statistics.median(times["Python loop"])
n_bytes = len(document.encode("utf-8"))
print(
    f"{n_bytes:,} bytes of new words -> {len(ids['Python loop']):,} tokens,"
    " identical on all three paths"
)
for path in PATHS:
    seconds = statistics.median(times[path])
    per_round = [lo / t for lo, t in zip(times["Python loop"], times[path])]
    print(
        f"{path + ':':<14}{seconds * 1e3:6.1f} ms CPU,"
        f" {loop_s / seconds:4.1f}x the loop's speed"
        f" (rounds {min(per_round):.1f}-{max(per_round):.1f}x)"
    )
print(
    "(each kernel path builds its table on the device once, in its first call,"
    " inside the time)"
)
