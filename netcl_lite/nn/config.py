"""The language model's hyperparameters, named as transformers' ``LlamaConfig`` names them.

Its own module so that the model (:mod:`netcl_lite.nn.lm`) and its checkpoints
(:mod:`netcl_lite.nn.checkpoint`) both read it without importing each other.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields

from ..checks import count, flag, positive_real

#: float32's largest finite value: the model's weights, activations and ``rms_norm_eps`` are float32
_FLOAT32_MAX = 3.4028234663852886e38
#: float32's smallest normal number: below it a value loses precision, and below half its least
#: subnormal it is 0
_FLOAT32_TINY = 1.1754943508222875e-38


@dataclass(frozen=True)
class LMConfig:
    """Hyperparameters, named as transformers' ``LlamaConfig`` names them.

    ``num_key_value_heads`` None means ``num_attention_heads`` (MHA); 1 is MQA.
    ``intermediate_size`` is the SwiGLU width (gate and up projections).
    ``initializer_range`` is the standard deviation of every weight matrix and
    of the embedding at initialization (norm gains start at 1).
    """

    vocab_size: int
    hidden_size: int = 128
    intermediate_size: int = 384
    num_hidden_layers: int = 4
    num_attention_heads: int = 4
    num_key_value_heads: int | None = None
    max_position_embeddings: int = 256
    rms_norm_eps: float = 1e-6
    rope_theta: float = 10000.0
    tie_word_embeddings: bool = True
    initializer_range: float = 0.02

    def __post_init__(self):
        import numpy as np

        for field in fields(self):             # NumPy scalars as the Python numbers they hold: a config
            value = getattr(self, field.name)  # is written as JSON and fingerprinted by its text
            if isinstance(value, np.generic):
                object.__setattr__(self, field.name, value.item())
        for name in ("vocab_size", "hidden_size", "intermediate_size", "num_hidden_layers",
                     "num_attention_heads", "max_position_embeddings"):
            count(name, getattr(self, name))
        if self.num_key_value_heads is None:
            object.__setattr__(self, "num_key_value_heads", self.num_attention_heads)
        count("num_key_value_heads", self.num_key_value_heads)
        heads, kv = self.num_attention_heads, self.num_key_value_heads
        if heads % kv:
            raise ValueError(f"num_attention_heads={heads} must be divisible by num_key_value_heads={kv} "
                             "(each K/V head serves num_attention_heads / num_key_value_heads query heads)")
        if self.hidden_size % heads:
            raise ValueError(f"hidden_size={self.hidden_size} must be divisible by num_attention_heads={heads} "
                             "(head width = hidden_size / num_attention_heads)")
        if (self.hidden_size // heads) % 2:
            raise ValueError(f"the head width hidden_size / num_attention_heads = {self.hidden_size // heads} must "
                             "be even: RoPE rotates pairs of coordinates")
        for name in ("rms_norm_eps", "rope_theta", "initializer_range"):
            value = getattr(self, name)
            positive_real(name, value)
        for name in ("rms_norm_eps", "initializer_range"):         # they reach the kernels as float32
            if float(getattr(self, name)) > _FLOAT32_MAX:
                raise ValueError(f"{name}={getattr(self, name)!r} is past float32's largest value "
                                 f"({_FLOAT32_MAX:.4g}): the model computes in float32, where it would be "
                                 f"infinite (weights or norms of inf and NaN); give a value below it")
            if float(getattr(self, name)) < _FLOAT32_TINY:
                raise ValueError(f"{name}={getattr(self, name)!r} is below float32's smallest normal number "
                                 f"({_FLOAT32_TINY:.4g}): the model computes in float32, where it would be 0 "
                                 f"or lose its precision (a norm dividing by 0, weights all 0); give a value "
                                 f"above it")
        flag("tie_word_embeddings", self.tie_word_embeddings)

    @property
    def head_dim(self) -> int:
        return self.hidden_size // self.num_attention_heads

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, values: dict) -> LMConfig:
        """The config from a dict of these field names (other keys are refused, by name)."""
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(values) - known)
        if unknown:
            raise ValueError(f"unknown LMConfig fields {unknown}; the fields are {sorted(known)}")
        return cls(**values)

