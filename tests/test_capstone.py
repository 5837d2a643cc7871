"""Chapter 9's recipe: the corpus split, the baselines' arithmetic, the FLOP ledger against what one
real step launches, the run's cache key, and the page's build-time outputs."""

from __future__ import annotations

import math
import re
import sys

import numpy as np
import pytest

import doc_blocks
from site_build import markers
from netcl_lite import capstone, corpus
from netcl_lite import ops as ops_package
from netcl_lite.nn import DecoderLM, LMConfig
from netcl_lite.train import WindowLoader

PAGE = doc_blocks.DOCS / "chapter-9.md"


def test_the_corpus_is_over_a_megabyte_and_split_by_whole_module():
    docs = corpus.stdlib_documents()
    assert sum(len(t.encode()) for t in docs.values()) >= 1_000_000
    train, held = corpus.split_documents(docs)
    assert not set(train) & set(held) and set(train) | set(held) == set(docs)
    assert 0.05 < len(held) / len(docs) < 0.15
    again, _ = corpus.split_documents(dict(reversed(list(docs.items()))))
    assert set(again) == set(train), "the split must not depend on the order of the documents"
    assert "json/__init__.py" in docs and "JSON" in docs["json/__init__.py"]
    with pytest.raises(ValueError, match="held_out_fraction"):
        corpus.split_documents(docs, 1.0)


def _docstrings_by_full_walk(source: str) -> str:
    """The reference: every node of the tree visited (``ast.walk``), definitions kept."""
    import ast

    kinds = (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)
    nodes = sorted((n for n in ast.walk(ast.parse(source)) if isinstance(n, kinds)), key=lambda n: getattr(n, "lineno", 0))
    return "\n\n".join(d for d in (ast.get_docstring(n) for n in nodes) if d)


def test_the_statement_walk_finds_every_docstring_a_full_walk_finds():
    nested = (
        "'''M.'''\n"
        "if True:\n    def a():\n        '''A.'''\nelse:\n    class B:\n        '''B.'''\n"
        "try:\n    pass\nexcept Exception:\n    def c():\n        '''C.'''\nfinally:\n    async def d():\n        '''D.'''\n"
        "for _ in ():\n    pass\nelse:\n    def e():\n        '''E.'''\n"
        "match 1:\n    case 1:\n        def f():\n            '''F.'''\n"
        "with open(__file__):\n    def g():\n        '''G.'''\n        def h():\n            '''H.'''\n"
        "x = lambda: '''not a docstring'''\n"
    )
    assert corpus.module_docstrings(nested) == _docstrings_by_full_walk(nested) == "M.\n\nA.\n\nB.\n\nC.\n\nD.\n\nE.\n\nF.\n\nG.\n\nH."
    import sysconfig
    from pathlib import Path

    base = Path(sysconfig.get_paths()["stdlib"])
    docs = corpus.stdlib_documents()
    differ = [name for name in list(docs)[::7] if corpus.module_docstrings((base / name).read_text(encoding="utf-8"))
              != _docstrings_by_full_walk((base / name).read_text(encoding="utf-8"))]
    assert not differ, f"the statement walk misses docstrings in {differ[:5]}"


def test_the_corpus_is_kept_on_disk_and_read_again_after_an_edit(tmp_path, monkeypatch):
    monkeypatch.setenv("NETCL_LITE_CACHE", str(tmp_path / "cache"))
    monkeypatch.delenv("NETCL_LITE_RERUN", raising=False)
    lib = tmp_path / "lib"
    (lib / "pkg").mkdir(parents=True)
    (lib / "test").mkdir()
    (lib / "one.py").write_text("'''One.'''\n")
    (lib / "pkg" / "two.py").write_text("def f():\n    '''Two.'''\n")
    (lib / "test" / "skipped.py").write_text("'''A test module.'''\n")
    corpus._documents.cache_clear()
    assert corpus.stdlib_documents(lib) == {"one.py": "One.", "pkg/two.py": "Two."}
    assert len(list((tmp_path / "cache" / "corpus").glob("*.json"))) == 1

    def parse_nothing(sources):
        raise AssertionError("the stored corpus should have been read, not the library")

    corpus._documents.cache_clear()
    with monkeypatch.context() as m:
        m.setattr(corpus, "_read", parse_nothing)
        assert corpus.stdlib_documents(lib) == {"one.py": "One.", "pkg/two.py": "Two."}   # from disk
        m.setenv("NETCL_LITE_RERUN", "1")
        corpus._documents.cache_clear()
        with pytest.raises(AssertionError, match="should have been read"):
            corpus.stdlib_documents(lib)
    (lib / "one.py").write_text("'''One, edited.'''\n")
    corpus._documents.cache_clear()
    assert corpus.stdlib_documents(lib)["one.py"] == "One, edited."
    corpus._documents.cache_clear()


