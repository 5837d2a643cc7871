import math
from fractions import Fraction as F

# A model's next-symbol probabilities (the same at every step here, for brevity).
p = {"a": F(1, 2), "b": F(3, 10), "c": F(1, 5)}
message = "abca"

# Each symbol keeps its share of the current interval [low, low + width).
low, width = F(0), F(1)
for symbol in message:
    start = sum((p[s] for s in p if s < symbol), F(0))  # the symbols before it
    low, width = low + width * start, width * p[symbol]
    print(f"{symbol}: p = {str(p[symbol]):4s} interval [{float(low):.4f},"
          f" {float(low + width):.4f}) width {float(width):.4f}")

# The code is the shortest binary fraction 0.b1b2...bk whose whole span
# [m / 2^k, (m + 1) / 2^k) lies inside the interval: any continuation of
# those bits still points into it.
k = 0
while True:
    k += 1
    m = math.ceil(low * 2**k)
    if F(m + 1, 2**k) <= low + width:
        break
bits = format(m, f"0{k}b")
information = sum(-math.log2(p[s]) for s in message)
print(f"code {bits}: {k} bits for {information:.2f} bits of information")

# Decoding runs the same model: which symbol's share holds the point?
point, low, width, decoded = F(m, 2**k), F(0), F(1), ""
for _ in range(len(message)):  # the decoder is told the length
    start = F(0)
    for s in p:
        if point < low + width * (start + p[s]):
            break
        start += p[s]
    decoded += s
    low, width = low + width * start, width * p[s]
print("decoded:", decoded)
assert decoded == message and k <= math.ceil(information) + 1
