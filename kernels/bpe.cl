// bpe.cl: byte-pair merges for many chunks at once, one work-item per chunk.
//
// The host (netcl_lite/text/device_merge.py) packs the call's new chunks, after the regex
// split, into one byte buffer: chunk c is text[starts[c] .. starts[c + 1]). Each work-item
// merges its chunk exactly as the Python loop of netcl_lite/text/byte_pair.py does: among the
// adjacent pairs that merge, the one of lowest priority merges first, the leftmost among
// equals, until no adjacent pair merges. Its ids go to out[starts[c] ..] (a chunk never has
// more ids than bytes) and their number to out[starts[n_chunks] + c], so one read brings both.
//
// The merge table is an open-addressed hash of (left id, right id) -> priority, built once per
// tokenizer on the device (the kernels at the end of this file) and kept there. Under tiktoken's
// rule the priority is the rank, which is also the merged id; under a merge list it is the
// merge's position, and merged_of[priority] is its id (listed = 1). Ids lie below 2^21 - 1 and
// priorities below 2^22 (the host checks), so a slot is 8 bytes, two words:
//   x = left << 21 | right (the low 32 bits),  y = left >> 11 | priority << 10;
// an empty slot is all ones (no pair's x is: right < 2^21 - 1). The table has 2^k slots, at most
// half of them taken; a pair's probe starts at bpe_home(left, right, shift) and walks forward,
// wrapping around, to its pair or an empty slot. byte_pairs[256 * a + b] is the priority of the
// pair of bytes a, b (every chunk's first pairs come from this small table). Priority BPE_EMPTY:
// the pair never merges.
//
// Chunks longer than BPE_MAX_CHUNK bytes stay in Python (the host never sends them; a longer
// one here gets count 0, which the host rejects). BPE_MAX_CHUNK is a build option.
//
// Kernels:
//   bpe_merge_chunks   one work-item per chunk: the merges, lowest priority first
//   bpe_index_tokens   (table build) each token's id into a hash keyed by its bytes
//   bpe_rank_pairs     (table build, tiktoken's rule) every split of every token into two tokens
//   bpe_listed_pairs   (table build, a merge list) the listed pairs, priority = position
//   bpe_byte_pairs     (table build) the priorities of the 65,536 byte pairs

#ifndef BPE_MAX_CHUNK
#define BPE_MAX_CHUNK 256
#endif
#define BPE_EMPTY 0xffffffffu

// The slot a pair's probe starts at: a multiplicative hash of both ids, its top bits.
// netcl_lite/text/device_merge.py computes the same in NumPy (uint32 arithmetic wraps).
inline uint bpe_home(const uint left, const uint right, const uint shift)
{
    uint h = left * 0x9E3779B1u ^ right * 0x85EBCA77u;
    h ^= h >> 16;
    h *= 0x7FEB352Du;
    return h >> shift;
}

// The priority of the pair, or BPE_EMPTY when it never merges.
inline uint bpe_lookup(__global const uint2 *table, const uint shift, const uint left, const uint right)
{
    const uint mask = 0xffffffffu >> shift, x = left << 21 | right, high = left >> 11;
    uint slot = bpe_home(left, right, shift);
    for (uint probe = 0; probe <= mask; ++probe, slot = (slot + 1) & mask) {
        const uint2 s = table[slot];
        if (s.x == x && (s.y & 0x3ffu) == high) return s.y >> 10;
        if (s.x == BPE_EMPTY) break;
    }
    return BPE_EMPTY;
}

// --8<-- [start:bpe_merge_chunks]
__kernel void bpe_merge_chunks(__global const uchar *text, __global const uint *starts, const uint n_chunks,
                               __global const uint *byte_ids, __global const uint *byte_pairs,
                               __global const uint2 *table, const uint shift,
                               __global const uint *merged_of, const uint listed, __global uint *out)
{
    const uint c = get_global_id(0);
    if (c >= n_chunks) return;
    const uint start = starts[c], n = starts[c + 1] - start;
    __global uint *count = out + starts[n_chunks] + c;
    if (n == 0 || n > BPE_MAX_CHUNK) { *count = 0; return; }
    uint ids[BPE_MAX_CHUNK];     // the chunk's tokens so far
    uint rank[BPE_MAX_CHUNK];    // rank[i]: priority of the pair (ids[i], ids[i + 1])
    for (uint i = 0; i < n; ++i) ids[i] = byte_ids[text[start + i]];
    for (uint i = 0; i + 1 < n; ++i) rank[i] = byte_pairs[(uint)text[start + i] * 256u + text[start + i + 1]];
    uint len = n;
    while (len > 1) {
        uint best = BPE_EMPTY, at = 0;
        for (uint i = 0; i + 1 < len; ++i)          // the leftmost of the lowest priority
            if (rank[i] < best) { best = rank[i]; at = i; }
        if (best == BPE_EMPTY) break;               // no adjacent pair merges: done
        ids[at] = listed ? merged_of[best] : best;  // merge ids[at], ids[at + 1]
        for (uint i = at + 1; i + 1 < len; ++i) ids[i] = ids[i + 1];
        for (uint i = at; i + 2 < len; ++i) rank[i] = rank[i + 1];
        --len;
        if (at > 0) rank[at - 1] = bpe_lookup(table, shift, ids[at - 1], ids[at]);   // pair ending in it
        if (at + 1 < len) rank[at] = bpe_lookup(table, shift, ids[at], ids[at + 1]); // pair starting with it
    }
    for (uint i = 0; i < len; ++i) out[start + i] = ids[i];
    *count = len;
}
// --8<-- [end:bpe_merge_chunks]