def test_bigram_probabilities_are_normalized_and_unigram_is_add_one():
    train = np.array([0, 1, 0, 1, 0, 2, 2, 1, 0])
    vocab = 4
    uni = (np.bincount(train, minlength=vocab) + 1) / (train.size + vocab)
    for a in range(vocab):   # P(· | a) over the whole vocabulary sums to 1
        total = sum(2 ** -capstone.ngram_bits_per_byte(train, [a, b], vocab, 1)["bigram"]
                    * uni[a] ** -1 for b in range(vocab))
        assert math.isclose(total, 1.0, rel_tol=1e-12), a
    bits = capstone.ngram_bits_per_byte(train, [3, 3], vocab, 2)["unigram"]
    assert math.isclose(bits, -2 * math.log2(1 / 13) / 2)


def test_measures_refuse_bad_inputs(queue):
    with pytest.raises(ValueError, match="text must be a non-empty str"):
        capstone.compressor_bits_per_byte("")
    for bad in ([], [1], [65], [True], "6"):
        with pytest.raises(ValueError, match="ppmd_orders must be a non-empty list of ints in 2..64"):
            capstone.compressor_bits_per_byte("x", ppmd_orders=bad)
    with pytest.raises(ValueError, match="repeats must be a positive int"):
        capstone.coder_speeds("x", repeats=0)
    with pytest.raises(ValueError, match="unknown coder 'lz4'"):
        capstone.coder_speeds("x", names=("lz4",))
    with pytest.raises(ValueError, match="split must be 'validation' or 'test'"):
        capstone.split_ids(None, "held-out")
    with pytest.raises(ValueError, match="held_ids must be a 1-D array"):
        capstone.ngram_bits_per_byte([1, 2, 3], [7], 4, 1)
    with pytest.raises(ValueError, match="n_bytes must be a positive int"):
        capstone.ngram_bits_per_byte([1, 2, 3], [1, 2], 4, 0)
    from netcl_lite.train import evaluate

    model = DecoderLM(LMConfig(vocab_size=8, hidden_size=8, intermediate_size=8, num_hidden_layers=1,
                               num_attention_heads=2), queue=queue)
    with pytest.raises(ValueError, match="batch_size must be a positive int"):
        evaluate(model, np.arange(20) % 8, 4, 0)
    with pytest.raises(TypeError, match="tokenizer must be a BPETokenizer"):
        capstone.bits_per_byte(model, np.arange(20) % 8, None, 4)


def test_compressors_see_repetition_and_priming():
    text = "the same sentence again. " * 400
    bpb = capstone.compressor_bits_per_byte(text)
    assert set(bpb) == {*capstone.COMPRESSORS, "ppmd order"}
    assert bpb["ppmd order"] in capstone.PPMD_ORDERS
    assert all(bpb[name] < 0.5 for name in capstone.COMPRESSORS)
    rng = np.random.default_rng(0)
    novel = "".join(rng.choice(list("abcdefghij "), 3000))
    alone = capstone.compressor_bits_per_byte(novel)
    primed = capstone.compressor_bits_per_byte(novel, primer=novel)   # the primer holds the very text
    for name in capstone.COMPRESSORS:
        assert primed[name] < 0.5 * alone[name], name
    with pytest.raises(TypeError, match="primer must be a str"):
        capstone.compressor_bits_per_byte("x", primer=b"y")


def test_every_coder_round_trips_and_its_speed_is_measured():
    text = "Return a new list containing all items from the iterable.\n" * 50
    speeds = capstone.coder_speeds(text, repeats=1, ppmd_order=8)   # raises if one does not round-trip
    assert set(speeds) == set(capstone.COMPRESSORS)
    assert all(s["compress"] > 0 and s["decompress"] > 0 for s in speeds.values())
    raw = text.encode()
    for name in capstone.COMPRESSORS:
        assert capstone._decompress(name, capstone._compress(name, raw, 8), 8) == raw, name
    primed = capstone.coder_speeds(text, names=("zlib", "xz"), repeats=1, primer=text * 40)
    assert all(s["compress"] > 0 and s["decompress"] > 0 for s in primed.values())
    with pytest.raises(TypeError, match="primer must be a str"):
        capstone.coder_speeds(text, primer=b"bytes")


def test_a_missing_coder_package_names_the_extra_to_install(monkeypatch):
    monkeypatch.setitem(sys.modules, "zpaq", None)      # import zpaq now raises ImportError
    with pytest.raises(ImportError, match=re.escape("pip install 'netcl_lite[compare]'")):
        capstone._compress("zpaq", b"text")


def test_the_recipe_hash_follows_every_recipe_constant(monkeypatch):
    key = capstone.recipe_hash()
    for name, value in (("DEDUP_MIN_CHARS", 24), ("EVAL_STRIDE", 16), ("CURVE_INTERVAL", 41), ("VOCAB_SIZE", 2048)):
        with monkeypatch.context() as m:
            m.setattr(capstone, name, value)
            assert capstone.recipe_hash() != key, name
    with monkeypatch.context() as m:
        m.setitem(capstone.MODEL, "hidden_size", 64)
        assert capstone.recipe_hash() != key
    import dataclasses
    monkeypatch.setattr(capstone, "TRAINING", dataclasses.replace(capstone.TRAINING, learning_rate=5e-3))
    assert capstone.recipe_hash() != key


