"""Numbers typed into the prose of the pages, each checked against the code that computes it.

``PROSE`` is the one place for them: a row is (page, the text as the page has it, a
function that builds that text from the library or from the page's own snippet). The
test checks both that the page still says it and that the code still computes it, so
neither can drift alone. A number that a block prints right under it needs no row;
a number the prose repeats or derives does: add it here.

``CLAIMS`` does the same for reasoning: a sentence that compares, ranks or classifies a
measurement ("is memory-bound", "grows with T", "beats", "did worst") is listed with the
``assert`` that backs it, named by its message, in a snippet a page runs or in a test. The test
checks that the page still says it, that the file still asserts it, and that the assertion runs
(the snippet is on a page, or the assert sits in a test function).
"""

from __future__ import annotations

import ast
import math
import re
from fractions import Fraction

import numpy as np
import pytest

import doc_blocks
from netcl_lite import budget, reference, sampling, scaling
from netcl_lite.text import bpe, device_merge

WORDS = {2: "two", 3: "three", 8: "eight"}


def _snippet_function(path: str, name: str):
    """One function defined in a snippet file, without running the rest of the snippet."""
    tree = ast.parse((doc_blocks.ROOT / path).read_text(encoding="utf-8"))
    node = next(n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == name)
    scope = {"math": math}
    exec(compile(ast.Module(body=[node], type_ignores=[]), path, "exec"), scope)
    return scope[name]


def _worked_example_exponentials():
    """exp of the scaled causal logits of Chapter 7's 3x3 example (float64 reference)."""
    q = np.array([[1.0, 0.0], [0.0, 2.0], [1.0, 1.0]])
    k = np.array([[1.0, 0.0], [1.0, 1.0], [0.0, 2.0]])
    return np.exp(q @ k.T / math.sqrt(2))


def _chapter7_text_counts():
    """(characters, UTF-8 bytes, tokens) of the text Chapter 7's BPE block encodes, from that block."""
    from netcl_lite.text import BPETokenizer
    scope: dict = {}
    source = (doc_blocks.ROOT / "snippets/chapter7/bpe_training.py").read_text(encoding="utf-8")
    tree = ast.parse(source)
    keep = [n for n in tree.body if isinstance(n, ast.Assign) and {t.id for t in n.targets} & {"corpus", "text"}]
    exec(compile(ast.Module(body=keep, type_ignores=[]), "bpe_training.py", "exec"), scope)
    tok = BPETokenizer()
    tok.train_from_iterator(scope["corpus"], vocab_size=256 + 30)
    text = scope["text"]
    return len(text), len(text.encode("utf-8")), len(tok.encode(text))


def _streamed(**kwargs):
    stream = _snippet_function("snippets/week23/drill_4_streamed.py", "stream")
    return stream([0.0, math.log(3)], [[2.0], [10.0]], **kwargs)


def _frac(x: float) -> str:
    f = Fraction(x).limit_denominator(100)
    assert abs(float(f) - x) < 1e-9, x
    return str(f)


def _gqa():
    mha, gqa = budget.attention_parameters(12, 3), budget.attention_parameters(12, 3, 1)
    return mha, gqa


def _kv_ratio(kv_heads):
    return budget.kv_cache_bytes(80, 64, 128, 2048) // budget.kv_cache_bytes(80, kv_heads, 128, 2048)


def _top_k_two():
    p = sampling.distribution(np.log([0.4, 0.3, 0.2, 0.1]), top_k=2)
    return _frac(float(p[0])), _frac(float(p[1])), float(p[0])


def _uniform_ce() -> float:
    """The library's cross-entropy of 12 tokens under equal logits over 8 classes (ln 8)."""
    rng = np.random.default_rng(0)
    return reference.cross_entropy(np.full((12, 8), 0.25), rng.integers(0, 8, 12))


def _dense_answer() -> float:
    """The library's attention of one query over keys weighted 1 : 3, values 2 and 10."""
    q, k, v = np.ones((1, 1)), np.array([[0.0], [math.log(3)]]), np.array([[2.0], [10.0]])
    return float(reference.attention(q, k, v, scale=1.0)[0, 0])


def _scores_over_qkvo(t: int, d: int, bytes_per_element: int = 2) -> float:
    """A head's materialized score bytes (from the library's budget) over its Q, K, V and O bytes."""
    return budget.score_matrix_bytes(t, bytes_per_element) / (4 * t * d * bytes_per_element)


def _state_after(tile):
    _, states = _streamed()
    m, l, (a,) = states[tile]
    return m, _frac(l), _frac(a)


