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
import functools
import inspect
import math
import re
from fractions import Fraction

import numpy as np
import pytest

import doc_blocks
import schedule_stats
from netcl_lite import budget, reference, sampling, scaling
from netcl_lite.text import bpe, device_merge

WORDS = {2: "two", 3: "three", 4: "four", 8: "eight"}


def _snippet_function(path: str, name: str):
    """One function defined in a snippet file, without running the rest of the snippet."""
    tree = ast.parse((doc_blocks.ROOT / path).read_text(encoding="utf-8"))
    node = next(n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == name)
    scope = {"math": math}
    exec(compile(ast.Module(body=[node], type_ignores=[]), path, "exec"), scope)
    return scope[name]


def _snippet_values(path: str, *names: str) -> tuple:
    """The values a snippet's top-level assignments give ``names``, run alone (with ``np`` and ``math``)."""
    tree = ast.parse((doc_blocks.ROOT / path).read_text(encoding="utf-8"))
    keep = [n for n in tree.body if isinstance(n, ast.Assign)
            and {getattr(t, "id", None) for t in n.targets} & set(names)]
    scope: dict = {"np": np, "math": math}
    exec(compile(ast.Module(body=keep, type_ignores=[]), path, "exec"), scope)
    return tuple(scope[name] for name in names)


def _worked_example_exponentials():
    """exp of the scaled causal logits of Chapter 7's 3x3 example (float64, from the block's Q and K)."""
    q, k = _snippet_values("snippets/chapter7/causal_example.py", "Q", "K")
    return np.exp(q @ k.T / math.sqrt(q.shape[1]))


@functools.cache
def _chapter7_text_counts():
    """(characters, UTF-8 bytes, tokens) of the text Chapter 7's BPE block encodes, from that block."""
    scope = _run_quietly("snippets/chapter7/bpe_training.py")
    text = scope["text"]
    return len(text), len(text.encode("utf-8")), len(scope["ids"])


def _streamed(**kwargs):
    stream = _snippet_function("snippets/week23/drill_4_streamed.py", "stream")
    return stream([0.0, math.log(3)], [[2.0], [10.0]], **kwargs)


def _frac(x: float) -> str:
    f = Fraction(x).limit_denominator(100)
    assert abs(float(f) - x) < 1e-9, x
    return str(f)


def _gqa():
    """(MHA weights, GQA weights, D, H, G) of Week 22's heads block, from the library and the block's sizes."""
    d, h, g = (_snippet_constant("snippets/week22/s109_heads.py", name) for name in ("D", "H", "G"))
    return budget.attention_parameters(d, h), budget.attention_parameters(d, h, g), d, h, g


def _kv_ratio(kv_heads):
    return budget.kv_cache_bytes(80, 64, 128, 2048) // budget.kv_cache_bytes(80, kv_heads, 128, 2048)


def _top_k_two():
    p = sampling.distribution(np.log([0.4, 0.3, 0.2, 0.1]), top_k=2)
    return _frac(float(p[0])), _frac(float(p[1])), float(p[0])


def _exercise_perplexity():
    """(tokens, bytes, vocabulary) of Chapter 7's perplexity exercise, from its block."""
    return tuple(_snippet_constant("snippets/chapter7/exercise_perplexity.py", name)
                 for name in ("n_tokens", "n_bytes", "vocab"))


def _uniform_ce() -> float:
    """The library's cross-entropy of the exercise's tokens under equal logits over its vocabulary (ln V)."""
    n_tokens, _, vocab = _exercise_perplexity()
    rng = np.random.default_rng(0)
    return reference.cross_entropy(np.zeros((n_tokens, vocab)), rng.integers(0, vocab, n_tokens))


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


def _traffic():
    """Chapter 8's traffic model, its functions and constants, without printing its tables."""
    import runpy
    return runpy.run_path(str(doc_blocks.ROOT / "snippets/chapter8/traffic_model.py"))


def _comma(n: int) -> str:
    """12,345 as the page's math writes it: 12{,}345."""
    return f"{n:,}".replace(",", "{,}")


def _saving(method: str, width: int, precision: str) -> float:
    """Standard attention's traffic over ``method``'s at the model's longest length (its last table)."""
    tm = _traffic()
    t, M = tm["LENGTHS"][-1], tm["SRAM_BYTES"] // tm["BYTES"][precision]
    return sum(tm["traffic"]("standard", t, width, M)) / sum(tm["traffic"](method, t, width, M))


def _a100_ridge() -> float:
    tm = _traffic()
    return tm["A100_FP16_FLOPS"] / tm["A100_HBM_BYTES_PER_S"]


def _backward_sizes():
    """(T, heads, groups, tolerance) of Chapter 8's backward check."""
    path = "snippets/chapter8/flash_backward.py"
    return tuple(_snippet_constant(path, name) for name in ("T", "H", "G", "TOLERANCE"))


