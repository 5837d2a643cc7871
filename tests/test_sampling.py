import math

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from netcl_lite.sampling import beam_search, distribution, greedy, sample

LOGITS = np.log([0.4, 0.3, 0.2, 0.1])

# The two-step toy model from the Week 23 sheet: tokens A = 0, B = 1, prefixes start with BOS = 9.
A, B, BOS = 0, 1, 9
TOY = {(BOS,): [0.6, 0.4], (BOS, A): [0.51, 0.49], (BOS, B): [0.99, 0.01]}


def toy_step(prefix):
    return np.log(TOY[prefix])


@pytest.mark.parametrize(
    "kwargs, expected",
    [
        ({"top_k": 2}, [4 / 7, 3 / 7, 0, 0]),
        ({"top_k": 2, "top_p": 0.55}, [1, 0, 0, 0]),  # renormalized 4/7 already reaches 0.55
        ({"top_p": 1}, [0.4, 0.3, 0.2, 0.1]),
        ({"top_p": 0.6}, [4 / 7, 3 / 7, 0, 0]),
        ({"top_p": 0.7}, [4 / 7, 3 / 7, 0, 0]),  # 0.4 + 0.3 reaches 0.7 exactly: keep two, not three
        ({"top_p": 0.4}, [1, 0, 0, 0]),
        ({"top_k": 4}, [0.4, 0.3, 0.2, 0.1]),
    ],
)
def test_sheet_filters(kwargs, expected):
    np.testing.assert_allclose(distribution(LOGITS, **kwargs), expected, rtol=0, atol=1e-15)


def test_renormalizing_before_top_p_differs_from_the_unrenormalized_variant():
    # The other convention by hand: keep the top 2 of [.4, .3, .2, .1] without renormalizing, then
    # take the shortest prefix whose mass reaches 0.55: 0.4 falls short, so both survive.
    remainder = np.array([0.4, 0.3, 0.0, 0.0])
    size = int(np.searchsorted(np.cumsum(remainder), 0.55)) + 1
    assert size == 2
    np.testing.assert_allclose(remainder * (np.arange(4) < size) / remainder[:size].sum(), [4 / 7, 3 / 7, 0, 0])
    assert distribution(LOGITS, top_k=2, top_p=0.55).tolist() == [1.0, 0.0, 0.0, 0.0]


@pytest.mark.parametrize(
    "logits, top_k, expected",
    [([0, 0, 0], 2, [0.5, 0.5, 0]), ([0, 0, 0], 1, [1, 0, 0]), ([1, 0, 1, 1], 2, [0.5, 0, 0.5, 0])],
)
def test_top_k_ties_keep_lower_index(logits, top_k, expected):
    np.testing.assert_allclose(distribution(logits, top_k=top_k), expected, atol=1e-15)


def test_top_p_mass_reached_up_to_rounding():
    # softmax(log([.6, .3, .05, .05]))[0] computes as 0.5999999999999999; it still reaches top_p=0.6.
    assert distribution(np.log([0.6, 0.3, 0.05, 0.05]), top_p=0.6).tolist() == [1.0, 0.0, 0.0, 0.0]


def test_top_p_ties_keep_lower_index():
    # Each of four equal tokens holds 0.25; p = 0.5 needs exactly the first two.
    np.testing.assert_allclose(distribution([0, 0, 0, 0], top_p=0.5), [0.5, 0.5, 0, 0], atol=1e-15)


@pytest.mark.parametrize("temperature", [0.5, 2.0])
def test_temperature_matches_hand_formula(temperature):
    # softmax(log(p) / T) = p**(1/T) / sum(p**(1/T))
    powered = np.array([0.4, 0.3, 0.2, 0.1]) ** (1 / temperature)
    np.testing.assert_allclose(distribution(LOGITS, temperature=temperature), powered / powered.sum(), rtol=1e-14)


def test_temperature_half_worked_values():
    # p**2 / sum(p**2): sum = .16 + .09 + .04 + .01 = .30
    np.testing.assert_allclose(distribution(LOGITS, temperature=0.5), [16 / 30, 9 / 30, 4 / 30, 1 / 30], rtol=1e-14)


def test_extreme_logits_and_tiny_temperature_stay_finite():
    probs = distribution([1e308, -1e308, 0.0], temperature=1e-300)
    assert probs.tolist() == [1.0, 0.0, 0.0]


def test_greedy_ties_go_to_lowest_index():
    assert greedy([2, 5, 5, 1]) == 1
    assert greedy(np.array([-1.0])) == 0


def test_greedy_sequence_is_not_the_best_joint_path():
    prefix = (BOS,)
    for _ in range(2):
        prefix += (greedy(toy_step(prefix)),)
    greedy_prob = 0.6 * 0.51
    joint = {(a, b): TOY[(BOS,)][a] * TOY[(BOS, a)][b] for a in (A, B) for b in (A, B)}
    assert prefix[1:] == (A, A) and math.isclose(joint[(A, A)], greedy_prob)
    assert max(joint, key=joint.get) == (B, A) and math.isclose(joint[(B, A)], 0.396)
    assert math.isclose(greedy_prob, 0.306)


