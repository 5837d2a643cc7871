// bpe.cl: byte-pair merges for many chunks at once, one work-item per chunk.
//
// The host (netcl_lite/text/device_merge.py) packs the call's new chunks, after the regex
// split, into one byte buffer: chunk c is text[starts[c] .. starts[c + 1]). Each work-item
// merges its chunk exactly as the Python loop of netcl_lite/text/byte_pair.py does: among the
// adjacent pairs that merge, the one of lowest priority merges first, the leftmost among
// equals, until no adjacent pair merges. Its ids go to out[starts[c] ..] (a chunk never has
// more ids than bytes) and their number to out[starts[n_chunks] + c], so one read brings both.
//
// Two rules say which pairs merge, and the tables for them are built on the device, once per
// tokenizer, and kept there (the kernels at the end of this file):
//
// * tiktoken's (listed = 0): two adjacent tokens merge when their bytes, joined, are a token;
//   the priority is that token's rank, which is also its id. The table is an index of the
//   tokens by their bytes: an open-addressed hash of 2^k slots (at most half full), slot =
//   (id, h) with h a polynomial hash of the token's bytes. The work-item keeps each of its
//   tokens' hash and length, so the hash of two joined tokens costs one multiply-add; a probe
//   that finds the same hash and length then compares the bytes, so a hash collision can cost
//   time but never a wrong id.
// * a merge list's (listed = 1, Hugging Face's tokenizer.json): only the listed pairs merge,
//   earliest first. The table is an open-addressed hash from (left id, right id) to the
//   merge's position (its priority); merged_of[priority] is the merged id. Ids lie below
//   2^21 - 1 and priorities below 2^22 (the host checks), so a slot is 8 bytes, two words:
//   x = left << 21 | right (the low 32 bits),  y = left >> 11 | priority << 10.
//
// Empty slots are all ones in their first word. byte_pairs[256 * a + b] is the priority of the
// pair of bytes a, b (every chunk's first pairs come from this small table). Priority BPE_EMPTY:
// the pair never merges. Chunks longer than BPE_MAX_CHUNK bytes stay in Python (the host never
// sends them; a longer one here gets count 0, which the host rejects). BPE_MAX_CHUNK is a
// build option.
//
// Kernels:
//   bpe_merge_chunks   one work-item per chunk: the merges, lowest priority first
//   bpe_index_tokens   (table build, tiktoken's rule) each token into the index by its bytes
//   bpe_listed_pairs   (table build, a merge list) the listed pairs, priority = position
//   bpe_byte_pairs     (table build) the priorities of the 65,536 byte pairs

#ifndef BPE_MAX_CHUNK
#define BPE_MAX_CHUNK 256
#endif
#define BPE_EMPTY 0xffffffffu

// A token's bytes b[0 .. n) hash to sum of b[i] * P^(n-1-i) (mod 2^32), so the hash of two
// tokens joined is h(left) * P^n(right) + h(right). powers[k] = P^k for k = 0 .. BPE_MAX_CHUNK.
// The slot is this hash mixed with the length. netcl_lite/text/device_merge.py computes both
// in NumPy (uint32 arithmetic wraps).
#define BPE_P 0x01000193u

inline uint bpe_mix(uint h, const uint n)
{
    h ^= n * 0x9E3779B1u;
    h ^= h >> 16;
    h *= 0x7FEB352Du;
    h ^= h >> 15;
    h *= 0x846CA68Bu;
    return h ^ (h >> 16);
}

// tiktoken's rule: the id of the token whose bytes are p[0 .. n) (hash h), or BPE_EMPTY.
inline uint bpe_find_token(__global const uint2 *index, const uint mask, __global const uchar *bytes,
                           __global const uint *offsets, const uint h, const uint n, __global const uchar *p)
{
    uint slot = bpe_mix(h, n) & mask;
    for (uint probe = 0; probe <= mask; ++probe, slot = (slot + 1) & mask) {
        const uint2 s = index[slot];
        if (s.x == BPE_EMPTY) break;
        if (s.y != h) continue;
        const uint start = offsets[s.x];
        if (offsets[s.x + 1] - start != n) continue;
        uint same = 1;
        for (uint i = 0; i < n && same; ++i) same = bytes[start + i] == p[i];
        if (same) return s.x;
    }
    return BPE_EMPTY;
}

// A merge list: the slot a pair's probe starts at, a multiplicative hash of both ids, its top bits.
inline uint bpe_home(const uint left, const uint right, const uint shift)
{
    uint h = left * 0x9E3779B1u ^ right * 0x85EBCA77u;
    h ^= h >> 16;
    h *= 0x7FEB352Du;
    return h >> shift;
}