def _power_of_ten(x: float) -> str:
    exponent = round(math.log10(x))
    assert x == 10.0**exponent, x
    return rf"\(10^{{{exponent}}}\)"


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
    ("chapter-7.md", r"A text of 12 tokens, 48 UTF-8 bytes long, follows a start token, and a model gives probability "
                     r"\(1/8\) to each of the 12 tokens it predicts.",
     lambda: r"A text of {0} tokens, {1} UTF-8 bytes long, follows a start token, and a model gives probability "
             r"\(1/{2}\) to each of the {0} tokens it predicts.".format(*_exercise_perplexity())),
    ("chapter-7.md", r"\(\mathrm{CE} = -\ln(1/8) = \ln 8 \approx 2.079\)",
     lambda: r"\(\mathrm{{CE}} = -\ln(1/{0}) = \ln {0} \approx {1:.3f}\)".format(
         _exercise_perplexity()[2], _uniform_ce())),
    ("chapter-7.md", r"Bits per token are \(\log_2 8 = 3\), and 3 bits on each of 12 tokens spread over 48 bytes is 0.75",
     lambda: r"Bits per token are \(\log_2 {2} = {3:.6g}\), and {3:.6g} bits on each of {0} tokens "
             r"spread over {1} bytes is {4:.6g}".format(*_exercise_perplexity(), _uniform_ce() / math.log(2),
                                                        _uniform_ce() / math.log(2) * _exercise_perplexity()[0]
                                                        / _exercise_perplexity()[1])),
    ("chapter-7.md", "(twelve at count 8 alone)",
     lambda: "({} at count 8 alone)".format({12: "twelve"}[_scratch_bpe()[1][8]])),
    ("chapter-7.md", "at 36 merges of the 40 asked for",
     lambda: "at {} merges of the {} asked for".format(_scratch_bpe()[0], _scratch_bpe()[2])),
    ("chapter-7.md", "#### BPE from scratch, in 40 lines",
     lambda: f"#### BPE from scratch, in {_algorithm_lines('snippets/chapter7/bpe_from_scratch.py')} lines"),
    ("chapter-7.md", "The four steps fit in 40 lines of plain Python",
     lambda: f"The four steps fit in {_algorithm_lines('snippets/chapter7/bpe_from_scratch.py')} lines of plain Python"),
    ("chapter-7.md", r"(A word longer than 200 characters is `[UNK]` too.)",
     lambda: r"(A word longer than {} characters is `[UNK]` too.)".format(
         inspect.signature(_snippet_function("snippets/chapter7/wordpiece.py", "wordpiece"))
         .parameters["max_chars"].default)),
    ("chapter-7.md", r"With 16 keys per query and \(d_k = 512\)",
     lambda: r"With {} keys per query and \(d_k = {}\)".format(
         *(_snippet_constant("snippets/chapter7/softmax_saturation.py", n) for n in ("n_keys", "d")))),
    ("chapter-7.md", "The first line counts the predictions: six tokens, of which the last five are predicted",
     lambda: "The first line counts the predictions: {} tokens, of which the last {} are predicted".format(
         *({5: "five", 6: "six"}[n] for n in _perplexity_counts()))),
    ("chapter-7.md", "(0.22% against 0.20%)",
     lambda: "({:.2%} against {:.2%})".format(_sqrt_dk()["exact"], _sqrt_dk()["normal"])),
    ("chapter-7.md", "(the standard error of a share of 100,000 pairs",
     lambda: f"(the standard error of a share of {_snippet_constant('snippets/chapter7/sqrt_dk.py', 'n'):,} pairs"),
    ("chapter-7.md", r"a full turn every \(2\pi \approx 6.3\) positions",
     lambda: rf"a full turn every \(2\pi \approx {2 * math.pi:.1f}\) positions"),
    ("chapter-7.md", "the first pair turns once every 6.3 positions, the last by 0.017 radians across all 96",
     lambda: "the first pair turns once every {:.1f} positions, the last by {:.3f} radians across all {}".format(
         2 * math.pi, _last_sinusoid_turn(), _snippet_constant("snippets/chapter7/figure_sinusoidal.py", "T"))),
    ("chapter-7.md", "the last pair of this 32-wide table turns by only 0.017 radians over the 96 positions shown",
     lambda: "the last pair of this {}-wide table turns by only {:.3f} radians over the {} positions shown".format(
         _snippet_constant("snippets/chapter7/figure_sinusoidal.py", "D"), _last_sinusoid_turn(),
         _snippet_constant("snippets/chapter7/figure_sinusoidal.py", "T"))),
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
    ("chapter-8.md", r"give as 192 KiB, so \(M_{\text{fast}} = 49{,}152\) numbers in fp32 and \(98{,}304\) in fp16.",
     lambda: "give as {} KiB, so "
             r"\(M_{{\text{{fast}}}} = {}\) numbers in fp32 and \({}\) in fp16.".format(
         _traffic()["SRAM_BYTES"] // 1024,
         *(_comma(_traffic()["SRAM_BYTES"] // _traffic()["BYTES"][p]) for p in ("fp32", "fp16")))),
    ("chapter-8.md", r"(10.7 FLOPs per byte in fp32 at \(T = 64\), a third of its limit)",
     lambda: r"({:.1f} FLOPs per byte in fp32 at \(T = {}\), {} of its limit)".format(
         _traffic()["intensity"]("standard", _traffic()["LENGTHS"][0], _traffic()["WIDTH"], "fp32"),
         _traffic()["LENGTHS"][0],
         {Fraction(1, 3): "a third"}[Fraction(_traffic()["intensity"]("standard", _traffic()["LENGTHS"][0],
                                                                       _traffic()["WIDTH"], "fp32")
                                              / _traffic()["limit"]("standard", _traffic()["WIDTH"], "fp32"))
                                     .limit_denominator(100)])),
    ("chapter-8.md", "same fast memory its limit is about 1.5 times Algorithm 1's.",
     lambda: "same fast memory its limit is about {:.1f} times Algorithm 1's.".format(
         _traffic()["limit"]("flashattention-2", _traffic()["WIDTH"], "fp32")
         / _traffic()["limit"]("algorithm 1", _traffic()["WIDTH"], "fp32"))),
    ("chapter-8.md", r"8 MiB in fp32 at \(T = 8{,}192\), \(d = 128\), far more than one SM's SRAM",
     lambda: r"{:g} MiB in fp32 at \(T = {}\), \(d = {}\), far more than one SM's SRAM".format(
         2 * _traffic()["LENGTH"] * _traffic()["WIDTH"] * 4 / 2**20, _comma(_traffic()["LENGTH"]),
         _traffic()["WIDTH"]) if 2 * _traffic()["LENGTH"] * _traffic()["WIDTH"] * 4 > _traffic()["SRAM_BYTES"] else "?"),
    ("chapter-8.md", r"(ratio 1.0): its blocks are only 96 key rows",
     lambda: r"(ratio {:.1f}): its blocks are only {} key rows".format(
         _saving("algorithm 1", 128, "fp32"),
         _traffic()["block_sizes"]("algorithm 1", 128, _traffic()["SRAM_BYTES"] // 4)[1])),
    ("chapter-8.md", r"the same SRAM holds twice the numbers and the ratio is 2.0; standard attention moves 3.0 times "
                     r"as much as FlashAttention-2's order, and 513 times as much as keeping \(\mathbf{K}\) and "
                     r"\(\mathbf{V}\) in cache.",
     lambda: r"the same SRAM holds {} the numbers and the ratio is {:.1f}; standard attention moves {:.1f} times "
             r"as much as FlashAttention-2's order, and {:.0f} times as much as keeping \(\mathbf{{K}}\) and "
             r"\(\mathbf{{V}}\) in cache.".format({2: "twice"}[_traffic()["BYTES"]["fp32"] // _traffic()["BYTES"]["fp16"]],
                                          _saving("algorithm 1", 128, "fp16"), _saving("flashattention-2", 128, "fp16"),
                                          _saving("K, V in cache", 128, "fp16"))),
    ("chapter-8.md", "put the roofline's ridge ([§5](#the-roofline)) at 200.6 FLOPs per byte",
     lambda: f"put the roofline's ridge ([§5](#the-roofline)) at {_a100_ridge():.1f} FLOPs per byte"),
    ("chapter-8.md", r"\(d/b\) FLOPs per byte saved, 64 at \(d = 128\) in fp16, left of an A100's ridge of 200.6 (§1)",
     lambda: r"\(d/b\) FLOPs per byte saved, {:g} at \(d = {}\) in fp16, left of an A100's ridge of {:.1f} (§1)".format(
         _traffic()["limit"]("standard", 128, "fp16"), 128, _a100_ridge())),
    ("chapter-8.md", "HBM put the ridge at 200.6 FLOPs per byte (§1's block)",
     lambda: f"HBM put the ridge at {_a100_ridge():.1f} FLOPs per byte (§1's block)"),
    ("chapter-8.md", "the errors a missed rescale made in the retest above: an eighth and a third of the output",
     lambda: "the errors a missed rescale made in the retest above: {} and {} of the output".format(
         *sorted(({Fraction(1, 8): "an eighth", Fraction(1, 3): "a third"}[
             Fraction(abs(_streamed(**{flag: False})[0][0] - _streamed()[0][0]) / _streamed()[0][0]).limit_denominator(100)]
             for flag in ("rescale_a", "rescale_l")), key=lambda w: ("an eighth", "a third").index(w)))),
    ("chapter-8.md", r"What holds on any device is asserted in the block: each error stays under \(10^{-5}\).",
     lambda: "What holds on any device is asserted in the block: each error stays under {}.".format(
         _power_of_ten(_snippet_constant("snippets/chapter8/flash_equals_dense.py", "TOLERANCE")))),
    ("chapter-8.md", r"on a causal grouped-query case of 150 positions (4 query heads sharing 2 K/V groups):",
     lambda: "on a causal grouped-query case of {} positions ({} query heads sharing {} K/V groups):".format(
         *_backward_sizes()[:3])),
    ("chapter-8.md", r"the block asserts each relative gap stays under \(10^{-5}\). Its last line",
     lambda: f"the block asserts each relative gap stays under {_power_of_ten(_backward_sizes()[3])}. Its last line"),
    ("chapter-8.md", "add over the 300 query rows of the two heads that share its group. Independent rounding errors "
                     "grow like the square root of the number of terms, about 17 units for 300",
     lambda: "add over the {0} query rows of the {1} heads that share its group. Independent rounding errors "
             "grow like the square root of the number of terms, about {2:.0f} units for {0}".format(
         _backward_sizes()[1] // _backward_sizes()[2] * _backward_sizes()[0],
         WORDS[_backward_sizes()[1] // _backward_sizes()[2]],
         math.sqrt(_backward_sizes()[1] // _backward_sizes()[2] * _backward_sizes()[0]))),
    ("chapter-8.md", r"\(n^2\) with \(n = 64\), just over half",
     lambda: r"\(n^2\) with \(n = {}\), just over half".format(
         _snippet_constant("snippets/chapter8/exercise_causal_tiles.py", "T")
         // _snippet_constant("snippets/chapter8/exercise_causal_tiles.py", "tile"))),
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
     lambda: r"At \(D = {2}\), \(H = {3}\), \(G = {4}\) that is {1} weights against {0} for MHA".format(*_gqa())),
    ("week-22.md", "the cache shrinks three times, the weights only by a third",
     lambda: f"the cache shrinks {WORDS[_gqa()[3] // _gqa()[4]]} times, the weights only by "
             f"{ {Fraction(1, 3): 'a third'}[Fraction(_gqa()[0] - _gqa()[1], _gqa()[0])] }"),
    ("week-22.md", "576 → 384 weights above, against a threefold cache cut",
     lambda: f"{_gqa()[0]} → {_gqa()[1]} weights above, against a {WORDS[_gqa()[3] // _gqa()[4]]}fold cache cut"),
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
    ("chapter-9.md", "one OpenCL kernel (`kernels/adamw.cl`) for up to 16 tensors a launch",
     lambda: "one OpenCL kernel (`kernels/adamw.cl`) for up to "
             f"{__import__('netcl_lite.ops.adamw').ops.adamw.STEP_SLOTS} tensors a launch"),
    ("chapter-9.md", "for the embedding, up to four layers and the head",
     lambda: f"for the embedding, up to {WORDS[__import__('netcl_lite.ops.decode').ops.decode.SLOTS]} layers and the head"),
    ("chapter-9.md", "every line of at least 20 characters (after stripping",
     lambda: f"every line of at least {_capstone().DEDUP_MIN_CHARS} characters (after stripping"),
    ("chapter-9.md", "drops held-out lines of at least 20 characters that occur in",
     lambda: f"drops held-out lines of at least {_capstone().DEDUP_MIN_CHARS} characters that occur in"),
    ("chapter-9.md", "The bound of 20 characters keeps them",
     lambda: f"The bound of {_capstone().DEDUP_MIN_CHARS} characters keeps them"),
    ("chapter-9.md", "The block also asserts that the model needs at least 4% fewer bits than primed xz",
     lambda: "The block also asserts that the model needs at least "
             f"{_snippet_constant('snippets/chapter9/coders.py', 'MARGIN'):.0%} fewer bits than primed xz"),
    ("chapter-9.md", "the mixed file needs at most 0.97 times primed zpaq's bits on the test text",
     lambda: f"the mixed file needs at most {_snippet_constant('snippets/chapter9/coders.py', 'BOUND'):.2f} times "
             "primed zpaq's bits on the test text"),
    ("chapter-9.md", "Secondary estimation added right after geometric mixing gains less than\n0.01%",
     lambda: "Secondary estimation added right after geometric mixing gains less than\n"
             f"{_snippet_constant('snippets/chapter9/mixing.py', 'NEGLIGIBLE'):.2%}"),
    ("chapter-9.md", "a header of at most 31\nbytes, the size for the largest input it accepts (`MAX_INPUT_BYTES`, 1 MiB)",
     lambda: f"a header of at most {_header_bytes()}\nbytes, the size for the largest input it accepts "
             f"(`MAX_INPUT_BYTES`, {_cz().MAX_INPUT_BYTES >> 20} MiB)"),
    ("chapter-9.md", "a 4-byte checksum of the original, and one 6-byte fingerprint of everything decoding "
                     "depends on, with a 1-byte tag for each of its 5 parts",
     lambda: f"a {_cz()._CHECKSUM_BYTES}-byte checksum of the original, and one {_cz()._FINGERPRINT_BYTES}-byte "
             f"fingerprint of everything decoding depends on, with a 1-byte tag for each of its "
             f"{len(_cz().PARTS)} parts"),
    ("chapter-9.md", "context of 1 to 6 tokens",
     lambda: f"context of 1 to {__import__('netcl_lite.ngram').ngram.SUCCESSOR_ORDERS} tokens"),
    ("chapter-9.md", r"a token seen \(k\) steps ago weighing \(0.99^k\)",
     lambda: rf"a token seen \(k\) steps ago weighing \({_cm().STREAM_DECAY:g}^k\)"),
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
    ("chapter-9.md", "every context of up to 8 tokens and what followed it",
     lambda: f"every context of up to {__import__('netcl_lite.ngram').ngram.ORDERS} tokens and what followed it"),
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
    ("chapter-9.md", "These are ten comparisons of\nfive schedules, each tested at the 5% level on its own",
     lambda: "These are {} comparisons of\n{} schedules, each tested at the {:.0%} level on its own".format(
         {10: "ten"}[len(_recipes()["paired_between_rows"])], {5: "five"}[len(_recipes()["rows"])],
         schedule_stats.FAMILY_LEVEL)),
    ("chapter-9.md", "(Bonferroni's correction, each at 0.5%, so that a difference must exceed\nits standard deviation "
                     r"times \(14.09/\sqrt{3}\), about 8.13), none of the ten",
     lambda: "(Bonferroni's correction, each at {:.1%}, so that a difference must exceed\nits standard deviation "
             r"times \({:.2f}/\sqrt{{{}}}\), about {:.2f}), none of the {}".format(
         schedule_stats.FAMILY_LEVEL / schedule_stats.schedule_comparisons()[1],
         schedule_stats.bonferroni_bound()[0], schedule_stats.schedule_comparisons()[0],
         schedule_stats.bonferroni_bound()[1], {10: "ten"}[schedule_stats.schedule_comparisons()[1]])),
    ("chapter-9.md", "a 2-core\nAMD EPYC Zen 1 (family 23, model 1)",
     lambda: "a {}-core\nAMD EPYC Zen 1 {}".format(_budget_bench().SLOWEST["logical_cpus"],
                                                  _budget_bench().SLOWEST["cpu"].removeprefix("AMD EPYC "))),
    ("chapter-9.md", "ratios agree within a quarter",
     lambda: "ratios agree within a {}".format({1.25: "quarter"}[_budget_bench().AGREE])),
    ("chapter-9.md", "Its last run, on an Intel Xeon (family 6, model 167), PoCL target `rocketlake`, on 2026-12-06, "
                     "gave ratios of 0.70 and 0.68: they agree, and project 190 s on the Zen 1, within the target",
     lambda: "Its last run, on an {cpu}, PoCL target `{target}`, on {date}, gave ratios of {ratios}: {verdict}".format(
         cpu=re.sub(r"\(R\)|\(TM\)| Processor", "", _budget_run()["cpu"]), target=_budget_run()["pocl_target"],
         date=_budget_run()["date"], ratios=" and ".join(f"{r:.2f}" for r in _budget_run()["step_ratios"]),
         verdict="they differ by more than that, so it gives no verdict" if _budget_run()["verdict"] == "unsettled"
         else f"they agree, and project {_budget_run()['projected_slowest_seconds']:.0f} s on the Zen 1, "
              f"{_budget_run()['verdict']} the target")),
    ("chapter-9.md", "1-minute load average of 1.0 to 2.1 on 2 cores",
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


@functools.cache
def _scratch_bpe():
    """(merges learned, {count: merges learned at it}, merges asked for) of Chapter 7's from-scratch BPE block."""
    scope = _run_quietly("snippets/chapter7/bpe_from_scratch.py")
    return len(scope["ranks"]) - 256, scope["counts"], scope["vocab_size"] - 256


def _algorithm_lines(path: str) -> int:
    """Lines between a snippet's ``--8<-- [start:algorithm]`` and ``[end:algorithm]`` markers."""
    lines = (doc_blocks.ROOT / path).read_text(encoding="utf-8").splitlines()
    start = next(i for i, line in enumerate(lines) if "[start:algorithm]" in line)
    end = next(i for i, line in enumerate(lines) if "[end:algorithm]" in line)
    return end - start - 1


def _run_quietly(path: str) -> dict:
    """The globals a snippet leaves, run without its prints."""
    import contextlib
    import io
    import runpy
    with contextlib.redirect_stdout(io.StringIO()):
        return runpy.run_path(str(doc_blocks.ROOT / path))


@functools.cache
def _sqrt_dk() -> dict:
    """The globals of Chapter 7's measured check of the scaling (two 100,000 x 512 draws): run once."""
    return _run_quietly("snippets/chapter7/sqrt_dk.py")


def _perplexity_counts() -> tuple[int, int]:
    """(tokens, predicted tokens) of Chapter 7's cross-entropy block."""
    scope = _run_quietly("snippets/chapter7/perplexity.py")
    return len(scope["ids"]), len(scope["predicted"])


def _last_sinusoid_turn() -> float:
    """The angle of the last pair of Chapter 7's sinusoid figure at its last position, from the library's table."""
    from netcl_lite.nn import sinusoidal_positions
    t = _snippet_constant("snippets/chapter7/figure_sinusoidal.py", "T")
    d = _snippet_constant("snippets/chapter7/figure_sinusoidal.py", "D")
    sin, cos = sinusoidal_positions(t, d)[-1, -2:]
    return math.atan2(sin, cos)


def _numpy_gpt_config():
    """The LMConfig keywords of the Concepts page's NumPy-model check, read from its source."""
    tree = ast.parse((doc_blocks.ROOT / "snippets/concepts/numpy_gpt.py").read_text(encoding="utf-8"))
    call = next(n for n in ast.walk(tree) if isinstance(n, ast.Call) and getattr(n.func, "id", "") == "LMConfig")
    return {k.arg: ast.literal_eval(k.value) for k in call.keywords}


def _capstone():
    from netcl_lite import capstone
    return capstone


def _cz():
    from netcl_lite import compression
    return compression


def _cm():
    from netcl_lite import context_mixing
    return context_mixing


def _header_bytes() -> int:
    """A coded blob's header for the largest input compress accepts (its length and token count at
    most ``MAX_INPUT_BYTES``), field by field: the largest header a blob can have."""
    cz, n = _cz(), _cz().MAX_INPUT_BYTES
    return (len(cz.MAGIC) + 2 + len(cz._varint(n)) + cz._CHECKSUM_BYTES + len(cz._varint(n))
            + cz._FINGERPRINT_BYTES + len(cz.PARTS) + cz._CRC.size)


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
    """Merges the byte-level tokenizer of Week 22's retest learns, from that block."""
    return len(_run_quietly("snippets/week22/retest_unicode.py")["merges"])


#: (page, the sentence as the page has it, the file whose ``assert`` backs it, that assert's message)
CLAIMS: list[tuple[str, str, str, str]] = [
    # Chapter 9: the training loop's replayed step
    ("chapter-9.md", "the same kernels with the same arguments, so the same bits",
     "tests/test_replay.py", "the replayed step gives the eager step's weights bit for bit"),
    # Chapter 8: the traffic model's readings, asserted where it prints them
    ("chapter-8.md", r"it rises with \(T\) toward \(d/b\)",
     "snippets/chapter8/traffic_model.py", "dense intensity rises with T"),
    ("chapter-8.md", r"it rises with \(T\) toward \(d/b\)",
     "snippets/chapter8/traffic_model.py", "dense intensity stays below d / b"),
    ("chapter-8.md", "and is lowest for short sequences",
     "snippets/chapter8/traffic_model.py", "dense intensity is low at short T"),
    ("chapter-8.md", "Short sequences do not make attention compute-bound; they make its intensity lower.",
     "snippets/chapter8/traffic_model.py", "dense intensity is low at short T"),
    ("chapter-8.md", "**Algorithm 1's order** levels off",
     "snippets/chapter8/traffic_model.py", "the tiled orders level off at their limits"),
    ("chapter-8.md", r"\approx M_{\text{fast}}/(3bd)\), which is \(M_{\text{fast}}/(12d)\) in fp32",
     "snippets/chapter8/traffic_model.py", "algorithm 1 levels off near M / (3 b d)"),
    ("chapter-8.md", r"**FlashAttention-2's order** levels off too, at \(2B_r/b \approx M_{\text{fast}}/(2bd)\)",
     "snippets/chapter8/traffic_model.py", "flashattention-2 levels off near M / (2 b d)"),
    ("chapter-8.md", r"has intensity \(T/b\), which grows without limit",
     "snippets/chapter8/traffic_model.py", "K, V in cache is T / b"),
    ("chapter-8.md", "That is a property of counting fp32 numbers in Algorithm 1's order, not of tiling",
     "snippets/chapter8/traffic_model.py", "at fp16 both tiled orders level off above dense"),
    ("chapter-8.md", "Traffic is the budget that, by the count below, sets the time of standard attention on a GPU.",
     "snippets/chapter8/traffic_model.py", "dense stays left of the A100 ridge"),
    ("chapter-8.md", r"stays left of the A100 ridge at every length, for \(d = 64\) and 128",
     "snippets/chapter8/traffic_model.py", "dense stays left of the A100 ridge"),
    ("chapter-8.md", "right of standard attention at every length",
     "snippets/chapter8/traffic_model.py", "dense stays left of the A100 ridge"),
    ("chapter-8.md", "On such a GPU the bytes saved would take longer to move than the arithmetic added takes to do",
     "snippets/chapter8/traffic_model.py", "dense stays left of the A100 ridge"),
    ("chapter-8.md", "puts standard attention left of the ridge at every length",
     "snippets/chapter8/traffic_model.py", "dense stays left of the A100 ridge"),
    ("chapter-8.md", r"falls toward one half as the tiles per side grow",
     "snippets/chapter8/exercise_causal_tiles.py", "the fraction falls toward one half"),
    ("chapter-8.md", "the dense methods' lines have slope about 2",
     "tests/test_benchmark_reports.py", "the dense methods' extra memory grows about as T squared"),
    ("chapter-8.md", "the streamed kernel's about 1",
     "tests/test_benchmark_reports.py", "flash's extra memory grows about in proportion to T"),
    # Chapter 7
    ("chapter-7.md", "No merge covers the emoji's or the Telugu's bytes, so each of those bytes stays a token of its own.",
     "snippets/chapter7/bpe_training.py", "each byte of the emoji and Telugu is a token"),
    ("chapter-7.md", "at least three times less for every kind of text in the recorded run",
     "tests/test_page_claims.py",
     "a whole file's batch call takes at least three times less CPU than tiktoken's batch call"),
    ("chapter-7.md", "That comparison flatters the device path: tiktoken's batch call runs eight threads, which in "
                     "that run cost it at least three times the CPU of its own loop of single calls.",
     "tests/test_page_claims.py", "tiktoken's threaded batch call costs it at least three times its loop's CPU"),
    ("chapter-7.md", "Against that loop, one batch call over a whole file used about half the CPU or less.",
     "tests/test_page_claims.py", "a whole file's batch call takes about half the CPU of tiktoken's loop, or less"),
    ("chapter-7.md", "which joined would be the one token `hello`",
     "snippets/chapter7/bpe_batch.py", "joined, hel and lo would merge"),
    ("chapter-7.md", "the block asserts that both return what single calls return",
     "snippets/chapter7/bpe_batch.py", "the batch returns what single calls return"),
    ("chapter-7.md", r"Reordering both \(\mathbf{q}\) and \(\mathbf{k}\) the same way leaves every score unchanged",
     "snippets/chapter7/rope_pairings.py", "the same reorder of q and k leaves every score unchanged"),
    ("chapter-7.md", "Without that reordering the same weights give different scores",
     "snippets/chapter7/rope_pairings.py", "without the reorder the scores differ"),
    ("chapter-7.md", "most merges here are learned at a count that other merges share",
     "snippets/chapter7/bpe_from_scratch.py", "most merges share their count with another merge"),
    ("chapter-7.md", "Without their `##`, the pieces of a segmented word spell it again.",
     "snippets/chapter7/wordpiece.py", "without their ##, the pieces spell the word again"),
    ("chapter-7.md", "`unable` is `[UNK]` although `un ##able` would cover it",
     "snippets/chapter7/wordpiece.py", "unable is [UNK] although un ##able would cover it"),
    ("chapter-7.md", "The function below is that rule, with nothing else around it; the block checks it against "
                     "`netcl_lite.text.WordPiece`",
     "snippets/chapter7/wordpiece.py", "netcl_lite.text.WordPiece follows the same rule"),
    ("chapter-7.md", "The block checks its Viterbi function against a search over every segmentation, and against "
                     "`netcl_lite.text.Unigram`",
     "snippets/chapter7/three_segmenters.py", "Viterbi finds the best"),
    ("chapter-7.md", "The block checks its Viterbi function against a search over every segmentation, and against "
                     "`netcl_lite.text.Unigram`",
     "snippets/chapter7/three_segmenters.py", "netcl_lite.text.Unigram agrees"),
    ("chapter-7.md", "On `played` and `players` the three agree",
     "snippets/chapter7/three_segmenters.py", "the three rules agree on played and players"),
    ("chapter-7.md", "On `displays` and `disliked`, BPE alone differs.",
     "snippets/chapter7/three_segmenters.py", "on displays and disliked BPE alone differs"),
    ("chapter-7.md", "the merges that make `plays` and `ed` come before those that make `display`",
     "snippets/chapter7/three_segmenters.py",
     "the merges that make plays and ed come before those that make display and dislike"),
    ("chapter-7.md", "On `redisplay`, Unigram alone differs",
     "snippets/chapter7/three_segmenters.py", "on redisplay Unigram alone differs"),
    ("chapter-7.md", "finds `r + e + display` more probable than `red + i + s + play`",
     "snippets/chapter7/three_segmenters.py", "r + e + display is more probable than red + i + s + play"),
    ("chapter-7.md", "A fraction of a percent (the block asserts it stays under 1%)",
     "snippets/chapter7/sqrt_dk.py", "beyond 35 lies a fraction of a percent of pairs"),
    ("chapter-7.md", "its tail is a little heavier than a normal distribution's",
     "snippets/chapter7/sqrt_dk.py", "the exact tail is a little heavier than the normal one"),
    ("chapter-7.md", "the measured share lies within four standard errors of the exact one",
     "snippets/chapter7/sqrt_dk.py", "the measured share matches the exact one"),
    ("chapter-7.md", "unscaled logits put on average more than 90% of a row's weight on one key (the block asserts it)",
     "snippets/chapter7/softmax_saturation.py", "unscaled, one key takes over 90% of a row"),
    ("chapter-7.md", "Self-attention without positions or masks is therefore permutation-**equivariant**",
     "snippets/chapter7/permutation.py", "without a mask, the outputs follow the permutation"),
    ("chapter-7.md", "A causal mask breaks the symmetry, because it is tied to positions",
     "snippets/chapter7/permutation.py", "a causal mask breaks the symmetry"),
    ("chapter-7.md", "the three dot products at offset 3 agree with each other and with the sum of cosines",
     "snippets/chapter7/sinusoidal.py", "the dot products at offset 3 agree with the sum of cosines"),
    ("chapter-7.md", r"The score depends on the positions only through the offset \(j - i\).",
     "snippets/chapter7/rope_identity.py", "the score depends on the positions only through the offset"),
    ("chapter-7.md", "`ops.cross_entropy` returns the mean of the definition, computed term by term",
     "snippets/chapter7/perplexity.py", "ops.cross_entropy is the mean over the predicted tokens"),
    ("chapter-7.md", r"a model that knows nothing, uniform over \(V\) ids, has perplexity exactly \(V\)",
     "snippets/chapter7/perplexity.py", "a uniform model's perplexity is V"),
    # Week 22
    ("week-22.md", "on `displays` BPE alone differs (the merge that makes `plays` comes before the one that would "
                   "make `display`)",
     "snippets/chapter7/three_segmenters.py", "on displays and disliked BPE alone differs"),
    ("week-22.md", "on `redisplay` Unigram alone differs",
     "snippets/chapter7/three_segmenters.py", "on redisplay Unigram alone differs"),
    ("week-22.md", "close to the normal approximation (Chapter 7 computes the exact share, a little larger)",
     "snippets/chapter7/sqrt_dk.py", "the exact tail is a little heavier than the normal one"),
    ("week-22.md", "close to the normal approximation (Chapter 7 computes the exact share, a little larger)",
     "snippets/week22/drill_3_attention.py", "close to the normal approximation"),
    ("week-22.md", "what does hold is that unscaled scores spread wider as \\(d_k\\) grows, which pushes the softmax "
                   "toward one-hot",
     "snippets/week22/drill_3_attention.py", "unscaled, the largest weight grows toward 1 with d"),
    ("week-22.md", "close to the normal approximation for an event more than three standard deviations out",
     "snippets/week22/drill_3_attention.py", "close to the normal approximation"),
    ("week-22.md", "Unscaled scores push the largest softmax weight toward 1 as \\(d\\) grows",
     "snippets/week22/drill_3_attention.py", "unscaled, the largest weight grows toward 1 with d"),
    ("week-22.md", "while scaled ones stay put (the block asserts both)",
     "snippets/week22/drill_3_attention.py", "scaled, the largest weight stays put"),
    ("week-22.md", "lies a fraction of a percent of pairs (the block asserts under 1%)",
     "snippets/week22/drill_3_attention.py", "a fraction of a percent: rare, not routine"),
    ("week-22.md", "Without a mask the outputs follow the permutation (equivariance)",
     "snippets/week22/drill_3_attention.py", "without a mask the outputs follow the permutation"),
    ("week-22.md", "with a causal mask they do not",
     "snippets/week22/drill_3_attention.py", "with a causal mask the outputs do not follow the permutation"),
    ("week-22.md", "The RoPE scores are constant along each diagonal",
     "snippets/week22/drill_3_attention.py", "constant along each diagonal"),
    ("week-22.md", "the pair at positions (100, 103) scores the same as the pair at (0, 3)",
     "snippets/week22/drill_3_attention.py", "(100, 103) scores as (0, 3)"),
    ("week-22.md", "all 12 words survive", "snippets/week22/drill_1_merges.py", "all 12 words survive"),
    ("week-22.md", "Every sample round-trips exactly", "snippets/week22/drill_2_byte_bpe.py",
     "every sample round-trips exactly"),
    ("week-22.md", "round-trips text it never saw", "snippets/week22/retest_unicode.py", "text it never saw round-trips"),
    ("week-22.md", "Eight KV groups cut these counts by exactly eight (the block asserts it)",
     "snippets/week22/drill_4_budgets.py", "eight KV groups cut the count by exactly eight"),
    ("week-22.md", "each layout is a straight line of slope 1", "tests/test_page_claims.py",
     "each layout is a straight line of slope 1: twice the length, twice the bytes"),
    ("week-22.md", "GQA's 8 groups sit 8 times below MHA and MQA's single head 64 times below",
     "tests/test_page_claims.py", "GQA's 8 groups sit 8 times below MHA and MQA's single head 64 times below"),
    # Week 23
    ("week-23.md", "Cooling lowers the entropy and heating raises it", "snippets/week23/drill_2_decoding.py",
     "cooling lowers the entropy and heating raises it"),
    ("week-23.md", "while the ranking stays the same (the block asserts both)", "snippets/week23/drill_2_decoding.py",
     "temperature keeps the ranking"),
    ("week-23.md", r"\(p = 0.55\) keeps only the first", "snippets/week23/drill_2_decoding.py",
     "k=2 then p=0.55 keeps only the first token"),
    ("week-23.md", "beam search can find a sequence with a higher joint probability than greedy",
     "snippets/week23/drill_2_decoding.py", "the best joint sequence is not the greedy one"),
    ("week-23.md", "beam search can find a sequence with a higher joint probability than greedy",
     "snippets/week23/drill_2_decoding.py", "beam width 2 finds the best joint sequence"),
    ("week-23.md", "At 10 million units the small model's extra training has not paid back yet",
     "snippets/week23/drill_3_compute.py", "at 10 million units the small one has not paid back"),
    ("week-23.md", "the small model costs about half as much over its life (the block asserts both)",
     "snippets/week23/drill_3_compute.py", "at 100 million units the small model costs about half as much"),
    ("week-23.md", "give ratios that span three orders of magnitude", "snippets/week23/drill_3_compute.py",
     "the ratios span three orders of magnitude"),
    ("week-23.md", r"in float64 the differences stay under the \(10^{-12}\) the block asserts",
     "snippets/week23/drill_4_streamed.py", "float64: streamed equals dense to 1e-12 for every block size"),
    ("week-23.md", "the kernel matches dense attention to float32 rounding", "snippets/week23/drill_4_streamed.py",
     "the kernel matches dense attention to float32 rounding"),
    # Concepts
    ("concepts/transformer.md", "The post-norm block's output is normalized by construction (its RMS is 1, the block "
                                "asserts it",
     "snippets/concepts/pre_post_norm.py", "the post-norm output has RMS 1"),
    ("concepts/transformer.md", "The saving is exactly one \\(V \\times D\\) matrix",
     "snippets/concepts/weight_tying.py", "tying saves exactly one V x D matrix"),
    ("concepts/transformer.md", "token-by-token decoding through the cache reproduces the full forward",
     "snippets/concepts/kv_cache_decode.py", "cached decoding reproduces the full forward"),
    ("concepts/transformer.md", "the block asserts that every gap stays under \\(10^{-4}\\)",
     "snippets/concepts/numpy_gpt.py", "every gap stays under 1e-4"),
    # Chapter 9
    ("chapter-9.md", "on the validation text the mixed file is within 0.2% of its cross-entropy",
     "snippets/chapter9/mixing.py", "the file is within 0.2% of the mix's cross-entropy"),
    ("chapter-9.md", "its file needs more bits than primed PPMd's and primed zpaq's (the block prints the two "
                     "ratios, file over file, and asserts that each exceeds 1)",
     "snippets/chapter9/coders.py", "the model alone needs more bits than PPMd, zpaq"),
    ("chapter-9.md", "the mixed file needs at most 0.97 times primed zpaq's bits on the test text",
     "snippets/chapter9/coders.py", "the mixed file is at most BOUND times primed zpaq's"),
    ("chapter-9.md", "Priming changes every coder's result, `bz2`'s too",
     "snippets/chapter9/coders.py", "priming changes every coder's result"),
    ("chapter-9.md", "adapting the model as it codes makes it smaller still (the block asserts both",
     "snippets/chapter9/coders.py", "adapting makes the mixed file smaller"),
    ("chapter-9.md", "with them the file is larger than the text",
     "snippets/chapter9/coders.py", "file and weights outgrow the text"),
    ("chapter-9.md", "which `tests/test_train.py` checks bit for bit on one thread and two",
     "tests/test_train.py", "one and two threads train the same weights, bit for bit"),
    ("chapter-9.md", "needed more bits on the validation split than the linear mix it was meant to improve",
     "tests/test_context_mixing.py", "the binary decomposition needs more bits than the linear mix"),
    ("chapter-9.md", "Geometric mixing needs fewer bits than the linear mix",
     "snippets/chapter9/mixing.py", "geometric mixing needs fewer bits than linear"),
    ("chapter-9.md", "each technique left out of the whole mix costs bits",
     "snippets/chapter9/mixing.py", "each technique left out of the whole mix costs bits"),
    ("chapter-9.md", "the streams' own recent tokens are worth the most",
     "snippets/chapter9/mixing.py", "the streams' own tokens are worth most"),
    ("chapter-9.md", "Secondary estimation added right after geometric mixing gains less than 0.01%",
     "snippets/chapter9/mixing.py", "secondary estimation alone gains nothing"),
    ("chapter-9.md", "Dynamic evaluation lowers the model's bits",
     "snippets/chapter9/mixing.py", "dynamic evaluation lowers the model's bits"),
    ("chapter-9.md", "and, less, the whole mix's",
     "snippets/chapter9/mixing.py", "dynamic evaluation gains less on the mix than on the model"),
    ("chapter-9.md", "and, less, the whole mix's",
     "snippets/chapter9/mixing.py", "dynamic evaluation lowers the whole mix's bits"),
    ("chapter-9.md", "The whole mix's file is smaller than primed zpaq's on validation",
     "snippets/chapter9/mixing.py", "the mixed file is smaller than primed zpaq's on validation"),
    # Chapter 9 outside section 7
    ("chapter-9.md", "these seeds do not tell the 20% decay from the committed one",
     "tests/test_capstone.py", "these seeds do not tell the 20 % decay from the committed one"),
    ("chapter-9.md", "Each schedule that decays from the end of the warmup needs more bits than the committed one, and "
                     "the test tells each apart",
     "tests/test_capstone.py", "each schedule that decays from the end of the warmup needs more bits than the committed one"),
    ("chapter-9.md", "needs fewer bits on this model than every\nschedule that decays from the end of the warmup",
     "tests/test_capstone.py", "each schedule that decays from the end of the warmup needs more bits than the committed one"),
    ("chapter-9.md", "the cosine to zero needs more bits than the cosine to a tenth",
     "tests/test_capstone.py", "the cosine to zero needs more bits than the cosine to a tenth"),
    ("chapter-9.md", "and a cosine to zero more than a\ncosine to a tenth",
     "tests/test_capstone.py", "the cosine to zero needs more bits than the cosine to a tenth"),
    ("chapter-9.md", "none of the ten is\ntold apart from seed noise",
     "tests/test_page_claims.py", "corrected for the ten comparisons, none is told apart"),
    ("chapter-9.md", "taken together, three seeds establish none of these orders",
     "tests/test_page_claims.py", "corrected for the ten comparisons, none is told apart"),
    ("chapter-9.md", "(+0.0093 ± 0.0017) and than the 20% decay",
     "tests/test_capstone.py", "the cosine to zero needs more bits than the 20 % decay"),
    ("chapter-9.md", "the other pairs are not told apart",
     "tests/test_capstone.py", "the other pairs are not told apart"),
    ("chapter-9.md", "not even test by test",
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
    ("chapter-9.md", "they agree, and project 190 s on the Zen 1, within the target",
     "tests/test_capstone.py", "the rounds agree"),
    ("chapter-9.md", "they agree, and project 190 s on the Zen 1, within the target",
     "tests/test_capstone.py", "the verdict is the projection against the budget"),
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
    ("chapter-9.md", "`generate` runs a cached step as one fused kernel instead, for the embedding, up to four layers and the head",
     "snippets/chapter9/generation_speed.py", "one fused kernel per four layers"),
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
    return any(isinstance(f, ast.FunctionDef) and f.name.startswith("test")
               and any(isinstance(n, ast.Assert) and n.lineno == node.lineno for n in ast.walk(f))
               for f in ast.walk(tree))   # a fresh parse: the same assert is the one on the same line


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