PROSE = [
    # Chapter 7
    ("chapter-7.md", r"\(\sqrt{128} \approx 11.3\)", lambda: rf"\(\sqrt{{128}} \approx {math.sqrt(128):.1f}\)"),
    ("chapter-7.md", "the printed 1 : 4.11",
     lambda: f"the printed 1 : {_worked_example_exponentials()[1, 1] / _worked_example_exponentials()[1, 0]:.2f}"),
    ("chapter-7.md", "their exponentials are 4.113 against 2.028",
     lambda: "their exponentials are {:.3f} against {:.3f}".format(*_worked_example_exponentials()[2, [1, 0]])),
    ("chapter-7.md", "One matrix is 256 MiB",
     lambda: f"One matrix is {budget.to_gib(budget.score_matrix_bytes(8192)) * 1024:.0f} MiB"),
    ("chapter-7.md", "a text of 30 characters (Python counts Unicode code points) becomes 49 UTF-8 bytes",
     lambda: "a text of {} characters (Python counts Unicode code points) becomes {} UTF-8 bytes".format(
         *_chapter7_text_counts()[:2])),
    ("chapter-7.md", "where the 42 tokens come from", lambda: f"where the {_chapter7_text_counts()[2]} tokens come from"),
    ("chapter-7.md", "(1,024 by default, measured in `benchmarks/bpe_threshold.py`)",
     lambda: f"({bpe.KERNEL_MIN_BYTES:,} by default, measured in `benchmarks/bpe_threshold.py`)"),
    ("chapter-7.md", "`kernel_text_min_bytes` UTF-8 bytes (2,048 by default",
     lambda: f"`kernel_text_min_bytes` UTF-8 bytes ({bpe.KERNEL_TEXT_MIN_BYTES:,} by default"),
    ("chapter-7.md", "A text of up to 64 KiB takes one",
     lambda: f"A text of up to {device_merge.ONE_GROUP_BYTES // 1024} KiB takes one"),
    ("chapter-7.md", r"leaves \(\sigma^4\) (16 at \(\sigma = 2\))", lambda: rf"leaves \(\sigma^4\) ({2 ** 4} at \(\sigma = 2\))"),
    ("chapter-7.md", r"\(\mathrm{CE} = -\ln(1/8) = \ln 8 \approx 2.079\)",
     lambda: rf"\(\mathrm{{CE}} = -\ln(1/8) = \ln 8 \approx {_uniform_ce():.3f}\)"),
    ("chapter-7.md", r"Bits per token are \(\log_2 8 = 3\), and 3 bits on each of 12 tokens spread over 48 bytes is 0.75",
     lambda: rf"Bits per token are \(\log_2 8 = {_uniform_ce() / math.log(2):.6g}\), and "
             f"{_uniform_ce() / math.log(2):.6g} bits on each of 12 tokens "
             f"spread over 48 bytes is {_uniform_ce() * 12 / (48 * math.log(2)):.6g}"),
    ("chapter-7.md", "(twelve at count 8 alone)",
     lambda: "({} at count 8 alone)".format({12: "twelve"}[_scratch_bpe()[1][8]])),
    ("chapter-7.md", "at 36 merges of the 40 asked for", lambda: f"at {_scratch_bpe()[0]} merges of the 40 asked for"),
    ("chapter-7.md", "is the most frequent pair (160 times), but the space occurs 200 times and `t` 280",
     lambda: "is the most frequent pair ({}), but the space occurs {} times and `t` {}".format(
         f"{_wordpiece()['pairs'][b' ', b't']} times", *(_wordpiece()["units"][c] for c in (b" ", b"t")))),
    ("chapter-7.md", r"\(160/(200 \cdot 280) \approx 0.00286\)",
     lambda: r"\(160/(200 \cdot 280) \approx {:.5f}\)".format(float(_wordpiece()["score"]((b" ", b"t"))))),
    ("chapter-7.md", r"every one of the 60 `m`s follows an `r`",
     lambda: "every one of the {} `m`s follows an `r`".format(
         _wordpiece()["units"][b"m"] if _wordpiece()["units"][b"m"] == _wordpiece()["pairs"][b"r", b"m"] else "?")),
    ("chapter-7.md", r"\(60/(160 \cdot 60) = 0.00625\)",
     lambda: r"\(60/(160 \cdot 60) = {:g}\)".format(float(_wordpiece()["score"]((b"r", b"m"))))),
    ("chapter-7.md", r"between `fo` and `he` (both \(1/180\))",
     lambda: r"between `fo` and `he` (both \({}\))".format(
         _wordpiece()["score"]((b"f", b"o")) if _wordpiece()["score"]((b"f", b"o")) == _wordpiece()["score"]((b"h", b"e"))
         else "?")),
    # Chapter 8
    ("chapter-8.md", r"The dense answer is \((1\cdot 2 + 3\cdot 10)/4 = 8\)",
     lambda: rf"The dense answer is \((1\cdot 2 + 3\cdot 10)/4 = {_dense_answer():.6g}\)"),
    ("chapter-8.md", r"the state is \((\log 3,\ 4/3,\ 32/3)\) and the output \(32/3 \div 4/3 = 8\). "
                     r"Rescaling only the normalizer gives 9; only the accumulator, \(16/3\).",
     lambda: r"the state is \((\log 3,\ {1},\ {2})\) and the output \({2} \div {1} = {3:g}\). ".format(
         *_state_after(1), _streamed()[0][0])
             + "Rescaling only the normalizer gives {:g}; only the accumulator, \\({}\\).".format(
         round(_streamed(rescale_a=False)[0][0], 9), _frac(_streamed(rescale_l=False)[0][0]))),
    ("chapter-8.md", r"Their ratio is \(T/(4d) = 32\) here",
     lambda: rf"Their ratio is \(T/(4d) = {_scores_over_qkvo(16384, 128):g}\) here"),
    ("chapter-8.md", "256 MiB per head and sequence at",
     lambda: f"{budget.score_matrix_bytes(8192) // 2**20} MiB per head and sequence at"),
    ("chapter-8.md", "32 KiB for", lambda: f"{budget.score_matrix_bytes(1, query_len=8192) // 2**10} KiB for"),
    ("chapter-8.md", r"The saving is the ratio \(M_{\text{fast}}/(3d^2)\), 4 here",
     lambda: r"The saving is the ratio \(M_{{\text{{fast}}}}/(3d^2)\), {:g} here".format(48 * 1024 / (3 * 64**2))),
    ("chapter-8.md", r"(at \(d = 128\) and the same memory it is 1)",
     lambda: r"(at \(d = 128\) and the same memory it is {:g})".format(48 * 1024 / (3 * 128**2))),
    ("chapter-8.md", "Flash attention, at 33 times the intensity",
     lambda: f"Flash attention, at {(4 * 4 * 8 * 2048 * 64 + 16 * 8 * 2048**2) / (4 * 4 * 8 * 2048 * 64):.0f} times the intensity"),
    # Concepts
    ("concepts/transformer.md", r"Sums of up to \(F = 96\) products",
     lambda: r"Sums of up to \(F = {}\) products".format(_numpy_gpt_config()["intermediate_size"])),
    ("concepts/transformer.md", "(2 layers, 4 query heads sharing 2 K/V heads)",
     lambda: "({num_hidden_layers} layers, {num_attention_heads} query heads sharing {num_key_value_heads} K/V heads)".format(
         **_numpy_gpt_config())),
    ("concepts/transformer.md", r"(\(2^{-24} \approx 6 \times 10^{-8}\) per rounding)",
     lambda: r"(\(2^{{-24}} \approx {:.0f} \times 10^{{-8}}\) per rounding)".format(2.0**-24 / 1e-8)),
    # Week 22
    ("week-22.md", r"At \(D = 12\), \(H = 3\), \(G = 1\) that is 384 weights against 576 for MHA",
     lambda: rf"At \(D = 12\), \(H = 3\), \(G = 1\) that is {_gqa()[1]} weights against {_gqa()[0]} for MHA"),
    ("week-22.md", "the cache shrinks three times, the weights only by a third",
     lambda: f"the cache shrinks {WORDS[3 // 1]} times, the weights only by "
             f"{ {Fraction(1, 3): 'a third'}[Fraction(_gqa()[0] - _gqa()[1], _gqa()[0])] }"),
    ("week-22.md", "576 → 384 weights above, against a threefold cache cut",
     lambda: f"{_gqa()[0]} → {_gqa()[1]} weights above, against a {WORDS[3]}fold cache cut"),
    ("week-22.md", "GQA's 8 groups sit 8 times below MHA and MQA's single head 64 times below",
     lambda: f"GQA's 8 groups sit {_kv_ratio(8)} times below MHA and MQA's single head {_kv_ratio(1)} times below"),
    ("week-22.md", "(no pre-split, a budget of 12 merges, but the library's default `min_frequency=2`, so it stops after 10)",
     lambda: "(no pre-split, a budget of 12 merges, but the library's default `min_frequency=2`, so it stops after "
             f"{_retest_merges()})"),
    # Week 23
    ("week-23.md", r"\(D = 512\), 16,384,000 weights", lambda: rf"\(D = 512\), {budget.tied_embedding_savings(32000, 512):,} weights"),
    ("week-23.md", r"renormalizes to \([4/7, 3/7]\) and \(4/7 > 0.55\)",
     lambda: r"renormalizes to \([{0}, {1}]\) and \({0} {2} 0.55\)".format(*_top_k_two()[:2], ">" if _top_k_two()[2] > 0.55 else "<=")),
    ("week-23.md", r"renormalizes to \(4/7\) and \(3/7\)", lambda: r"renormalizes to \({}\) and \({}\)".format(*_top_k_two()[:2])),
    ("week-23.md", r"\(\sqrt{100} = 10\) each",
     lambda: r"\(\sqrt{{100}} = {:g}\) each".format(scaling.allocation(1e25)[0] / scaling.allocation(1e23)[0])),
    ("week-23.md", "that is 20 million units", lambda: f"that is {scaling.break_even(100, 160, 4, 1):g} million units"),
    ("week-23.md", r"the state \((m, \ell, \mathbf{a})\) is \((0, 1, 2)\)",
     lambda: r"the state \((m, \ell, \mathbf{{a}})\) is \(({:g}, {}, {})\)".format(*_state_after(0))),
    ("week-23.md", r"the normalizer becomes \(1/3 + 1 = 4/3\) and the accumulator \(2/3 + 10 = 32/3\). The output is "
                   r"\((32/3)/(4/3) = 8\)",
     lambda: r"the normalizer becomes \(1/3 + 1 = {1}\) and the accumulator \(2/3 + 10 = {2}\). The output is "
             r"\(({2})/({1}) = {3:g}\)".format(*_state_after(1), round(_streamed()[0][0], 9))),
    ("week-23.md", r"Rescaling only the normalizer gives 9; rescaling only the accumulator gives \(16/3\)",
     lambda: r"Rescaling only the normalizer gives {:g}; rescaling only the accumulator gives \({}\)".format(
         round(_streamed(rescale_a=False)[0][0], 9), _frac(_streamed(rescale_l=False)[0][0]))),
    # Chapter 9: the recipe and the result
    ("chapter-9.md", "every line of at least 20 characters (after stripping",
     lambda: f"every line of at least {_capstone().DEDUP_MIN_CHARS} characters (after stripping"),
    ("chapter-9.md", "drops held-out lines of at least 20 characters that occur in",
     lambda: f"drops held-out lines of at least {_capstone().DEDUP_MIN_CHARS} characters that occur in"),
    ("chapter-9.md", "The bound of 20 characters keeps them",
     lambda: f"The bound of {_capstone().DEDUP_MIN_CHARS} characters keeps them"),
    ("chapter-9.md", "The block asserts that the model needs at least 4% fewer bits than primed xz",
     lambda: f"The block asserts that the model needs at least {_snippet_constant('snippets/chapter9/coders.py', 'MARGIN'):.0%}"
             " fewer bits than primed xz"),
    ("chapter-9.md", "The recipe is sized for a target of 300 seconds",
     lambda: f"The recipe is sized for a target of {_capstone().TRAINING_BUDGET_SECONDS} seconds"),
    ("chapter-9.md", r"\(\epsilon = 10^{-8}\)",
     lambda: rf"\(\epsilon = 10^{{{math.log10(_capstone().TRAINING.eps):.0f}}}\)"),
    ("chapter-9.md", r"\min\!\left(1,\ \frac{c_{\text{clip}}}{\lVert \mathbf{g} \rVert_2 + 10^{-6}}\right)",
     lambda: rf"\min\!\left(1,\ \frac{{c_{{\text{{clip}}}}}}{{\lVert \mathbf{{g}} \rVert_2 + "
             rf"10^{{{_clip_epsilon_exponent()}}}}}\right)"),
    ("chapter-9.md", "with 256 MiB of model memory, at the context order from 2\nto 64",
     lambda: f"with {_capstone().PPMD_MEMORY >> 20} MiB of model memory, at the context order from "
             f"{min(_capstone().PPMD_ORDERS)}\nto {max(_capstone().PPMD_ORDERS)}"),
    ("chapter-9.md", "The\n    peak rate is 12% of `initializer_range`",
     lambda: f"The\n    peak rate is {_capstone().TRAINING.learning_rate / _capstone().MODEL['initializer_range']:.0%}"
             " of `initializer_range`"),
    ("chapter-9.md", "A model reaches 1.80 bits per byte on text that averages 3.3 bytes per token.",
     lambda: "A model reaches {:.2f} bits per byte on text that averages {:.1f} bytes per token.".format(
         _snippet_constant("snippets/chapter9/exercise_perplexity.py", "bits_per_byte"),
         _snippet_constant("snippets/chapter9/exercise_perplexity.py", "bytes_per_token"))),
    ("chapter-9.md", "about one in ten goes to the *validation* split",
     lambda: f"about one in { {10: 'ten'}[round(1 / _capstone().HELD_OUT_FRACTION)]} goes to the *validation* split"),
    ("chapter-9.md", "counts of every context of up to 8 tokens in the",
     lambda: f"counts of every context of up to {__import__('netcl_lite.ngram').ngram.ORDERS} tokens in the"),
    ("chapter-9.md", "after orders 1, 2 and 4 and its final one",
     lambda: "after orders {}, {} and {} and its final one".format(*__import__('netcl_lite.ngram').ngram.MIX_ORDERS)),
    ("chapter-9.md", "where the code of 2026-12-02 trained it in\n245 to 274 s",
     lambda: "where the code of {date} trained it in\n{low:.0f} to {high:.0f} s".format(
         date=_budget_bench().SLOWEST["date"], low=min(_budget_bench().SLOWEST["train_seconds"].values()),
         high=max(_budget_bench().SLOWEST["train_seconds"].values()))),
    ("chapter-9.md", "with seeds 0, 1 and 2, the same three in every row",
     lambda: "with seeds {}, {} and {}, the same {} in every row".format(
         *_recipes()["seeds_in_summary"], {3: "three"}[len(_recipes()["seeds_in_summary"])])),
    ("chapter-9.md", r"times \(4.30/\sqrt{3}\)," "\nabout 2.48",
     lambda: r"times \({:.2f}/\sqrt{{3}}\),".format(_recipes_bench().T_CRITICAL_3_SEEDS)
             + "\nabout {:.2f}".format(_recipes_bench().T_CRITICAL_3_SEEDS / math.sqrt(3))),
    ("chapter-9.md", "The committed recipe codes validation in 1.8077 ± 0.0038 bits per\nbyte",
     lambda: "The committed recipe codes validation in {mean:.4f} ± {sd:.4f} bits per\nbyte".format(
         **_recipes()["rows"]["committed"])),
    ("chapter-9.md", "Decaying over the last 20% of the steps after the warmup instead of 30%\n"
                     "changes that by +0.0025 ± 0.0023",
     lambda: "Decaying over the last {:.0%} of the steps after the warmup instead of {:.0%}\n"
             "changes that by {}".format(*_decay_shares(), _pm(_recipes()["paired_with_committed"][
                 "decay over the last 20 %"]))),
    ("chapter-9.md", "a straight line to\nzero +0.0116 ± 0.0038, a cosine to a tenth of the peak +0.0249 ± 0.0085, a\n"
                     "cosine to zero +0.0341 ± 0.0096",
     lambda: "a straight line to\nzero {}, a cosine to a tenth of the peak {}, a\ncosine to zero {}".format(
         *(_pm(_recipes()["paired_with_committed"][n]) for n in (
             "a straight line to 0 from the end of warmup", "a cosine to a tenth of the peak", "a cosine to 0")))),
    ("chapter-9.md", "the cosine to a tenth (+0.0093 ± 0.0017)",
     lambda: "the cosine to a tenth ({})".format(
         _pm(_recipes()["paired_between_rows"]["a cosine to 0 − a cosine to a tenth of the peak"]))),
    ("chapter-9.md", "These\nare ten comparisons of five schedules",
     lambda: "These\nare {} comparisons of {} schedules".format(
         {10: "ten"}[len(_recipes()["paired_between_rows"])], {5: "five"}[len(_recipes()["rows"])])),
    ("chapter-9.md", "a 2-core\nAMD EPYC Zen 1 (family 23, model 1)",
     lambda: "a {}-core\nAMD EPYC Zen 1 {}".format(_budget_bench().SLOWEST["logical_cpus"],
                                                  _budget_bench().SLOWEST["cpu"].removeprefix("AMD EPYC "))),
    ("chapter-9.md", "ratios agree within a quarter",
     lambda: "ratios agree within a {}".format({1.25: "quarter"}[_budget_bench().AGREE])),
    ("chapter-9.md", "Its last run, on an Intel Xeon (family 6, model 167), PoCL target `rocketlake`, on 2026-12-05, "
                     "gave ratios of 0.69 and 1.75: they differ by more than that, so it gives no verdict",
     lambda: "Its last run, on an {cpu}, PoCL target `{target}`, on {date}, gave ratios of {ratios}: {verdict}".format(
         cpu=re.sub(r"\(R\)|\(TM\)| Processor", "", _budget_run()["cpu"]), target=_budget_run()["pocl_target"],
         date=_budget_run()["date"], ratios=" and ".join(f"{r:.2f}" for r in _budget_run()["step_ratios"]),
         verdict="they differ by more than that, so it gives no verdict" if _budget_run()["verdict"] == "unsettled"
         else f"they agree, and project {_budget_run()['projected_slowest_seconds']:.0f} s on the Zen 1, "
              f"{_budget_run()['verdict']} the target")),
    ("chapter-9.md", "1-minute load average of 6.7 to 8.0 on 2 cores",
     lambda: "1-minute load average of {:.1f} to {:.1f} on {} cores".format(
         min(_budget_loads()), max(_budget_loads()), _budget_run()["logical_cpus"])),
    ("chapter-9.md", "moves each of them by about an eighth of that standard deviation",
     lambda: "moves each of them by about an {} of that standard deviation".format(
         {8: "eighth"}[round(_capstone().MODEL["initializer_range"] / _capstone().TRAINING.learning_rate)])),
    ("chapter-9.md", "(the block asserts it is within half a nat of it)",
     lambda: "(the block asserts it is within {} nat of it)".format(
         {0.5: "half a"}[_snippet_constant("snippets/chapter9/one_step.py", "NEAR")])),
    ("chapter-9.md", r"more than 99% of them, moves by more than \(0.99\,\eta\)",
     lambda: rf"more than {_one_step_full():.0%} of them, moves by more than \({_one_step_full()}\,\eta\)"),
    ("chapter-9.md", "section 4's block asserts that more than 99% of the weights move by more than 0.99 of the rate",
     lambda: f"section 4's block asserts that more than {_one_step_full():.0%} of the weights move by more than "
             f"{_one_step_full()} of the rate"),
    ("chapter-9.md", "is more than ten times the step from",
     lambda: "is more than {} times the step from".format(
         {10: "ten"}[_snippet_constant("snippets/chapter9/exercise_stride.py", "TIMES")])),
    ("chapter-9.md", "Generate 48 greedy tokens after \"Return the\" with\n`no_repeat_ngram_size` 0, 2, 3 and 4",
     lambda: "Generate {} greedy tokens after \"Return the\" with\n`no_repeat_ngram_size` {}, {}, {} and {}".format(
         _snippet_constant("snippets/chapter9/exercise_no_repeat.py", "NEW"),
         *_snippet_constant("snippets/chapter9/exercise_no_repeat.py", "SIZES"))),
    ("chapter-9.md", "This run sees fewer than a fifth of that",
     lambda: "This run sees fewer than a {} of that".format(
         {5: "fifth"}[_snippet_constant("snippets/chapter9/generalization_gap.py", "BELOW")])),
    ("chapter-9.md", "wherever at least a tenth of the scored training tokens are still undrawn",
     lambda: "wherever at least a {} of the scored training tokens are still undrawn".format(
         {0.1: "tenth"}[_snippet_constant("snippets/chapter9/generalization_gap.py", "SPLIT")])),
    ("chapter-9.md", "about 20 tokens\nper parameter is the heuristic",
     lambda: f"about {_snippet_constant('snippets/chapter9/generalization_gap.py', 'HEURISTIC')} tokens\n"
             "per parameter is the heuristic"),
    ("chapter-9.md", "times the same comparison at 256 new\ntokens",
     lambda: "times the same comparison at {} new\ntokens".format(
         re.search(r'"--new-tokens", type=int, default=(\d+)',
                   (doc_blocks.ROOT / "benchmarks/bench_train.py").read_text(encoding="utf-8")).group(1))),
    ("week-23.md", "fp16 score matrix is 2 GiB",
     lambda: f"fp16 score matrix is {budget.to_gib(budget.score_matrix_bytes(32768, bytes_per_element=2)):g} GiB"),
]