// A merge list: the priority of the pair, or BPE_EMPTY when it never merges.
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
                               __global const uint *byte_ids, __global const uint *byte_pairs, const uint listed,
                               __global const uint2 *index, const uint index_mask,       // tiktoken's rule
                               __global const uchar *bytes, __global const uint *offsets,
                               __global const uint *powers,
                               __global const uint2 *table, const uint shift,            // a merge list
                               __global const uint *merged_of, __global uint *out)
{
    const uint c = get_global_id(0);
    if (c >= n_chunks) return;
    const uint start = starts[c], n = starts[c + 1] - start;
    __global uint *count = out + starts[n_chunks] + c;
    if (n == 0 || n > BPE_MAX_CHUNK) { *count = 0; return; }
    __global const uchar *chunk = text + start;
    uint ids[BPE_MAX_CHUNK];     // the chunk's tokens so far
    uint rank[BPE_MAX_CHUNK];    // rank[i]: priority of the pair (ids[i], ids[i + 1])
    uint hash[BPE_MAX_CHUNK];    // tiktoken's rule: each token's hash and length in bytes
    ushort size[BPE_MAX_CHUNK];
    for (uint i = 0; i < n; ++i) { ids[i] = byte_ids[chunk[i]]; hash[i] = chunk[i]; size[i] = 1; }
    for (uint i = 0; i + 1 < n; ++i) rank[i] = byte_pairs[(uint)chunk[i] * 256u + chunk[i + 1]];
    uint len = n;
    while (len > 1) {
        uint best = BPE_EMPTY, at = 0, pos = 0, at_pos = 0;   // at_pos: where token `at` starts
        for (uint i = 0; i + 1 < len; pos += size[i], ++i)     // the leftmost of the lowest priority
            if (rank[i] < best) { best = rank[i]; at = i; at_pos = pos; }
        if (best == BPE_EMPTY) break;               // no adjacent pair merges: done
        ids[at] = listed ? merged_of[best] : best;  // merge tokens at, at + 1
        hash[at] = hash[at] * powers[size[at + 1]] + hash[at + 1];
        size[at] += size[at + 1];
        for (uint i = at + 1; i + 1 < len; ++i) { ids[i] = ids[i + 1]; hash[i] = hash[i + 1]; size[i] = size[i + 1]; }
        for (uint i = at; i + 2 < len; ++i) rank[i] = rank[i + 1];
        --len;
        if (at > 0)                                 // the pair ending in the new token
            rank[at - 1] = listed ? bpe_lookup(table, shift, ids[at - 1], ids[at])
                : bpe_find_token(index, index_mask, bytes, offsets, hash[at - 1] * powers[size[at]] + hash[at],
                                 size[at - 1] + size[at], chunk + at_pos - size[at - 1]);
        if (at + 1 < len)                           // the pair starting with it
            rank[at] = listed ? bpe_lookup(table, shift, ids[at], ids[at + 1])
                : bpe_find_token(index, index_mask, bytes, offsets, hash[at] * powers[size[at + 1]] + hash[at + 1],
                                 size[at] + size[at + 1], chunk + at_pos);
    }
    for (uint i = 0; i < len; ++i) out[start + i] = ids[i];
    *count = len;
}
// --8<-- [end:bpe_merge_chunks]

// ---- building the tables (once per tokenizer) ----------------------------------------------
//
// tiktoken's rule: the tokens' bytes are packed like the chunks (token t is
// bytes[offsets[t] .. offsets[t + 1])), and bpe_index_tokens puts each into the index. A merge
// list is inserted as it is by bpe_listed_pairs, priority = its position. Each slot is claimed
// with atomic_cmpxchg on its first word, so inserts in any order build a valid table; the host
// fills the tables with BPE_EMPTY first, and checks the count of inserts. bpe_byte_pairs then
// fills the byte-pair table from the finished table, under either rule.

__kernel void bpe_index_tokens(__global const uchar *bytes, __global const uint *offsets, const uint n_tokens,
                               volatile __global uint *index, const uint mask, volatile __global uint *inserted)
{
    const uint t = get_global_id(0);
    if (t >= n_tokens) return;
    const uint start = offsets[t], n = offsets[t + 1] - start;
    uint h = 0;
    for (uint i = 0; i < n; ++i) h = h * BPE_P + bytes[start + i];
    uint slot = bpe_mix(h, n) & mask;
    for (uint probe = 0; probe <= mask; ++probe, slot = (slot + 1) & mask) {
        if (atomic_cmpxchg(&index[2 * slot], BPE_EMPTY, t) == BPE_EMPTY) {   // claimed: fill it
            index[2 * slot + 1] = h;
            atomic_inc(inserted);
            return;
        }
    }
}

__kernel void bpe_listed_pairs(__global const uint *merges, const uint n_merges, volatile __global uint *table,
                               const uint shift, volatile __global uint *inserted)
{
    const uint k = get_global_id(0);     // merges[3k .. 3k + 3) = (left, right, merged), earliest first
    if (k >= n_merges) return;
    const uint left = merges[3 * k], right = merges[3 * k + 1], mask = 0xffffffffu >> shift, x = left << 21 | right;
    uint slot = bpe_home(left, right, shift);
    for (uint probe = 0; probe <= mask; ++probe, slot = (slot + 1) & mask) {
        if (atomic_cmpxchg(&table[2 * slot], BPE_EMPTY, x) == BPE_EMPTY) {
            table[2 * slot + 1] = left >> 11 | k << 10;
            atomic_inc(inserted);
            return;
        }
    }
}

// pair_bytes: the 65,536 pairs of bytes, two bytes each (a, b at 2 * (256 * a + b)).
__kernel void bpe_byte_pairs(__global const uint *byte_ids, const uint listed,
                             __global const uint2 *index, const uint index_mask, __global const uchar *bytes,
                             __global const uint *offsets, __global const uchar *pair_bytes,
                             __global const uint2 *table, const uint shift, __global uint *byte_pairs)
{
    const uint ab = get_global_id(0);
    if (ab >= 65536u) return;
    const uint a = ab >> 8, b = ab & 255u;
    byte_pairs[ab] = listed ? bpe_lookup(table, shift, byte_ids[a], byte_ids[b])
        : bpe_find_token(index, index_mask, bytes, offsets, a * BPE_P + b, 2, pair_bytes + 2 * ab);
}
