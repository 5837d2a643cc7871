"""Back-of-envelope training compute, fixed-ratio allocation and lifetime-cost break-even.

These are heuristics with stated assumptions, not laws:

- C ~= 6 * N * D (FLOPs) for a dense transformer with N parameters trained on D tokens. It omits
  attention's sequence-length term, embedding details, optimizer and hardware effects; it is not a
  wall-clock or money formula and needs adjusting for other architectures, lengths and sparsity.
- D = r * N with r ~= 20 tokens per parameter echoes Chinchilla's fit for its own regime (its 70B
  model on 1.4T tokens). Data quality, repeated tokens, tokenizer and context length move the
  preferred ratio; it is a starting point, not a constant.
- Break-even compares cost only, assuming both models meet the quality bar.
"""

import math

from .checks import nonnegative_real, positive_real, real


def training_compute(parameters, tokens):
    """Approximate training FLOPs: 6 * parameters * tokens (dense transformer; see module doc).

    >>> training_compute(70e9, 1.4e12)
    5.88e+23
    """
    return 6 * _positive("parameters", parameters) * _positive("tokens", tokens)


def allocation(compute, tokens_per_parameter=20):
    """(parameters N, tokens D) that spend `compute` FLOPs at a fixed ratio D = r * N under C = 6ND.

    N = sqrt(C / (6 r)), D = r N; 100x the compute gives 10x each. A heuristic (see module doc).

    >>> [f"{x:.3g}" for x in allocation(1e21)]
    ['2.89e+09', '5.77e+10']
    """
    ratio = _positive("tokens_per_parameter", tokens_per_parameter)
    parameters = math.sqrt(_positive("compute", compute) / (6 * ratio))
    return parameters, ratio * parameters


def lifetime_cost(train, per_unit, units):
    """Training cost plus serving cost: train + per_unit * units (one currency; units as you count them).

    >>> lifetime_cost(100, 4, 20), lifetime_cost(160, 1, 20)
    (180, 180)
    """
    return _nonnegative("train", train) + _nonnegative("per_unit", per_unit) * _nonnegative("units", units)


def break_even(train_cost_a, train_cost_b, serve_cost_per_unit_a, serve_cost_per_unit_b):
    """Serving units at which models a and b have equal lifetime cost: (train_b - train_a) / (serve_a - serve_b).

    Past that many units the cheaper-to-serve model is cheaper overall. Returns 0.0 when both cost the
    same to train, and None when there is no crossing: equal per-unit costs, or one model is no more
    expensive to train and no more expensive to serve. Units are whatever the per-unit costs count.

    >>> break_even(100, 160, 4, 1)  # large trains for 100, serves at 4; small: 160 and 1
    20.0
    """
    train_a = _nonnegative("train_cost_a", train_cost_a)
    train_b = _nonnegative("train_cost_b", train_cost_b)
    serve_a = _nonnegative("serve_cost_per_unit_a", serve_cost_per_unit_a)
    serve_b = _nonnegative("serve_cost_per_unit_b", serve_cost_per_unit_b)
    if serve_a == serve_b:
        return None
    units = (train_b - train_a) / (serve_a - serve_b)
    return None if units < 0 else abs(units)  # abs: 0 / negative is -0.0


def _nonnegative(name, value):
    real(name, value)
    nonnegative_real(name, value)
    return value


def _positive(name, value):
    real(name, value)
    positive_real(name, value)
    return value
