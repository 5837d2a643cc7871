import math

import pytest

from netcl_lite.scaling import allocation, break_even, lifetime_cost, training_compute


@pytest.mark.parametrize("compute", [1e21, 1e23, 1e24, 1e25])
def test_allocation_spends_the_budget_at_ratio_20(compute):
    parameters, tokens = allocation(compute)
    assert math.isclose(training_compute(parameters, tokens), compute, rel_tol=1e-12)
    assert math.isclose(tokens / parameters, 20, rel_tol=1e-12)


def test_hundred_times_compute_is_ten_times_each():
    n1, d1 = allocation(1e21)
    n2, d2 = allocation(1e23)
    assert math.isclose(n2 / n1, 10, rel_tol=1e-12) and math.isclose(d2 / d1, 10, rel_tol=1e-12)


def test_other_ratio():
    parameters, tokens = allocation(6e6, tokens_per_parameter=1)
    assert math.isclose(parameters, 1000) and math.isclose(tokens, 1000)


def test_training_compute():
    assert training_compute(70e9, 1.4e12) == pytest.approx(5.88e23, rel=1e-12)
    assert training_compute(2, 3) == 36


def test_sheet_break_even():
    # Large model: trains for 100, serves at 4 per million units; small: 160 and 1.
    assert break_even(100, 160, 4, 1) == 20
    assert break_even(160, 100, 1, 4) == 20  # symmetric in the pair


@pytest.mark.parametrize("millions, large, small", [(10, 140, 170), (20, 180, 180), (100, 500, 260)])
def test_sheet_lifetime_costs(millions, large, small):
    assert lifetime_cost(100, 4, millions) == large
    assert lifetime_cost(160, 1, millions) == small


def test_lifetime_costs_cross_at_break_even():
    units = break_even(100.0, 163.0, 4.5, 1.25)
    assert math.isclose(lifetime_cost(100.0, 4.5, units), lifetime_cost(163.0, 1.25, units))


@pytest.mark.parametrize(
    "costs",
    [
        (100, 160, 4, 4),  # same serving cost: the gap in training cost never closes
        (100, 160, 1, 4),  # a trains cheaper and serves cheaper: a always wins
        (160, 100, 4, 1),  # b trains cheaper and serves cheaper: b always wins
        (100, 100, 2, 2),  # identical
    ],
)
def test_no_break_even_is_none(costs):
    assert break_even(*costs) is None


def test_equal_training_cost_breaks_even_at_zero():
    result = break_even(100, 100, 1, 4)
    assert result == 0 and math.copysign(1, result) == 1


@pytest.mark.parametrize(
    "call, error, match",
    [
        (lambda: allocation(0), ValueError, "compute must be a positive finite number"),
        (lambda: allocation(-1e21), ValueError, "compute must be a positive finite number"),
        (lambda: allocation(1e21, tokens_per_parameter=0), ValueError, "tokens_per_parameter must be a positive finite number"),
        (lambda: allocation(1e21, tokens_per_parameter=-20), ValueError, "tokens_per_parameter must be a positive finite number"),
        (lambda: allocation(math.inf), ValueError, "compute must be a positive finite number"),
        (lambda: allocation("1e21"), TypeError, "compute must be a real number"),
        (lambda: allocation(True), TypeError, "compute must be a real number"),
        (lambda: training_compute(0, 1e12), ValueError, "parameters must be a positive finite number"),
        (lambda: training_compute(1e9, math.nan), ValueError, "tokens must be a positive finite number"),
        (lambda: lifetime_cost(-1, 4, 10), ValueError, "train must be a non-negative finite number"),
        (lambda: lifetime_cost(100, 4, -10), ValueError, "units must be a non-negative finite number"),
        (lambda: lifetime_cost(100, None, 10), TypeError, "per_unit must be a real number"),
        (lambda: break_even(-100, 160, 4, 1), ValueError, "train_cost_a must be a non-negative finite number"),
        (lambda: break_even(100, 160, 4, -1), ValueError, "serve_cost_per_unit_b must be a non-negative finite number"),
    ],
)
def test_bad_input_is_rejected(call, error, match):
    with pytest.raises(error, match=match):
        call()
