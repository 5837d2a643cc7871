"""Seeded fuzzing of every file loader: ``DecoderLM.from_pretrained``, ``BPETokenizer.from_tokenizer_json``,
``from_tiktoken_file`` and the model file (``BPETokenizer.load``).

Each surface gets :data:`CASES` mutations of a valid file (truncations, byte flips, values of the
wrong type or size, huge counts, lines dropped, repeated or swapped). Worker processes
(``fuzz_worker.py``) load them in turn, each case under a time limit and the worker under a memory
cap. Every case must end in a clear error naming the file, or in a load that an independent oracle
confirms (the tensors as safetensors reads them, Hugging Face ``tokenizers``, ``tiktoken``, a save
and reload): no crash, no hang, no partial load.
"""

from __future__ import annotations

import base64
import json
import os
import random
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from netcl_lite.nn.lm import DecoderLM, LMConfig
from netcl_lite.text.bpe import BPETokenizer
from netcl_lite.text.patterns import GPT4_PATTERN

WORKER = Path(__file__).resolve().parent / "fuzz_worker.py"
CASES = 320
SECONDS = 10                      # per case; a load of these small files takes milliseconds
MEMORY = 4 << 30                  # address space per worker (PoCL reserves ~1 GiB of it at start)
WORKERS = 2

HUGE = [2**31, 2**63, 10**6, 10**9, -1, 0, 10**30]


def _odd_value(rng: random.Random):
    """A JSON value of a surprising type or size."""
    return rng.choice([None, True, False, -1, 0, 2**64, 1.5, float(10**30), "", "x" * 1000, [], {}, [False], {"a": 1},
                       rng.choice(HUGE), "\u0000", [[[[[]]]]]])


def _mutate_json(doc, rng: random.Random):
    """A copy of ``doc`` with one value somewhere inside replaced, removed or inflated."""
    doc = json.loads(json.dumps(doc))
    path, node = [], doc
    while isinstance(node, (dict, list)) and node and rng.random() < 0.75:
        key = rng.choice(list(node)) if isinstance(node, dict) else rng.randrange(len(node))
        path.append((node, key))
        node = node[key]
    if not path:
        return _odd_value(rng)
    parent, key = path[-1]
    action = rng.random()
    if action < 0.15 and isinstance(parent, dict):
        del parent[key]
    elif action < 0.25 and isinstance(parent, list):
        parent.extend([parent[key]] * rng.choice([1, 5]))           # repeated entries
    elif action < 0.35 and isinstance(parent[key], int) and not isinstance(parent[key], bool):
        parent[key] = rng.choice(HUGE)
    elif action < 0.45 and isinstance(parent, dict):
        parent["unexpected_" + str(rng.randrange(9))] = _odd_value(rng)
    else:
        parent[key] = _odd_value(rng)
    return doc


def _mutate_bytes(data: bytes, rng: random.Random) -> bytes:
    kind = rng.random()
    if kind < 0.3:
        return data[:rng.randrange(len(data))]                     # truncated
    out = bytearray(data)
    if kind < 0.7:
        for _ in range(rng.choice([1, 2, 8])):                     # flipped bytes
            out[rng.randrange(len(out))] = rng.randrange(256)
        return bytes(out)
    at = rng.randrange(len(out))                                   # a span dropped or repeated
    span = rng.randrange(1, 64)
    return bytes(out[:at] + (out[at:at + span] * rng.choice([0, 2, 50])) + out[at + span:])


def _mutate_text_file(data: bytes, rng: random.Random) -> bytes:
    """Whole JSON-level mutations two times in three, byte-level otherwise."""
    if rng.random() < 0.65:
        try:
            return json.dumps(_mutate_json(json.loads(data), rng)).encode()
        except ValueError:
            pass
    return _mutate_bytes(data, rng)