def test_the_seed_results_are_for_this_recipe():
    """benchmarks/capstone_seeds.py made the file with this recipe: change the recipe, run it again."""
    import statistics

    seeds = capstone.seed_results()
    assert seeds["recipe_hash"] == capstone.recipe_hash(), (
        "the recipe changed since benchmarks/results/capstone_seeds.json was made: "
        "run python benchmarks/capstone_seeds.py and commit the new file")
    assert seeds["text_sha256"] == capstone.text_digest(), (
        "benchmarks/results/capstone_seeds.json was trained on other text (another Python's library): "
        "run python benchmarks/capstone_seeds.py and commit the new file")
    runs = seeds["seeds"]
    assert len(runs) >= 3 and str(capstone.TRAINING.seed) in runs
    for split in ("validation", "test"):
        values = [r[split] for r in runs.values()]
        assert math.isclose(seeds[split]["mean"], statistics.mean(values))
        assert math.isclose(seeds[split]["sd"], statistics.stdev(values))
    assert "OpenCL" in seeds["machine"]


def test_the_text_digest_covers_every_split():
    d = capstone.data()
    digest = capstone.text_digest(d)
    assert digest == capstone.text_digest() and len(digest) == 16
    import dataclasses
    for field in ("train_text", "validation_text", "test_text"):
        other = dataclasses.replace(d, **{field: getattr(d, field) + " "})
        assert capstone.text_digest(other) != digest, field


def test_spread_windows_cover_the_text_evenly_and_refuse_bad_arguments():
    ids = np.arange(1000)
    x, y, at = capstone.spread_windows(ids, 7, 16)
    assert x.shape == y.shape == at.shape == (7, 16)
    assert (y == ids[at]).all() and (x == ids[at - 1]).all()
    assert at[0, 0] == 1 and at[-1, -1] == ids.size - 1          # from the start to the end
    with pytest.raises(ValueError, match="at least block_size"):
        capstone.spread_windows(np.arange(16), 2, 16)
    with pytest.raises(ValueError, match="n must be a positive int"):
        capstone.spread_windows(ids, 0, 16)


def test_token_losses_are_the_terms_of_the_models_mean_loss(queue):
    model = DecoderLM(LMConfig(vocab_size=40, hidden_size=16, intermediate_size=16, num_hidden_layers=1,
                               num_attention_heads=2, max_position_embeddings=8), queue=queue)
    rng = np.random.default_rng(0)
    x, y = rng.integers(0, 40, (5, 8)), rng.integers(0, 40, (5, 8))
    nats = capstone.token_losses(model, x, y, batch_size=2)
    assert nats.shape == (5, 8) and (nats > 0).all()
    assert math.isclose(nats.mean(), float(model.loss(x, y).numpy()), rel_tol=1e-5)
    y_half = np.where(np.arange(8) < 4, y, capstone.IGNORE)
    assert math.isclose(nats[:, :4].mean(), float(model.loss(x, y_half).numpy()), rel_tol=1e-5)
    with pytest.raises(ValueError, match="x and y must be 2-D of one shape"):
        capstone.token_losses(model, x, y[:, :4])


def test_a_loader_over_positions_draws_the_windows_the_training_loader_draws():
    """The generalization gap marks the training tokens drawn so far with a second loader over
    positions, seeded as train's: it must draw the same windows."""
    ids = np.random.default_rng(3).integers(0, 50, 700)
    tokens, positions = WindowLoader(ids, 4, 9, seed=5), WindowLoader(np.arange(ids.size), 4, 9, seed=5)
    for _ in range(20):
        (x, y), (px, py) = tokens.next_batch(), positions.next_batch()
        assert (x == ids[px]).all() and (y == ids[py]).all()


@pytest.mark.slow
def test_the_curve_holds_the_gap_measures_of_each_checkpoint(queue):
    run = capstone.run(queue)
    curve = capstone.training_curve(run)
    drawn = [c["drawn"] for c in curve]
    assert drawn[0] == 0 and curve[0]["train_loss_drawn"] is None
    assert all(a <= b for a, b in zip(drawn, drawn[1:])) and drawn[-1] < 1
    load = capstone.training_load(run)                  # what the page prints beside the seconds
    assert len(load) == 2 and all(x >= 0 for x in load)
    for c in curve[1:]:
        share = c["drawn"]
        mixed = share * c["train_loss_drawn"] + (1 - share) * c["train_loss_undrawn"]
        assert math.isclose(mixed, c["train_loss"], rel_tol=1e-9)


