// bpe.cl: byte-pair merges for many chunks at once, one work-item per chunk.
//
// The host (netcl_lite/text/device_merge.py) packs the call's new chunks, after the regex
// split, into one byte buffer: chunk c is text[starts[c] .. starts[c + 1]). Each work-item
// merges its chunk exactly as the Python loop of netcl_lite/text/byte_pair.py does: among the
// adjacent pairs that merge, the one of lowest priority merges first, the leftmost among
// equals, until no adjacent pair merges. Its ids go to out[starts[c] ..] (a chunk never has
// more ids than bytes) and their number to counts[c].
//
// The merge table is an open-addressed hash of (left id, right id) -> (priority, merged id),
// built once per tokenizer on the host and kept on the device with it:
//   table[slot] = (left, right, priority, merged); an empty slot has left == BPE_EMPTY.
// A pair's probe starts at bpe_home(left, right, shift) and walks forward (no wrap-around);
// the host leaves the last slot empty, so every probe stops inside the table.
// byte_pairs[256 * a + b] = (priority, merged) of the pair of bytes a, b (their first pairs
// come from this small table instead of the hash). Priority BPE_EMPTY: the pair never merges.
//
// Chunks longer than BPE_MAX_CHUNK bytes stay in Python (the host never sends them; a longer
// one here gets count 0, which the host rejects). BPE_MAX_CHUNK is a build option.

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

// (priority, merged id) of the pair, or (BPE_EMPTY, 0) when it never merges.
inline uint2 bpe_lookup(__global const uint4 *table, const uint n_slots, const uint shift,
                        const uint left, const uint right)
{
    for (uint slot = bpe_home(left, right, shift); slot < n_slots; ++slot) {
        const uint4 s = table[slot];
        if (s.x == left && s.y == right) return (uint2)(s.z, s.w);
        if (s.x == BPE_EMPTY) break;
    }
    return (uint2)(BPE_EMPTY, 0u);
}

// --8<-- [start:bpe_merge_chunks]
__kernel void bpe_merge_chunks(__global const uchar *text, __global const uint *starts, const uint n_chunks,
                               __global const uint *byte_ids, __global const uint2 *byte_pairs,
                               __global const uint4 *table, const uint n_slots, const uint shift,
                               __global uint *out, __global uint *counts)
{
    const uint c = get_global_id(0);
    if (c >= n_chunks) return;
    const uint start = starts[c], n = starts[c + 1] - start;
    if (n == 0 || n > BPE_MAX_CHUNK) { counts[c] = 0; return; }
    uint ids[BPE_MAX_CHUNK];     // the chunk's tokens so far
    uint rank[BPE_MAX_CHUNK];    // rank[i]: priority of the pair (ids[i], ids[i + 1])
    uint made[BPE_MAX_CHUNK];    // made[i]: the id that pair merges into
    for (uint i = 0; i < n; ++i) ids[i] = byte_ids[text[start + i]];
    for (uint i = 0; i + 1 < n; ++i) {
        const uint2 v = byte_pairs[(uint)text[start + i] * 256u + text[start + i + 1]];
        rank[i] = v.x;
        made[i] = v.y;
    }
    uint len = n;
    while (len > 1) {
        uint best = BPE_EMPTY, at = 0;
        for (uint i = 0; i + 1 < len; ++i)          // the leftmost of the lowest priority
            if (rank[i] < best) { best = rank[i]; at = i; }
        if (best == BPE_EMPTY) break;               // no adjacent pair merges: done
        ids[at] = made[at];                         // merge ids[at], ids[at + 1]
        for (uint i = at + 1; i + 1 < len; ++i) ids[i] = ids[i + 1];
        for (uint i = at; i + 2 < len; ++i) { rank[i] = rank[i + 1]; made[i] = made[i + 1]; }
        --len;
        if (at > 0) {                               // the pair that now ends in the new token
            const uint2 v = bpe_lookup(table, n_slots, shift, ids[at - 1], ids[at]);
            rank[at - 1] = v.x;
            made[at - 1] = v.y;
        }
        if (at + 1 < len) {                         // the pair that now starts with it
            const uint2 v = bpe_lookup(table, n_slots, shift, ids[at], ids[at + 1]);
            rank[at] = v.x;
            made[at] = v.y;
        }
    }
    for (uint i = 0; i < len; ++i) out[start + i] = ids[i];
    counts[c] = len;
}
// --8<-- [end:bpe_merge_chunks]