def _mutate_tiktoken(data: bytes, rng: random.Random) -> bytes:
    lines = data.split(b"\n")[:-1]
    kind = rng.random()
    if kind < 0.5:
        return _mutate_bytes(data, rng)
    i, j = rng.randrange(len(lines)), rng.randrange(len(lines))
    if kind < 0.6:
        del lines[i]
    elif kind < 0.7:
        lines.insert(i, lines[j])
    elif kind < 0.8:                                               # two ranks swapped
        (a, ra), (b, rb) = lines[i].split(b" "), lines[j].split(b" ")
        lines[i], lines[j] = a + b" " + rb, b + b" " + ra
    elif kind < 0.9:
        token = lines[i].split(b" ")[0]
        lines[i] = token + b" " + str(rng.choice(HUGE)).encode()
    else:
        lines[i] = base64.b64encode(os.urandom(rng.choice([1, 40, 3000]))) + b" " + lines[i].split(b" ")[1]
    return b"\n".join(lines) + b"\n"


def _safetensors_parts(data: bytes):
    n = int.from_bytes(data[:8], "little")
    return json.loads(data[8:8 + n]), data[8 + n:]


def _mutate_safetensors(data: bytes, rng: random.Random) -> bytes:
    if rng.random() < 0.5:
        return _mutate_bytes(data, rng)
    header, body = _safetensors_parts(data)
    header = _mutate_json(header, rng)
    raw = json.dumps(header).encode()
    return len(raw).to_bytes(8, "little") + raw + body


@pytest.fixture(scope="module")
def seeds(tmp_path_factory):
    """A valid file of each kind: a tiny checkpoint and a small trained tokenizer in three formats."""
    root = tmp_path_factory.mktemp("seeds")
    config = LMConfig(vocab_size=300, hidden_size=16, intermediate_size=24, num_hidden_layers=2,
                      num_attention_heads=2, num_key_value_heads=1, max_position_embeddings=16,
                      tie_word_embeddings=False)
    checkpoint = DecoderLM(config).save_pretrained(root / "ckpt")
    tok = BPETokenizer(GPT4_PATTERN, special_tokens={"<|endoftext|>": 300})
    tok.train_from_iterator(["the quick brown fox jumps over the lazy dog " * 20, "hello world 12345"] * 5, 300)
    tok.save(root / "tok.json")
    tok.save_tokenizer_json(root / "tokenizer.json")
    tok.save_tiktoken_file(root / "vocab.tiktoken")
    return {"checkpoint": checkpoint, "root": root}


def _write_cases(surface: str, seeds, directory: Path) -> None:
    rng = random.Random(f"fuzz-{surface}")
    root = seeds["root"]
    for n in range(CASES):
        case = directory / str(n)
        case.mkdir(parents=True)
        if surface == "from_pretrained":
            config = (seeds["checkpoint"] / "config.json").read_bytes()
            weights = (seeds["checkpoint"] / "model.safetensors").read_bytes()
            which = rng.random()
            if which < 0.5:
                config = _mutate_text_file(config, rng)
            else:
                weights = _mutate_safetensors(weights, rng)
            if which > 0.85:                                       # both at once
                config = _mutate_text_file(config, rng)
            (case / "config.json").write_bytes(config)
            (case / "model.safetensors").write_bytes(weights)
        elif surface == "from_tokenizer_json":
            (case / "tokenizer.json").write_bytes(_mutate_text_file((root / "tokenizer.json").read_bytes(), rng))
        elif surface == "from_tiktoken_file":
            (case / "vocab.tiktoken").write_bytes(_mutate_tiktoken((root / "vocab.tiktoken").read_bytes(), rng))
        else:
            (case / "tok.json").write_bytes(_mutate_text_file((root / "tok.json").read_bytes(), rng))


