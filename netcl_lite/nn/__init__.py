"""Neural-network layers on the autograd tape (see :mod:`netcl_lite.nn.transformer`) and the
language model built from them (:mod:`netcl_lite.nn.lm`)."""

from .lm import DecoderLM, LMConfig
from .positions import sinusoidal_positions
from .transformer import (
    DecoderBlock,
    Embedding,
    FeedForward,
    KVCache,
    LayerNorm,
    Module,
    RMSNorm,
    RotaryAttention,
)

__all__ = ["DecoderBlock", "DecoderLM", "LMConfig", "Embedding", "FeedForward", "KVCache", "LayerNorm", "Module", "RMSNorm", "RotaryAttention", "sinusoidal_positions"]