def test_beam_search_finds_the_best_joint_path():
    best, *rest = beam_search(toy_step, beam_width=2, max_steps=2, bos=BOS)
    assert best.tokens == (B, A)
    assert math.isclose(math.exp(best.log_prob), 0.4 * 0.99)
    assert [h.tokens for h in rest] == [(A, A)]  # AA (0.306) beats AB (0.294) for the second slot


def test_beam_width_one_is_greedy():
    [only] = beam_search(toy_step, beam_width=1, max_steps=2, bos=BOS)
    assert only.tokens == (A, A) and math.isclose(math.exp(only.log_prob), 0.306)


def test_beam_search_eos_and_length_penalty():
    # Token 0 is EOS. From BOS: stop now (0.5) or continue with token 1 (0.5), then token 1 again (1.0) ...
    def step(prefix):
        return np.log([0.5, 0.5]) if len(prefix) == 1 else np.log([0.4, 0.6])

    raw = beam_search(step, beam_width=2, max_steps=3, bos=9, eos=0)
    assert raw[0].tokens == (0,) and math.isclose(raw[0].log_prob, math.log(0.5))
    normalized = beam_search(step, beam_width=2, max_steps=3, bos=9, eos=0, length_penalty=1.0)
    best = normalized[0]
    assert best.tokens == (1, 1, 1)  # per-token log-prob (log .5 + 2 log .6) / 3 beats log .5
    assert math.isclose(best.score, (math.log(0.5) + 2 * math.log(0.6)) / 3)
    assert [h.score for h in normalized] == sorted((h.score for h in normalized), reverse=True)


def test_beam_search_stops_when_every_beam_finished():
    calls = []

    def step(prefix):
        calls.append(prefix)
        return np.log([1.0, 0.0]) if len(prefix) == 1 else np.log([0.5, 0.5])

    with np.errstate(divide="ignore"):
        hypotheses = beam_search(step, beam_width=3, max_steps=10, bos=7, eos=0)
    assert [h.tokens for h in hypotheses] == [(0,)] and calls == [(7,)]


def test_sample_is_reproducible_and_never_draws_filtered_tokens():
    def draws(seed, **kwargs):
        rng = np.random.default_rng(seed)
        return [sample(LOGITS, rng, **kwargs) for _ in range(200)]

    assert draws(5) == draws(5)
    assert set(draws(5, top_k=2)) == {0, 1}
    assert set(draws(5, top_k=2, top_p=0.55)) == {0}


def test_sample_frequencies_match_distribution():
    # Pearson chi-square with 3 degrees of freedom: a correct sampler exceeds 16.27 with probability
    # 0.001, so with a fixed seed this is a deterministic check that would catch a skewed sampler
    # (e.g. an off-by-one in the cumulative sum shifts whole 0.1 masses: statistic in the thousands).
    n = 20_000
    rng = np.random.default_rng(2024)
    expected = distribution(LOGITS, temperature=2.0)
    counts = np.bincount([sample(LOGITS, rng, temperature=2.0) for _ in range(n)], minlength=4)
    chi_square = float((((counts - n * expected) ** 2) / (n * expected)).sum())
    assert chi_square < 16.27, (counts, n * expected)


# Properties --------------------------------------------------------------------------------------

logit_values = st.one_of(st.integers(-3, 3).map(float), st.floats(-40, 40))  # integers make ties


@st.composite
def filter_settings(draw):
    logits = draw(st.lists(logit_values, min_size=1, max_size=10))
    return {
        "logits": logits,
        "temperature": draw(st.floats(0.05, 20)),
        "top_k": draw(st.none() | st.integers(1, len(logits))),
        "top_p": draw(st.none() | st.floats(0, 1, exclude_min=True)),
    }


@settings(max_examples=300, deadline=None)
@given(filter_settings())
def test_distribution_properties(case):
    logits = np.array(case["logits"])
    probs = distribution(**case)
    assert probs.shape == logits.shape and probs.dtype == np.float64
    assert abs(probs.sum() - 1) <= 1e-12
    assert (probs >= 0).all()
    higher = logits[:, None] > logits[None, :]
    # A higher logit never ends with a lower probability, whether kept or dropped.
    assert not (higher & (probs[:, None] < probs[None, :])).any()
    unfiltered = distribution(logits, case["temperature"])
    kept = probs > 0
    # Never keep a token while dropping a strictly more probable one.
    assert not ((unfiltered[:, None] > unfiltered[None, :]) & ~kept[:, None] & kept[None, :]).any()
    if case["top_k"] is not None:
        assert kept.sum() <= case["top_k"]