def _benchmark(name: str):
    """A script of benchmarks/ as a module (its constants and helpers, without running it)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location(name, doc_blocks.ROOT / "benchmarks" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _recipes() -> dict:
    import json
    return json.loads((doc_blocks.ROOT / "benchmarks/results/capstone_recipes.json").read_text(encoding="utf-8"))


def test_the_schedule_table_is_this_recipe_trained_with_the_same_seeds_in_every_row():
    """benchmarks/capstone_recipes.py made the file with this recipe and text, each row with the same
    three or more seeds; its means, sample sds and paired differences are those of its runs."""
    import dataclasses

    bench, record = _benchmark("capstone_recipes"), _recipes()
    assert record["recipe_hash"] == capstone.recipe_hash() and record["text_sha256"] == capstone.text_digest(), (
        "the recipe or the text changed since benchmarks/results/capstone_recipes.json was made: "
        "run python benchmarks/capstone_recipes.py and commit the new file")
    assert record["configs"] == {name: dataclasses.asdict(c) for name, c in bench.variants(capstone.TRAINING).items()}
    seeds = {name: set(row["validation"]) for name, row in record["runs"].items()}
    assert set(seeds) == set(record["configs"])
    assert len(set(map(frozenset, seeds.values()))) == 1 and len(seeds[bench.COMMITTED]) >= 3
    summary = bench.summary(record["runs"])
    for key in ("rows", "paired_with_committed", "paired_between_rows"):
        assert summary[key] == record[key], key
    assert abs(bench.T_CRITICAL_3_SEEDS - 4.3027) < 5e-5          # the tabulated value, 4.3027


def test_the_schedule_sentences_say_what_the_paired_differences_support():
    """Chapter 9's section 5, sentence by sentence: a schedule is ranked against another only where a
    two-sided paired t-test over the 3 seeds tells their difference from seed noise at the 5 % level."""
    bench, record = _benchmark("capstone_recipes"), _recipes()
    vs_committed, between = record["paired_with_committed"], record["paired_between_rows"]
    assert all(len(d["differences"]) == 3 for d in [*vs_committed.values(), *between.values()])
    late, line = "decay over the last 20 %", "a straight line to 0 from the end of warmup"
    tenth, zero = "a cosine to a tenth of the peak", "a cosine to 0"
    assert not bench.separated(vs_committed[late]), "these seeds do not tell the 20 % decay from the committed one"
    assert all(vs_committed[n]["mean"] > 0 and bench.separated(vs_committed[n]) for n in (line, tenth, zero)), \
        "each schedule that decays from the end of the warmup needs more bits than the committed one"
    assert between[f"{zero} − {tenth}"]["mean"] > 0 and bench.separated(between[f"{zero} − {tenth}"]), \
        "the cosine to zero needs more bits than the cosine to a tenth"
    assert between[f"{zero} − {late}"]["mean"] > 0 and bench.separated(between[f"{zero} − {late}"]), \
        "the cosine to zero needs more bits than the 20 % decay"
    assert not any(bench.separated(between[pair]) for pair in (
        f"{tenth} − {line}", f"{zero} − {line}", f"{line} − {late}", f"{tenth} − {late}")), \
        "the other pairs are not told apart"


def _budget() -> dict:
    import json
    return json.loads((doc_blocks.ROOT / "benchmarks/results/training_budget.json").read_text(encoding="utf-8"))


def test_the_training_budget_was_checked_for_this_recipe_and_its_verdict_is_the_data_s():
    """benchmarks/training_budget.py trained this recipe with this code and with the code of the
    slowest kind's recorded runs, round by round: change the recipe (or the budget), run it again.
    The projection and the verdict the page states are recomputed from the recorded step times."""
    bench, record = _benchmark("training_budget"), _budget()
    run = record["runs"][-1]
    assert run["recipe_hash"] == capstone.recipe_hash(), (
        "the recipe changed since benchmarks/results/training_budget.json was made: "
        "run python benchmarks/training_budget.py and commit the new file")
    assert run["budget_seconds"] == capstone.TRAINING_BUDGET_SECONDS
    assert record["slowest_kind"] == bench.SLOWEST
    assert len(run["this_code"]) == len(run["reference_code"]) >= 2
    assert all(r["steps"] == run["steps"] == capstone.TRAINING.max_steps for r in run["this_code"] + run["reference_code"])
    assert "family" in run["cpu"] and run["pocl_target"]
    assert run["step_ratios"] == bench.step_ratios(run)
    assert math.isclose(run["projected_slowest_seconds"], bench.projection(run, record["slowest_kind"]))
    assert run["verdict"] == bench.verdict(run, capstone.TRAINING_BUDGET_SECONDS, record["slowest_kind"])
    ratios = run["step_ratios"]
    if run["verdict"] == "unsettled":
        assert max(ratios) > bench.AGREE * min(ratios), "the rounds disagree, so the run gives no verdict"
    else:
        assert max(ratios) <= bench.AGREE * min(ratios), "the rounds agree"
        within = run["projected_slowest_seconds"] <= capstone.TRAINING_BUDGET_SECONDS
        assert within == (run["verdict"] == "within"), "the verdict is the projection against the budget"
        assert (run["projected_slowest_seconds"] <= capstone.TRAINING_BUDGET_SECONDS) == (run["verdict"] == "within"), \
            "the projection is within the budget exactly when the verdict says so"


def test_primed_ppmd_is_charged_what_it_writes_after_the_primer():
    import pyppmd

    rng = np.random.default_rng(1)
    words = ["the", "module", "returns", "a", "list", "of", "items", "file", "path", "object"]
    head = " ".join(rng.choice(words, 4000)).encode()
    raw = " ".join(rng.choice(words, 800)).encode()

    def size(data):
        coder = pyppmd.PpmdCompressor(max_order=6, mem_size=capstone.PPMD_MEMORY)
        return len(coder.compress(data)) + len(coder.flush())

    streamed = capstone._ppmd_bytes(raw, head, 6)
    assert abs(streamed - (size(head + raw) - size(head))) <= 8     # the coder's pending state
    assert streamed < 0.9 * size(raw)


def test_validation_and_test_are_whole_modules_of_at_least_100_kb_apart_from_training():
    d, docs = capstone.data(), corpus.stdlib_documents()
    train, valid, test = set(d.train_documents), set(d.validation_documents), set(d.test_documents)
    assert not train & valid and not train & test and not valid & test
    assert train | valid | test == set(docs)
    for name, text, documents in (("validation", d.validation_text, valid), ("test", d.test_text, test)):
        assert len(text.encode("utf-8")) >= 100_000, name
        assert 0.05 < len(documents) / len(docs) < 0.15, name
    # the validation modules are the held-out side of the one-fraction split
    _, held = corpus.split_documents(docs, capstone.HELD_OUT_FRACTION)
    assert set(held) == valid
    assert d.held_out_documents is d.validation_documents and d.evaluation_text == d.validation_text
    assert d.held_out_text == corpus.join(d.validation_documents) and d.dropped_lines == d.validation_dropped


def test_validation_and_test_lines_shared_with_training_are_dropped():
    d = capstone.data()
    train_lines = {line.strip() for line in d.train_text.splitlines()}
    for text, documents, dropped in ((d.validation_text, d.validation_documents, d.validation_dropped),
                                     (d.test_text, d.test_documents, d.test_dropped)):
        assert dropped and all(len(line.strip()) >= capstone.DEDUP_MIN_CHARS and line.strip() in train_lines
                               for line in dropped)
        assert not [line for line in text.splitlines()
                    if len(line.strip()) >= capstone.DEDUP_MIN_CHARS and line.strip() in train_lines]
        assert len(text) + sum(map(len, dropped)) == len(corpus.join(documents))
    kept, dropped = corpus.drop_repeated_lines("  a line of twenty chars\nshort\n", "a line of twenty chars\nshort")
    assert (kept, dropped) == ("short\n", ["  a line of twenty chars\n"])
    with pytest.raises(ValueError, match="min_chars must be a positive int"):
        corpus.drop_repeated_lines("a", "b", 0)
    with pytest.raises(TypeError, match="reference must be a str"):
        corpus.drop_repeated_lines("a", None)


def test_split_by_hash_cuts_consecutive_slices_of_the_name_hash():
    docs = {f"m{i}.py": str(i) for i in range(400)}
    train, first, second = corpus.split_by_hash(docs, (0.1, 0.2))
    assert len(train) + len(first) + len(second) == 400 and not set(first) & set(second)
    assert 20 < len(first) < 60 and 50 < len(second) < 110
    again = corpus.split_by_hash(dict(reversed(list(docs.items()))), (0.1, 0.2))
    assert [set(p) for p in again] == [set(train), set(first), set(second)]
    assert set(corpus.split_documents(docs, 0.1)[1]) == set(first)
    assert set(corpus.split_by_hash(docs, (0.3,))[1]) == set(first) | set(second)
    for bad in ((), (0.5, 0.5), (0.1, -0.1), (True,), "0.1", 0.1):
        with pytest.raises(ValueError, match="fractions must be"):
            corpus.split_by_hash(docs, bad)
    with pytest.raises(ValueError, match="leave a part empty"):
        corpus.split_by_hash({"a": "x"}, (0.1, 0.1))


@pytest.mark.parametrize("n, block, stride", [(9, 4, 2), (100, 16, 5), (17, 16, 16), (50, 8, 8), (33, 8, 3), (9, 8, 1)])
def test_sliding_windows_score_every_target_once_with_context(n, block, stride):
    ids = np.arange(n)                                  # a token's id is its position
    x, y = capstone.sliding_windows(ids, block, stride)
    assert x.shape == y.shape and x.shape[1] == block
    kept = y != capstone.IGNORE
    position = np.nonzero(kept)
    assert sorted(y[kept].tolist()) == list(range(1, n))    # every token after the first, once
    assert (x[kept] + 1 == y[kept]).all()                   # each from the token before it
    later = position[1][position[0] > 0]
    assert (later >= block - stride).all(), "a later window scored a target with less context than promised"


def test_sliding_windows_refuse_bad_arguments():
    with pytest.raises(ValueError, match="stride=5 exceeds block_size=4"):
        capstone.sliding_windows(np.arange(10), 4, 5)
    with pytest.raises(ValueError, match="at least block_size"):
        capstone.sliding_windows(np.arange(4), 4, 2)
    with pytest.raises(ValueError, match="stride must be a positive int"):
        capstone.sliding_windows(np.arange(10), 4, 0)


def test_bits_per_byte_is_nats_over_ln2_over_the_predicted_bytes(queue):
    from netcl_lite.text import BPETokenizer

    tok = BPETokenizer()
    tok.train_from_iterator(["abc abd abe " * 20], 270)
    ids = np.asarray(tok.encode_ordinary("abc abd abe " * 9))
    model = DecoderLM(LMConfig(vocab_size=tok.n_vocab, hidden_size=16, intermediate_size=16, num_hidden_layers=1,
                               num_attention_heads=2, max_position_embeddings=8), queue=queue)
    block = 4
    n = (ids.size - 1) // block
    x, y = ids[: n * block].reshape(n, block), ids[1: n * block + 1].reshape(n, block)
    nats = float(model.loss(x, y).numpy()) * y.size
    n_bytes = len(tok.decode_bytes(y.ravel().tolist()))
    got = capstone.bits_per_byte(model, ids, tok, block, batch_size=3)
    assert math.isclose(got, nats / math.log(2) / n_bytes, rel_tol=1e-5)


def test_the_flop_ledger_counts_every_matmul_one_real_step_launches(queue, monkeypatch):
    config = LMConfig(vocab_size=50, hidden_size=16, intermediate_size=24, num_hidden_layers=2,
                      num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=12)
    model = DecoderLM(config, queue=queue)
    counted, inside = [], [0]
    real, real_add, real_columns = ops_package.matmul, ops_package.matmul_add, ops_package.matmul_columns

    def counting(a, b, *d, transpose_a=False, transpose_b=False, **kw):
        out = (real_add if d else real)(a, b, *d, transpose_a=transpose_a, transpose_b=transpose_b, **kw)
        k = a.shape[-2] if transpose_a else a.shape[-1]
        if not inside[0]:                   # a product matmul_columns runs is counted there
            counted.append(2 * int(np.prod(out.shape)) * k)
        return out

    def counting_columns(a, b, start, width, acc=None):
        inside[0] += 1
        try:
            out = real_columns(a, b, start, width, acc)
        finally:
            inside[0] -= 1
        counted.append(2 * a.shape[1] * width * a.shape[0])
        return out

    real_swiglu, real_input_grad = ops_package.swiglu_linear, ops_package.swiglu_input_grad

    def counting_swiglu(x, w1, w3, **kw):               # x @ W1 and x @ W3 in one launch
        inside[0] += 1
        try:
            out = real_swiglu(x, w1, w3, **kw)
        finally:
            inside[0] -= 1
        counted.append(2 * 2 * x.shape[0] * w1.shape[1] * x.shape[1])
        return out

    def counting_input_grad(gate, up, g, w1, w3, **kw):   # dgate W1ᵀ + dup W3ᵀ as one sum
        inside[0] += 1
        try:
            out = real_input_grad(gate, up, g, w1, w3, **kw)
        finally:
            inside[0] -= 1
        counted.append(2 * gate.shape[0] * w1.shape[0] * 2 * gate.shape[1])
        return out

    # The forward goes through ops.matmul (ops.matmul_add where a residual joins the product),
    # the backward through its module's own matmul, matmul_add where a share of a gradient
    # joins the one gathered so far, and matmul_columns where a weight gradient reads its block
    # of a joined gradient (the attention's q, k and v); the feed-forward's W1 and W3 through
    # swiglu_linear (both products, one launch) and its input gradient through swiglu_input_grad.
    module = sys.modules["netcl_lite.ops.matmul"]
    for where in (ops_package, module):
        monkeypatch.setattr(where, "matmul", counting)
        monkeypatch.setattr(where, "matmul_add", counting)
    monkeypatch.setattr(ops_package, "matmul_columns", counting_columns)
    monkeypatch.setattr(ops_package, "swiglu_linear", counting_swiglu)
    monkeypatch.setattr(ops_package, "swiglu_input_grad", counting_input_grad)
    from netcl_lite import autograd as ag

    x, y = WindowLoader(np.arange(500) % 50, 3, 12, seed=0).next_batch()
    with ag.Tape() as tape:
        loss = model.loss(x, y)
    forward = sum(counted)
    tape.backward(loss)
    ledger = capstone.step_flops(config, 3, 12)
    assert forward == ledger["matmul forward"]
    assert sum(counted) - forward == ledger["matmul backward"]


def test_the_run_key_covers_the_recipe_and_the_cache_folder_can_be_moved(queue, monkeypatch, tmp_path):
    key = capstone.run_key(queue, "text")
    assert capstone.run_key(queue, "text") == key and capstone.run_key(queue, "other text") != key
    monkeypatch.setitem(capstone.MODEL, "hidden_size", 64)
    assert capstone.run_key(queue, "text") != key
    monkeypatch.setenv("NETCL_LITE_CACHE", str(tmp_path))
    assert capstone.cache_root() == tmp_path


def test_each_build_output_sits_under_the_block_that_includes_its_snippet():
    text = PAGE.read_text(encoding="utf-8")
    found = list(markers.BUILD_OUTPUT.finditer(text))
    assert len(found) >= 10
    for m in found:
        before = text[: m.start()].rstrip().rsplit("```python", 1)[-1]
        assert before.strip() == f'--8<-- "{m.group(1)}"\n```'.strip(), f"{m.group(1)}: marker not under its block"
    shown = {m.group(1) for m in found}
    included = {inc.path for inc in markers.includes(text.split("\n")) if inc.path.startswith("snippets/chapter9/")}
    snippets = {f"snippets/chapter9/{p.name}" for p in (doc_blocks.ROOT / "snippets/chapter9").glob("*.py")
                if not p.name.startswith("figure_")}
    assert included == snippets, "every chapter 9 snippet is on the page"
    # The rest show an output the doc tests compare: the transformers check (transformers is a
    # test dependency, not one of the build's), the arithmetic-coding example and an exercise
    # whose answer is exact.
    assert snippets - shown == {"snippets/chapter9/load_in_transformers.py", "snippets/chapter9/exercise_perplexity.py",
                                "snippets/chapter9/arithmetic_coding.py"}
    for path in snippets - shown:
        after = text.split(f'--8<-- "{path}"', 1)[1]
        assert after.lstrip(" `\n").startswith(markers.EXPECTED_OUTPUT), path


EXTRAS = {"compare": ("pyppmd", "zstandard", "brotli", "zpaq", "capstone.measures", "compressor_bits_per_byte"),
          "interop": ("transformers", "torch")}


def test_a_block_that_needs_an_extra_says_so_above_itself():
    text = PAGE.read_text(encoding="utf-8")
    for path in sorted({inc.path for inc in markers.includes(text.split("\n")) if inc.path.startswith("snippets/chapter9/")}):
        source = (doc_blocks.ROOT / path).read_text(encoding="utf-8")
        above = text[:text.index(f'--8<-- "{path}"')].rsplit("```python", 1)[0][-200:]
        for extra, needs in EXTRAS.items():
            if any(name in source for name in needs) or f'require("{extra}")' in source:
                assert markers.needs_extra(extra) in above, f"{path}: put {markers.needs_extra(extra)} above it"
                first = min(i for i in (source.find("capstone.run()"), source.find("import torch")) if i >= 0)
                assert -1 < source.find(f'nl.extras.require("{extra}")') < first, (
                    f"{path}: call nl.extras.require({extra!r}) before any work")
    coders = (doc_blocks.ROOT / "snippets/chapter9/coders.py").read_text(encoding="utf-8")
    assert 'require("compare")' in coders
    assert "https://download.pytorch.org/whl/cpu" in text


def test_chapter_9_blocks_fit_88_characters_a_line():
    for path in (doc_blocks.ROOT / "snippets/chapter9").glob("*.py"):
        if path.name.startswith("figure_"):              # drawn at build time, not shown as code
            continue
        lines = path.read_text(encoding="utf-8").splitlines()
        long = [n for n, line in enumerate(lines, 1) if len(line) > 88]
        assert not long, f"{path.name}: lines {long} are over 88 characters"


def _independent_coders(text: bytes, primer: bytes, orders) -> dict:
    """Each coder's bits per byte on ``text`` after ``primer``, straight from its library and the
    priming formula (not through capstone): 8 · (|C(primer + text)| − |C(primer)|) / |text|;
    PPMd is charged the bytes it writes for ``text`` after coding the primer, at the best order."""
    import bz2
    import lzma
    import zlib

    import brotli
    import pyppmd
    import zpaq
    import zstandard

    zstd = zstandard.ZstdCompressor(compression_params=zstandard.ZstdCompressionParameters.from_level(
        22, window_log=27, enable_ldm=True))
    coders = {"xz": lambda b: lzma.compress(b, preset=9 | lzma.PRESET_EXTREME),
              "bz2": lambda b: bz2.compress(b, 9), "zlib": lambda b: zlib.compress(b, 9),
              "zstd": zstd.compress, "brotli": lambda b: brotli.compress(b, quality=11, lgwin=24),
              "zpaq": lambda b: zpaq.compress(b, level=5, threads=1)}
    out = {name: 8 * (len(c(primer + text)) - (len(c(primer)) if primer else 0)) / len(text)
           for name, c in coders.items()}

    def ppmd(order):
        coder = pyppmd.PpmdCompressor(max_order=order, mem_size=capstone.PPMD_MEMORY)
        if primer:
            coder.compress(primer)
        return 8 * (len(coder.compress(text)) + len(coder.flush())) / len(text)

    by_order = {k: ppmd(k) for k in orders}
    out["ppmd order"] = min(by_order, key=lambda k: (by_order[k], k))
    out["ppmd"] = by_order[out["ppmd order"]]
    return out


def test_the_coders_follow_their_libraries_and_the_priming_formula():
    """capstone.compressor_bits_per_byte, which measures.json's coders come from, against the
    libraries called directly: primed and alone, PPMd's order chosen as the best of those tried."""
    text = ("def f(x):\n    return x * 2  # doubles\n" * 40 + "Prose between the code, of another kind.\n") * 6
    primer = "class A:\n    def g(self):\n        return [i for i in range(10)]\n" * 200
    for given in ("", primer):
        theirs = _independent_coders(text.encode(), given.encode(), [2, 3, 4, 6, 8])
        assert capstone.compressor_bits_per_byte(text, given, [2, 3, 4, 6, 8]) == theirs