def _run_workers(surface: str, directory: Path) -> list[dict]:
    """The cases split between WORKERS processes; a worker that dies is restarted after the case it
    died on, which counts as a crash."""
    results: dict[int, dict] = {}
    pending = [(i * CASES // WORKERS, (i + 1) * CASES // WORKERS) for i in range(WORKERS)]
    env = dict(os.environ, POCL_MAX_PTHREAD_COUNT="1")
    while pending:
        procs = [(first, last, subprocess.Popen(
            [sys.executable, str(WORKER), surface, str(directory), str(first), str(last), str(SECONDS), str(MEMORY)],
            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)) for first, last in pending]
        pending = []
        for first, last, proc in procs:
            out, err = proc.communicate(timeout=SECONDS * (last - first) + 120)
            done = [json.loads(line) for line in out.splitlines() if line.startswith("{")]
            for record in done:
                results[record["case"]] = record
            end = first + len(done)
            if end < last:                                         # the worker died on case `end`
                results[end] = {"case": end, "outcome": "crash", "detail": f"worker exit {proc.returncode}: {err[-500:]}"}
                if end + 1 < last:
                    pending.append((end + 1, last))
    return [results[n] for n in range(CASES)]


@pytest.mark.parametrize("surface", ["from_pretrained", "from_tokenizer_json", "from_tiktoken_file", "model_file"])
@pytest.mark.slow
def test_fuzzed_files_give_a_clear_error_or_a_valid_load(surface, seeds, tmp_path):
    _write_cases(surface, seeds, tmp_path)
    results = _run_workers(surface, tmp_path)
    counts = Counter(r["outcome"] for r in results)
    print(f"\n{surface}: {len(results)} cases: {counts['error']} clear errors, {counts['accepted']} valid accepts")
    bad = [r for r in results if r["outcome"] not in ("error", "accepted")]
    assert not bad, f"{len(bad)} of {CASES} cases went wrong ({dict(counts)}); the first:\n" + "\n".join(
        f"case {r['case']}: {r['outcome']}: {r['detail']}" for r in bad[:8])
    assert counts["error"] > CASES // 2           # the mutations do reach the checks


# -- the stores and paths the build and the capstone read ------------------------------------------
# Seeded, in-process: stored cache entries, the capstone's run folder and measures, snippet and
# marker paths, and first use of the device from threads (in fresh processes).

ROOT = Path(__file__).resolve().parent.parent
STORE_CASES = 300


@pytest.mark.slow
def test_fuzzed_cache_entries_give_the_stored_bytes_or_a_miss(tmp_path, monkeypatch):
    from netcl_lite import fingerprint
    from site_build import store as cache

    monkeypatch.setenv("NETCL_LITE_CACHE", str(tmp_path))
    monkeypatch.delenv(fingerprint.RERUN, raising=False)
    rng = random.Random("fuzz-cache-entries")
    outcomes = Counter()
    for n in range(STORE_CASES):
        payload = os.urandom(rng.choice([0, 1, 50, 4000])) if rng.random() < 0.5 else \
            f"model: {rng.random():.4f} bits per byte\n".encode()
        cache.store("build_output", f"k{n}", payload)
        path = tmp_path / "executed" / "build_output" / f"k{n}"
        raw = path.read_bytes()
        damaged = _mutate_bytes(raw, rng) if raw else b"x"
        path.write_bytes(damaged)
        got = cache.lookup("build_output", f"k{n}")
        if damaged == raw:
            assert got == payload, n
        else:
            assert got is None and not path.exists(), f"case {n}: a damaged entry was served: {got[:80]!r}"
        outcomes["served" if got is not None else "miss"] += 1
    assert outcomes["miss"] > STORE_CASES // 2


@pytest.fixture
def run_folder(tmp_path):
    """A finished run's folder as capstone.run() checks it: the files it loads, and done.json with
    their digests."""
    from netcl_lite import capstone

    folder = tmp_path / "run"
    folder.mkdir()
    rng = random.Random("run-folder")
    for name in capstone.RUN_FILES:
        (folder / name).write_bytes(bytes(rng.randrange(256) for _ in range(rng.choice([40, 400]))))
    files = {name: capstone._sha256(folder / name) for name in capstone.RUN_FILES}
    (folder / "done.json").write_text(json.dumps({"seconds": 1.0, "train_seconds": 0.5, "files": files}) + "\n")
    assert capstone._check_run_folder(folder) is None
    return folder


def test_fuzzed_run_folders_load_only_as_recorded(run_folder):
    import shutil

    from netcl_lite import capstone

    rng = random.Random("fuzz-run-folders")
    original = {p.name: p.read_bytes() for p in run_folder.iterdir()}
    refused = 0
    for n in range(STORE_CASES):
        name = rng.choice([*capstone.RUN_FILES, "done.json"])
        path = run_folder / name
        action = rng.random()
        if action < 0.1:
            path.unlink()
        elif action < 0.15:
            path.unlink()
            path.symlink_to("/dev/zero")                           # reading it would never end
        elif action < 0.2:
            path.unlink()
            os.mkfifo(path)                                        # reading it would block
        elif name == "done.json":
            path.write_bytes(_mutate_text_file(original[name], rng))
        else:
            path.write_bytes(_mutate_bytes(original[name], rng))
        unchanged = path.is_file() and not path.is_symlink() and path.read_bytes() == original[name]
        if name == "done.json" and path.is_file() and not path.is_symlink():
            try:                            # its timings and other entries may change; the digests may not
                recorded, kept = json.loads(path.read_bytes())["files"], json.loads(original[name])["files"]
                unchanged = all(recorded[k] == kept[k] for k in capstone.RUN_FILES)
            except (ValueError, KeyError, TypeError):
                unchanged = False
        problem = capstone._check_run_folder(run_folder)
        if unchanged:
            assert problem is None, f"case {n}: {problem}"
        else:
            assert problem is not None and str(run_folder) in problem, f"case {n}: a damaged {name} was accepted"
            refused += 1
        path.unlink(missing_ok=True)
        path.write_bytes(original[name])
    assert refused > STORE_CASES // 2
    shutil.rmtree(run_folder)


def test_fuzzed_measures_are_the_stored_ones_or_computed_again(run_folder):
    import warnings

    from netcl_lite import capstone

    run = capstone.Run(None, None, None, None, None, {}, run_folder)
    measures = {"model": 2.25, "unigram": 4.5, "primed": {"lzma": 2.9, "ppmd order": 5}}
    capstone.store_result(run, "measures.json", measures)
    path = run_folder / "measures.json"
    original = path.read_bytes()
    rng = random.Random("fuzz-measures")
    for n in range(STORE_CASES):
        path.write_bytes(_mutate_text_file(original, rng))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            got = capstone.load_result(run, "measures.json")
        assert got is None or got == measures, f"case {n}: {got}"
    path.write_bytes(original)
    assert capstone.load_result(run, "measures.json") == measures


def test_fuzzed_snippet_and_marker_paths_stay_inside_or_fail_naming_the_page(tmp_path):
    import markdown

    root = tmp_path / "project"
    for folder in ("snippets/page", "netcl_lite", "kernels", "elsewhere"):
        (root / folder).mkdir(parents=True)
    (root / "snippets/page/ok.py").write_text("print('fine')\n")
    (root / "netcl_lite/lib.py").write_text("x = 'library'\n")
    (root / "kernels/k.cl").write_text("// kernel\n")
    (root / "elsewhere/x.py").write_text("print('SECRET elsewhere')\n")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.py").write_text("print('SECRET outside')\n")
    (root / "snippets/page/leak.py").symlink_to(outside / "secret.py")
    (root / "snippets/linked").symlink_to(outside)
    (root / "snippets/inner").symlink_to(root / "snippets/page")   # a link that stays inside: allowed
    parts = ["snippets", "page", "..", ".", "ok.py", "leak.py", "secret.py", "linked", "inner", "netcl_lite",
             "lib.py", "kernels", "k.cl", "elsewhere", "x.py", "", "missing.py", "~", "%2e%2e"]
    from site_build import includes

    rng = random.Random("fuzz-snippet-paths")
    outcomes = Counter()
    for n in range(STORE_CASES):
        if rng.random() < 0.4:                 # a valid path with one part changed, added or dropped
            pieces = rng.choice(["snippets/page/ok.py", "snippets/inner/ok.py", "netcl_lite/lib.py"]).split("/")
            at = rng.randrange(len(pieces))
            choice = rng.random()
            if choice < 0.4:
                pieces[at] = rng.choice(parts)
            elif choice < 0.8:
                pieces.insert(at, rng.choice(parts))
            elif choice < 0.9:
                del pieces[at]
            path = "/".join(pieces)
        else:
            path = "/".join(rng.choice(parts) for _ in range(rng.randint(1, 5)))
        if rng.random() < 0.1:
            path = "/" + path
        page = f"docs/page-{n}.md"
        try:
            found = includes.marker_path(path, page, root=root)
        except (includes.PathError, FileNotFoundError) as exc:
            assert str(exc).startswith(f"{page}: <!-- build-output: {path} -->"), str(exc)
            outcomes["marker refused"] += 1
        else:
            assert found.resolve().is_relative_to(root / "snippets") and found.is_file(), (path, found)
            outcomes["marker ran"] += 1
        extension = includes.contained_snippets(includes.CurrentPage(page), base_path=[str(root)], check_paths=True)
        try:
            html = markdown.markdown(f'```python\n--8<-- "{path}"\n```\n',
                                     extensions=["pymdownx.superfences", extension])
        except (includes.PathError, FileNotFoundError) as exc:
            assert str(exc).startswith(f"{page}:2: --8<-- "), str(exc)       # the page's line of the include
            outcomes["include refused"] += 1
        except ValueError as exc:              # what pymdownx refuses (an empty path, a missing section), named
            assert str(exc).startswith(f"{page}:2: "), (path, exc)
            outcomes["include refused"] += 1
        else:
            assert "SECRET" not in html, (path, html)
            outcomes["include shown"] += 1
    print(f"\nsnippet paths: {dict(outcomes)}")
    assert outcomes["marker refused"] > STORE_CASES // 2 and outcomes["include refused"] > STORE_CASES // 2


_FIRST_USE = """
import random, sys, threading
import numpy as np
import netcl_lite as nl
from netcl_lite import ops
rng = random.Random(sys.argv[1])
count = rng.randint(2, 12)
uses = [rng.choice(["device", "tensor", "op"]) for _ in range(count)]
barrier, errors, queues = threading.Barrier(count), [], []
def first_use(kind):
    barrier.wait()
    try:
        if kind == "device":
            queues.append(nl.device().queue)
        elif kind == "tensor":
            queues.append(nl.tensor(np.ones(3, np.float32)).queue)
        else:
            assert ops.add(np.ones(4, np.float32), np.ones(4, np.float32)).tolist() == [2.0] * 4
    except Exception as exc:
        errors.append(f"{kind}: {exc!r}")
threads = [threading.Thread(target=first_use, args=(k,)) for k in uses]
for t in threads:
    t.start()
for t in threads:
    t.join()
print(len(errors), len({id(q) for q in queues}), uses, errors[:1])
"""


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.slow
def test_fuzzed_first_use_from_threads(seed):
    """2 to 12 threads make the device at once through different doors (nl.device, a tensor, an op),
    each in a fresh process, the compiler target retargeted where the host allows it."""
    from netcl_lite.core import compiler_target
    import netcl_lite as nl

    env = dict(os.environ)
    own = compiler_target.pocl_cpu_name(nl.device().cl_device)
    others = [c for c in compiler_target.allowed_cpus(compiler_target.host_flags()) if c != own]
    env.pop("NETCL_LITE_POCL_CPU", None)
    if others and seed % 2:
        env["NETCL_LITE_POCL_CPU"] = others[-1]
    env.pop("NETCL_LITE_DEVICE", None)
    proc = subprocess.run([sys.executable, "-c", _FIRST_USE, f"first-use-{seed}"], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=180)
    assert proc.returncode == 0, proc.stderr[-2000:]
    errors, queues = proc.stdout.split(maxsplit=2)[:2]
    assert errors == "0", proc.stdout
    assert int(queues) <= 1, f"threads were given different devices: {proc.stdout}"
