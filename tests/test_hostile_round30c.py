"""Round 30c: the compressor's command line and the model folder it loads with --model.

1. A loader's message that holds a backslash or both kinds of quote (a tokenizer's pattern, say) is
   embedded as the loader wrote it, not quoted and escaped a second time.
2. A folder whose tokenizer.json is Hugging Face's (what ``save_tokenizer_json`` and transformers
   write) loads, and codes as the same tokenizer in netcl_lite's own format does.
   A folder named by one word that the message holds as a word too (``--model a``: "is not a regular
   file") keeps the word: only a path is shortened to the file's name in the folder.
   A usage error made with standard error closed (``2>&-``) writes nothing to standard output, which
   may be where OUT's bytes go (argparse prints its usage there when standard error is gone).
   config.json's architectures given as one string, not a list, is named as such, not as "'X' is not
   supported; DecoderLM reads X checkpoints".
   A blob decompressed with a tokenizer of the same tokens but other merges (it encodes the primer into
   other ids) is refused naming the tokenizer's merges too, not only the primer text.
3. float64 weights past float32's range are refused as such (not as "non-finite", which they are
   not), with no NumPy warning on standard error; a tied head that copies an embedding holding NaN is
   refused for the NaN, not as a head that "differs" (which would send the user to config.json).
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import warnings

import numpy as np
import pytest
from cli_model import TEXT, environment, write_model_folder

from netcl_lite import compression as cz
from netcl_lite.nn import DecoderLM
from netcl_lite.text import BPETokenizer


@pytest.fixture(scope="module")
def folder(queue, tmp_path_factory):
    return write_model_folder(queue, tmp_path_factory.mktemp("model"))


def _copy(folder, tmp_path, name="m"):
    copy = tmp_path / name
    shutil.copytree(folder, copy)
    return copy


# -- 1. the loader's message as it wrote it --------------------------------------------------------

def test_a_tokenizer_error_with_a_backslash_reaches_standard_error_as_the_loader_wrote_it(folder, tmp_path, capsys):
    copy = _copy(folder, tmp_path)
    doc = json.loads((copy / "tokenizer.json").read_text())
    doc["pattern"] = r"\d+"                       # leaves letters unmatched: refused, naming the pattern
    (copy / "tokenizer.json").write_text(json.dumps(doc))
    with pytest.raises(ValueError) as loader:
        BPETokenizer.load(copy / "tokenizer.json")
    src = tmp_path / "in.txt"
    src.write_bytes(TEXT[:200].encode())
    status = cz.main(["compress", str(src), str(tmp_path / "out.nclz"), "--model", str(copy)])
    err = capsys.readouterr().err
    said = str(loader.value).replace(str(copy / "tokenizer.json"), "tokenizer.json")
    assert status == 1 and len(err.strip().splitlines()) == 1, err
    assert f"cannot load the model there ({said})" in err, f"escaped a second time:\n{err}\nthe loader said:\n{said}"


def test_a_folder_named_a_leaves_the_word_a_in_the_loader_s_message(folder, tmp_path, monkeypatch, capsys):
    copy = _copy(folder, tmp_path, "a")
    (copy / "config.json").unlink()
    (copy / "config.json").mkdir()                 # "... is not a regular file (a directory) ..."
    src = tmp_path / "in.txt"
    src.write_bytes(TEXT[:200].encode())
    monkeypatch.chdir(tmp_path)
    status = cz.main(["compress", "in.txt", "out.nclz", "--model", "a"])
    err = capsys.readouterr().err
    assert status == 1 and "config.json is not a regular file (a directory)" in err, err
    assert " . " not in err and "(. " not in err, f"the word 'a' was taken for the folder: {err}"


@pytest.mark.parametrize("words", [["compress"], ["compress", "in.txt", "-", "--bogus"],
                                   ["decompress", "in.txt", "-", "--adapt"]])
def test_a_usage_error_with_standard_error_closed_writes_nothing_to_standard_output(tmp_path, words):
    (tmp_path / "in.txt").write_bytes(TEXT[:100].encode())
    done = subprocess.run(["sh", "-c", 'exec "$@" 2>&-', "sh", sys.executable, "-m", "netcl_lite.compression", *words],
                          cwd=tmp_path, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, timeout=120,
                          env=environment())
    assert done.returncode == 2 and done.stdout == b"", f"status {done.returncode}, standard output {done.stdout!r}"


# -- 2. Hugging Face's tokenizer.json in the folder -------------------------------------------------

def test_a_folder_with_hugging_face_s_tokenizer_json_compresses_and_decompresses(folder, tmp_path, capsys):
    hf = _copy(folder, tmp_path, "hf")
    BPETokenizer.load(folder / "tokenizer.json").save_tokenizer_json(hf / "tokenizer.json")
    assert "format" not in json.loads((hf / "tokenizer.json").read_text())
    src, blob, back = tmp_path / "in.txt", tmp_path / "out.nclz", tmp_path / "back.txt"
    src.write_bytes(TEXT[:300].encode())
    status = cz.main(["compress", str(src), str(blob), "--model", str(hf)])
    assert status == 0, capsys.readouterr().err
    # the same tokenizer in netcl_lite's format decodes it: one vocabulary, whichever file spells it
    assert cz.main(["decompress", str(blob), str(back), "--model", str(folder)]) == 0, capsys.readouterr().err
    assert back.read_bytes() == src.read_bytes()


def test_a_tokenizer_with_the_same_tokens_but_other_merges_is_named_when_decompress_refuses(folder, tmp_path, capsys):
    hf = _copy(folder, tmp_path, "hf")
    BPETokenizer.load(folder / "tokenizer.json").save_tokenizer_json(hf / "tokenizer.json")
    doc = json.loads((hf / "tokenizer.json").read_text())
    doc["model"]["ignore_merges"] = False          # the same tokens, but only the first merges apply
    doc["model"]["merges"] = doc["model"]["merges"][:5]
    (hf / "tokenizer.json").write_text(json.dumps(doc))
    src, blob, back = tmp_path / "in.txt", tmp_path / "out.nclz", tmp_path / "back.txt"
    src.write_bytes(TEXT[:300].encode())
    assert cz.main(["compress", str(src), str(blob), "--model", str(hf)]) == 0, capsys.readouterr().err
    capsys.readouterr()
    assert cz.main(["decompress", str(blob), str(back), "--model", str(folder)]) == 1
    err = capsys.readouterr().err
    assert "merges" in err and "tokenizer" in err and not back.exists(), err


def test_a_tokenizer_json_in_neither_format_is_named_with_both(folder, tmp_path, capsys):
    copy = _copy(folder, tmp_path)
    (copy / "tokenizer.json").write_text('{"vocab": {}}')
    src = tmp_path / "in.txt"
    src.write_bytes(TEXT[:200].encode())
    status = cz.main(["compress", str(src), str(tmp_path / "out.nclz"), "--model", str(copy)])
    err = capsys.readouterr().err
    assert status == 1 and "tokenizer.json" in err and "netcl_lite.bpe" in err and "Hugging Face" in err, err


# -- 3. the weights' values as the file holds them -------------------------------------------------

def _rewrite_weights(copy, change):
    from safetensors.numpy import load_file, save_file

    weights = load_file(str(copy / "model.safetensors"))
    change(weights)
    (copy / "model.safetensors").unlink()
    save_file(weights, str(copy / "model.safetensors"))


def test_float64_weights_past_float32_s_range_are_refused_as_such_without_a_warning(folder, tmp_path, queue):
    copy = _copy(folder, tmp_path)

    def huge(weights):
        for name in list(weights):
            weights[name] = weights[name].astype(np.float64)
        weights["model.norm.weight"] = weights["model.norm.weight"] * 1e300     # finite in float64

    _rewrite_weights(copy, huge)
    with warnings.catch_warnings():
        warnings.simplefilter("error")                 # NumPy's "overflow encountered in cast" would print
        with pytest.raises(ValueError) as refused:
            DecoderLM.from_pretrained(copy, queue=queue)
    message = str(refused.value)
    assert "model.norm.weight" in message and "float32" in message and "non-finite" not in message, message


def test_a_tied_head_that_copies_an_embedding_with_nan_is_refused_for_the_nan(folder, tmp_path, queue):
    copy = _copy(folder, tmp_path)

    def nan(weights):
        table = weights["model.embed_tokens.weight"].copy()
        table[3, 5] = np.nan
        weights["model.embed_tokens.weight"] = table
        weights["lm_head.weight"] = table.copy()

    _rewrite_weights(copy, nan)
    with pytest.raises(ValueError) as refused:
        DecoderLM.from_pretrained(copy, queue=queue)
    message = str(refused.value)
    assert "model.embed_tokens.weight" in message and "non-finite" in message and "differs" not in message, message


def test_architectures_given_as_a_string_is_named_as_not_a_list(folder, tmp_path, queue):
    copy = _copy(folder, tmp_path)
    config = json.loads((copy / "config.json").read_text())
    config["architectures"] = "LlamaForCausalLM"
    (copy / "config.json").write_text(json.dumps(config))
    with pytest.raises(ValueError, match=r"architectures must be a list"):
        DecoderLM.from_pretrained(copy, queue=queue)