@pytest.mark.slow
def test_the_model_beats_primed_xz_by_the_page_margin_on_test_and_the_coders_are_what_the_page_prints(queue):
    """The page's claims on the run's stored measures, which :func:`capstone.load_result` ties to the
    run's weights and which are computed once per run (the build's, shared by every later reader):
    the model beats primed xz by the page's margin and bz2, zlib and the bigram outright; the
    model's number is the windowed cross-entropy and the coders those of
    ``compressor_bits_per_byte`` (checked against the libraries above); PPMd's order is the one
    chosen on validation, used again on test."""
    run = capstone.run(queue)
    stored = capstone.measures(run)                                # what the page prints
    test, valid = stored["test"], stored["validation"]
    assert capstone.load_result(run, "measures.json") == stored
    assert set(test["primed"]) == set(test["alone"]) == {*capstone.COMPRESSORS, "ppmd order"}
    assert test["bytes"] == len(run.data.test_text.encode("utf-8"))
    margin = doc_blocks.ROOT / "snippets/chapter9/coders.py"
    margin = float(re.search(r"^MARGIN = ([\d.]+)", margin.read_text(encoding="utf-8"), re.M).group(1))
    assert test["model"] <= (1 - margin) * test["primed"]["xz"], (
        f"the model ({test['model']:.4f}) is not {margin:.0%} below primed xz")
    assert test["model"] < min(test["primed"]["bz2"], test["primed"]["zlib"], test["bigram"]), test
    assert valid["primed"]["ppmd order"] == test["primed"]["ppmd order"]
    assert valid["alone"]["ppmd order"] == test["alone"]["ppmd order"]
    ours = capstone.bits_per_byte(run.model, capstone.split_ids(run, "test"), run.tokenizer,
                                  capstone.TRAINING.block_size, stride=capstone.EVAL_STRIDE)
    assert math.isclose(test["model"], ours, rel_tol=1e-6)