def _scratch_bpe():
    """(merges learned, {count: merges learned at it}) for Chapter 7's from-scratch BPE corpus."""
    from collections import Counter

    from netcl_lite.text import GPT4_PATTERN, BPETokenizer
    source = (doc_blocks.ROOT / "snippets/chapter7/bpe_from_scratch.py").read_text(encoding="utf-8")
    keep = [n for n in ast.parse(source).body if isinstance(n, ast.Assign) and
            {getattr(t, "id", None) for t in n.targets} == {"corpus"}]
    scope: dict = {}
    exec(compile(ast.Module(body=keep, type_ignores=[]), "bpe_from_scratch.py", "exec"), scope)
    trace = BPETokenizer(pattern=GPT4_PATTERN).train_from_iterator([scope["corpus"]], 256 + 40)
    return len(trace), Counter(count for _, count in trace)


def _wordpiece():
    """The counts and score function of Chapter 7's WordPiece block, run without its prints."""
    import contextlib
    import io
    import runpy
    with contextlib.redirect_stdout(io.StringIO()):
        return runpy.run_path(str(doc_blocks.ROOT / "snippets/chapter7/wordpiece_score.py"))


def _numpy_gpt_config():
    """The LMConfig keywords of the Concepts page's NumPy-model check, read from its source."""
    tree = ast.parse((doc_blocks.ROOT / "snippets/concepts/numpy_gpt.py").read_text(encoding="utf-8"))
    call = next(n for n in ast.walk(tree) if isinstance(n, ast.Call) and getattr(n.func, "id", "") == "LMConfig")
    return {k.arg: ast.literal_eval(k.value) for k in call.keywords}