// ---- building the tables (once per tokenizer) ----------------------------------------------
//
// tiktoken's rule: every split of a token into two tokens is a pair that merges into it, at its
// rank (= its id). The tokens' bytes are packed like the chunks: token t is
// bytes[offsets[t] .. offsets[t + 1]). bpe_index_tokens puts each token's id into a hash by its
// bytes (index, 2^k slots, BPE_EMPTY when free); bpe_rank_pairs then looks up both sides of every
// split of every token and inserts the pairs it finds. A merge list (Hugging Face's rule) is
// inserted as it is by bpe_listed_pairs, priority = its position. bpe_byte_pairs fills the
// byte-pair table from the finished hash. Each slot is claimed with atomic_cmpxchg on its first
// word, so inserts in any order build a valid table; the host fills both tables with BPE_EMPTY first.

// Tokens are hashed by a polynomial over their bytes, sum of b[i] * P^(n-1-i) (mod 2^32), then
// mixed with their length: a prefix's value extends by one multiply-add, and a suffix's is the
// whole's minus the prefix's times P^(n-k), so every split of a token costs O(1) to hash.
#define BPE_P 0x01000193u
#define BPE_P_INVERSE 0x359C449Bu           // P * P_INVERSE == 1 (mod 2^32): P is odd

inline uint bpe_mix(uint h, const uint n)
{
    h ^= n * 0x9E3779B1u;
    h ^= h >> 16;
    h *= 0x7FEB352Du;
    h ^= h >> 15;
    h *= 0x846CA68Bu;
    return h ^ (h >> 16);
}

inline uint bpe_poly(__global const uchar *p, const uint n)
{
    uint h = 0;
    for (uint i = 0; i < n; ++i) h = h * BPE_P + p[i];
    return h;
}

inline void bpe_insert(volatile __global uint *table, const uint shift, const uint left, const uint right,
                       const uint priority)
{
    const uint mask = 0xffffffffu >> shift, x = left << 21 | right;
    uint slot = bpe_home(left, right, shift);
    for (uint probe = 0; probe <= mask; ++probe, slot = (slot + 1) & mask) {
        if (atomic_cmpxchg(&table[2 * slot], BPE_EMPTY, x) == BPE_EMPTY) {   // claimed: fill it
            table[2 * slot + 1] = left >> 11 | priority << 10;
            return;
        }
    }
}

__kernel void bpe_index_tokens(__global const uchar *bytes, __global const uint *offsets, const uint n_tokens,
                               volatile __global uint *index, const uint index_mask)
{
    const uint t = get_global_id(0);
    if (t >= n_tokens) return;
    const uint n = offsets[t + 1] - offsets[t];
    uint slot = bpe_mix(bpe_poly(bytes + offsets[t], n), n) & index_mask;
    for (uint probe = 0; probe <= index_mask; ++probe, slot = (slot + 1) & index_mask)
        if (atomic_cmpxchg(&index[slot], BPE_EMPTY, t) == BPE_EMPTY) return;
}

// The id of the token whose bytes are p[0 .. n) (their polynomial: poly), or BPE_EMPTY.
inline uint bpe_token_id(__global const uchar *bytes, __global const uint *offsets, __global const uint *index,
                         const uint index_mask, __global const uchar *p, const uint n, const uint poly)
{
    uint slot = bpe_mix(poly, n) & index_mask;
    for (uint probe = 0; probe <= index_mask; ++probe, slot = (slot + 1) & index_mask) {
        const uint t = index[slot];
        if (t == BPE_EMPTY) break;
        if (offsets[t + 1] - offsets[t] != n) continue;
        uint same = 1;
        for (uint i = 0; i < n && same; ++i) same = bytes[offsets[t] + i] == p[i];
        if (same) return t;
    }
    return BPE_EMPTY;
}

__kernel void bpe_rank_pairs(__global const uchar *bytes, __global const uint *offsets, const uint n_tokens,
                             __global const uint *index, const uint index_mask,
                             volatile __global uint *table, const uint shift, volatile __global uint *inserted)
{
    const uint t = get_global_id(0);
    if (t >= n_tokens) return;
    const uint start = offsets[t], n = offsets[t + 1] - start;
    __global const uchar *token = bytes + start;
    const uint whole = bpe_poly(token, n);
    uint power = 1;                           // P^(n - 1), then P^(n - k) for the suffix of split k
    for (uint i = 1; i < n; ++i) power *= BPE_P;
    uint prefix = 0, found = 0;
    for (uint k = 1; k < n; ++k) {
        prefix = prefix * BPE_P + token[k - 1];
        const uint suffix = whole - prefix * power;
        power *= BPE_P_INVERSE;
        const uint left = bpe_token_id(bytes, offsets, index, index_mask, token, k, prefix);
        if (left == BPE_EMPTY) continue;
        const uint right = bpe_token_id(bytes, offsets, index, index_mask, token + k, n - k, suffix);
        if (right == BPE_EMPTY) continue;
        bpe_insert(table, shift, left, right, t);
        ++found;
    }
    if (found) atomic_add(inserted, found);   // the host checks the count: no pair lost
}

__kernel void bpe_listed_pairs(__global const uint *merges, const uint n_merges, volatile __global uint *table,
                               const uint shift, volatile __global uint *inserted)
{
    const uint k = get_global_id(0);     // merges[3k .. 3k + 3) = (left, right, merged), earliest first
    if (k >= n_merges) return;
    bpe_insert(table, shift, merges[3 * k], merges[3 * k + 1], k);
    atomic_inc(inserted);
}

__kernel void bpe_byte_pairs(__global const uint *byte_ids, __global const uint2 *table, const uint shift,
                             __global uint *byte_pairs)
{
    const uint ab = get_global_id(0);
    if (ab >= 65536u) return;
    byte_pairs[ab] = bpe_lookup(table, shift, byte_ids[ab >> 8], byte_ids[ab & 255u]);
}