@pytest.mark.slow
def test_the_bits_vs_time_figure_ends_at_the_reported_validation_number(queue):
    run = capstone.run(queue)
    curve = capstone.training_curve(run)
    steps = [c["step"] for c in curve]
    assert steps[0] == 0 and steps[-1] == capstone.TRAINING.max_steps
    assert all(b - a <= capstone.CURVE_INTERVAL for a, b in zip(steps, steps[1:]))
    ours = capstone.bits_per_byte(run.model, capstone.split_ids(run, "validation"), run.tokenizer,
                                  capstone.TRAINING.block_size, stride=capstone.EVAL_STRIDE)
    assert curve[-1]["bits_per_byte"] == ours
    seconds = {r["step"]: r["seconds"] for r in run.log["train"]}
    assert all(c["seconds"] == seconds[c["step"]] for c in curve[1:])   # the training steps' own clock


def test_the_built_page_shows_this_builds_outputs(built_site):
    html = doc_blocks.rendered_page(built_site, PAGE).read_text(encoding="utf-8")
    assert "build-output" not in html
    for phrase in ("bits per byte", "zpaq -m5", "<table>", "Printed as Markdown when this site was built",
                   "± ", "ms per token", "x 6 N N_tok",
                   "temperature 0.8, top-p 0.9", "no repeated 3-gram", "tokens/s", "occur in the training text"):
        assert phrase in html, phrase
    for figure in ("loss_curve", "lr_schedule", "bits_vs_time", "attention_map"):
        assert (built_site / "figures" / "chapter9" / f"{figure}.svg").is_file(), figure


