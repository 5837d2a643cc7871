"""Load fuzzed files one after another and say what each did; run by tests/test_fuzz_loaders.py.

usage: python fuzz_worker.py SURFACE CASE_DIR FIRST LAST SECONDS MEMORY_BYTES
Each case is CASE_DIR/<n>/ (a checkpoint directory, or one file in it). One JSON line per case:
{"case": n, "outcome": "error" | "accepted" | "invalid" | "crash" | "hang", "detail": ...}:
"error" is a ValueError/TypeError/FileNotFoundError naming the file; "accepted" a load that the
independent oracle confirms; "invalid" an accepted load the oracle contradicts (a partial or wrong
load); "crash" any other exception, or an error that does not name the file. The address space is
capped at MEMORY_BYTES and each case gets SECONDS (SIGALRM) before it counts as a hang.
"""

from __future__ import annotations

import json
import os
import resource
import signal
import sys
from pathlib import Path

import numpy as np

SAMPLES = ["hello world", "The quick brown fox, 12345!\n", "  spaces\tand\ttabs  ", "ünïcödé ✓ 漢字", ""]


class Hang(Exception):
    pass


def _alarm(*_):
    raise Hang


def check_checkpoint(directory: Path) -> str | None:
    """None when the loaded model holds exactly the file's tensors and config, else what differs."""
    from safetensors.numpy import load_file

    from netcl_lite.nn.checkpoint import config_from_json
    from netcl_lite.nn.lm import DecoderLM

    model = DecoderLM.from_pretrained(directory)
    config = config_from_json(json.loads((directory / "config.json").read_text()))
    if config != model.config:
        return "config differs from config.json"
    stored = load_file(str(directory / "model.safetensors"))
    ours = model.state_dict()
    stored.pop("lm_head.weight", None) if config.tie_word_embeddings else None
    if set(stored) != set(ours):
        return f"tensor names differ: {sorted(set(stored) ^ set(ours))[:3]}"
    for name, value in ours.items():
        if not np.array_equal(value, stored[name].astype(np.float32)):
            return f"{name} differs from the file"
    return None


def check_tokenizer_json(path: Path) -> str | None:
    from tokenizers import Tokenizer

    from netcl_lite.text.bpe import BPETokenizer

    ours = BPETokenizer.from_tokenizer_json(path)
    try:
        theirs = Tokenizer.from_file(str(path))
    except Exception as exc:                                 # noqa: BLE001 (the oracle refuses: we must too)
        return f"tokenizers refuses it ({str(exc)[:100]})"
    for text in SAMPLES:
        ids = ours.encode(text, allowed_special="all")
        if ids != theirs.encode(text, add_special_tokens=False).ids:
            return f"ids differ from tokenizers' on {text!r}"
        if ours.decode(ids) != text:
            return f"round trip fails on {text!r}"
    return None


def _lines_of(path: Path) -> dict[bytes, int]:
    """The ranks as the file lists them, parsed independently of the library."""
    import base64

    ranks = {}
    for line in path.read_bytes().splitlines():
        token, rank = line.split(b" ")
        ranks[base64.b64decode(token)] = int(rank)
    return ranks


def check_tiktoken(path: Path) -> str | None:
    import tiktoken

    from netcl_lite.text.bpe import BPETokenizer
    from netcl_lite.text.patterns import GPT4_PATTERN

    ours = BPETokenizer.from_tiktoken_file(path, GPT4_PATTERN)
    ranks = _lines_of(path)
    theirs = tiktoken.Encoding("fuzz", pat_str=GPT4_PATTERN, mergeable_ranks=ranks, special_tokens={})
    for text in SAMPLES:
        ids = ours.encode(text)
        if ids != theirs.encode(text):
            return f"ids differ from tiktoken's on {text!r}"
        if ours.decode(ids) != text:
            return f"round trip fails on {text!r}"
    return None


def check_model_file(path: Path) -> str | None:
    from netcl_lite.text.bpe import BPETokenizer

    ours = BPETokenizer.load(path)
    again = path.with_name("again.json")
    ours.save(again)
    reloaded = BPETokenizer.load(again)
    for text in SAMPLES:
        ids = ours.encode(text, allowed_special="all")
        if reloaded.encode(text, allowed_special="all") != ids:
            return f"save and load changes the ids of {text!r}"
        if ours.decode(ids) != text:
            return f"round trip fails on {text!r}"
    return None


SURFACES = {
    "from_pretrained": (check_checkpoint, lambda case: case),
    "from_tokenizer_json": (check_tokenizer_json, lambda case: case / "tokenizer.json"),
    "from_tiktoken_file": (check_tiktoken, lambda case: case / "vocab.tiktoken"),
    "model_file": (check_model_file, lambda case: case / "tok.json"),
}


def main() -> None:
    surface, case_dir, first, last, seconds, memory = sys.argv[1:]
    check, target = SURFACES[surface]
    resource.setrlimit(resource.RLIMIT_AS, (int(memory), int(memory)))
    signal.signal(signal.SIGALRM, _alarm)
    import netcl_lite as nl

    nl.device()                                              # started before the first case's clock
    for n in range(int(first), int(last)):
        case = Path(case_dir) / str(n)
        signal.alarm(int(seconds))
        try:
            problem = check(target(case))
            outcome, detail = ("accepted", "") if problem is None else ("invalid", problem)
        except Hang:
            outcome, detail = "hang", f"over {seconds} s"
        except MemoryError:
            outcome, detail = "crash", "MemoryError: the memory cap was reached"
        except (ValueError, TypeError, FileNotFoundError) as exc:
            named = str(target(case)) in str(exc) or f"{case}{os.sep}" in str(exc)
            outcome, detail = ("error" if named else "crash"), f"{type(exc).__name__}: {str(exc)[:300]}"
        except Exception as exc:                             # noqa: BLE001 (that is what is counted)
            outcome, detail = "crash", f"{type(exc).__name__}: {str(exc)[:300]}"
        finally:
            signal.alarm(0)
        print(json.dumps({"case": n, "outcome": outcome, "detail": detail}), flush=True)


if __name__ == "__main__":
    main()
