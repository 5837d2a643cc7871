bits_per_byte, bytes_per_token = 1.80, 3.3
bits_per_token = bits_per_byte * bytes_per_token
print(f"{bits_per_token:.2f} bits per token, perplexity {2 ** bits_per_token:.0f}")
