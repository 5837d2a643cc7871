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
def test_fuzzed_files_give_a_clear_error_or_a_valid_load(surface, seeds, tmp_path):
    _write_cases(surface, seeds, tmp_path)
    results = _run_workers(surface, tmp_path)
    counts = Counter(r["outcome"] for r in results)
    print(f"\n{surface}: {len(results)} cases: {counts['error']} clear errors, {counts['accepted']} valid accepts")
    bad = [r for r in results if r["outcome"] not in ("error", "accepted")]
    assert not bad, f"{len(bad)} of {CASES} cases went wrong ({dict(counts)}); the first:\n" + "\n".join(
        f"case {r['case']}: {r['outcome']}: {r['detail']}" for r in bad[:8])
    assert counts["error"] > CASES // 2           # the mutations do reach the checks