@settings(max_examples=200, deadline=None)
@given(st.lists(logit_values, min_size=1, max_size=10), st.floats(0, 1, exclude_min=True))
def test_top_p_keeps_the_smallest_prefix(logits, top_p):
    unfiltered = distribution(logits)
    kept = distribution(logits, top_p=top_p) > 0
    kept_probs = np.sort(unfiltered[kept])[::-1]
    assert kept_probs.sum() >= top_p - 2e-12
    if top_p < 1:  # top_p = 1 keeps everything (1 - 3e-17 rounds to 1, so a float check could not tell)
        assert kept_probs[:-1].sum() < top_p  # dropping the least likely kept token falls short of p


# Bad input ---------------------------------------------------------------------------------------

@pytest.mark.parametrize(
    "logits, kwargs, error, match",
    [
        ([], {}, ValueError, "logits is empty"),
        ([[0.0, 1.0]], {}, ValueError, "logits must be 1-D"),
        (5.0, {}, ValueError, "logits must be 1-D"),
        ([0.0, np.nan], {}, ValueError, "logits must be finite"),
        ([0.0, -np.inf], {}, ValueError, "logits must be finite"),
        (["a", "b"], {}, TypeError, "logits must be real"),
        ([True, False], {}, TypeError, "logits must be real"),
        (LOGITS, {"temperature": 0}, ValueError, "temperature 0.*greedy"),
        (LOGITS, {"temperature": -1.0}, ValueError, "temperature must be a positive finite number"),
        (LOGITS, {"temperature": np.inf}, ValueError, "temperature must be a positive finite number"),
        (LOGITS, {"temperature": np.nan}, ValueError, "temperature must be a positive finite number"),
        (LOGITS, {"temperature": "hot"}, TypeError, "temperature must be a real number"),
        (LOGITS, {"temperature": True}, TypeError, "temperature must be a real number"),
        (LOGITS, {"top_k": 0}, ValueError, r"top_k must be in \[1, 4\]"),
        (LOGITS, {"top_k": 5}, ValueError, r"top_k must be in \[1, 4\]"),
        (LOGITS, {"top_k": 2.0}, TypeError, "top_k must be an int"),
        (LOGITS, {"top_k": True}, TypeError, "top_k must be an int"),
        (LOGITS, {"top_p": 0}, ValueError, r"top_p must be in \(0, 1\]"),
        (LOGITS, {"top_p": 1.5}, ValueError, r"top_p must be in \(0, 1\]"),
        (LOGITS, {"top_p": np.nan}, ValueError, r"top_p must be in \(0, 1\]"),
        (LOGITS, {"top_p": "0.9"}, TypeError, "top_p must be a real number"),
    ],
)
def test_distribution_rejects_bad_input(logits, kwargs, error, match):
    with pytest.raises(error, match=match):
        distribution(logits, **kwargs)


def test_greedy_and_sample_reject_bad_input():
    with pytest.raises(ValueError, match="logits must be finite"):
        greedy([0.0, np.inf])
    with pytest.raises(TypeError, match="rng must be a numpy.random.Generator"):
        sample(LOGITS, np.random.RandomState(0))
    with pytest.raises(TypeError, match="rng must be a numpy.random.Generator"):
        sample(LOGITS, 0)
    with pytest.raises(ValueError, match="greedy"):
        sample(LOGITS, np.random.default_rng(0), temperature=0)


@pytest.mark.parametrize(
    "kwargs, error, match",
    [
        ({"beam_width": 0}, ValueError, "beam_width must be >= 1"),
        ({"beam_width": 2.0}, TypeError, "beam_width must be an int"),
        ({"max_steps": 0}, ValueError, "max_steps must be >= 1"),
        ({"max_steps": True}, TypeError, "max_steps must be an int"),
        ({"bos": "BOS"}, TypeError, "bos must be an int"),
        ({"eos": 1.0}, TypeError, "eos must be an int"),
        ({"length_penalty": -1.0}, ValueError, "length_penalty must be a non-negative finite number"),
        ({"length_penalty": "long"}, TypeError, "length_penalty must be a real number"),
        ({"step_fn": "model"}, TypeError, "step_fn must be callable"),
        ({"step_fn": lambda prefix: [0.6, 0.4]}, ValueError, "step_fn must return natural-log probabilities"),
        ({"step_fn": lambda prefix: [[0.0]]}, ValueError, "step_fn must return a non-empty 1-D"),
        ({"step_fn": lambda prefix: [0.0, np.nan]}, ValueError, "step_fn returned NaN"),
    ],
)
def test_beam_search_rejects_bad_input(kwargs, error, match):
    arguments = {"step_fn": toy_step, "beam_width": 2, "max_steps": 2, "bos": BOS, **kwargs}
    with pytest.raises(error, match=match):
        beam_search(**arguments)