def _capstone():
    from netcl_lite import capstone
    return capstone


def _snippet_constant(path: str, name: str):
    """The value a snippet assigns to ``name`` at its top level (a literal, or a tuple of them)."""
    tree = ast.parse((doc_blocks.ROOT / path).read_text(encoding="utf-8"))
    for node in tree.body:
        if isinstance(node, ast.Assign):
            for target in node.targets:
                if isinstance(target, ast.Name) and target.id == name:
                    return ast.literal_eval(node.value)
                if isinstance(target, ast.Tuple) and name in [t.id for t in target.elts]:
                    i = [t.id for t in target.elts].index(name)
                    return ast.literal_eval(node.value)[i]
    raise LookupError(f"{path} assigns no {name}")


def _benchmark(name: str):
    """A script of benchmarks/ as a module, its constants and helpers, without running it."""
    import importlib.util
    spec = importlib.util.spec_from_file_location(name, doc_blocks.ROOT / "benchmarks" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _recipes_bench():
    """benchmarks/capstone_recipes.py: its t bound for three paired seeds."""
    return _benchmark("capstone_recipes")


def _recipes() -> dict:
    """What benchmarks/results/capstone_recipes.json records."""
    import json
    return json.loads((doc_blocks.ROOT / "benchmarks/results/capstone_recipes.json").read_text(encoding="utf-8"))


def _pm(difference: dict) -> str:
    """A paired difference as the page writes it: signed mean ± sample sd."""
    return f"{difference['mean']:+.4f} ± {difference['sd']:.4f}"


def _decay_shares() -> tuple[float, float]:
    """The 20 % variant's and the committed recipe's decay, as shares of the steps after the warmup."""
    configs = _recipes()["configs"]
    return tuple(c["decay_steps"] / (c["max_steps"] - c["warmup_steps"])
                 for c in (configs["decay over the last 20 %"], configs["committed"]))


def _budget_bench():
    """benchmarks/training_budget.py: its SLOWEST record and its AGREE bound."""
    return _benchmark("training_budget")


def _budget_run() -> dict:
    """The last run benchmarks/results/training_budget.json records."""
    import json
    path = doc_blocks.ROOT / "benchmarks/results/training_budget.json"
    return json.loads(path.read_text(encoding="utf-8"))["runs"][-1]


def _budget_loads() -> list[float]:
    run = _budget_run()
    return [r[k] for r in run["this_code"] + run["reference_code"] for k in ("load_before", "load_after")]


def _one_step_full() -> float:
    """The share Chapter 9's one-step block calls the full rate (``FULL``), also its bar for "nearly every"."""
    return _snippet_constant("snippets/chapter9/one_step.py", "FULL")


def _clip_epsilon_exponent() -> int:
    """The exponent of the epsilon in the clip coefficient that kernels/adamw.cl computes."""
    source = (doc_blocks.ROOT / "kernels/adamw.cl").read_text(encoding="utf-8")
    body = source.split("__kernel void clip_coefficient", 1)[1].split("}", 1)[0]
    return int(re.search(r"norm \+ 1e(-\d+)f", body).group(1))


def _retest_merges():
    from netcl_lite.text import BPETokenizer
    tok = BPETokenizer(pattern=None)
    training = ["the river and the road", "the quick brown fox", "the river flows"]
    return len(tok.train_from_iterator(training, vocab_size=256 + 12))


#: (page, the sentence as the page has it, the file whose ``assert`` backs it, that assert's message)
CLAIMS: list[tuple[str, str, str, str]] = [
    ("chapter-9.md", "needs fewer bits than the same n-gram counting only the training text",
     "snippets/chapter9/mixing.py", "the adaptive n-gram needs fewer bits than the static one"),
    ("chapter-9.md", "so the mix needs fewer bits than either alone",
     "snippets/chapter9/mixing.py", "the mix needs fewer bits than either part alone"),
    # Chapter 9 outside section 7
    ("chapter-9.md", "these seeds do not tell the 20% decay from the committed one",
     "tests/test_capstone.py", "these seeds do not tell the 20 % decay from the committed one"),
    ("chapter-9.md", "Each schedule that decays from the end of the warmup needs more bits than the committed one, and "
                     "the test tells each apart",
     "tests/test_capstone.py", "each schedule that decays from the end of the warmup needs more bits than the committed one"),
    ("chapter-9.md", "beats every schedule that decays from the end of the warmup",
     "tests/test_capstone.py", "each schedule that decays from the end of the warmup needs more bits than the committed one"),
    ("chapter-9.md", "the cosine to zero needs more bits than the cosine to a tenth",
     "tests/test_capstone.py", "the cosine to zero needs more bits than the cosine to a tenth"),
    ("chapter-9.md", "and a cosine to zero does worse than a cosine to a tenth",
     "tests/test_capstone.py", "the cosine to zero needs more bits than the cosine to a tenth"),
    ("chapter-9.md", "(+0.0093 ± 0.0017) and than the 20% decay",
     "tests/test_capstone.py", "the cosine to zero needs more bits than the 20 % decay"),
    ("chapter-9.md", "the other pairs are not told apart",
     "tests/test_capstone.py", "the other pairs are not told apart"),
    ("chapter-9.md", "three seeds do not establish",
     "tests/test_capstone.py", "the other pairs are not told apart"),
    ("chapter-9.md", "At the first pass's last checkpoint the gap is less than half the final one",
     "snippets/chapter9/generalization_gap.py", "most of the final gap opens later"),
    ("chapter-9.md", "even a model that had never seen a training window twice would code them worse than the training "
                     "modules",
     "snippets/chapter9/generalization_gap.py", "validation costs more than unseen training text"),
    ("chapter-9.md", "while it improves faster on text it has seen",
     "snippets/chapter9/generalization_gap.py", "most of the final gap opens later"),
    ("chapter-9.md", "and most of it is other text",
     "snippets/chapter9/generalization_gap.py", "in the first pass it is mostly other text"),
    ("chapter-9.md", "memorization accounts for more of it than other text does",
     "snippets/chapter9/generalization_gap.py", "later it is mostly memorized"),
    ("chapter-9.md", "and the memorized part has grown since the first pass",
     "snippets/chapter9/generalization_gap.py", "memorization grew in the later passes"),
    ("chapter-9.md", "Meanwhile the validation loss falls at every evaluation to the end (section 5's block asserts it)",
     "snippets/chapter9/training.py", "the validation loss fell at every evaluation"),
    ("chapter-9.md", "Its parameter count, read from the module, equals the count from `budget`'s formulas",
     "snippets/chapter9/model.py", "the module's count equals the formula's"),
    ("chapter-9.md", "they differ by more than that, so it gives no verdict",
     "tests/test_capstone.py", "the rounds disagree, so the run gives no verdict"),
    ("chapter-9.md", "(the block asserts it is within half a nat of it)",
     "snippets/chapter9/one_step.py", "the initial loss is near ln V"),
    ("chapter-9.md", "asserts that nearly every weight of the model, more than 99% of them, moves by more than",
     "snippets/chapter9/one_step.py", "nearly every weight moves by the full rate"),
    ("chapter-9.md", "section 4's block asserts that more than 99% of the weights move by more than 0.99 of the rate",
     "snippets/chapter9/one_step.py", "nearly every weight moves by the full rate"),
    ("chapter-9.md", "falls at every evaluation (the block above asserts it)",
     "snippets/chapter9/training.py", "the validation loss fell at every evaluation"),
    ("chapter-9.md", "This run sees fewer than a fifth of that (the block asserts it)",
     "snippets/chapter9/generalization_gap.py", "fewer than a fifth of 20 per parameter"),
    ("chapter-9.md", "repeats a 3-gram (three tokens in a row) in at least one of its three outputs; the block counts "
                     "them and asserts it",
     "snippets/chapter9/samples.py", "greedy decoding repeats a 3-gram"),
    ("chapter-9.md", "the block asserts that no output made with it repeats one",
     "snippets/chapter9/samples.py", "with the rule no 3-gram repeats"),
    ("chapter-9.md", "Both give the same tokens (the block asserts it)",
     "snippets/chapter9/generation_speed.py", "the same tokens either way"),
    ("chapter-9.md", "`generate` runs a cached step as one fused kernel per layer and one for the head",
     "snippets/chapter9/generation_speed.py", "one fused kernel per layer and the head"),
    ("chapter-9.md", "The run executed more (the block asserts it)",
     "snippets/chapter9/flops.py", "the run executed more than 6 N N_tok"),
    ("chapter-9.md", "and the block asserts that each ends in one or the other",
     "snippets/chapter9/exercise_dedup.py", "the most common are headings or ends of sentences"),
    ("chapter-9.md", "Side by side costs the most bits: the first tokens of each window are",
     "snippets/chapter9/exercise_stride.py", "side by side costs the most bits"),
    ("chapter-9.md", "is more than ten times the step from `EVAL_STRIDE` to half of it (the block asserts it)",
     "snippets/chapter9/exercise_stride.py", "the first step is more than ten times the second"),
    ("chapter-9.md", "fewer of the generated 3-grams are distinct than there are 3-grams; the block asserts that some "
                     "3-gram repeats",
     "snippets/chapter9/exercise_no_repeat.py", "without the rule some 3-gram repeats"),
    ("chapter-9.md", "so in both every generated 3-gram is distinct: the block asserts it for both",
     "snippets/chapter9/exercise_no_repeat.py", "with n = 2 or 3 every 3-gram is distinct"),
]


def _assert_messages(path: str) -> dict[str, ast.Assert]:
    """Every ``assert cond, "message"`` in a file whose message is a plain string, by message."""
    tree = ast.parse((doc_blocks.ROOT / path).read_text(encoding="utf-8"))
    return {node.msg.value: node for node in ast.walk(tree)
            if isinstance(node, ast.Assert) and isinstance(node.msg, ast.Constant) and isinstance(node.msg.value, str)}


def _runs(path: str, node: ast.Assert) -> bool:
    """Whether the assert runs: a snippet that a page includes, or an assert inside a test function."""
    if path.startswith("snippets/"):
        return any(f'"{path}"' in page.read_text(encoding="utf-8") for page in doc_blocks.pages())
    tree = ast.parse((doc_blocks.ROOT / path).read_text(encoding="utf-8"))
    where = (node.lineno, node.col_offset)          # a node of another parse of the same file
    return any(isinstance(f, ast.FunctionDef) and f.name.startswith("test")
               and any(isinstance(n, ast.Assert) and (n.lineno, n.col_offset) == where for n in ast.walk(f))
               for f in ast.walk(tree))


def _flat(text: str) -> str:
    return re.sub(r"\s+", " ", text)


@pytest.mark.parametrize("page, prose, compute", PROSE, ids=[f"{p}:{t[:40]}" for p, t, _ in PROSE])
def test_number_in_prose_is_what_the_code_computes(page, prose, compute):
    assert compute() == prose, f"{page}: the code now gives {compute()!r}"
    text = _flat((doc_blocks.DOCS / page).read_text(encoding="utf-8"))
    # admonition bodies are indented: compare with whitespace collapsed
    assert _flat(prose) in text, f"{page} no longer says {prose!r}: update the page or this table"


@pytest.mark.parametrize("page, sentence, path, message", CLAIMS, ids=[f"{p}:{t[:40]}" for p, t, _, _ in CLAIMS])
def test_claim_in_prose_is_asserted_by_the_code_that_measures_it(page, sentence, path, message):
    text = _flat((doc_blocks.DOCS / page).read_text(encoding="utf-8"))
    assert _flat(sentence) in text, f"{page} no longer says {sentence!r}: update the page or CLAIMS"
    asserts = _assert_messages(path)
    assert message in asserts, f"{path} has no `assert ..., {message!r}` to back {page}'s {sentence!r}"
    assert _runs(path, asserts[message]), f"{path}'s assert {message!r} never runs: no page includes it, no test calls it"
