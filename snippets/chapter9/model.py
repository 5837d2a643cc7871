from netcl_lite import budget, capstone
from netcl_lite.nn import DecoderLM, LMConfig

config = LMConfig(vocab_size=capstone.VOCAB_SIZE, **capstone.MODEL)
model = DecoderLM(config, seed=0)
D, F, V = config.hidden_size, config.intermediate_size, config.vocab_size

# The count from budget's formulas: attention projections, SwiGLU's three
# matrices and two norm gains per layer, the (tied) embedding, the final norm.
attention = budget.attention_parameters(
    D, config.num_attention_heads, config.num_key_value_heads
)
per_layer = attention + 3 * D * F + 2 * D
formula = config.num_hidden_layers * per_layer + V * D + D
print(f"per layer: attention {attention:,} + SwiGLU {3 * D * F:,} + norms {2 * D}")
print(f"formula {formula:,} = module {model.num_parameters():,}")
print(f"the head reuses the embedding: saves {budget.tied_embedding_savings(V, D):,}")
assert model.num_parameters() == formula, "the module's count equals the formula's"

for name, p in list(model.parameters().items())[:10]:
    print(f"  {name:22s} {str(p.shape):12s}")
