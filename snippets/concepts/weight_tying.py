from netcl_lite.budget import tied_embedding_savings
from netcl_lite.core.device import manager
from netcl_lite.nn.transformer import Embedding

queue = manager.default().queue
vocab, dim = 32_000, 512
tied = Embedding(queue, vocab, dim, tie=True)
untied = Embedding(queue, vocab, dim, tie=False)


def count(module):
    return sum(node.value.size for node in module.parameters().values())


print(f"untied: {count(untied):,} weights   tied: {count(tied):,} weights")
print(
    f"tying saves {count(untied) - count(tied):,}"
    f" = V x D = {tied_embedding_savings(vocab, dim):,}"
)
assert count(untied) - count(tied) == vocab * dim, "tying saves exactly one V x D matrix"