@pytest.mark.slow
def test_the_ablation_rows_are_what_the_compressor_codes(queue, tmp_path):
    """The model-alone row and the whole mix's row (with and without dynamic evaluation) are the
    cross-entropies the compressor's files reach, up to the header and the range coder's few bytes."""
    import types

    from netcl_lite import compression, mixing
    from netcl_lite.text import BPETokenizer

    d = capstone.data()
    tok = BPETokenizer()
    model = DecoderLM(LMConfig(vocab_size=256, hidden_size=16, intermediate_size=32, num_hidden_layers=1,
                               num_attention_heads=2, num_key_value_heads=1, max_position_embeddings=32),
                      queue=queue)
    texts = types.SimpleNamespace(test_text=d.test_text[:6000], validation_text=d.validation_text[:600])
    primer = np.asarray(tok.encode_ordinary(d.train_text[:20000]), np.int64)
    run = capstone.Run(model, tok, texts, primer, None, {}, tmp_path)
    (tmp_path / "done.json").write_text("{}\n")          # the record the kept rows are tied to
    rows = mixing.ablation(run, "test")
    assert list(rows) == [name for name, _, _ in mixing.ROWS]
    raw = texts.test_text.encode()
    whole, adapting = mixing.ROWS[7][0], mixing.ROWS[9][0]
    for name, mode in (("the model alone", dict(mix=False)), (whole, {}), (adapting, dict(adapt=True))):
        file_bits = 8 * len(compression.compress(raw, model, tok, primer=primer, **mode))
        assert rows[name] * len(raw) <= file_bits <= rows[name] * len(raw) + 8 * 40, name
    assert mixing.ablation(run, "test") == rows                      # kept in the run's folder
    assert (tmp_path / "ablation-test.json").is_file()
    with pytest.raises(ValueError, match="split must be 'validation' or 'test'"):
        mixing.ablation(run, "train")
