"""Turning next-token logits into a choice: temperature, top-k, top-p, greedy, sampling, beam search.

Host-side NumPy, float64 throughout. `distribution` applies its filters in one fixed order:

    temperature -> top-k -> renormalize -> top-p -> renormalize

Tokens are ranked by logit (a positive temperature never changes that order), and equal logits rank
the lower token index first. Top-k keeps exactly the first k of that ranking. Top-p then keeps the
shortest prefix of the same ranking whose *renormalized* probability mass reaches p.

Implementations differ on both choices, and the difference shows on small cases:

- Renormalize before top-p. With logits log([.4, .3, .2, .1]), top_k=2, top_p=0.55 the top-k
  remainder renormalizes to [4/7, 3/7]; 4/7 = 0.571 already reaches 0.55, so only token 0 is kept:
  [1, 0, 0, 0]. Measuring p on the unrenormalized 0.4 and 0.3 instead keeps both (0.4 < 0.55):
  [4/7, 3/7, 0, 0]. In general that variant can retain all k tokens, because the remainder's
  mass may never reach p.
- Exactly k at a tie. With logits [0, 0, 0] and top_k=2 this module gives [0.5, 0.5, 0]; a cutoff
  that drops only logits *below* the k-th largest keeps every tied token: [1/3, 1/3, 1/3].

Temperature 0 is a decoding policy, not a division: `distribution` refuses it and points to `greedy`.
"""

import math
from typing import NamedTuple

import numpy as np

from .checks import count, integer, nonnegative_real, positive_int, positive_real, real, token_ids

# subtle: a prefix whose mass equals p up to float rounding counts as reaching p; softmax of
# log([.6, .3, .05, .05]) gives 0.5999999999999999 for the first token, which should satisfy top_p=0.6.
_MASS_TOLERANCE = 1e-12
# How far exp(step_fn(prefix)) may sum from 1 before beam_search calls it "not log-probabilities".
_LOG_PROB_TOLERANCE = 1e-6


def distribution(logits, temperature=1.0, top_k=None, top_p=None):
    """Next-token probabilities after temperature, top-k and top-p, in that order (see module doc).

    logits: (V,) finite real numbers. temperature: finite and > 0; use `greedy` for temperature 0.
    top_k: int in [1, V] or None. top_p: in (0, 1] or None; top_p=1 keeps every token.
    Returns (V,) float64 that sums to 1; filtered tokens get exactly 0.

    >>> distribution(np.log([.4, .3, .2, .1]), top_k=2, top_p=0.55).tolist()
    [1.0, 0.0, 0.0, 0.0]
    """
    scores = _logits(logits)
    _check_temperature(temperature)
    if top_k is not None:
        _check_top_k(top_k, len(scores))
    if top_p is not None:
        _check_top_p(top_p)
    order = _ranking(scores)
    with np.errstate(over="ignore"):  # huge gaps overflow to -inf, i.e. probability 0, as intended
        weights = np.exp((scores - scores.max()) / temperature)
    probs = weights / weights.sum()
    if top_k is not None:
        probs = _keep(probs, order[:top_k])
    if top_p is not None and top_p < 1:
        reached = int(np.searchsorted(np.cumsum(probs[order]), top_p - _MASS_TOLERANCE))
        probs = _keep(probs, order[: reached + 1])
    return probs


def greedy(logits):
    """Index of the largest logit; ties go to the lowest token index.

    logits: (V,) finite real numbers. Returns a Python int in [0, V).
    This is one step: it is not a search for the most probable sequence (see `beam_search`).

    >>> greedy([1.0, 3.0, 3.0])
    1
    """
    return int(np.argmax(_logits(logits)))


def sample(logits, rng, *, temperature=1.0, top_k=None, top_p=None):
    """Draw one token index from `distribution(logits, temperature, top_k, top_p)`.

    rng: a numpy.random.Generator; seed it (np.random.default_rng(seed)) for reproducible draws.
    Returns a Python int in [0, V); a filtered token is never drawn.

    >>> sample([0.0, 0.0, -1e9], np.random.default_rng(0), top_k=1)
    0
    """
    if not isinstance(rng, np.random.Generator):
        raise TypeError(
            f"rng must be a numpy.random.Generator, got {type(rng).__name__}: "
            "pass np.random.default_rng(seed)"
        )
    probs = distribution(logits, temperature, top_k, top_p)
    return int(rng.choice(len(probs), p=probs))


def repeated_ngram_bans(tokens, n):
    """Token ids that would complete an n-gram already present in ``tokens`` (the no-repeat rule).

    The last n - 1 tokens are the context; every token that followed an earlier occurrence of
    that context is banned, so no n-gram occurs twice. Greedy decoding, once a phrase
    repeats, tends to repeat it forever: the phrase is in the context, which makes it more
    likely still. Banning a repeated n-gram breaks the loop, at the price of also banning
    legitimate repeats (n = 3 forbids writing "of the" twice after the same word).
    Give banned tokens a large negative logit (``logits[sorted(bans)] = -1e9``).

    >>> sorted(repeated_ngram_bans([5, 6, 7, 5, 6], 3))
    [7]
    """
    positive_int("n", n, "the n-gram length; 0 in generate turns the rule off")
    seq = token_ids(tokens, "tokens")      # int() would truncate 5.7 and 5.2 to one id, and take True as 1
    if len(seq) < n - 1 or (n == 1 and not seq):
        return set()
    context = tuple(seq[len(seq) - n + 1:]) if n > 1 else ()
    return {seq[i + n - 1] for i in range(len(seq) - n + 1) if tuple(seq[i:i + n - 1]) == context}


