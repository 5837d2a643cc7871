"""Round 31c: the compressor's command line and the Hugging Face tokenizer.json it loads with --model.

1. A tokenizer.json whose model.vocab gives a byte-level token an id in the billions (ids need not be
   contiguous, and 0..2**32-1 are u32) made the tokenizer build a merge table with a row per id up to
   the largest: tens of GB, so the command line was killed by the system with no message. Such an id
   is refused naming the key and the id; ids with a gap within reach still load and encode as the
   same tokens numbered without the gap.
2. NETCL_LITE_CACHE naming a file (or a folder that cannot be made) with --model DIR: the primer's
   corpus, read once into the cache, failed with a traceback; it is named as the cache folder that
   cannot be made or written, as it is without --model.
3. An added token spelled like a byte-level token the vocabulary needs (a single byte's, or one a merge
   makes) was refused as "has no token for the bytes [33] ... train with initial_alphabet" or "makes
   'Ġt', which is not in model.vocab" (it is there): it is named as the added token it is.
   A Sequence post-processor whose "processors" is not a list (null, a string, an object) was read as
   no steps, or as its characters or keys ("processors[0]: 'x' is not supported"): it is named.
4. POCL_CACHE_DIR naming a file: the device starts, but every kernel build fails, and the message was
   only OpenCL's "BUILD_PROGRAM_FAILURE"; it now names the kernel cache's folder, the setting and what
   to do.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys

import pytest
from cli_model import TEXT, environment, write_model_folder

from netcl_lite.text import BPETokenizer

#: the address space a probe process may use: a table of 2**32 rows would need ~300 GiB
MEMORY_LIMIT = 4 << 30


@pytest.fixture(scope="module")
def folder(queue, tmp_path_factory):
    folder = write_model_folder(queue, tmp_path_factory.mktemp("model"))
    BPETokenizer.load(folder / "tokenizer.json").save_tokenizer_json(folder / "tokenizer.json")
    return folder


def _limited(code: str, cwd) -> subprocess.CompletedProcess:
    """``code`` in a new Python process whose address space is limited to :data:`MEMORY_LIMIT`."""
    script = f"import resource\nresource.setrlimit(resource.RLIMIT_AS, ({MEMORY_LIMIT}, {MEMORY_LIMIT}))\n{code}"
    return subprocess.run([sys.executable, "-c", script], cwd=cwd, stdin=subprocess.DEVNULL, capture_output=True,
                          text=True, timeout=300, env=environment())


def test_a_byte_level_token_with_an_id_in_the_billions_is_refused_naming_it(folder, tmp_path):
    model = tmp_path / "m"
    shutil.copytree(folder, model)
    doc = json.loads((model / "tokenizer.json").read_text(encoding="utf-8"))
    doc["model"]["vocab"]["ab"] = 2**32 - 1              # a token no merge makes, at the last u32 id
    (model / "tokenizer.json").write_text(json.dumps(doc, ensure_ascii=False), encoding="utf-8")
    (tmp_path / "in.txt").write_text(TEXT, encoding="utf-8")
    run = _limited("import sys, runpy\nsys.argv = ['compression', 'compress', 'in.txt', 'out.bin', '--model', 'm']\n"
                   "runpy.run_module('netcl_lite.compression', run_name='__main__', alter_sys=True)\n", tmp_path)
    assert run.returncode == 1, run.stderr[-2000:]
    assert "tokenizer.json: model.vocab['ab']: id 4,294,967,295 is past" in run.stderr
    assert "memory" not in run.stderr.lower()
    assert not (tmp_path / "out.bin").exists()


def test_a_vocabulary_with_a_gap_in_its_ids_encodes_as_the_same_tokens_without_it(folder, tmp_path):
    tok = BPETokenizer.from_tokenizer_json(folder / "tokenizer.json")
    doc = json.loads((folder / "tokenizer.json").read_text(encoding="utf-8"))
    gap = 1_000_000
    doc["model"]["vocab"] = {s: i if i < 256 else i + gap for s, i in doc["model"]["vocab"].items()}
    path = tmp_path / "tokenizer.json"
    path.write_text(json.dumps(doc, ensure_ascii=False), encoding="utf-8")
    gapped = BPETokenizer.from_tokenizer_json(path)
    ids = tok.encode_ordinary(TEXT)
    assert gapped.encode_ordinary(TEXT) == [i if i < 256 else i + gap for i in ids]
    assert gapped.decode(gapped.encode_ordinary(TEXT)) == TEXT


@pytest.mark.parametrize("command", ["compress", "decompress"])
def test_a_cache_that_is_a_file_is_named_with_a_model_folder_too(folder, tmp_path, command):
    (tmp_path / "cache").write_bytes(b"")
    (tmp_path / "in.txt").write_text(TEXT, encoding="utf-8")
    if command == "decompress":
        subprocess.run([sys.executable, "-m", "netcl_lite.compression", "compress", "in.txt", "in.bin", "--model",
                        str(folder)], cwd=tmp_path, check=True, capture_output=True, timeout=300, env=environment())
    run = subprocess.run([sys.executable, "-m", "netcl_lite.compression", command,
                          "in.bin" if command == "decompress" else "in.txt", "out", "--model", str(folder)],
                         cwd=tmp_path, capture_output=True, text=True, timeout=300,
                         env=environment(NETCL_LITE_CACHE=str(tmp_path / "cache")))
    assert run.returncode == 1, run.stderr[-2000:]
    assert "Traceback" not in run.stderr
    assert f"cache folder {tmp_path / 'cache'} cannot be made or written (Not a directory)" in run.stderr
    assert "NETCL_LITE_CACHE" in run.stderr
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("content, role", [("!", "the byte 33's token"), ("Ġt", "the token model.merges[0] makes")])
def test_an_added_token_spelled_like_a_needed_byte_level_token_is_named(folder, tmp_path, content, role):
    doc = json.loads((folder / "tokenizer.json").read_text(encoding="utf-8"))
    token_id = doc["model"]["vocab"][content]
    assert content == "!" or doc["model"]["merges"][0] == ["Ġ", "t"]
    doc["added_tokens"] = [{"id": token_id, "content": content, "single_word": False, "lstrip": False,
                            "rstrip": False, "normalized": False, "special": True}]
    path = tmp_path / "tokenizer.json"
    path.write_text(json.dumps(doc, ensure_ascii=False), encoding="utf-8")
    with pytest.raises(ValueError, match=re.escape(f"added_tokens[0]: {content!r} (id {token_id}) is also {role} ")):
        BPETokenizer.from_tokenizer_json(path)


@pytest.mark.parametrize("steps", [None, "x", {"type": "ByteLevel"}])
def test_a_sequence_post_processor_whose_processors_are_no_list_is_named(folder, tmp_path, steps):
    doc = json.loads((folder / "tokenizer.json").read_text(encoding="utf-8"))
    doc["post_processor"] = {"type": "Sequence", "processors": steps}
    path = tmp_path / "tokenizer.json"
    path.write_text(json.dumps(doc, ensure_ascii=False), encoding="utf-8")
    with pytest.raises(ValueError, match=re.escape(f"post_processor.processors: expected a list of post-processors, "
                                                   f"got {type(steps).__name__}")):
        BPETokenizer.from_tokenizer_json(path)


def test_a_pocl_cache_dir_that_is_a_file_is_named_when_a_kernel_fails_to_build(folder, tmp_path):
    blocker = tmp_path / "not-a-folder"
    blocker.write_bytes(b"")
    (tmp_path / "in.txt").write_text(TEXT, encoding="utf-8")
    run = subprocess.run([sys.executable, "-m", "netcl_lite.compression", "compress", "in.txt", "out", "--model",
                          str(folder)], cwd=tmp_path, capture_output=True, text=True, timeout=300,
                         env=environment(POCL_CACHE_DIR=str(blocker)))
    assert run.returncode == 1, run.stderr[-2000:]
    assert run.stderr.startswith(f"python -m netcl_lite.compression: OpenCL: PoCL's kernel cache {blocker} (placed by "
                                 f"POCL_CACHE_DIR) cannot be made ({blocker} is not a folder)"), run.stderr[-2000:]
    assert "set POCL_CACHE_DIR to a folder you can write" in run.stderr
    assert not (tmp_path / "out").exists()
