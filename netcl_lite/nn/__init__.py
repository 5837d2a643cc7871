"""Neural-network layers on the autograd tape (see :mod:`netcl_lite.nn.transformer`)."""

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

__all__ = ["DecoderBlock", "Embedding", "FeedForward", "KVCache", "LayerNorm", "Module", "RMSNorm", "RotaryAttention"]