class Hypothesis(NamedTuple):
    """One beam-search result."""

    tokens: tuple  # generated token indices, without bos; ends with eos when finished
    log_prob: float  # sum of the natural-log probabilities of `tokens`
    score: float  # log_prob / len(tokens) ** length_penalty, or log_prob when length_penalty is None


def beam_search(step_fn, *, beam_width, max_steps, bos, eos=None, length_penalty=None):
    """Keep the `beam_width` highest-log-probability prefixes at each step; return them ranked.

    step_fn(prefix) -> (V,) natural-log probabilities of the next token, where prefix is the tuple
    (bos, *generated). Log-probabilities, not probabilities: -inf forbids a token, and exp() of the
    values must sum to 1 (wrap a probability model as `lambda prefix: np.log(model(prefix))`).
    A hypothesis is finished when it emits eos (if given) or after max_steps tokens.
    length_penalty: None ranks by total log-probability; alpha >= 0 ranks by
    log_prob / len(tokens) ** alpha, which stops the score from favouring short finished hypotheses.
    Returns every finished hypothesis and the beams still open at the end, as `Hypothesis` tuples,
    best score first (ties: lexicographically smaller tokens first). An approximate search under
    this score: it is neither exhaustive nor a measure of quality.

    >>> next_token = {(9,): [.6, .4], (9, 0): [.51, .49], (9, 1): [.99, .01]}  # bos = 9
    >>> best = beam_search(lambda prefix: np.log(next_token[prefix]), beam_width=2, max_steps=2, bos=9)[0]
    >>> best.tokens, round(math.exp(best.log_prob), 3)
    ((1, 0), 0.396)
    """
    if not callable(step_fn):
        raise TypeError(f"step_fn must be callable (prefix -> log-probabilities), got {type(step_fn).__name__}")
    count("beam_width", beam_width)
    count("max_steps", max_steps)
    integer("bos", bos)
    if eos is not None:
        integer("eos", eos)
    if length_penalty is not None:
        real("length_penalty", length_penalty)
        nonnegative_real("length_penalty", length_penalty, "or None")

    beams, finished = [(0.0, ())], []
    for _ in range(max_steps):
        candidates = []
        for log_prob, tokens in beams:
            step = _step_log_probs(step_fn((bos, *tokens)))
            for token in _ranking(step)[:beam_width]:  # only a beam's own top tokens can survive
                if step[token] > -np.inf:
                    candidates.append((log_prob + float(step[token]), tokens + (int(token),)))
        candidates.sort(key=lambda c: (-c[0], c[1]))
        beams = []
        for log_prob, tokens in candidates[:beam_width]:
            (finished if eos is not None and tokens[-1] == eos else beams).append((log_prob, tokens))
        if not beams:
            break
    alpha = 0 if length_penalty is None else length_penalty
    ranked = [Hypothesis(tokens, log_prob, log_prob / len(tokens) ** alpha) for log_prob, tokens in finished + beams]
    return sorted(ranked, key=lambda h: (-h.score, h.tokens))


def _ranking(scores):
    """Token indices, highest score first; equal scores keep the lower index first."""
    return np.lexsort((np.arange(len(scores)), -scores))


def _keep(probs, kept):
    """Zero every token outside `kept` and renormalize (kept always holds the top token, so mass > 0)."""
    out = np.zeros_like(probs)
    out[kept] = probs[kept]
    return out / out.sum()


def _logits(logits):
    array = np.asarray(logits)
    if array.dtype.kind not in "iuf":
        raise TypeError(f"logits must be real numbers (int or float), got dtype {array.dtype}")
    if array.ndim != 1:
        raise ValueError(f"logits must be 1-D (one score per vocabulary token), got shape {array.shape}")
    if array.size == 0:
        raise ValueError("logits is empty: pass one score per vocabulary token")
    array = array.astype(np.float64)
    if not np.isfinite(array).all():
        bad = np.flatnonzero(~np.isfinite(array))[:5].tolist()
        raise ValueError(
            f"logits must be finite; non-finite at indices {bad}: "
            "give a forbidden token a large negative logit (e.g. -1e9) instead of -inf"
        )
    return array


def _step_log_probs(values):
    array = np.asarray(values, dtype=np.float64)
    if array.ndim != 1 or array.size == 0:
        raise ValueError(f"step_fn must return a non-empty 1-D array of log-probabilities, got shape {array.shape}")
    if np.isnan(array).any() or (array == np.inf).any():
        raise ValueError("step_fn returned NaN or +inf: return natural-log probabilities (-inf forbids a token)")
    total = float(np.exp(array).sum())
    if abs(total - 1) > _LOG_PROB_TOLERANCE:
        raise ValueError(
            f"step_fn must return natural-log probabilities whose exp sums to 1, got exp-sum {total:.6g}: "
            "if it returns probabilities, wrap it as lambda prefix: np.log(model(prefix))"
        )
    return array


def _check_temperature(temperature):
    real("temperature", temperature)
    if temperature == 0:
        raise ValueError("temperature 0 is not a division: call greedy(logits) for the deterministic argmax")
    positive_real("temperature", temperature)


def _check_top_k(top_k, vocab_size):
    integer("top_k", top_k)
    if not 1 <= top_k <= vocab_size:
        raise ValueError(f"top_k must be in [1, {vocab_size}] (the vocabulary size), got {top_k}; None means no limit")


def _check_top_p(top_p):
    real("top_p", top_p)
    if not 0 < top_p <= 1:
        raise ValueError(f"top_p must be in (0, 1], got {top_p}; use None (or 1) for no nucleus filter")
